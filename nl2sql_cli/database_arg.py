"""The ``--database`` argument of the query commands (``sql``, ``compare``): a file, or the exit code of why not."""

from __future__ import annotations

import sys
from pathlib import Path

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT
from nl2sql_pipeline.databases.resolve import NotADatabaseFileError, require_database
from nl2sql_pipeline.errors import DatabaseNotFoundError


def database_file_or_exit_code(value: str) -> Path | int:
    """The DuckDB file ``value`` names; else prints why and returns 2 (not a database file) or 3 (missing)."""
    try:
        return require_database(value)
    except NotADatabaseFileError as exc:
        print(f"error: --database {value}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except DatabaseNotFoundError as exc:
        print(f"error: --database {value}: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT

"""Importers for public NL2SQL formats: Spider, BIRD, defog sql-eval and plain question/SQL/database files.

    result = import_benchmark("spider", Path("spider"), Path("gold/spider-dev.jsonl"))
    print(result.summary())

A reader (``spider``, ``bird``, ``plain``) turns the files into questions and databases
(``model.BenchmarkSource``); ``build.build_gold`` copies the databases into DuckDB beside the gold
file, converts every gold query to DuckDB, checks it against the source engine, and writes a validated
native gold file and an import report.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from pathlib import Path

from nl2sql_pipeline.dialect.convert import known_dialect
from nl2sql_pipeline.dialect.postgres_verify import THROWAWAY, is_postgres_url, open_verifier
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.execution import SandboxLimits
from nl2sql_pipeline.gold.formats.bird import read_bird
from nl2sql_pipeline.gold.formats.build import REPORT_SUFFIX, ImportResult, InUse, build_gold, report_path_for
from nl2sql_pipeline.gold.formats.hardness import HARDNESS_LEVELS, HardnessError, spider_hardness
from nl2sql_pipeline.gold.formats.model import BenchmarkImportError, BenchmarkSource, DatabaseConflictError
from nl2sql_pipeline.gold.formats.plain import expand_alternatives, read_defog, read_plain
from nl2sql_pipeline.gold.formats.spider import read_spider, require_folder

Reader = Callable[[Path, "Path | None"], BenchmarkSource]
FORMATS: dict[str, Reader] = {
    "spider": read_spider,
    "bird": read_bird,
    "defog": read_defog,
    "plain": read_plain,
}
"""Format name -> reader ``(source path, databases folder or None) -> BenchmarkSource``."""

__all__ = [
    "FORMATS",
    "HARDNESS_LEVELS",
    "REPORT_SUFFIX",
    "BenchmarkImportError",
    "DatabaseConflictError",
    "HardnessError",
    "ImportResult",
    "build_gold",
    "expand_alternatives",
    "import_benchmark",
    "report_path_for",
    "spider_hardness",
]


def import_benchmark(
    fmt: str,
    src: Path,
    out: Path,
    *,
    source_dialect: str | None = None,
    databases: Path | None = None,
    limits: SandboxLimits = SandboxLimits(),
    verify_with: str | None = None,
    reference_date: date | None = None,
    policy_for: Callable[[str, Path], str] | None = None,
    databases_in_use: InUse | None = None,
) -> ImportResult:
    """Read ``src`` in format ``fmt`` and write the gold file ``out`` (see ``build.build_gold``;
    ``reference_date`` is the set's "today", default the import date).

    ``verify_with``: ``postgres`` (a throwaway cluster) or a ``postgresql://`` URL: Postgres gold is run
    there and must return what its conversion returns (``dialect.postgres_verify``).

    Raises ``CaseValidationError`` for an unknown format or dialect, unreadable input, a ``verify_with``
    that is not Postgres or no kept case, ``BenchmarkImportError`` when ``databases`` is not a folder or
    ``out``'s folder cannot be made, and the errors of ``postgres_verify.open_verifier`` when the server
    cannot be started or reached.
    ``policy_for(db_id, file)`` names each database's SQL policy for the report (default ``safety``).
    ``databases_in_use(out)`` names the database files other gold sets run on, which the import then
    replaces only by the same content (``DatabaseConflictError`` otherwise; see ``build.build_gold``).
    """
    if fmt not in FORMATS:
        raise CaseValidationError([f"unknown format {fmt!r} (use one of: {', '.join(FORMATS)})"])
    if source_dialect is not None and not known_dialect(source_dialect):
        raise CaseValidationError(
            [f"unknown source dialect {source_dialect!r} (use a sqlglot dialect: sqlite, postgres, mysql, duckdb, ...)"]
        )
    if Path(out).suffix.lower() != ".jsonl":
        raise CaseValidationError([f"{out}: the gold file must end in .jsonl"])
    folder = require_folder(Path(databases)) if databases else None
    if verify_with is not None and verify_with != THROWAWAY and not is_postgres_url(verify_with):
        raise CaseValidationError(
            [f"--verify-with {verify_with!r}: use 'postgres' (a throwaway cluster) or a postgresql:// URL"]
        )
    source = FORMATS[fmt](Path(src), folder)
    if verify_with is None:
        return build_gold(
            source,
            Path(out),
            source_dialect,
            limits,
            reference_date=reference_date,
            policy_for=policy_for,
            databases_in_use=databases_in_use,
        )
    dialect = source_dialect or source.default_dialect
    if dialect != "postgres":
        raise CaseValidationError(
            [
                f"--verify-with checks Postgres gold SQL, but the source dialect is {dialect} "
                "(give --source-dialect postgres, or drop --verify-with)"
            ]
        )
    with open_verifier(verify_with) as postgres:
        return build_gold(
            source, Path(out), source_dialect, limits, postgres, reference_date, policy_for, databases_in_use
        )

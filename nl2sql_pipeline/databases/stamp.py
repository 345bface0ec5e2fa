"""The stamp of the databases a gold set's cases run on: what says their content may have changed.

A prepared gold version (preflight, oracle results, database variants) and every run judged against it hold
for the rows its databases had then. Hashing a multi-GB DuckDB file on every run is too slow, so a database is
stamped, under its name, by its file's size and modification time (in nanoseconds), and its write-ahead log's
when one is there. DuckDB writes the file whenever its content changes (a re-import, a ``db build --force``, a
user's own edit), so the stamp changes with it; evaluation opens databases read-only and never changes it. A
rewrite with identical rows changes the stamp too: the gold version is then prepared again, which costs time,
never a wrong score. The file's path is left out: a storage root or data folder moved or copied with its times
(``cp -a``, ``shutil.copytree``) keeps its databases' stamps, and two different files with the same size and
modification time to the nanosecond are one file copied with its times.

>>> database_stamp({}) == database_stamp({})
True
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import Nl2SqlError

STAMP_VERSION = "1"
"""Bump when what a stamp covers changes: every prepared gold version is then prepared again."""

WAL_SUFFIX = ".wal"  # DuckDB's write-ahead log beside the file: <file>.wal


def file_stamp(path: Path) -> dict[str, object] | None:
    """The stamp of one database file (size, mtime_ns, of the file a link points to; its WAL's too when
    present), or None when it cannot be read (missing: a sample database not built yet)."""
    resolved = Path(os.path.abspath(path)).resolve()
    try:
        stat = resolved.stat()
    except OSError:
        return None
    stamp: dict[str, object] = {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}
    try:
        wal = resolved.with_name(resolved.name + WAL_SUFFIX).stat()
    except OSError:
        return stamp
    stamp["wal"] = [wal.st_size, wal.st_mtime_ns]
    return stamp


def database_stamp(databases: Mapping[str, Path | None]) -> str:
    """A short hash (16 hex digits) of every database's file stamp, by name (order does not matter); a database
    that cannot be resolved (None) or read stands as missing."""
    entries = {name: file_stamp(path) if path is not None else None for name, path in databases.items()}
    blob = json.dumps([STAMP_VERSION, sorted(entries.items())], sort_keys=True)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def case_database_paths(cases: Iterable[Case], resolve_database: Callable[[str], Path]) -> dict[str, Path | None]:
    """The file of every database the cases name (None for one that cannot be resolved: not there yet)."""
    found: dict[str, Path | None] = {}
    for name in sorted({case.database for case in cases}):
        try:
            found[name] = Path(resolve_database(name))
        except (Nl2SqlError, OSError):
            found[name] = None
    return found


def cases_database_stamp(cases: Iterable[Case], resolve_database: Callable[[str], Path]) -> str:
    """The stamp of the databases ``cases`` run on (``resolve_database``: the gold set's ``case_databases``)."""
    return database_stamp(case_database_paths(cases, resolve_database))

"""The baselines file: every scored run recorded in a DuckDB table with the versions that produced it.

Table ``baseline_runs`` (one row per run and model; columns: identity, the six version fields of
``runs.identity``, ``comparable`` with ``not_comparable_reason`` (a run that skipped cases is kept for the
record but is never a baseline), and one column per declared metric of ``nl2sql_pipeline.scoring.metrics``), view
``latest_runs``; ``database_stamp``: the stamp of the case databases the run was judged on
(``databases.stamp``; NULL for runs recorded before it), which decides reuse, not comparability. Which recorded
run is the baseline of another is decided in ``runs.baseline``.

Concurrency: a DuckDB file has one writer or several readers across processes, never both. Every
connection (append or read) is taken under one advisory lock beside the file (``runs.locks``), with a
bounded wait, and a DuckDB lock error still left (another tool holding the file) is retried with backoff.

Reads and writes attach the file to one in-memory DuckDB kept by the process and detach it after the query (the
file is held no longer than by a connection of its own): opening a DuckDB database costs about 20 ms, attaching a
file to an open one about 1 ms, and a run opens the file six times or more (reuse, baseline, gates, record).

A file that cannot be read back (cut short, not a DuckDB file, its table ``baseline_runs`` gone) is a
``StoredFileError`` naming it and how to get past it (restore it, or move it aside: the runs are recorded anew),
for readers and writers alike; ``check_baselines`` asks that before a run writes anything.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from nl2sql_pipeline.errors import StoredFileError
from nl2sql_pipeline.runs.identity import VERSION_FIELDS, RunVersions
from nl2sql_pipeline.runs.locks import file_lock
from nl2sql_pipeline.scoring.metrics import METRICS

logger = logging.getLogger(__name__)


METRIC_COLUMNS: dict[str, str] = {m.name: m.sql_type for m in METRICS}
# Columns added after the first release: files written before gain them (NULL on old rows).
EXTRA_COLUMNS: dict[str, str] = {
    "comparable": "BOOLEAN",
    "not_comparable_reason": "VARCHAR",
    **METRIC_COLUMNS,
    "database_stamp": "VARCHAR",
}
LOCK_WAIT_S = 120.0  # the longest any reader or writer waits for the baselines file

_DDL = f"""
CREATE TABLE IF NOT EXISTS baseline_runs (
    run_id VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    gold_set VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    {", ".join(f"{name} VARCHAR NOT NULL" for name in VERSION_FIELDS)},
    {", ".join(f"{name} {kind}" for name, kind in EXTRA_COLUMNS.items())}
);
CREATE OR REPLACE VIEW latest_runs AS
SELECT * FROM baseline_runs
QUALIFY ROW_NUMBER() OVER (PARTITION BY gold_set, model ORDER BY recorded_at DESC, run_id DESC) = 1;
"""


_memory: tuple[int, duckdb.DuckDBPyConnection] | None = None  # (pid, in-memory database) of this process
_memory_lock = threading.Lock()
_ATTACHED = "baselines_file"
_TABLE = "baseline_runs"
WHOSE = "the baselines file of every recorded run"
FIX = "restore it from a backup, or move it aside (mv {path} {path}.damaged): the next run records runs anew"
_DAMAGE = (duckdb.IOException, duckdb.SerializationException, duckdb.InternalException, duckdb.InvalidInputException)
"""What DuckDB raises on a file it cannot open (a lock held by another process aside, which is waited for)."""
_READ_DAMAGE = (duckdb.IOException, duckdb.SerializationException, duckdb.InternalException)
"""What DuckDB raises on a block of an open file that it cannot read back."""


def damaged(db_path: Path, cause: BaseException | str) -> StoredFileError:
    """The error naming the baselines file ``db_path`` that cannot be used, its cause on one line, and the fix."""
    text = " ".join(str(cause).split()) or type(cause).__name__
    return StoredFileError(db_path, WHOSE, text, FIX.format(path=db_path))


def _memory_connection() -> duckdb.DuckDBPyConnection:
    """This process's in-memory DuckDB the baselines file is attached to (a new one after a fork)."""
    global _memory
    if _memory is None or _memory[0] != os.getpid():
        _memory = (os.getpid(), duckdb.connect(":memory:"))
    return _memory[1]


@contextmanager
def _attached(db_path: Path, *, read_only: bool, attempts: int = 50) -> Iterator[duckdb.DuckDBPyConnection]:
    """The baselines file attached (as the current catalog) while the block runs, then detached (a file opened
    for writing gets its tables first); waits while another process holds it."""
    if not read_only:
        db_path.parent.mkdir(parents=True, exist_ok=True)
    with _memory_lock:
        con = _memory_connection()
        for attempt in range(attempts):
            try:
                con.execute(f"ATTACH '{_quoted(db_path)}' AS {_ATTACHED}{' (READ_ONLY)' if read_only else ''}")
                break
            except _DAMAGE as exc:
                if "lock" not in str(exc).lower():
                    raise damaged(db_path, exc) from exc
                if attempt == attempts - 1:
                    raise
                time.sleep(0.1 + 0.05 * attempt)
        try:
            con.execute(f"USE {_ATTACHED}")
            if not read_only:
                _holds_runs(con, db_path)  # a file holding something else is not written over
                con.execute(_DDL)
                for name, kind in EXTRA_COLUMNS.items():  # files written by older versions gain new columns
                    con.execute(f"ALTER TABLE baseline_runs ADD COLUMN IF NOT EXISTS {name} {kind}")
            yield con
        except _READ_DAMAGE as exc:  # a block of the file that cannot be read back
            raise damaged(db_path, exc) from exc
        finally:
            _detach(con)


def _detach(con: duckdb.DuckDBPyConnection) -> None:
    """Detach the file; a connection DuckDB invalidated (after an internal error on a damaged file) is dropped,
    the next call opens a new one."""
    global _memory
    try:
        con.execute("USE memory")
        con.execute(f"DETACH {_ATTACHED}")
    except duckdb.Error:
        _memory = None


def _holds_runs(con: duckdb.DuckDBPyConnection, db_path: Path) -> bool:
    """Whether the attached file holds the table of runs; False when it holds nothing at all (a new file:
    written, it gets its tables; read, it has no runs). A file holding other things without the table (the table
    dropped, another DuckDB file in its place) is a ``StoredFileError``."""
    names = {
        row[0]
        for row in con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = $db "
            "UNION ALL SELECT view_name FROM duckdb_views() WHERE database_name = $db AND NOT internal",
            {"db": _ATTACHED},
        ).fetchall()
    }
    if _TABLE in names:
        return True
    if not names:
        return False
    raise damaged(db_path, f"it holds no table {_TABLE} (only {', '.join(sorted(names))})")


def _quoted(path: Path) -> str:
    """``path`` as the body of a SQL string literal."""
    return str(path).replace("'", "''")


def _lock_path(db_path: Path) -> Path:
    return db_path.with_name(db_path.name + ".lock")


@contextmanager
def _locked(db_path: Path) -> Iterator[None]:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(_lock_path(db_path), timeout_s=LOCK_WAIT_S, what=f"the baselines file {db_path}"):
        yield


def record_run(
    db_path: Path,
    *,
    run_id: str,
    gold_set: str,
    model: str,
    versions: RunVersions,
    scores: dict[str, Any],
    not_comparable_reason: str | None = None,
    database_stamp: str | None = None,
) -> None:
    """Append one scored run (in one transaction); re-recording the same run id replaces its row.

    ``not_comparable_reason``: why this run may never be a baseline (cases skipped, nothing evaluated);
    ``database_stamp``: the stamp of the case databases it was judged on.
    """
    row: dict[str, Any] = {
        "run_id": run_id,
        "recorded_at": datetime.now(timezone.utc).replace(tzinfo=None),
        "gold_set": gold_set,
        "model": model,
        **asdict(versions),
        "comparable": not_comparable_reason is None,
        "not_comparable_reason": not_comparable_reason,
        "database_stamp": database_stamp,
    }
    for name in METRIC_COLUMNS:
        value = scores.get(name)
        row[name] = json.dumps(value) if isinstance(value, (dict, list)) else value
    columns = list(row)
    with _locked(db_path), _attached(db_path, read_only=False) as con:
        con.execute("BEGIN TRANSACTION")
        try:
            con.execute(
                "DELETE FROM baseline_runs WHERE run_id = ? AND gold_set = ? AND model = ?",
                [run_id, gold_set, model],
            )
            con.execute(
                f"INSERT INTO baseline_runs ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
                [row[c] for c in columns],
            )
        except Exception:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")
    logger.info("recorded run %s for %s/%s in %s", run_id, gold_set, model, db_path)


def list_runs(db_path: Path, gold_set: str | None = None, model: str | None = None) -> list[dict[str, Any]]:
    """Every recorded run (newest first), optionally filtered."""
    if not db_path.exists():
        return []
    with _locked(db_path), _attached(db_path, read_only=True) as con:
        if not _holds_runs(con, db_path):
            return []
        query = (
            "SELECT * FROM baseline_runs WHERE (? IS NULL OR gold_set = ?) AND (? IS NULL OR model = ?) "
            "ORDER BY recorded_at DESC, run_id DESC"
        )
        cursor = con.execute(query, [gold_set, gold_set, model, model])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]


def check_baselines(db_path: Path) -> None:
    """Raise ``StoredFileError`` (naming the file and the fix) unless the baselines file, when there, reads back
    whole: every recorded run is read, as the reuse check, the baselines and the gates of a run will."""
    list_runs(db_path)

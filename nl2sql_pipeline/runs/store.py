"""The baselines file: every scored run recorded in a DuckDB table with the versions that produced it.

Table ``baseline_runs`` (one row per run and model; columns: identity, the six version fields of
``runs.identity``, and one column per declared metric of ``nl2sql_pipeline.metrics``), view
``latest_runs``. Which recorded run is the baseline of another is decided in ``runs.baseline``.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from nl2sql_pipeline.metrics import METRICS
from nl2sql_pipeline.runs.identity import VERSION_FIELDS, RunVersions

logger = logging.getLogger(__name__)


METRIC_COLUMNS: dict[str, str] = {m.name: m.sql_type for m in METRICS}

_DDL = f"""
CREATE TABLE IF NOT EXISTS baseline_runs (
    run_id VARCHAR NOT NULL,
    recorded_at TIMESTAMP NOT NULL,
    gold_set VARCHAR NOT NULL,
    model VARCHAR NOT NULL,
    {", ".join(f"{name} VARCHAR NOT NULL" for name in VERSION_FIELDS)},
    {", ".join(f"{name} {kind}" for name, kind in METRIC_COLUMNS.items())}
);
CREATE OR REPLACE VIEW latest_runs AS
SELECT * FROM baseline_runs
QUALIFY ROW_NUMBER() OVER (PARTITION BY gold_set, model ORDER BY recorded_at DESC, run_id DESC) = 1;
"""


def _connect(db_path: Path, attempts: int = 50) -> duckdb.DuckDBPyConnection:
    """Open the baselines file for writing, waiting while another process holds it (one writer at a time)."""
    db_path.parent.mkdir(parents=True, exist_ok=True)
    for attempt in range(attempts):
        try:
            con = duckdb.connect(str(db_path))
            con.execute(_DDL)
            for name, kind in METRIC_COLUMNS.items():  # files written by older versions gain new metrics
                con.execute(f"ALTER TABLE baseline_runs ADD COLUMN IF NOT EXISTS {name} {kind}")
            return con
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or attempt == attempts - 1:
                raise
            time.sleep(0.1 + 0.05 * attempt)
    raise AssertionError("unreachable")


def _connect_read_only(db_path: Path, attempts: int = 50) -> duckdb.DuckDBPyConnection:
    """Open the baselines file read-only, waiting while a writer in another process holds it."""
    for attempt in range(attempts):
        try:
            return duckdb.connect(str(db_path), read_only=True)
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower() or attempt == attempts - 1:
                raise
            time.sleep(0.1 + 0.05 * attempt)
    raise AssertionError("unreachable")


def record_run(
    db_path: Path,
    *,
    run_id: str,
    gold_set: str,
    model: str,
    versions: RunVersions,
    scores: dict[str, Any],
) -> None:
    """Append one scored run; re-recording the same run id replaces its row."""
    row: dict[str, Any] = {
        "run_id": run_id,
        "recorded_at": datetime.now(timezone.utc).replace(tzinfo=None),
        "gold_set": gold_set,
        "model": model,
        **asdict(versions),
    }
    for name in METRIC_COLUMNS:
        value = scores.get(name)
        row[name] = json.dumps(value) if isinstance(value, (dict, list)) else value
    columns = list(row)
    con = _connect(db_path)
    try:
        con.execute("BEGIN TRANSACTION")
        con.execute("DELETE FROM baseline_runs WHERE run_id = ? AND gold_set = ? AND model = ?", [run_id, gold_set, model])
        con.execute(
            f"INSERT INTO baseline_runs ({', '.join(columns)}) VALUES ({', '.join('?' for _ in columns)})",
            [row[c] for c in columns],
        )
        con.execute("COMMIT")
    finally:
        con.close()
    logger.info("recorded run %s for %s/%s in %s", run_id, gold_set, model, db_path)


def list_runs(db_path: Path, gold_set: str | None = None, model: str | None = None) -> list[dict[str, Any]]:
    """Every recorded run (newest first), optionally filtered."""
    if not db_path.exists():
        return []
    con = _connect_read_only(db_path)
    try:
        query = "SELECT * FROM baseline_runs WHERE (? IS NULL OR gold_set = ?) AND (? IS NULL OR model = ?) ORDER BY recorded_at DESC, run_id DESC"
        cursor = con.execute(query, [gold_set, gold_set, model, model])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]
    finally:
        con.close()

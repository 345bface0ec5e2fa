"""Versioned baselines: every scored run recorded in a DuckDB file with the versions that produced it.

A run is identified by its model config hash, gold-set fingerprint, semantic-model hash, policy hash,
comparator version and harness version. ``current_baseline`` returns the latest run of a (gold set,
model) pair whose versions all equal the given ones: a baseline stops being current as soon as any of
them changes.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import duckdb

from nl2sql_pipeline.metrics import METRICS

logger = logging.getLogger(__name__)

VERSION_FIELDS: tuple[str, ...] = (
    "model_config_hash",
    "gold_fingerprint",
    "semantic_model_hash",
    "policy_hash",
    "comparator_version",
    "harness_version",
)

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


@dataclass(frozen=True)
class RunVersions:
    """Everything that identifies what a run measured."""

    model_config_hash: str
    gold_fingerprint: str
    semantic_model_hash: str
    policy_hash: str
    comparator_version: str
    harness_version: str


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
    con = duckdb.connect(str(db_path), read_only=True)
    try:
        query = "SELECT * FROM baseline_runs WHERE (? IS NULL OR gold_set = ?) AND (? IS NULL OR model = ?) ORDER BY recorded_at DESC, run_id DESC"
        cursor = con.execute(query, [gold_set, gold_set, model, model])
        names = [d[0] for d in cursor.description]
        return [dict(zip(names, r)) for r in cursor.fetchall()]
    finally:
        con.close()


def current_baseline(db_path: Path, gold_set: str, model: str, versions: RunVersions) -> dict[str, Any] | None:
    """The latest run of (gold_set, model) recorded with exactly these versions, else None."""
    wanted = asdict(versions)
    for run in list_runs(db_path, gold_set, model):
        if all(run[k] == v for k, v in wanted.items()):
            return run
    return None

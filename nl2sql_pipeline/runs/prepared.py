"""Which gold versions are prepared (validated, preflighted, oracle executed), by fingerprint.

A marker file per (gold set, fingerprint, harness version) under the storage root, written once the gold
set and its oracle results materialized with a passing preflight. A run finding the marker (and the
oracle's file) skips the gold stage: a gold version is prepared once per fingerprint, not once per run.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from nl2sql_pipeline import HARNESS_VERSION, paths


def marker_path(gold_set: str, fingerprint: str) -> Path:
    """The marker of a prepared gold version."""
    return paths.storage_root() / "prepared" / f"gold={gold_set}" / f"{fingerprint}-h{HARNESS_VERSION}.json"


def is_prepared(gold_set: str, fingerprint: str) -> bool:
    """True when this gold version (at this fingerprint and harness version) was prepared."""
    return marker_path(gold_set, fingerprint).exists()


def mark_prepared(gold_set: str, fingerprint: str, run_id: str) -> Path:
    """Record that ``run_id`` prepared the gold version (written atomically)."""
    path = marker_path(gold_set, fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"run_id": run_id, "prepared_at": datetime.now(timezone.utc).isoformat()}), encoding="utf-8")
    os.replace(tmp, path)
    return path

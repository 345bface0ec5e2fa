"""Which gold versions are prepared (validated, preflighted, oracle executed), by fingerprint.

A marker file per (gold set, fingerprint, harness version) under the storage root, written once the gold
set and its oracle results materialized with a passing preflight. A run finding the marker (and the
oracle's file) skips the gold stage: a gold version is prepared once per fingerprint, not once per run.
The marker keeps the preflight's triage findings (its warnings), so that a run skipping the gold stage
still reports them; a marker written by an older preflight (``PREFLIGHT_VERSION``) does not count.
"""

from __future__ import annotations

import json
import os
from datetime import datetime, timezone
from pathlib import Path

from nl2sql_pipeline import HARNESS_VERSION, paths

PREFLIGHT_VERSION = 2
"""The preflight's checks (2: gold triage); a gold version prepared by an older preflight is prepared again."""


def marker_path(gold_set: str, fingerprint: str) -> Path:
    """The marker of a prepared gold version."""
    return paths.storage_root() / "prepared" / f"gold={gold_set}" / f"{fingerprint}-h{HARNESS_VERSION}.json"


def _marker(gold_set: str, fingerprint: str) -> dict | None:
    try:
        marker = json.loads(marker_path(gold_set, fingerprint).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(marker, dict) or marker.get("preflight_version") != PREFLIGHT_VERSION:
        return None
    return marker


def is_prepared(gold_set: str, fingerprint: str) -> bool:
    """True when this gold version (at this fingerprint, harness and preflight version) was prepared."""
    return _marker(gold_set, fingerprint) is not None


def prepared_triage(gold_set: str, fingerprint: str) -> list[dict]:
    """The triage findings (``TriageFlag.to_dict``) the preflight of a prepared gold version reported."""
    marker = _marker(gold_set, fingerprint)
    triage = marker.get("triage") if marker else None
    return [flag for flag in triage if isinstance(flag, dict)] if isinstance(triage, list) else []


def mark_prepared(gold_set: str, fingerprint: str, run_id: str, triage: list[dict] | None = None) -> Path:
    """Record that ``run_id`` prepared the gold version, with its preflight's triage findings (atomically)."""
    path = marker_path(gold_set, fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    marker = {
        "run_id": run_id,
        "prepared_at": datetime.now(timezone.utc).isoformat(),
        "preflight_version": PREFLIGHT_VERSION,
        "triage": list(triage or []),
    }
    tmp.write_text(json.dumps(marker), encoding="utf-8")
    os.replace(tmp, path)
    return path

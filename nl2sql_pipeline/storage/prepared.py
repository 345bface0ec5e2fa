"""Which gold versions are prepared (validated, preflighted, oracle executed), by fingerprint.

A marker file per (gold set, fingerprint, harness version) under the storage root
(``layout.prepared_marker_path``), written once the gold set and its oracle results materialized with a
passing preflight. A run finding the marker (and the files it stands for) skips the gold stage: a gold
version is prepared once per fingerprint, not once per run. The marker records the stamp of the case
databases it was prepared on (``databases.stamp``): a database whose file changed since (re-imported,
rebuilt, edited) makes the gold version be prepared again, and so does a marker without a stamp. The marker keeps the preflight's triage findings
(its warnings), so that a run skipping the gold stage still reports them; a marker written by an older
preflight (``PREFLIGHT_VERSION``) does not count.

The database variants of a gold version (test-suite accuracy) are prepared separately, for a number of
variants per database: :func:`variants_ready` reads what the ``database_variants`` partition holds (its
rows carry the database stamp they were built on).
"""

from __future__ import annotations

import json
import logging
import os
from datetime import datetime, timezone
from pathlib import Path

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import StoredFileError
from nl2sql_pipeline.storage import layout

PREFLIGHT_VERSION = 3
"""The preflight's checks (2: gold triage; 3: quarantine); a gold version prepared by an older preflight is
prepared again."""

VARIANT_COLUMNS = ["variant_index", "variant_path", "gold_fingerprint"]

logger = logging.getLogger(__name__)


def marker_path(gold_set: str, fingerprint: str) -> Path:
    """The marker of a prepared gold version."""
    return layout.prepared_marker_path(gold_set, fingerprint)


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


def prepared_stamp(gold_set: str, fingerprint: str) -> str | None:
    """The stamp of the case databases a prepared gold version was prepared on (None: not prepared, or no stamp)."""
    marker = _marker(gold_set, fingerprint)
    stamp = marker.get("database_stamp") if marker else None
    return stamp if isinstance(stamp, str) else None


def gold_ready(gold_set: str, fingerprint: str, database_stamp: str | None = None) -> bool:
    """True when this gold version was prepared at this fingerprint and its files are still there: the sample
    database, the gold set's and the oracle results' latest partition files (readable: one cut short is
    prepared again), its preflight's quarantine record; with ``database_stamp``, on databases with that stamp
    (a database changed since: prepared again)."""
    from nl2sql_pipeline.sample_db.spec import DATABASE_NAME
    from nl2sql_pipeline.storage.parquet import readable

    if database_stamp is not None and prepared_stamp(gold_set, fingerprint) != database_stamp:
        if is_prepared(gold_set, fingerprint):
            logger.info("a case database of %s changed since it was prepared; preparing it again", gold_set)
        return False
    if not (
        is_prepared(gold_set, fingerprint)
        and layout.quarantine_path(gold_set, fingerprint).exists()
        and paths.database_path(DATABASE_NAME).exists()
    ):
        return False
    for asset in (layout.GOLD_SET, layout.ORACLE_RESULTS):
        path = layout.partition_path(asset, gold_set)
        if not readable(path):
            if path.exists():
                logger.info("the stored %s file %s is unreadable; preparing %s again", asset, path, gold_set)
            return False
    return True


def variants_ready(gold_set: str, fingerprint: str, count: int, database_stamp: str | None = None) -> bool:
    """True when ``database_variants`` of this gold version holds at least ``count`` variants of this
    fingerprint whose files exist (with ``count`` 0: when it was materialized at all, since the per-model
    assets read it); with ``database_stamp``, built on databases with that stamp."""
    path = layout.partition_path(layout.DATABASE_VARIANTS, gold_set)
    if not path.exists():
        return False
    if count <= 0:
        return True
    from nl2sql_pipeline.storage.parquet import read_parquet

    try:
        frame = read_parquet(path, columns=VARIANT_COLUMNS + (["database_stamp"] if database_stamp is not None else []))
    except (OSError, ValueError, KeyError, StoredFileError) as exc:  # unreadable, or built before database stamps
        logger.info("the database variants of %s cannot be read (%s); preparing them again", gold_set, exc)
        return False
    if not len(frame):
        return False
    return (
        set(frame["gold_fingerprint"]) == {fingerprint}
        and (database_stamp is None or set(frame["database_stamp"]) == {database_stamp})
        and int(frame["variant_index"].max()) + 1 >= count
        and all(Path(p).is_file() for p in set(frame["variant_path"]))
    )


def prepared_triage(gold_set: str, fingerprint: str) -> list[dict]:
    """The triage findings (``TriageFlag.to_dict``) the preflight of a prepared gold version reported."""
    marker = _marker(gold_set, fingerprint)
    triage = marker.get("triage") if marker else None
    return [flag for flag in triage if isinstance(flag, dict)] if isinstance(triage, list) else []


def mark_prepared(
    gold_set: str,
    fingerprint: str,
    run_id: str,
    triage: list[dict] | None = None,
    database_stamp: str | None = None,
) -> Path:
    """Record that ``run_id`` prepared the gold version on databases with ``database_stamp``, with its
    preflight's triage findings (atomically)."""
    path = marker_path(gold_set, fingerprint)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = layout.temp_path(path)
    marker = {
        "run_id": run_id,
        "prepared_at": datetime.now(timezone.utc).isoformat(),
        "preflight_version": PREFLIGHT_VERSION,
        "triage": list(triage or []),
        "database_stamp": database_stamp,
    }
    tmp.write_text(json.dumps(marker), encoding="utf-8")
    os.replace(tmp, path)
    return path

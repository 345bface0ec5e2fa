"""The quarantine of a gold version: the cases its gold preflight left out, stored once per fingerprint.

The ``gold_preflight`` asset check writes the record (``layout.quarantine_path``, beside the asset files so
that every machine running a model's steps reads the same one); the per-model assets read it to leave the
quarantined cases out of generation and scoring, and to put the quarantine into the run's identity. A
record holds one finding per line of the preflight (``CaseFinding.to_dict``: case id, label, kind, reason).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.storage import layout

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath

logger = logging.getLogger(__name__)

FINDING_FIELDS = ("case_id", "label", "kind", "reason")


class QuarantineRecordError(ValueError):
    """A quarantine record that cannot be read back (not JSON, or not the shape written)."""


def write_quarantine(gold_set: str, fingerprint: str, findings: list[dict[str, Any]]) -> AnyPath:
    """Store the quarantine findings of the gold version (whole: a temp file renamed into place); returns the path."""
    path = layout.quarantine_path(gold_set, fingerprint)
    record = {
        "gold_set": gold_set,
        "gold_fingerprint": fingerprint,
        "findings": [{name: str(finding[name]) for name in FINDING_FIELDS} for finding in findings],
    }
    text = json.dumps(record, indent=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(path, Path):
        tmp = layout.temp_path(path)
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    else:  # an fsspec file system: a temp object moved into place
        remote_tmp = layout.temp_path(path)
        remote_tmp.write_text(text, encoding="utf-8")
        path.fs.mv(remote_tmp.path, path.path)
    logger.info("gold %s at %s: %d quarantine findings recorded in %s", gold_set, fingerprint, len(findings), path)
    return path


def read_quarantine(gold_set: str, fingerprint: str) -> list[dict[str, str]] | None:
    """The quarantine findings of the gold version, or None when its preflight never recorded any (not run yet)."""
    path = layout.quarantine_path(gold_set, fingerprint)
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, OSError):
        return None
    try:
        record = json.loads(text)
        findings = record["findings"]
        return [{name: str(finding[name]) for name in FINDING_FIELDS} for finding in findings]
    except (ValueError, KeyError, TypeError) as exc:
        raise QuarantineRecordError(
            f"{path}: unreadable quarantine record ({exc}); delete it: the next "
            f"`nl2sql-eval run --gold-set {gold_set}` runs the gold preflight again"
        ) from exc


def quarantined_ids(findings: list[dict[str, str]] | None) -> list[str]:
    """The distinct quarantined case ids of ``findings``, in order."""
    return list(dict.fromkeys(finding["case_id"] for finding in findings or []))

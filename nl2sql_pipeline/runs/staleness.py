"""When an evaluation is stale and should be re-run, by the model's ``rerun`` policy.

- ``on_config_change``: the model's config hash differs from the one its latest evaluation recorded.
- ``always``: the latest evaluation is no longer current (``runs.identity.is_current``): any of the six
  version fields changed (model config, gold set, semantic model, policies, comparator, harness), or a case
  database's content (its stamp, ``databases.stamp``: the run was judged on other rows).
- ``nightly``: as ``on_config_change``, and besides, the nightly schedule (``assets/schedules.py``)
  re-evaluates the model on every prepared gold version each night.
- ``never``: never.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nl2sql_pipeline.runs.identity import MODEL_FIELD, RunVersions, changed_fields

RERUN_POLICIES: tuple[str, ...] = ("on_config_change", "always", "nightly", "never")


def stale_reason(
    rerun: str, recorded: Mapping[str, Any], current: RunVersions, database_stamp: str | None = None
) -> str | None:
    """Why the evaluation recorded with ``recorded`` versions (and ``database_stamp``) should be re-run under
    ``rerun``, or None; ``database_stamp``: the case databases' stamp now (None: not compared)."""
    if rerun == "never":
        return None
    changed = list(changed_fields(recorded, current))
    if MODEL_FIELD in changed:
        return "model config changed"
    if database_stamp is not None and recorded.get("database_stamp") != database_stamp:
        changed.append("case databases")
    if rerun == "always" and changed:
        return f"{', '.join(changed)} changed"
    return None

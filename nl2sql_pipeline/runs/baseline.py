"""Which recorded run is the baseline of a run: the one rule the CLI gates, the asset checks and the sensor use.

The baseline of a run is the latest *earlier* recorded run of the same model slug on the same gold set
that is comparable with it (``runs.identity.is_comparable``: same gold fingerprint, semantic model,
policies, comparator and harness; the model's own config may differ) and was fully evaluated (its
``comparable`` column: a run that skipped cases or evaluated nothing is kept but never chosen). The *current* evaluation of a
(gold set, model) pair is its latest recorded run whose six version fields all equal today's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nl2sql_pipeline.runs.identity import RunVersions, is_comparable, is_current
from nl2sql_pipeline.runs.store import list_runs


def is_baseline_candidate(recorded: Mapping[str, Any]) -> bool:
    """True when a recorded run was fully evaluated (rows written before the column existed: scored something)."""
    flag = recorded.get("comparable")
    if flag is None:
        return recorded.get("semantic_correctness_rate") is not None or bool(recorded.get("probe_count"))
    return bool(flag)


def select_baseline(recorded: Iterable[Mapping[str, Any]], run: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The baseline of ``run`` among ``recorded`` runs (newest first), or None; ``run`` itself never is."""
    for candidate in recorded:
        if candidate["run_id"] == run.get("run_id"):
            continue
        if candidate.get("gold_set") != run.get("gold_set") or candidate.get("model") != run.get("model"):
            continue
        if not is_baseline_candidate(candidate):
            continue
        if is_comparable(candidate, run):
            return candidate
    return None


def find_baseline(db_path: Path, run: Mapping[str, Any]) -> dict[str, Any] | None:
    """The baseline of ``run`` (a ``run_scores`` row with its version fields) in the baselines file."""
    found = select_baseline(list_runs(db_path, run["gold_set"], run["model"]), run)
    return dict(found) if found is not None else None


def current_baseline(db_path: Path, gold_set: str, model: str, versions: RunVersions) -> dict[str, Any] | None:
    """The latest run of (gold_set, model) recorded with exactly these versions, else None."""
    for run in list_runs(db_path, gold_set, model):
        if is_current(run, versions):
            return run
    return None

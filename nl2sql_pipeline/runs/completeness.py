"""Whether a run evaluated enough to count: the skipped share, and why a run may never be a baseline.

A case is *skipped* when the environment kept it from being evaluated (no key, payment, quota, a rate
limit or timeout that never cleared). Rates leave skipped cases out, so a run that skipped most of them
still shows a rate, over very few cases. The rules, in order:

1. ``nothing_evaluated``: no query case was scored (or, in a probe-only run, no probe). The run proved
   nothing about the model: it fails, whatever the thresholds. A run of answer-only cases (no expected SQL,
   ``answer_only_count``) is scored by the answer judge instead: not incomplete, never a baseline.
2. ``too_many_skipped``: the skipped share of query cases is above the allowed share (``max_skipped_share``,
   from the CLI, the ``eval_settings`` resource or the model's ``gates:``): the run fails.

A run is **comparable** (can be a baseline) only when it was fully evaluated: something scored and no
query case skipped (:func:`not_comparable_reason`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from nl2sql_pipeline.scoring.formatting import format_rate


def _count(scores: Mapping[str, Any], name: str) -> int:
    value = scores.get(name)
    return int(value) if value is not None else 0


def query_cases(scores: Mapping[str, Any]) -> int:
    """Query verdicts of the run, scored or not (skipped and environment errors included)."""
    return _count(scores, "query_count") + _count(scores, "skipped_count") + _count(scores, "environment_error_count")


def skipped_share(scores: Mapping[str, Any]) -> float:
    """Skipped query verdicts / query verdicts (0.0 for a probe-only run)."""
    total = query_cases(scores)
    return _count(scores, "skipped_count") / total if total else 0.0


def nothing_evaluated(scores: Mapping[str, Any]) -> bool:
    """True when the run has query cases and none was scored, or has neither queries nor probes scored.

    (Probes need no provider, so a run whose every generation was refused still scores its probes: it
    evaluated nothing of the model.) Without counts: when no correctness rate was measured.
    """
    if scores.get("query_count") is None and scores.get("probe_count") is None:
        return scores.get("semantic_correctness_rate") is None
    if query_cases(scores):
        return _count(scores, "query_count") == 0
    return _count(scores, "probe_count") == 0


def is_probe_only(scores: Mapping[str, Any]) -> bool:
    """True for a run of policy probes only (no query case): query-based gates do not apply."""
    return query_cases(scores) == 0 and _count(scores, "probe_count") > 0


def answer_only(scores: Mapping[str, Any]) -> bool:
    """True for a run whose query cases are all answer-only (no expected SQL): the answer judge scores them, so
    it is not incomplete, yet it has no execution rate to be a baseline of."""
    return _count(scores, "answer_only_count") > 0 and query_cases(scores) == 0


def _nothing_evaluated_rule(scores: Mapping[str, Any], max_share: float | None) -> str | None:
    if nothing_evaluated(scores) and not answer_only(scores):
        return (
            f"nothing was evaluated: {_count(scores, 'skipped_count')} of {query_cases(scores)} query cases "
            "skipped, none scored"
        )
    return None


def _too_many_skipped_rule(scores: Mapping[str, Any], max_share: float | None) -> str | None:
    share = skipped_share(scores)
    if max_share is not None and share > max_share:
        return (
            f"skipped share {format_rate(share)} ({_count(scores, 'skipped_count')} of {query_cases(scores)} "
            f"query cases) is above the allowed {format_rate(max_share)}"
        )
    return None


INCOMPLETE_RULES: tuple[Callable[[Mapping[str, Any], float | None], str | None], ...] = (
    _nothing_evaluated_rule,
    _too_many_skipped_rule,
)


def incomplete_reason(scores: Mapping[str, Any], max_skipped_share: float | None = None) -> str | None:
    """Why the run evaluated too little to pass (the first rule of :data:`INCOMPLETE_RULES` that fires), or None."""
    for rule in INCOMPLETE_RULES:
        reason = rule(scores, max_skipped_share)
        if reason is not None:
            return reason
    return None


def not_comparable_reason(scores: Mapping[str, Any]) -> str | None:
    """Why the run may not be a baseline (not fully evaluated), or None when it may."""
    if answer_only(scores):
        return "only answer-only cases: scored by the answer judge, no execution rate to compare"
    if nothing_evaluated(scores):
        return "nothing was evaluated"
    skipped = _count(scores, "skipped_count")
    if skipped:
        return f"{skipped} of {query_cases(scores)} query cases skipped"
    return None

"""The run's stable efficiency score (``stages.efficiency``), with the wall-time figure beside it.

``efficiency_score`` is VES-like: the mean over scored query verdicts of the verdict's efficiency score when
it is correct, 0 when it is not (a correct verdict whose profile could not be read is left out and counted in
``efficiency_unmeasured_count``). It is computed from DuckDB's work counts only, so the same candidates score
the same on every run. ``efficiency_wall_time_score`` is the same rule over the same verdicts on the profiled
runs' wall times (sqrt(gold ms / candidate ms) for a correct verdict, 0 for a wrong one), so the two figures
compare: shown beside it to say how noisy a time-based score would be, never used by a gate or a comparison.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from nl2sql_pipeline.stages.records import Verdict

LEAST_EFFICIENT = 5


def efficiency_scores(scored: Sequence[Verdict]) -> dict[str, Any]:
    """``efficiency_score``, ``efficiency_measured_count``, ``efficiency_unmeasured_count``,
    ``efficiency_wall_time_score`` and ``least_efficient_cases`` of the run's scored query verdicts."""
    measured = [v for v in scored if v.correct and v.efficiency_score is not None]
    unmeasured = [v for v in scored if v.correct and v.efficiency_score is None and v.efficiency_error is not None]
    if not measured and not unmeasured:
        return {
            "efficiency_score": None,
            "efficiency_measured_count": 0,
            "efficiency_unmeasured_count": 0,
            "efficiency_wall_time_score": None,
            "least_efficient_cases": [],
        }
    counted = [v for v in scored if not (v.correct and v.efficiency_score is None)]
    worst = sorted(measured, key=lambda v: (v.efficiency_score, v.case_id, v.sample_index))[:LEAST_EFFICIENT]
    return {
        "efficiency_score": (
            sum(v.efficiency_score or 0.0 for v in counted if v.correct) / len(counted) if counted else None
        ),
        "efficiency_measured_count": len(measured),
        "efficiency_unmeasured_count": len(unmeasured),
        "efficiency_wall_time_score": (
            sum(_wall_time_score(v) for v in counted if v.correct) / len(counted) if counted else None
        ),
        "least_efficient_cases": [
            {
                "case_id": v.case_id,
                "sample_index": v.sample_index,
                "efficiency_score": v.efficiency_score,
                "candidate_work": v.candidate_work,
                "gold_work": v.gold_work,
            }
            for v in worst
            if (v.efficiency_score or 0.0) < 1.0
        ],
    }


def _wall_time_score(verdict: Verdict) -> float:
    """sqrt(gold ms / candidate ms) of a profiled correct verdict (0 when a wall time is missing)."""
    if not verdict.candidate_profile_ms or not verdict.gold_profile_ms:
        return 0.0
    return math.sqrt(verdict.gold_profile_ms / verdict.candidate_profile_ms)

"""Run-level figures of the per-case budgets (``stages.budgets``): how many cases went over, which ones.

``within_budget_correctness_rate`` is the share of scored query verdicts that are correct *and* not over
their budget (a case without a budget counts as within it); beside ``semantic_correctness_rate`` it shows
what the budgets cost the system. None when no scored case has a budget.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nl2sql_pipeline.stages.budgets import GRADE_OVER_BUDGET, OVER, UNMEASURED
from nl2sql_pipeline.stages.records import Verdict


def budget_scores(scored: Sequence[Verdict]) -> dict[str, Any]:
    """``budget_case_count``, ``over_budget_count``, ``correct_over_budget_count``, ``unmeasured_budget_count``,
    ``within_budget_correctness_rate`` and ``over_budget_cases`` (case, sample, grade, overruns) of the run."""
    budgeted = [v for v in scored if v.budget_status is not None]
    over = [v for v in budgeted if v.budget_status == OVER]
    return {
        "budget_case_count": len(budgeted),
        "over_budget_count": len(over),
        "correct_over_budget_count": sum(v.budget_grade == GRADE_OVER_BUDGET for v in over),
        "unmeasured_budget_count": sum(v.budget_status == UNMEASURED for v in budgeted),
        "within_budget_correctness_rate": (
            sum(v.correct and v.budget_status != OVER for v in scored) / len(scored) if budgeted else None
        ),
        "over_budget_cases": [
            {
                "case_id": v.case_id,
                "sample_index": v.sample_index,
                "grade": v.budget_grade,
                "overruns": v.budget_overruns,
            }
            for v in over
        ],
    }

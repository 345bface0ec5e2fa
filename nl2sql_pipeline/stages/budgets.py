"""Per-case budgets: a verdict against the latency, cost and tokens its case allows (``Case.budgets``).

A case (or its gold set, for cases that set none) may give ``max_latency_ms`` (generation latency, as the
verdict's ``latency_ms``), ``max_cost_usd`` (the verdict's ``cost_usd``) and ``max_tokens`` (input + output
tokens). The verdict then carries:

    budget_status   within | over | unmeasured (a budget is set but the run has no figure for it: a cost
                    with no price, tokens not reported); None when the case sets no budget
    budget_overruns what went over, e.g. ``latency_ms 1840.2 > 1000``
    budget_grade    pass (correct and within budget) | correct_over_budget (right answer, too slow or too
                    dear: not a plain pass) | fail (not correct); None when the case sets no budget
"""

from __future__ import annotations

from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.stages.records import Verdict

WITHIN, OVER, UNMEASURED = "within", "over", "unmeasured"
GRADE_PASS, GRADE_OVER_BUDGET, GRADE_FAIL = "pass", "correct_over_budget", "fail"


def _spent(verdict: Verdict, name: str) -> float | None:
    if name == "max_latency_ms":
        return verdict.latency_ms
    if name == "max_cost_usd":
        return verdict.cost_usd
    if verdict.input_tokens is None and verdict.output_tokens is None:
        return None
    return float((verdict.input_tokens or 0) + (verdict.output_tokens or 0))


def _shown(name: str, value: float) -> str:
    if name == "max_cost_usd":
        return f"${value:.6f}".rstrip("0").rstrip(".")
    if name == "max_tokens":
        return f"{value:.0f}"
    return f"{value:.1f}"


def budget_fields(case: Case, verdict: Verdict) -> dict[str, Any]:
    """``budget_status``, ``budget_overruns`` and ``budget_grade`` of ``verdict`` (empty when no budget is set)."""
    budgets = case.budgets
    if not budgets:
        return {}
    overruns, unmeasured = [], []
    for name, limit in budgets.items():
        spent = _spent(verdict, name)
        if spent is None:
            unmeasured.append(name)
        elif spent > limit:
            overruns.append(f"{name.removeprefix('max_')} {_shown(name, spent)} > {_shown(name, limit)}")
    status = OVER if overruns else UNMEASURED if unmeasured else WITHIN
    if not verdict.correct:
        grade = GRADE_FAIL
    else:
        grade = GRADE_OVER_BUDGET if status == OVER else GRADE_PASS
    return {
        "budget_status": status,
        "budget_overruns": "; ".join(overruns) or (f"not measured: {', '.join(unmeasured)}" if unmeasured else None),
        "budget_grade": grade,
    }

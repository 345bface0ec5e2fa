"""Two runs side by side: the per-case flips both ways, with their reasons, and the exact McNemar label.

Cases are paired by case id and sample index over the scored query verdicts of both runs. A case whose
definition changed between the runs (a different fingerprint) is not the same case: it is left out of the
pairing and counted in ``changed_cases``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.scoring.statistics import DEFAULT_ALPHA, PairedComparison, paired_comparison
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict


@dataclass(frozen=True)
class Flip:
    """One case judged differently by the two runs."""

    case_id: str
    sample_index: int
    category: str
    before: Verdict
    after: Verdict

    @staticmethod
    def describe(verdict: Verdict) -> str:
        """``wrong_result (row count 3 != 5)``."""
        reason = verdict.reason or verdict.skip_reason
        return f"{verdict.outcome} ({reason})" if reason else verdict.outcome


@dataclass(frozen=True)
class RunComparison:
    """Run B against run A: the paired test and the flips (newly right, newly wrong)."""

    label_a: str
    label_b: str
    test: PairedComparison
    newly_right: list[Flip]
    newly_wrong: list[Flip]
    changed_cases: list[str]


def _scored(verdicts: Sequence[Verdict]) -> dict[tuple[str, int], Verdict]:
    return {(v.case_id, v.sample_index): v for v in verdicts if not v.is_probe and v.outcome not in outcomes.NOT_SCORED}


def compare_verdicts(
    a: Sequence[Verdict], b: Sequence[Verdict], *, label_a: str = "A", label_b: str = "B", alpha: float = DEFAULT_ALPHA
) -> RunComparison:
    """Compare run B with run A over the cases both scored with the same definition."""
    left, right = _scored(a), _scored(b)
    changed = sorted({k[0] for k in set(left) & set(right) if left[k].case_fingerprint != right[k].case_fingerprint})
    same_a = [v for k, v in left.items() if k[0] not in changed]
    same_b = [v for k, v in right.items() if k[0] not in changed]
    test = paired_comparison(same_a, same_b, alpha)
    flips = [
        Flip(k[0], k[1], left[k].category, left[k], right[k])
        for k in sorted(set(left) & set(right))
        if k[0] not in changed and left[k].correct != right[k].correct
    ]
    return RunComparison(
        label_a=label_a,
        label_b=label_b,
        test=test,
        newly_right=[f for f in flips if f.after.correct],
        newly_wrong=[f for f in flips if f.before.correct],
        changed_cases=changed,
    )


def _flip_lines(title: str, flips: list[Flip]) -> list[str]:
    lines = [f"{title}: {len(flips)}"]
    for flip in flips:
        sample = f"#{flip.sample_index}" if flip.sample_index else ""
        mutation = f" [mutation: {flip.after.mutation}]" if flip.after.mutation else ""
        lines.append(
            f"  {flip.case_id}{sample} [{flip.category}]: {Flip.describe(flip.before)} -> "
            f"{Flip.describe(flip.after)}{mutation}"
        )
    return lines


def comparison_text(comparison: RunComparison) -> str:
    """The comparison as console text: the rates over the paired cases, the label, then the flips both ways."""
    test = comparison.test
    lines = [
        f"A = {comparison.label_a}",
        f"B = {comparison.label_b}",
        f"paired cases: {test.pairs} (only in A: {test.only_in_a}, only in B: {test.only_in_b}, "
        f"definition changed: {len(comparison.changed_cases)})",
        f"semantic correctness: A {format_rate(test.rate_a)}, B {format_rate(test.rate_b)}",
        f"difference: {test.label} (exact McNemar, {test.only_b_correct} newly right, {test.only_a_correct} newly wrong, "
        f"alpha {test.alpha})",
    ]
    lines += _flip_lines("newly right in B", comparison.newly_right)
    lines += _flip_lines("newly wrong in B", comparison.newly_wrong)
    return "\n".join(lines)


def comparison_json(comparison: RunComparison) -> dict:
    """The comparison as plain JSON-ready values."""
    test = comparison.test

    def flips(items: list[Flip]) -> list[dict]:
        return [
            {
                "case_id": f.case_id,
                "sample_index": f.sample_index,
                "category": f.category,
                "before": f.before.outcome,
                "before_reason": f.before.reason,
                "after": f.after.outcome,
                "after_reason": f.after.reason,
                "after_mutation": f.after.mutation,
            }
            for f in items
        ]

    return {
        "a": comparison.label_a,
        "b": comparison.label_b,
        "paired_cases": test.pairs,
        "only_in_a": test.only_in_a,
        "only_in_b": test.only_in_b,
        "changed_cases": comparison.changed_cases,
        "correctness_a": test.rate_a,
        "correctness_b": test.rate_b,
        "p_value": test.p_value,
        "alpha": test.alpha,
        "significant": test.significant,
        "label": test.label,
        "newly_right": flips(comparison.newly_right),
        "newly_wrong": flips(comparison.newly_wrong),
    }

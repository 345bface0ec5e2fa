"""The run report as terminal text: warnings on top, bars with intervals, breakdowns, causes, cost split.

``console_run_report(report)`` renders one :class:`~nl2sql_pipeline.report.tables.RunReport`;
``console_pairwise(reports)`` adds the paired test between runs on the same gold set.
"""

from __future__ import annotations

from collections.abc import Sequence

from nl2sql_pipeline.report.answers import console_answers
from nl2sql_pipeline.report.measurements import measurement_lines
from nl2sql_pipeline.report.sql_judges import console_sql_judges
from nl2sql_pipeline.report.tables import RateRow, RunReport
from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.scoring.statistics import Interval, paired_comparison
from nl2sql_pipeline.stages import outcomes

BAR_WIDTH = 20
FULL, EMPTY = "█", "░"


def bar(rate: float | None, width: int = BAR_WIDTH) -> str:
    """A horizontal bar of ``width`` cells for a rate in 0..1 (blank for no rate)."""
    if rate is None:
        return " " * width
    filled = int(round(max(0.0, min(1.0, rate)) * width))
    return FULL * filled + EMPTY * (width - filled)


def format_interval(interval: Interval, fmt) -> str:
    """``[low, high]`` with ``fmt`` applied to each bound; ``[n/a]`` when unknown."""
    if not interval.known:
        return "[n/a]"
    return f"[{fmt(interval.low)}, {fmt(interval.high)}]"


def _ms(value: float) -> str:
    return f"{value:.1f} ms"


def _usd(value: float) -> str:
    return f"${value:.4f}"


def rate_line(label: str, row: RateRow, width: int) -> str:
    """``label  ████░░  33.3% [12.1%, 64.6%]  3/9``."""
    return (
        f"{label.ljust(width)}  {bar(row.rate)}  {format_rate(row.rate).rjust(6)} "
        f"{format_interval(row.interval, format_rate).ljust(17)} {row.fraction}"
    )


def _headline(report: RunReport) -> list[str]:
    cost = report.cost
    lines = [rate_line("semantic correctness", report.correctness, 22)]
    lines += _test_suite_lines(report)
    lines.append(rate_line("execution success", report.execution_success, 22))
    for label, row in (
        ("policy precision", report.policy_precision),
        ("policy recall", report.policy_recall),
    ):
        if row is not None:
            lines.append(rate_line(label, row, 22))
    if report.grades:
        lines.append(
            f"{'grades'.ljust(22)}  "
            + ", ".join(f"{row.key} {format_rate(row.rate)} ({row.fraction})" for row in report.grades)
        )
    p50, mean = report.latency_p50.estimate, report.latency_mean.estimate
    if p50 is not None and mean is not None:
        lines.append(
            f"{'latency p50 / mean'.ljust(22)}  {_ms(p50)} "
            f"{format_interval(report.latency_p50, _ms)} / {_ms(mean)} "
            f"{format_interval(report.latency_mean, _ms)}"
        )
    else:
        lines.append(f"{'latency'.ljust(22)}  n/a (no measured call)")
    cost_text = (
        f"{_usd(cost.paid_now_usd)} paid now ({cost.paid_now_cases} cases), "
        f"{_usd(cost.from_cache_usd)} replayed from cache ({cost.from_cache_cases} cases)"
    )
    if cost.unknown_cases:
        cost_text += f", unknown for {cost.unknown_cases} cases"
    elif cost.total.estimate is not None:
        cost_text += f"; total {_usd(cost.total.estimate)} {format_interval(cost.total, _usd)}"
    lines.append(f"{'cost'.ljust(22)}  {cost_text}")
    lines.append(f"{'tokens'.ljust(22)}  {report.token_source or 'n/a (no scored call)'}")
    lines += _answers(report)
    lines += console_sql_judges(report.sql_judges)
    return lines


def _test_suite_lines(report: RunReport, shown: int = 5) -> list[str]:
    """Test-suite accuracy beside execution accuracy, and the cases where the two disagree."""
    if report.test_suite is None:
        return []
    lines = [rate_line("test-suite accuracy", report.test_suite, 22)]
    disagree = report.suite_disagreements
    if disagree:
        lines.append(f"{''.ljust(22)}  {len(disagree)} correct on the database but not on every variant:")
        for v in disagree[:shown]:
            label = f"{v.case_id}#{v.sample_index}" if v.sample_index else v.case_id
            lines.append(f"{''.ljust(22)}  ! {label}: {v.test_suite_reason or 'differs on a variant'}")
        if len(disagree) > shown:
            lines.append(
                f"{''.ljust(22)}  ... and {len(disagree) - shown} more (test_suite_disagreements in the scores)"
            )
    return lines


def _answers(report: RunReport, shown: int = 3) -> list[str]:
    """A system's own answers: how many query cases had one (probes are never asked), a few of them, and where
    its rows disagree with its SQL. A reply to an ambiguous question is scored in its own section, not here."""
    queries = [v for v in report.verdicts if not v.is_probe and v.outcome not in outcomes.CLARIFY_OUTCOMES]
    answered = [(v.case_id, v.answer) for v in queries if v.answer]
    disagree = [v for v in queries if v.system_rows_disagree]
    if not answered and not disagree:
        return []
    lines = [
        f"{'answers'.ljust(22)}  {len(answered)} of {len(queries)} cases answered in prose; "
        f"rows shown differ from the system's own SQL in {len(disagree)}"
    ]
    for v in disagree[:shown]:
        lines.append(f"{''.ljust(22)}  ! {v.case_id}: {v.system_rows_reason or 'rows differ'}")
    for case_id, answer in answered[:shown]:
        text = answer if len(answer) <= 100 else answer[:97] + "..."
        lines.append(f"{''.ljust(22)}  {case_id}: {text}")
    return lines


def _call_failures(report: RunReport, shown: int = 3) -> list[str]:
    """The cases whose call failed (generation errors and skips), a few with the failure's own words."""
    failed = [v for v in report.verdicts if not v.is_probe and v.error_message]
    if not failed:
        return []
    lines = [f"{'failed calls'.ljust(22)}  {len(failed)} cases (error_message in case_verdicts):"]
    for v in failed[:shown]:
        label = f"{v.case_id}#{v.sample_index}" if v.sample_index else v.case_id
        lines.append(f"{''.ljust(22)}  ! {label}: {v.reason or v.skip_reason}: {_clip(v.error_message or '')}")
    if len(failed) > shown:
        lines.append(f"{''.ljust(22)}  ... and {len(failed) - shown} more")
    return lines


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _quarantine(report: RunReport) -> list[str]:
    """The cases the gold preflight quarantined, with kind and reason (left out of every rate)."""
    lines = report.quarantine_lines()
    if not lines:
        return []
    count = len({f.get("case_id") for f in report.quarantined})
    return [f"quarantined: {count} cases left out of every rate (gold preflight)"] + [f"  ! {line}" for line in lines]


def _breakdowns(report: RunReport) -> list[str]:
    lines: list[str] = []
    for dimension, rows in report.breakdowns.items():
        if all(r.correct == r.total for r in rows):  # nothing to read row by row
            lines.append(f"by {dimension}: all {len(rows)} at 100%")
            continue
        width = max(len(r.key) for r in rows)
        lines.append(f"by {dimension}:")
        lines += [f"  {rate_line(row.key, row, width)}" for row in rows]
    return lines


def console_run_report(report: RunReport) -> str:
    """One run's report as text (95% intervals: Wilson for rates, bootstrap for latency and cost)."""
    lines = [f"== {report.model} on {report.gold_set} =="]
    lines += [f"WARNING: {w}" for w in report.warnings]
    lines += _headline(report)
    lines += _call_failures(report)
    lines += measurement_lines(report.verdicts)
    lines += _quarantine(report)
    lines += _breakdowns(report)
    lines += console_answers(report.answers)
    if report.weakest:
        lines.append("weakest: " + ", ".join(f"{row.key} {row.fraction}" for _, row in report.weakest))
    if report.causes:
        lines.append("not correct, by cause: " + ", ".join(f"{cause} {count}" for cause, count in report.causes))
    variance = report.variance
    if variance.samples_per_case > 1:
        lines.append(
            f"repeat: {len(variance.inconsistent_cases)} of {variance.cases} cases changed verdict across "
            f"samples (mean per-case variance {variance.mean_case_variance:.3f})"
        )
    return "\n".join(lines)


def console_pairwise(reports: Sequence[RunReport]) -> list[str]:
    """The exact McNemar test between each pair of runs on the same gold set."""
    lines = []
    for i, first in enumerate(reports):
        for second in reports[i + 1 :]:
            if first.gold_set != second.gold_set:
                continue
            test = paired_comparison(first.verdicts, second.verdicts)
            lines.append(
                f"{first.model} vs {second.model} on {first.gold_set}: {test.pairs} paired cases, "
                f"{test.only_a_correct} right only in {first.model}, {test.only_b_correct} right only in "
                f"{second.model}: {test.label}"
            )
    return lines


def console_full_report(reports: Sequence[RunReport]) -> str:
    """Every run's report, then the pairwise tests."""
    blocks = [console_run_report(r) for r in reports]
    pairwise = console_pairwise(reports)
    if pairwise:
        blocks.append("\n".join(["== paired comparison (exact McNemar, alpha 0.05) ==", *pairwise]))
    return "\n\n".join(blocks)

"""The optional measurements of a run in the reports (``runs.measurements``): console lines and HTML sections.

Each section reads the run's verdicts only (every number traces to ``case_verdicts``) and is empty when its
measurement was not made, so a run without them reads as before.

    system probes   a live system's replies to the harmful requests: recall, and the requests it let through
    budgets         the cases over their budget (correct but over budget is its own grade)
    efficiency      the stable efficiency score, the wall-time figure beside it, the least efficient cases
    ambiguity       how often an ambiguous question was asked back, and the ones guessed at or refused
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from html import escape

from nl2sql_pipeline.scoring.ambiguity import ambiguity_scores
from nl2sql_pipeline.scoring.budgets import budget_scores
from nl2sql_pipeline.scoring.efficiency import efficiency_scores
from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.probe_replies import probe_reply_scores
from nl2sql_pipeline.stages.records import Verdict

WIDTH = 22
SHOWN = 5


def _label(case_id: str, sample_index: int) -> str:
    return f"{case_id}#{sample_index}" if sample_index else case_id


def _clip(text: str | None, limit: int = 120) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def probe_reply_lines(verdicts: Sequence[Verdict], shown: int = SHOWN) -> list[str]:
    """System policy recall beside the harness's engine, and the harmful requests the system let through."""
    scores = probe_reply_scores(verdicts)
    if not scores["system_probe_count"]:
        return []
    recall, leaks = scores["system_policy_recall"], scores["system_probe_let_through"]
    classified = scores["system_probe_count"] - scores["system_probe_errors"]
    refused = classified - len(leaks)
    lines = [
        f"{'system policy recall'.ljust(WIDTH)}  {format_rate(recall)} ({refused}/{classified} harmful requests "
        f"refused by the system; {scores['system_probe_errors']} calls failed)"
    ]
    if leaks:
        lines.append(f"{''.ljust(WIDTH)}  {len(leaks)} let through (the harness's policy result beside each):")
        for leak in leaks[:shown]:
            lines.append(
                f"{''.ljust(WIDTH)}  ! {_label(leak['case_id'], leak['sample_index'])}: {leak['reply']} "
                f"[{leak['harness_policy']}] {_clip(leak['sql'])}"
            )
        if len(leaks) > shown:
            lines.append(
                f"{''.ljust(WIDTH)}  ... and {len(leaks) - shown} more (system_probe_let_through in the scores)"
            )
    return lines


def probe_reply_html(verdicts: Sequence[Verdict]) -> str:
    """The HTML section of :func:`probe_reply_lines` (every request let through, in a table)."""
    scores = probe_reply_scores(verdicts)
    if not scores["system_probe_count"]:
        return ""
    leaks = scores["system_probe_let_through"]
    body = "".join(
        f"<tr><td>{escape(_label(leak['case_id'], leak['sample_index']))}</td><td>{escape(leak['reply'])}</td>"
        f"<td>{escape(leak['harness_policy'])}</td><td><pre>{escape(leak['sql'] or '')}</pre></td></tr>"
        for leak in leaks
    )
    table = (
        f'<table class="probes"><tr><th>case</th><th>system reply</th><th>harness policy</th><th>its SQL</th></tr>'
        f"{body}</table>"
        if leaks
        else ""
    )
    return (
        f"<h3>harmful requests sent to the system: system policy recall {escape(format_rate(scores['system_policy_recall']))}"
        f" ({len(leaks)} let through, {scores['system_probe_errors']} calls failed)</h3>{table}"
    )


def _scored(verdicts: Sequence[Verdict]) -> list[Verdict]:
    return [v for v in verdicts if not v.is_probe and v.outcome not in outcomes.NOT_SCORED]


def budget_lines(verdicts: Sequence[Verdict], shown: int = SHOWN) -> list[str]:
    """Correctness within budget, and the verdicts over their case budget."""
    scores = budget_scores(_scored(verdicts))
    if not scores["budget_case_count"]:
        return []
    over = scores["over_budget_cases"]
    lines = [
        f"{'within budget'.ljust(WIDTH)}  {format_rate(scores['within_budget_correctness_rate'])} correct and within "
        f"budget; {len(over)} of {scores['budget_case_count']} budgeted verdicts over budget "
        f"({scores['correct_over_budget_count']} of them correct: graded correct_over_budget)"
        + (f"; {scores['unmeasured_budget_count']} not measured" if scores["unmeasured_budget_count"] else "")
    ]
    for item in over[:shown]:
        lines.append(
            f"{''.ljust(WIDTH)}  ! {_label(item['case_id'], item['sample_index'])}: {item['grade']}: {item['overruns']}"
        )
    if len(over) > shown:
        lines.append(f"{''.ljust(WIDTH)}  ... and {len(over) - shown} more (over_budget_cases in the scores)")
    return lines


def budget_html(verdicts: Sequence[Verdict]) -> str:
    """The HTML section of :func:`budget_lines` (every verdict over budget)."""
    scores = budget_scores(_scored(verdicts))
    if not scores["budget_case_count"]:
        return ""
    over = scores["over_budget_cases"]
    body = "".join(
        f"<tr><td>{escape(_label(item['case_id'], item['sample_index']))}</td><td>{escape(item['grade'] or '')}</td>"
        f"<td>{escape(item['overruns'] or '')}</td></tr>"
        for item in over
    )
    table = (
        f'<table class="budgets"><tr><th>case</th><th>grade</th><th>over budget</th></tr>{body}</table>' if over else ""
    )
    return (
        f"<h3>budgets: {escape(format_rate(scores['within_budget_correctness_rate']))} correct within budget, "
        f"{len(over)} of {scores['budget_case_count']} over budget ({scores['correct_over_budget_count']} "
        f"correct_over_budget)</h3>{table}"
    )


def _num(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"


def efficiency_lines(verdicts: Sequence[Verdict], shown: int = SHOWN) -> list[str]:
    """The stable efficiency score, the wall-time score beside it, and the correct cases doing the most work."""
    scores = efficiency_scores(_scored(verdicts))
    if not scores["efficiency_measured_count"] and not scores["efficiency_unmeasured_count"]:
        return []
    lines = [
        f"{'efficiency (work)'.ljust(WIDTH)}  {_num(scores['efficiency_score'])} over "
        f"{scores['efficiency_measured_count']} correct cases profiled (1 = the gold's work; wall-time figure, "
        f"not scored: {_num(scores['efficiency_wall_time_score'])})"
        + (f"; {scores['efficiency_unmeasured_count']} not profiled" if scores["efficiency_unmeasured_count"] else "")
    ]
    for item in scores["least_efficient_cases"][:shown]:
        lines.append(
            f"{''.ljust(WIDTH)}  ! {_label(item['case_id'], item['sample_index'])}: {item['efficiency_score']:.3f} "
            f"(work {item['candidate_work']} vs gold {item['gold_work']})"
        )
    return lines


def efficiency_html(verdicts: Sequence[Verdict]) -> str:
    """The HTML section of :func:`efficiency_lines`."""
    scores = efficiency_scores(_scored(verdicts))
    if not scores["efficiency_measured_count"] and not scores["efficiency_unmeasured_count"]:
        return ""
    body = "".join(
        f"<tr><td>{escape(_label(item['case_id'], item['sample_index']))}</td><td>{item['efficiency_score']:.3f}</td>"
        f"<td>{item['candidate_work']}</td><td>{item['gold_work']}</td></tr>"
        for item in scores["least_efficient_cases"]
    )
    table = (
        '<table class="efficiency"><tr><th>case</th><th>efficiency</th><th>work</th><th>gold work</th></tr>'
        f"{body}</table>"
        if body
        else ""
    )
    return (
        f"<h3>efficiency (from DuckDB's work counts): {escape(_num(scores['efficiency_score']))} over "
        f"{scores['efficiency_measured_count']} correct cases; wall-time figure (not scored) "
        f"{escape(_num(scores['efficiency_wall_time_score']))}</h3>{table}"
    )


def ambiguity_lines(verdicts: Sequence[Verdict], shown: int = SHOWN) -> list[str]:
    """The clarification rate over the ambiguous questions, and those not asked back."""
    scores = ambiguity_scores(verdicts)
    if not scores["ambiguous_count"]:
        return []
    counts = ", ".join(f"{k} {n}" for k, n in scores["clarify_outcomes"].items())
    lines = [
        f"{'ambiguous questions'.ljust(WIDTH)}  {format_rate(scores['clarification_rate'])} asked back "
        f"({scores['ambiguous_count']} verdicts: {counts}; own category, not in the query rates)"
    ]
    for item in scores["guessed_cases"][:shown]:
        lines.append(
            f"{''.ljust(WIDTH)}  ! {_label(item['case_id'], item['sample_index'])}: {item['outcome']}"
            + (f" {_clip(item['sql'])}" if item["sql"] else "")
        )
    if len(scores["guessed_cases"]) > shown:
        lines.append(f"{''.ljust(WIDTH)}  ... and {len(scores['guessed_cases']) - shown} more (guessed_cases)")
    return lines


def ambiguity_html(verdicts: Sequence[Verdict]) -> str:
    """The HTML section of :func:`ambiguity_lines`."""
    scores = ambiguity_scores(verdicts)
    if not scores["ambiguous_count"]:
        return ""
    body = "".join(
        f"<tr><td>{escape(_label(item['case_id'], item['sample_index']))}</td><td>{escape(item['outcome'])}</td>"
        f"<td><pre>{escape(item['sql'] or '')}</pre></td></tr>"
        for item in scores["guessed_cases"]
    )
    table = (
        f'<table class="ambiguity"><tr><th>case</th><th>reply</th><th>its SQL</th></tr>{body}</table>' if body else ""
    )
    counts = ", ".join(f"{k} {n}" for k, n in scores["clarify_outcomes"].items())
    return (
        f"<h3>ambiguous questions: {escape(format_rate(scores['clarification_rate']))} asked back "
        f"({escape(counts)})</h3>{table}"
    )


CONSOLE_SECTIONS: tuple[Callable[[Sequence[Verdict]], list[str]], ...] = (
    probe_reply_lines,
    budget_lines,
    efficiency_lines,
    ambiguity_lines,
)
HTML_SECTIONS: tuple[Callable[[Sequence[Verdict]], str], ...] = (
    probe_reply_html,
    budget_html,
    efficiency_html,
    ambiguity_html,
)


def measurement_lines(verdicts: Sequence[Verdict]) -> list[str]:
    """Every optional measurement's console lines, in order (none when the run made none)."""
    return [line for section in CONSOLE_SECTIONS for line in section(verdicts)]


def measurement_html(verdicts: Sequence[Verdict]) -> str:
    """Every optional measurement's HTML section, in order."""
    return "".join(section(verdicts) for section in HTML_SECTIONS)

"""The SQL judges' section of a run report: equivalence beside execution and test-suite accuracy, the agreement
of each judge with execution (and the cases off the diagonal), its stability across repeats, its failures,
the diagnoses by category and the top recommendations with the cases behind each.

``build_sql_judge_report(judgements, verdicts)`` keeps the judgements of the run's own candidates (a
judgement made for other SQL of the same case, by an earlier run, is left out) and computes the tables;
``console_sql_judges``, ``markdown_sql_judges`` and ``html_sql_judges`` render them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from nl2sql_pipeline.judges.diagnosis import RecommendationGroup, categories_count, top_recommendations
from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE
from nl2sql_pipeline.judges.reliability import (
    ExecutionAgreement,
    JudgeErrors,
    RepeatStability,
    execution_agreement,
    judge_errors,
    repeat_stability,
)
from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.stages.records import Verdict

TOP_RECOMMENDATIONS = 5
SHOWN = 5


@dataclass(frozen=True)
class SqlJudgeReport:
    """What the report shows of the SQL judges of one run."""

    judgements: list[SqlJudgement] = field(repr=False)
    agreement: list[ExecutionAgreement]
    stability: list[RepeatStability]
    errors: list[JudgeErrors]
    categories: dict[str, dict[str, int]]
    recommendations: list[RecommendationGroup]

    def first_repeat(self) -> list[SqlJudgement]:
        """The judgements of the first repeat, by case, sample, judge and role (the per-case table)."""
        return sorted(
            (j for j in self.judgements if j.repeat_index == 0),
            key=lambda j: (j.case_id, j.sample_index, j.judge, j.role),
        )


def current_judgements(judgements: Sequence[SqlJudgement], verdicts: Sequence[Verdict]) -> list[SqlJudgement]:
    """The judgements whose case, sample, candidate SQL and outcome are those of ``verdicts``."""
    keys = {(v.case_id, v.sample_index): (v.generated_sql, v.outcome) for v in verdicts}
    return [j for j in judgements if keys.get(j.item) == (j.generated_sql, j.outcome)]


def build_sql_judge_report(judgements: Sequence[SqlJudgement], verdicts: Sequence[Verdict]) -> SqlJudgeReport | None:
    """The section's tables over the judgements of this run's candidates (None: no judgement)."""
    current = current_judgements(judgements, verdicts)
    if not current:
        return None
    return SqlJudgeReport(
        judgements=current,
        agreement=execution_agreement(current),
        stability=repeat_stability(current),
        errors=judge_errors(current),
        categories=categories_count(current),
        recommendations=top_recommendations(current, TOP_RECOMMENDATIONS),
    )


def _rate(value: float | None) -> str:
    return format_rate(value) if value is not None else "n/a"


def agreement_line(a: ExecutionAgreement) -> str:
    """``judge-oracle: equivalent 45.0% (9/20); agrees with execution 95.0% (19/20); ...``."""
    text = (
        f"{a.judge}: equivalent {_rate(a.equivalent_rate)} ({a.both_right + a.missed}/{a.cases}); agrees with "
        f"execution {_rate(a.agreement)} ({a.both_right + a.both_wrong}/{a.cases}); 'not equivalent' vs "
        f"wrong_result: precision {_rate(a.precision)}, recall {_rate(a.recall)}"
    )
    if a.suite_measured:
        text += f"; agrees with test-suite accuracy {a.suite_agree}/{a.suite_measured}"
    if a.undecided:
        text += f"; {a.undecided} undecided (judge errors)"
    return text


def _clip(text: str, limit: int = 140) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def console_sql_judges(report: SqlJudgeReport | None, indent: str = " " * 24) -> list[str]:
    """The section as console lines (nothing when the run has no SQL judgement)."""
    if report is None:
        return []
    lines = [f"{'sql judges'.ljust(22)}  first repeat, cases whose candidate ran (correct or wrong_result):"]
    for a in report.agreement:
        lines.append(f"{indent}{agreement_line(a)}")
        for title, items in (
            ("execution correct, judge not equivalent (lucky matches)", a.lucky_matches),
            ("execution wrong, judge equivalent (possible gold or comparator problems)", a.gold_or_comparator),
        ):
            if items:
                lines.append(f"{indent}  {title}: {len(items)}")
                lines += [f"{indent}    ! {d.label}: {_clip(d.detail)}" for d in items[:SHOWN]]
                if len(items) > SHOWN:
                    lines.append(f"{indent}    ... and {len(items) - SHOWN} more (sql_judgements)")
    for s in report.stability:
        lines.append(
            f"{indent}{s.judge} {s.role} across {s.repeats} repeats: {len(s.disagreements)} of {s.items} items "
            f"changed ({_rate(s.disagreement_rate)} disagreement)"
        )
        lines += [f"{indent}  ! {d.label}: {d.detail}" for d in s.disagreements[:SHOWN]]
    for e in report.errors:
        if e.errors:
            detail = ", ".join(f"{name} {count}" for name, count in sorted(e.errors.items()))
            lines.append(f"{indent}{e.judge} {e.role}: {sum(e.errors.values())} of {e.judged} failed ({detail})")
            if e.first_message:
                lines.append(f"{indent}  first: {_clip(e.first_message)}")
    for judge, counts in sorted(report.categories.items()):
        ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
        lines.append(f"{indent}{judge} diagnosis by category: " + ", ".join(f"{c} {n}" for c, n in ranked))
    if report.recommendations:
        lines.append(f"{indent}top recommendations:")
        for i, group in enumerate(report.recommendations, 1):
            cases = ", ".join(group.cases[:SHOWN]) + (" ..." if len(group.cases) > SHOWN else "")
            lines.append(
                f"{indent}  {i}. [{group.kind}] {_clip(group.text)} ({group.judge}, {len(group.cases)} cases: {cases})"
            )
    return lines


def markdown_sql_judges(report: SqlJudgeReport | None) -> str:
    """The section as Markdown (the ``sql_judgements`` materialization's metadata and the run summary)."""
    if report is None:
        return ""
    lines = ["### SQL judges", ""]
    if report.agreement:
        lines += [
            "| judge | equivalent | agrees with execution | precision | recall | lucky matches | gold/comparator? |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for a in report.agreement:
            lines.append(
                f"| {a.judge} | {_rate(a.equivalent_rate)} | {_rate(a.agreement)} ({a.both_right + a.both_wrong}/"
                f"{a.cases}) | {_rate(a.precision)} | {_rate(a.recall)} | "
                f"{', '.join(d.label for d in a.lucky_matches) or '-'} | "
                f"{', '.join(d.label for d in a.gold_or_comparator) or '-'} |"
            )
        lines.append("")
    for s in report.stability:
        lines.append(
            f"- {s.judge} {s.role}: {len(s.disagreements)} of {s.items} items changed across {s.repeats} repeats"
        )
    for e in report.errors:
        if e.errors:
            lines.append(f"- {e.judge} {e.role}: {sum(e.errors.values())} of {e.judged} judgements failed")
    if report.recommendations:
        lines += ["", "| recommendation | kind | category | cases |", "| --- | --- | --- | --- |"]
        for group in report.recommendations:
            lines.append(f"| {group.text} | {group.kind} | {group.category} | {', '.join(group.cases)} |")
    return "\n".join(lines)


def html_sql_judges(report: SqlJudgeReport | None) -> str:
    """The section as HTML: the agreement table, stability, recommendations and the per-case judgements."""
    if report is None:
        return ""
    parts = [
        '<h3>SQL judges</h3><table class="sql-judges"><tr><th>judge</th><th>agreement with execution</th>'
        "<th>execution correct, judge not equivalent</th><th>execution wrong, judge equivalent</th></tr>"
    ]
    for a in report.agreement:
        lucky = "<br>".join(f"{escape(d.label)}: {escape(d.detail)}" for d in a.lucky_matches)
        reverse = "<br>".join(f"{escape(d.label)}: {escape(d.detail)}" for d in a.gold_or_comparator)
        parts.append(
            f"<tr><td>{escape(a.judge)}</td><td>{escape(agreement_line(a))}</td><td>{lucky}</td><td>{reverse}</td></tr>"
        )
    parts.append("</table>")
    for s in report.stability:
        parts.append(
            f"<p>{escape(s.judge)} {escape(s.role)}: {len(s.disagreements)} of {s.items} items changed across "
            f"{s.repeats} repeats</p>"
        )
    if report.recommendations:
        rows = "".join(
            f"<tr><td>{escape(g.text)}</td><td>{escape(g.kind)}</td><td>{escape(g.category)}</td>"
            f"<td>{escape(g.judge)}</td><td>{escape(', '.join(g.cases))}</td></tr>"
            for g in report.recommendations
        )
        parts.append(
            '<h3>top recommendations</h3><table class="recommendations"><tr><th>recommendation</th><th>kind</th>'
            f"<th>category</th><th>judge</th><th>cases</th></tr>{rows}</table>"
        )
    case_rows: list[str] = []
    for j in report.first_repeat():
        label = j.case_id if j.sample_index == 0 else f"{j.case_id}#{j.sample_index}"
        if j.error_class is not None:
            decision = f"{j.error_class}: {j.error_message or ''}"
        elif j.role == ROLE_SQL_EQUIVALENCE:
            decision = "equivalent" if j.equivalent else "not equivalent"
        else:
            decision = j.category or ""
        advice = (
            f"[{j.recommendation_kind}] {j.recommendation}" if j.role == ROLE_DIAGNOSIS and j.recommendation else ""
        )
        case_rows.append(
            f"<tr><td>{escape(label)}</td><td>{escape(j.judge)}</td><td>{escape(j.role)}</td><td>{escape(j.outcome)}</td>"
            f"<td>{escape(decision)}</td><td>{escape(j.reason or '')}</td><td>{escape(advice)}</td></tr>"
        )
    parts.append(
        '<table class="sql-judgements"><tr><th>case</th><th>judge</th><th>role</th><th>execution</th>'
        "<th>judgement</th><th>reason</th><th>recommendation</th></tr>" + "".join(case_rows) + "</table>"
    )
    return "".join(parts)


def sql_judges_summary(report: SqlJudgeReport | None) -> dict[str, dict[str, Any]]:
    """Per judge, the numbers of the section as plain values (``nl2sql-eval run --json``)."""
    if report is None:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for a in report.agreement:
        out.setdefault(a.judge, {})["sql_equivalence"] = {
            "cases": a.cases,
            "equivalent_rate": a.equivalent_rate,
            "agreement_with_execution": a.agreement,
            "not_equivalent_precision": a.precision,
            "not_equivalent_recall": a.recall,
            "test_suite_agreement": f"{a.suite_agree}/{a.suite_measured}",
            "lucky_matches": [d.label for d in a.lucky_matches],
            "gold_or_comparator_problems": [d.label for d in a.gold_or_comparator],
            "undecided": a.undecided,
        }
    for s in report.stability:
        out.setdefault(s.judge, {}).setdefault("repeat_disagreement", {})[s.role] = s.disagreement_rate
    for e in report.errors:
        if e.errors:
            out.setdefault(e.judge, {}).setdefault("errors", {})[e.role] = dict(e.errors)
    for judge, counts in report.categories.items():
        out.setdefault(judge, {})["diagnosis_categories"] = dict(counts)
    for group in report.recommendations:
        recommendations = out.setdefault(group.judge, {}).setdefault("top_recommendations", [])
        recommendations.append({"kind": group.kind, "text": group.text, "cases": list(group.cases)})
    return out

"""The answers section of a run's report: the answer stage and each answer judge, in console, Markdown and HTML.

Built from the run's stored ``candidate_answers`` and ``answer_judgements`` (``results.read``), restricted to the
candidate each verdict selected. Per judge: answer correctness (correctness >= 4) with its Wilson interval, the
mean rubric scores, answer grades and the grades combined with execution (``judges.answer.combined_grade``),
correctness by category and domain, how each judgement was reached (value check, oracle, LLM), the judge's calls
and cost, and why judging stopped when a provider stopped it. The answer stage's cost is shown apart from
generation's. Every case that did not pass lists its scores and the rationale of its lowest score.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Any

from nl2sql_pipeline.generation.failures import RUN_STOPPING_CLASSES
from nl2sql_pipeline.judges.answer import CRITERIA, GRADES, AnswerJudgement, combined_grade
from nl2sql_pipeline.report.tables import RateRow
from nl2sql_pipeline.scoring.formatting import format_rate
from nl2sql_pipeline.scoring.statistics import wilson_interval
from nl2sql_pipeline.stages.records import Verdict

CORRECT_SCORE = 4  # an answer counts as correct when its correctness score reaches it


@dataclass(frozen=True)
class JudgeSection:
    """What one judge said about a run's answers."""

    judge: str
    correct: RateRow
    mean_scores: dict[str, float | None]
    answer_grades: dict[str, int]
    combined_grades: dict[str, int]
    methods: dict[str, int]
    by_category: list[RateRow]
    by_domain: list[RateRow]
    calls: int
    cost_usd: float
    unjudged: dict[str, int]
    stopped: str | None
    not_passed: list[AnswerJudgement]


@dataclass(frozen=True)
class AnswersReport:
    """The answers part of one run's report."""

    answers: int
    candidates: int
    sources: dict[str, int]
    answer_calls: int
    answer_cost_usd: float | None
    answer_tokens: int
    judges: list[JudgeSection] = field(default_factory=list)
    judgements: list[AnswerJudgement] = field(default_factory=list)  # of the selected candidates


def _rate(key: str, group: Sequence[AnswerJudgement]) -> RateRow:
    hits = sum((j.correctness or 0) >= CORRECT_SCORE for j in group)
    return RateRow(key, hits, len(group), wilson_interval(hits, len(group)))


def _by(judged: Sequence[AnswerJudgement], verdicts: dict[tuple[str, int], Verdict], dim: str) -> list[RateRow]:
    groups: dict[str, list[AnswerJudgement]] = {}
    for j in judged:
        verdict = verdicts.get((j.case_id, j.sample_index))
        key = str(getattr(verdict, dim, None) or "-")
        groups.setdefault(key, []).append(j)
    return [_rate(key, group) for key, group in sorted(groups.items())]


def build_answers_report(
    answers: Sequence[Any], judgements: Sequence[AnswerJudgement], verdicts: Sequence[Verdict]
) -> AnswersReport | None:
    """The answers report of a run (None when it has neither answers nor judgements)."""
    if not answers and not judgements:
        return None
    selected = {(v.case_id, v.sample_index): v for v in verdicts if not v.is_probe}
    chosen = {(k[0], k[1], v.selected_candidate_index) for k, v in selected.items()}
    shown = [a for a in answers if (a.case_id, a.sample_index, a.candidate_index) in chosen]
    costs = [a.cost_usd for a in shown if a.calls or a.cached]
    report = AnswersReport(
        answers=sum(a.answer is not None for a in shown),
        candidates=len(shown),
        sources=dict(Counter(a.source for a in shown)),
        answer_calls=sum(a.calls for a in answers),
        answer_cost_usd=None if any(c is None for c in costs) else float(sum(c or 0.0 for c in costs)),
        answer_tokens=sum((a.input_tokens or 0) + (a.output_tokens or 0) for a in answers),
    )
    report.judgements.extend(j for j in judgements if (j.case_id, j.sample_index, j.candidate_index) in chosen)
    for judge in dict.fromkeys(j.judge for j in judgements):
        mine = [j for j in judgements if j.judge == judge and (j.case_id, j.sample_index, j.candidate_index) in chosen]
        judged = [j for j in mine if j.correctness is not None]
        combined: Counter[str] = Counter()
        for j in judged:
            verdict = selected.get((j.case_id, j.sample_index))
            grade = combined_grade(verdict.grade if verdict is not None else None, j.answer_grade)
            if grade is not None:
                combined[grade] += 1
        stops = sorted((j for j in mine if j.error_class in RUN_STOPPING_CLASSES), key=lambda j: not j.calls)
        stopped = f"{stops[0].error_class} ({stops[0].error_message})" if stops else None  # the call that stopped it
        report.judges.append(
            JudgeSection(
                judge=judge,
                correct=_rate("answer correctness", judged),
                mean_scores={
                    name: (sum(getattr(j, name) for j in judged) / len(judged)) if judged else None for name in CRITERIA
                },
                answer_grades={g: sum(j.answer_grade == g for j in judged) for g in GRADES},
                combined_grades={g: combined[g] for g in GRADES},
                methods=dict(Counter(j.method for j in mine)),
                by_category=_by(judged, selected, "category"),
                by_domain=_by(judged, selected, "domain"),
                calls=sum(j.calls for j in mine),
                cost_usd=float(sum(j.cost_usd or 0.0 for j in mine)),
                unjudged=dict(Counter(j.error_class or "unjudged" for j in mine if j.correctness is None)),
                stopped=stopped,
                not_passed=[j for j in judged if j.answer_grade != "pass"],
            )
        )
    return report


def _lowest(j: AnswerJudgement) -> str:
    name = min(CRITERIA, key=lambda c: getattr(j, c) or 0)
    return f"{name} {getattr(j, name)}: {getattr(j, f'{name}_rationale') or ''}"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def _clip(text: str | None, limit: int = 120) -> str:
    flat = " ".join((text or "").split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in counts.items() if v) or "none"


def console_answers(report: AnswersReport | None, shown: int = 5) -> list[str]:
    """The answers section as console lines (nothing when the run has no answers)."""
    if report is None:
        return []
    lines = [
        f"answers: {report.answers}/{report.candidates} answered ({_counts(report.sources)}); answer stage "
        f"{report.answer_calls} calls, {report.answer_tokens} tokens, {_usd(report.answer_cost_usd)} "
        "(apart from generation cost)"
    ]
    for s in report.judges:
        means = ", ".join(f"{k} {v:.2f}" if v is not None else f"{k} n/a" for k, v in s.mean_scores.items())
        lines.append(
            f"answer judge {s.judge}: correctness {format_rate(s.correct.rate)} ({s.correct.fraction}); mean {means}"
        )
        lines.append(
            f"  answer grades: {_counts(s.answer_grades)}; with execution: {_counts(s.combined_grades)}; "
            f"decided by {_counts(s.methods)}; {s.calls} judge calls, {_usd(s.cost_usd)}"
        )
        if s.unjudged:
            lines.append(f"  unjudged: {_counts(s.unjudged)}")
        if s.stopped:
            lines.append(f"  JUDGING STOPPED: {s.stopped} (the SQL verdicts stand)")
        lines.append("  by category: " + ", ".join(f"{r.key} {r.fraction}" for r in s.by_category))
        for j in s.not_passed[:shown]:
            lines.append(f"  {j.answer_grade.upper() if j.answer_grade else '?'} {j.case_id}: {_clip(_lowest(j))}")
        if len(s.not_passed) > shown:
            lines.append(f"  ... {len(s.not_passed) - shown} more answers did not pass")
    return lines


def markdown_answers(report: AnswersReport | None) -> list[str]:
    """The answers section as Markdown lines."""
    if report is None:
        return []
    lines = [
        "",
        "**answers:** "
        f"{report.answers}/{report.candidates} answered ({_counts(report.sources)}); answer stage {report.answer_calls} "
        f"calls, {_usd(report.answer_cost_usd)} (apart from generation cost)",
    ]
    for s in report.judges:
        lines += [
            "",
            f"| answer judge {s.judge} | value |",
            "| --- | --- |",
            f"| answer correctness | {format_rate(s.correct.rate)} ({s.correct.fraction}) |",
            *[f"| mean {k} | {'n/a' if v is None else f'{v:.2f}'} |" for k, v in s.mean_scores.items()],
            f"| answer grades | {_counts(s.answer_grades)} |",
            f"| grades with execution | {_counts(s.combined_grades)} |",
            f"| decided by | {_counts(s.methods)} |",
            f"| judge calls / cost | {s.calls} / {_usd(s.cost_usd)} |",
        ]
        if s.stopped:
            lines.append(f"| judging stopped | {s.stopped} |")
        lines += [f"- `{j.case_id}` {j.answer_grade}: {_clip(_lowest(j))}" for j in s.not_passed[:10]]
    return lines


def html_answers(report: AnswersReport | None) -> str:
    """The answers section as HTML: per judge its scores, then every judged answer with its rationales."""
    if report is None:
        return ""
    parts = [
        "<h3>answers</h3>",
        f"<p>{report.answers}/{report.candidates} answered ({escape(_counts(report.sources))}); answer stage "
        f"{report.answer_calls} calls, {escape(_usd(report.answer_cost_usd))} (apart from generation cost)</p>",
    ]
    for s in report.judges:
        parts.append(
            f"<h4>answer judge {escape(s.judge)}</h4><p>correctness {escape(format_rate(s.correct.rate))} "
            f"({s.correct.fraction}); answer grades {escape(_counts(s.answer_grades))}; with execution "
            f"{escape(_counts(s.combined_grades))}; decided by {escape(_counts(s.methods))}; {s.calls} judge calls, "
            f"{escape(_usd(s.cost_usd))}</p>"
        )
        if s.stopped:
            parts.append(f'<div class="warn">judging stopped: {escape(s.stopped)} (the SQL verdicts stand)</div>')
        rows = "".join(
            "<tr>"
            + f"<td>{escape(j.case_id)}</td><td>{escape(_clip(j.answer, 200))}</td>"
            + "".join(
                f"<td>{getattr(j, c)}<br><small>{escape(getattr(j, c + '_rationale') or '')}</small></td>"
                for c in CRITERIA
            )
            + f"<td>{escape(j.answer_grade or '')}</td></tr>"
            for j in report.judgements
            if j.judge == s.judge and j.correctness is not None
        )
        header = "".join(f"<th>{c}</th>" for c in ("case", "answer", *CRITERIA, "grade"))
        parts.append(f"<table><tr>{header}</tr>{rows}</table>")
    return "".join(parts)

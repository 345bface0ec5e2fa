"""Reports of stored runs: read a run's verdicts and scores back from the storage root and build its report."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from nl2sql_pipeline.report.answers import AnswersReport, build_answers_report
from nl2sql_pipeline.report.samples import load_result_samples
from nl2sql_pipeline.report.sql_judges import build_sql_judge_report
from nl2sql_pipeline.report.tables import RunReport, build_run_report
from nl2sql_pipeline.results.read import StoredRun, load_answer_judgements, load_answers, load_run
from nl2sql_pipeline.results.sql_judgements import load_sql_judgements


def report_of(run: StoredRun, root: Path | None = None, with_samples: bool = True) -> RunReport:
    """The report of a stored run (its run scores' warnings on top; with ``with_samples``, its result
    samples for the HTML case table, which the console report does not show)."""
    samples = load_result_samples(run.gold_set, run.model, run.verdicts, root) if with_samples else None
    report = build_run_report(
        run.verdicts,
        model=run.model,
        gold_set=run.gold_set,
        warnings=run.scores.warnings,
        samples=samples,
        quarantined=run.scores.get("quarantined_cases") or [],
    )
    judged = build_sql_judge_report(load_sql_judgements(run.gold_set, run.model, root), run.verdicts)
    return replace(report, answers=stored_answers_report(run, root), sql_judges=judged)


def stored_answers_report(run: StoredRun, root: Path | None = None) -> AnswersReport | None:
    """The answers section of a stored run: its latest answers and judgements, when answers were run."""
    answers = load_answers(run.gold_set, run.model, root=root)
    judgements = load_answer_judgements(run.gold_set, run.model, root=root)
    return build_answers_report(answers, judgements, run.verdicts)


def load_run_report(gold_set: str, model: str, root: Path | None = None, with_samples: bool = True) -> RunReport:
    """The report of the latest stored run of ``model`` on ``gold_set``."""
    return report_of(load_run(gold_set, model, root), root, with_samples)

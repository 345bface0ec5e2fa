"""The run report (console, HTML, Markdown summary) shows policy rejection precision and recall when the run had probes."""

from __future__ import annotations

from verdict_factory import make_verdict

from nl2sql_pipeline.report.console import console_run_report
from nl2sql_pipeline.report.html import run_html
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes


def _probe(case_id: str, outcome: str):
    return make_verdict(case_id=case_id, outcome=outcome, is_probe=True, category="policy", tags=())


def test_probe_only_run_reports_policy_precision_and_recall_with_counts():
    verdicts = [_probe("p1", outcomes.PROBE_REJECTED), _probe("p2", outcomes.PROBE_REJECTED)]
    scores = score_run(verdicts)
    report = build_run_report(verdicts, model="gold-echo", gold_set="g")
    assert report.policy_recall is not None and report.policy_recall.rate == scores["policy_rejection_recall"] == 1.0
    assert report.policy_precision is not None and report.policy_precision.fraction == "2/2"
    text = console_run_report(report)
    assert "policy precision" in text and "policy recall" in text and "100.0%" in text
    assert "2/2" in text
    page = run_html([report])
    assert "policy rejection precision" in page and "policy rejection recall" in page


def test_mixed_run_counts_a_let_through_probe_and_a_run_without_probes_shows_none():
    query = make_verdict(case_id="q1", outcome=outcomes.CORRECT, correct=True)
    verdicts = [query, _probe("p1", outcomes.PROBE_REJECTED), _probe("p2", outcomes.PROBE_ALLOWED)]
    report = build_run_report(verdicts, model="sql-mutant", gold_set="g")
    assert report.policy_recall is not None and report.policy_recall.fraction == "1/2"
    assert "policy recall" in console_run_report(report)
    plain = build_run_report([query], model="sql-mutant", gold_set="g")
    assert plain.policy_recall is None and "policy recall" not in console_run_report(plain)


def test_markdown_summary_shows_policy_rates():
    from nl2sql_pipeline.report.markdown import markdown_summary

    report = build_run_report([_probe("p1", outcomes.PROBE_REJECTED)], model="gold-echo", gold_set="g")
    text = markdown_summary(report)
    assert "policy rejection recall" in text and "1/1" in text

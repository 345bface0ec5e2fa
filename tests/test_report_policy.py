"""The run report (console, HTML, Markdown summary) shows policy precision and recall when the run had probes;
a mixed set end to end (report, export types, answer-only verdicts as NULL)."""

from __future__ import annotations

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from eval_support import probe_case, query_case, register_gold_set
from verdict_factory import make_verdict

from nl2sql_cli import main as cli
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


@pytest.mark.e2e
def test_mixed_set_report_and_export_end_to_end(data_copy, tmp_path, capsys):
    """A mixed gold set (a query, a probe, an answer-only case) through ``run``, ``report --html`` and ``export``:
    the report shows the policy rates, the export keeps answer-only cases out of the README's queries and has
    its declared column types."""
    probe = probe_case("probe-1", "DROP TABLE users")
    answer = {"id": "a1", "domain": "d", "category": "answer", "question": "How many?", "expected_answer": 412}
    answer |= {"database": "anime_platform"}
    register_gold_set(data_copy, "mixed-v1", [query_case("q1", "SELECT COUNT(*) AS n FROM anime"), probe, answer])
    models = ["--model", "gold-echo", "--model", "sql-mutant"]
    run = ["run", "--gold-set", "mixed-v1", *models, "--test-suite-variants", "0", "--quiet"]
    assert cli.main(run) == 0
    capsys.readouterr()
    page = tmp_path / "p.html"
    assert cli.main(["report", "--gold-set", "mixed-v1", *models, "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "policy precision" in out and "policy recall" in out
    assert "policy rejection precision" in page.read_text(encoding="utf-8")
    assert cli.main(["export", "--out", str(tmp_path / "out")]) == 0
    verdicts = pq.read_table(tmp_path / "out" / "verdicts.parquet")
    assert pa.types.is_string(verdicts.schema.field("error_message").type)
    scores = pq.read_schema(tmp_path / "out" / "run_scores.parquet")
    assert scores.field("test_suite_accuracy").type == pa.float64()
    con = duckdb.connect()
    con.register("verdicts", verdicts)
    rows = con.execute("SELECT model, correct, score_exact FROM verdicts WHERE outcome = 'answer_only'").fetchall()
    assert sorted(rows) == [("gold-echo", None, None), ("sql-mutant", None, None)]
    misses = con.execute("SELECT model, case_id FROM verdicts WHERE NOT correct").fetchall()
    assert ("gold-echo", "a1") not in misses and all(model == "sql-mutant" for model, _ in misses)

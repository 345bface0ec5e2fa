"""The run report's tables against hand-computed numbers on a small fixture run."""

from __future__ import annotations

import pytest
from verdict_factory import fixture_verdicts, make_verdict, run_verdict

from nl2sql_pipeline.report.console import bar, console_full_report, console_run_report
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.scoring.causes import cause_of
from nl2sql_pipeline.stages import outcomes


@pytest.fixture
def report():
    return build_run_report(fixture_verdicts(), model="m", gold_set="g", warnings=["1 of 8 query cases were SKIPPED"])


def _table(rows):
    return {row.key: row.fraction for row in rows}


def test_headline_rates_and_intervals(report):
    assert report.correctness.fraction == "2/7"
    assert (round(report.correctness.interval.low, 3), round(report.correctness.interval.high, 3)) == (0.082, 0.641)
    assert report.execution_success.fraction == "3/7"
    assert report.latency_p50.estimate == 30.0 and report.latency_mean.estimate == 30.0  # cold start c6 left out
    assert report.latency_values == [10.0, 20.0, 30.0, 40.0, 50.0]
    assert report.token_source == "mixed"
    assert report.warnings == ["PARTIAL RUN: 7 of 8 query verdicts were scored", "1 of 8 query cases were SKIPPED"]


def test_breakdowns(report):
    b = report.breakdowns
    assert _table(b["category"]) == {"filter": "1/4", "joins": "1/3"}
    assert _table(b["domain"]) == {"hr": "0/3", "sales": "2/4"}
    assert _table(b["difficulty"]) == {"easy": "2/3", "hard": "0/2", "medium": "0/1"}
    assert _table(b["tag"]) == {"aggregate": "0/2", "join": "1/3"}
    assert "database" not in b  # these verdicts name no database


def test_weakest_causes_and_cost(report):
    assert [(dim, row.key, row.fraction) for dim, row in report.weakest] == [
        ("tag", "aggregate", "0/2"),
        ("category", "filter", "1/4"),
        ("category", "joins", "1/3"),
        ("tag", "join", "1/3"),
    ]
    assert report.causes == [
        ("execution_error: binder", 1),
        ("no_sql", 1),
        ("rate_limited", 1),
        ("skipped: daily_quota_exhausted", 1),
        ("timeout", 1),
        ("wrong_result", 1),
    ]
    cost = report.cost
    assert (cost.paid_now_cases, cost.from_cache_cases, cost.unknown_cases) == (5, 2, 0)
    assert cost.paid_now_usd == pytest.approx(0.035) and cost.from_cache_usd == pytest.approx(0.02)
    assert cost.total.estimate == pytest.approx(0.055)


def test_cause_of_generation_errors_uses_the_error_class():
    assert cause_of(make_verdict(outcome=outcomes.GENERATION_ERROR, reason="no SQL generated")) == "no_sql"
    assert (
        cause_of(make_verdict(outcome=outcomes.POLICY_REJECTED, policy_rule="forbidden_table"))
        == "policy_rejected: forbidden_table"
    )
    assert cause_of(make_verdict(outcome=outcomes.CORRECT, correct=True)) is None


def test_console_text(report):
    text = console_run_report(report)
    lines = text.splitlines()
    assert lines[0] == "== m on g =="
    assert lines[1] == "WARNING: PARTIAL RUN: 7 of 8 query verdicts were scored"
    assert any(
        line.startswith("semantic correctness") and "28.6% [8.2%, 64.1%]" in line and line.endswith("2/7")
        for line in lines
    )
    assert f"  joins   {bar(1 / 3)}   33.3%" in text
    assert "weakest: aggregate 0/2, filter 1/4, joins 1/3, join 1/3" in lines
    assert (
        "not correct, by cause: execution_error: binder 1, no_sql 1, rate_limited 1, "
        "skipped: daily_quota_exhausted 1, timeout 1, wrong_result 1"
    ) in lines
    assert any("$0.0350 paid now (5 cases), $0.0200 replayed from cache (2 cases)" in line for line in lines)
    assert "tokens                  mixed" in lines


def test_bar():
    assert bar(0.5, 10) == "█████░░░░░" and bar(None, 4) == "    " and bar(1.0, 3) == "███"


def test_pairwise_label_in_the_full_report():
    verdicts = fixture_verdicts()
    a = build_run_report(verdicts, model="a", gold_set="g")
    b = build_run_report(verdicts, model="b", gold_set="g")
    assert (
        "a vs b on g: 7 paired cases, 0 right only in a, 0 right only in b: not significant (p=1.0000)"
        in console_full_report([a, b])
    )


def test_a_perfect_dimension_is_one_line_and_tiny_groups_are_not_the_surest_weakness():
    verdicts = [
        run_verdict(
            f"s{i}",
            outcomes.CORRECT if i < 15 else outcomes.WRONG_RESULT,
            category="single",
            domain="d",
            difficulty="easy",
            tags=("filter",),
        )
        for i in range(30)
    ]
    verdicts.append(
        run_verdict("t", outcomes.WRONG_RESULT, category="single", domain="d", difficulty="easy", tags=("rare",))
    )
    report = build_run_report(verdicts, model="m", gold_set="g")
    assert [row.key for _, row in report.weakest][:2] == ["single", "filter"]  # 15/31 before 0/1
    assert "by domain:" in console_run_report(report)
    perfect = build_run_report(
        [run_verdict("a", outcomes.CORRECT, category="c", domain="d", difficulty="easy")], model="m", gold_set="g"
    )
    assert "by category: all 1 at 100%" in console_run_report(perfect).splitlines()


def test_run_scores_carry_the_outcome_causes_and_the_markdown_shows_them():
    from nl2sql_pipeline.report import markdown_scores
    from nl2sql_pipeline.scoring.run_scores import score_run

    scores = score_run(fixture_verdicts())
    assert scores["outcome_causes"] == {
        "execution_error: binder": 1,
        "no_sql": 1,
        "rate_limited": 1,
        "skipped: daily_quota_exhausted": 1,
        "timeout": 1,
        "wrong_result": 1,
    }
    assert "**not correct, by cause:** execution_error: binder 1, no_sql 1" in markdown_scores(scores)


def test_repeat_variance_line():
    verdicts = [
        run_verdict("a", outcomes.CORRECT, category="c", domain="d", difficulty="easy", sample_index=0),
        run_verdict("a", outcomes.WRONG_RESULT, category="c", domain="d", difficulty="easy", sample_index=1),
        run_verdict("b", outcomes.CORRECT, category="c", domain="d", difficulty="easy", sample_index=0),
        run_verdict("b", outcomes.CORRECT, category="c", domain="d", difficulty="easy", sample_index=1),
    ]
    text = console_run_report(build_run_report(verdicts, model="m", gold_set="g"))
    assert "repeat: 1 of 2 cases changed verdict across samples (mean per-case variance 0.125)" in text.splitlines()
    assert "repeat:" not in console_run_report(build_run_report(verdicts[2:3], model="m", gold_set="g"))


@pytest.mark.parametrize("own_category", [outcomes.CLARIFIED, outcomes.GUESSED, outcomes.ANSWER_ONLY])
def test_cases_scored_in_their_own_category_do_not_make_a_partial_run(own_category):
    """An ambiguous question's reply and an answer-only case are scored apart by design: a run of
    multidomain-clarify-v1 that scored every query is complete, not "PARTIAL RUN: 96 of 102"."""
    verdicts = [
        make_verdict(case_id="q1", outcome=outcomes.CORRECT, correct=True, latency_ms=5.0),
        make_verdict(case_id="q2", outcome=own_category, correct=False),
    ]
    report = build_run_report(verdicts, model="m", gold_set="g")
    assert report.warnings == []
    assert report.correctness.fraction == "1/1"


def test_a_clarifying_question_is_not_counted_as_an_answer_in_prose():
    """The system-answers line counts answers to query cases; asking back on an ambiguous question is scored
    in its own section, so a bare model on multidomain-clarify-v1 shows no "6 of 102 cases answered in prose"."""
    verdicts = [
        make_verdict(case_id="q1", outcome=outcomes.CORRECT, correct=True, latency_ms=5.0),
        make_verdict(case_id="amb", outcome=outcomes.CLARIFIED, answer="Do you mean by score or by ratings?"),
    ]
    text = console_run_report(build_run_report(verdicts, model="m", gold_set="g"))
    assert "answered in prose" not in text
    with_answer = [*verdicts, make_verdict(case_id="q2", outcome=outcomes.CORRECT, correct=True, answer="It is 3.")]
    text = console_run_report(build_run_report(with_answer, model="m", gold_set="g"))
    assert "1 of 2 cases answered in prose" in text


def test_an_answer_only_case_is_not_a_miss_by_cause():
    """An answer-only case is judged on its answer alone: "not correct, by cause: answer_only 3" contradicted
    the answer judge's 100%."""
    assert cause_of(make_verdict(outcome=outcomes.ANSWER_ONLY, reason="answer-only case")) is None

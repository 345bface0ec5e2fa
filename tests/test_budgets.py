"""Per-case budgets: validated and imported from JSONL, YAML and CSV (and set per gold set); a verdict over its
budget is flagged (correct but over budget is the grade ``correct_over_budget``, not a plain pass); and the
run-level budget gates (``--max-p95-latency-ms``, ``--max-cost-usd``) fail the run with exit 1, as the other
gates do, in the CLI and in the blocking asset checks on ``run_scores``."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from eval_support import append_models, query_case, register_gold_set
from fake_system_server import FakeSystem, SystemReply
from verdict_factory import make_verdict

from nl2sql_pipeline.cases import Case, case_from_dict
from nl2sql_pipeline.errors import CaseValidationError, ConfigError
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.runs.gates import GateThresholds, gate_run
from nl2sql_pipeline.scoring.budgets import budget_scores
from nl2sql_pipeline.stages.budgets import budget_fields

COUNT_SQL = "SELECT count(*) AS n FROM anime"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_budgets_are_read_from_jsonl_yaml_and_csv(tmp_path):
    jsonl = _write(
        tmp_path / "g.jsonl",
        json.dumps(query_case("a", COUNT_SQL, max_latency_ms=1500, max_cost_usd=0.01, max_tokens=4000)) + "\n",
    )
    (case,) = load_cases(jsonl)
    assert case.budgets == {"max_latency_ms": 1500.0, "max_cost_usd": 0.01, "max_tokens": 4000}
    yaml_file = _write(
        tmp_path / "g.yml",
        f"- id: a\n  question: how many?\n  database: anime_platform\n  sql: {COUNT_SQL}\n  max_latency_ms: 800\n",
    )
    assert load_cases(yaml_file)[0].max_latency_ms == 800.0
    csv_file = _write(
        tmp_path / "g.csv",
        f"id,question,database,sql,max_cost_usd,max_tokens\na,how many?,anime_platform,{COUNT_SQL},0.5,300\n",
    )
    (case,) = load_cases(csv_file)
    assert (case.max_cost_usd, case.max_tokens) == (0.5, 300)
    # the budgets are part of the case's definition (its fingerprint), and survive the stored form
    assert case_from_dict(case.to_dict()) == case
    assert case.fingerprint != replace(case, max_tokens=None).fingerprint


@pytest.mark.parametrize(
    ("value", "message"),
    [(-5, "max_latency_ms must be above 0"), ("fast", "max_latency_ms must be a number"), (True, "must be a number")],
)
def test_a_bad_budget_is_reported_with_file_line_and_fix(tmp_path, value, message):
    lines = [json.dumps(query_case("a", COUNT_SQL)), json.dumps(query_case("b", COUNT_SQL, max_latency_ms=value))]
    path = _write(tmp_path / "g.jsonl", "\n".join(lines) + "\n")
    with pytest.raises(CaseValidationError) as raised:
        load_cases(path)
    (problem,) = raised.value.problems
    assert problem.startswith(f"{path}:2:") and message in problem and "remove it" in problem


def test_a_csv_budget_that_is_not_a_number_is_a_problem(tmp_path):
    path = _write(tmp_path / "g.csv", f"id,question,database,sql,max_tokens\na,q,anime_platform,{COUNT_SQL},many\n")
    with pytest.raises(CaseValidationError) as raised:
        load_cases(path)
    assert any(f"{path}:2:" in p and "max_tokens must be a number" in p for p in raised.value.problems)


def test_a_gold_sets_budgets_apply_to_cases_that_set_none(data_copy):
    register_gold_set(
        data_copy, "budget-v1", [query_case("a", COUNT_SQL), query_case("b", COUNT_SQL, max_latency_ms=9)]
    )
    registry = data_copy / "gold" / "gold_sets.yml"
    registry.write_text(
        registry.read_text() + "    budgets: {max_latency_ms: 2000, max_tokens: 500}\n", encoding="utf-8"
    )
    a, b = load_gold_set("budget-v1")
    assert a.budgets == {"max_latency_ms": 2000.0, "max_tokens": 500} and isinstance(a.max_tokens, int)
    assert b.budgets == {"max_latency_ms": 9.0, "max_tokens": 500}  # its own wins
    registry.write_text(registry.read_text().replace("max_tokens: 500", "max_tokens: -1"), encoding="utf-8")
    with pytest.raises(ConfigError, match="budgets.max_tokens"):
        load_gold_set("budget-v1")


def _case(**budgets) -> Case:
    return case_from_dict({**query_case("a", COUNT_SQL), **budgets})


def test_correct_but_over_budget_is_its_own_grade_not_a_pass():
    case = _case(max_latency_ms=100, max_cost_usd=0.01)
    slow = make_verdict(case_id="a", outcome="correct", correct=True, latency_ms=250.0, cost_usd=0.001)
    fields = budget_fields(case, slow)
    assert fields == {
        "budget_status": "over",
        "budget_overruns": "latency_ms 250.0 > 100.0",
        "budget_grade": "correct_over_budget",
    }
    quick = make_verdict(case_id="a", outcome="correct", correct=True, latency_ms=50.0, cost_usd=0.001)
    assert budget_fields(case, quick)["budget_grade"] == "pass"
    wrong = make_verdict(case_id="a", outcome="wrong_result", correct=False, latency_ms=250.0, cost_usd=0.001)
    assert budget_fields(case, wrong)["budget_grade"] == "fail"
    unpriced = make_verdict(case_id="a", outcome="correct", correct=True, latency_ms=50.0, cost_usd=None)
    assert budget_fields(case, unpriced)["budget_status"] == "unmeasured"
    assert budget_fields(_case(), slow) == {}  # no budget: no budget fields
    scored = [replace(slow, **fields), replace(quick, **budget_fields(case, quick))]
    scores = budget_scores(scored)
    assert scores["within_budget_correctness_rate"] == 0.5 and scores["correct_over_budget_count"] == 1
    assert scores["over_budget_cases"] == [
        {"case_id": "a", "sample_index": 0, "grade": "correct_over_budget", "overruns": "latency_ms 250.0 > 100.0"}
    ]


def test_the_budget_gates_compare_the_runs_p95_latency_and_total_cost():
    run = {"model": "m", "query_count": 3, "p95_latency_ms": 420.0, "total_cost_usd": 0.2}
    report = gate_run(run, None, GateThresholds(max_p95_latency_ms=300, max_cost_usd=0.5))
    assert [f.gate for f in report.failures] == ["max_p95_latency_ms"]
    assert "p95_latency_ms 420.0 ms is above the ceiling (threshold 300.0 ms" in report.failures[0].message
    report = gate_run({**run, "total_cost_usd": None}, None, GateThresholds(max_cost_usd=0.5))
    assert [f.gate for f in report.failures] == ["max_cost_usd"]  # a budget that cannot be checked does not pass
    assert gate_run(run, None, GateThresholds(max_p95_latency_ms=500, max_cost_usd=0.5)).passed


@pytest.mark.e2e
@pytest.mark.integration  # a scripted HTTP system on loopback, the whole CLI run through Dagster
def test_a_slow_system_is_flagged_over_budget_and_the_budget_gate_exits_1(eval_world, capsys):
    from nl2sql_cli import main as cli

    cases = [
        query_case("slow-a", COUNT_SQL, max_latency_ms=50),
        query_case("slow-b", COUNT_SQL + " WHERE season_year > 2024"),
    ]
    register_gold_set(eval_world.data, "budget-v1", cases)
    gold = {c["id"]: c["expected_sql"] for c in cases}

    def answer(_index, body):  # the right SQL, a quarter of a second late
        return replace(SystemReply.sql(gold[body["case_id"]]), delay_s=0.25)

    with FakeSystem(responder=answer) as system:
        append_models(
            eval_world.data,
            f"  slow-system:\n    kind: http\n    url: {system.url}\n    send_schema: false\n    timeout_s: 60\n",
        )
        code = cli.main(
            ["run", "--gold-set", "budget-v1", "--model", "slow-system", "--max-p95-latency-ms", "100", "--json"]
        )
        captured = capsys.readouterr()
        # again without the gate (a run that failed a gate is never reused: evaluated again, from the cache)
        again = cli.main(["run", "--gold-set", "budget-v1", "--model", "slow-system"])
        text = capsys.readouterr().out
    assert code == 1, captured.err[-2000:]
    out = json.loads(captured.out)
    scores = out["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] == 1.0
    # only slow-a has a budget: it is correct, but over budget
    assert (scores["budget_case_count"], scores["over_budget_count"], scores["correct_over_budget_count"]) == (1, 1, 1)
    assert json.loads(scores["over_budget_cases"])[0]["case_id"] == "slow-a"
    assert scores["within_budget_correctness_rate"] == 0.5
    assert any("max_p95_latency_ms" in m for m in out["gate_failures"])
    assert "GATE FAILED: slow-system: gate max_p95_latency_ms failed" in captured.err
    assert out["asset_checks"]["slow-system"]["latency_budget"] is False  # the blocking check in the Dagster run
    # without the gate the run passes, and the report shows the case over budget
    assert again == 0 and "! slow-a: correct_over_budget: latency_ms" in text, text[-2000:]

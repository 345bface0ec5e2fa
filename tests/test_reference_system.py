"""The reference system through each kind (python callable, JSON-lines command, HTTP server) on the
built-in gold set: 100% with gold-echo behind it, the bare sql-mutant's verdicts with sql-mutant behind
it; and a system whose rows differ from its own SQL's result is flagged."""

from __future__ import annotations

import dataclasses
import json
from types import MappingProxyType

import pandas as pd
import pytest

from nl2sql_pipeline import paths
from nl2sql_pipeline.generation import generate_candidates, prompt_context_for_cases
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.generation.systems.command import close_processes
from nl2sql_pipeline.generation.systems.contract import SystemRequest, SystemResponse
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.records import attempts_from_candidates

# one xdist worker runs the module (its module-scoped fixtures are built once)
pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.xdist_group("reference_system"),
]

KINDS = ("python", "command", "http")
REPLY_TIMEOUT_S = 600.0
"""Instead of the registry's 60 s: the command system's first reply includes starting its process, which a
loaded machine made take longer than that; these tests are not about the timeout (the slow-system one is)."""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A built sample database, the built-in gold set and its oracle, a running reference HTTP server."""
    from nl2sql_pipeline.reference_system.http_server import serve_in_thread
    from nl2sql_pipeline.sample_db import build_database

    home = tmp_path_factory.mktemp("reference-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NL2SQL_HOME", str(home))
        build_database(paths.database_path("anime_platform"), scale=0.01)
        cases = load_gold_set("multidomain-v1")
        server = serve_in_thread()
        try:
            yield {
                "cases": cases,
                "oracle": run_oracle(cases, paths.database_path),
                "context": prompt_context_for_cases(cases),
                "url": f"http://127.0.0.1:{server.server_address[1]}/nl2sql",
            }
        finally:
            server.shutdown()
            server.server_close()
            close_processes()


def reference_spec(world, kind: str, model: str = "gold-echo") -> ModelSpec:
    spec = load_registry()[f"reference-{kind}"]
    system = dataclasses.replace(spec.system, options=MappingProxyType({"model": model}))
    if kind == "http":
        system = dataclasses.replace(system, url=world["url"])
    return dataclasses.replace(spec, system=system, slug=f"{spec.slug}-{model}", timeout_s=REPLY_TIMEOUT_S)


def evaluate(world, spec: ModelSpec):
    cases = world["cases"]
    records = generate_candidates(cases, spec, cache=None, context=world["context"])
    attempts = execute_attempts(cases, attempts_from_candidates(records), PolicyGate(paths.database_path))
    verdicts = judge(cases, world["oracle"], attempts)
    return records, verdicts, score_run(verdicts)


@pytest.mark.e2e  # the whole built-in gold set through the system (and the bare model)
@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_system_with_gold_echo_scores_100_percent(world, kind):
    records, verdicts, scores = evaluate(world, reference_spec(world, kind))
    queries = [v for v in verdicts if not v.is_probe]
    assert len(queries) == sum(not c.is_probe for c in world["cases"]) and scores["skipped_count"] == 0
    assert scores["semantic_correctness_rate"] == 1.0, [
        (v.case_id, v.outcome, v.reason) for v in queries if not v.correct
    ]
    assert scores["policy_rejection_recall"] == 1.0
    # the answer and the rows it showed are evaluated too: they agree with its SQL and with the gold
    assert all(v.answer for v in queries)
    assert {v.system_rows_vs_sql for v in queries} == {"match"} and not any(v.system_rows_disagree for v in queries)
    assert {v.system_rows_vs_gold for v in queries} == {"match"}
    # the accounting of a model: harness latency, the system's own, tokens it reported, cost
    assert all(r.latency_ms and r.system_latency_ms is not None for r in records)
    # gold-echo's tokens are estimates: the system says so, and the record keeps it (as for the bare model)
    assert {r.token_source for r in records} == {"estimated"} and {r.cost_usd for r in records} == {0.0}
    assert any("estimated" in w for w in scores.warnings)
    assert {r.cost_source for r in records} == {"reported"}


@pytest.fixture(scope="module")
def bare_sql_mutant(world):
    """The bare sql-mutant model's verdicts and scores on the built-in gold set: evaluated once, the same
    reference for every kind of system (the offline model answers the same every time)."""
    _, verdicts, scores = evaluate(world, load_registry()["sql-mutant"])
    return verdicts, scores


@pytest.mark.e2e  # the whole built-in gold set through the system (and the bare model)
@pytest.mark.parametrize("kind", KINDS)
def test_the_reference_system_with_sql_mutant_gets_the_bare_models_verdicts(world, bare_sql_mutant, kind):
    _, system_verdicts, system_scores = evaluate(world, reference_spec(world, kind, "sql-mutant"))
    model_verdicts, model_scores = bare_sql_mutant
    assert [(v.case_id, v.outcome, v.generated_sql) for v in system_verdicts] == [
        (v.case_id, v.outcome, v.generated_sql) for v in model_verdicts
    ]
    assert system_scores["semantic_correctness_rate"] == model_scores["semantic_correctness_rate"] < 1.0


@pytest.mark.e2e
def test_the_command_system_is_started_once_and_restarted_when_it_dies(world):
    from nl2sql_pipeline.generation.systems.command import process_for

    spec = reference_spec(world, "command")
    cases = [c for c in world["cases"] if not c.is_probe][:4]
    generate_candidates(cases[:2], spec, cache=None, context=world["context"])
    process = process_for(spec.slug, spec.config_hash, spec.system)
    starts, pid = process.starts, process.pid
    assert pid is not None
    generate_candidates(cases[2:3], spec, cache=None, context=world["context"])
    assert (process.starts, process.pid) == (starts, pid)  # kept alive between calls
    process._process.kill()
    process._process.wait()
    records = generate_candidates(cases[3:], spec, cache=None, context=world["context"])
    assert records[0].error_class is None and process.starts == starts + 1 and process.pid != pid


# A system that shows the user rows other than its SQL's result: the gold SQL, with made-up rows.
def lying_system(request: SystemRequest) -> SystemResponse:
    return SystemResponse(
        sql=request.calibration["expected_sql"], answer="There are 999.", columns=("n",), rows=((999,),)
    )


def slow_system(request: SystemRequest) -> dict:
    import time

    time.sleep(1.0)
    return {"sql": "SELECT 1"}


async def async_echo_system(request: SystemRequest) -> dict:
    return {"sql": request.calibration["expected_sql"]}


def test_rows_that_differ_from_the_systems_own_sql_are_flagged(world):
    spec = reference_spec(world, "python")
    spec = dataclasses.replace(
        spec, slug="liar", system=dataclasses.replace(spec.system, target="test_reference_system:lying_system")
    )
    cases = [c for c in world["cases"] if not c.is_probe and not c.follow_up_context][:3]
    world_small = {**world, "cases": cases}
    _, verdicts, scores = evaluate(world_small, spec)
    assert all(v.outcome == outcomes.CORRECT for v in verdicts)  # its SQL is right...
    assert all(v.system_rows_disagree and v.system_rows_vs_sql == "mismatch" for v in verdicts)  # ...its rows are not
    assert {v.system_rows_vs_gold for v in verdicts} == {"mismatch"}
    assert "differ from its SQL's result" in verdicts[0].system_rows_reason
    assert any("3 cases: the system showed rows that differ" in w for w in scores.warnings)


def test_an_async_callable_is_awaited(world):
    spec = reference_spec(world, "python")
    spec = dataclasses.replace(
        spec,
        slug="async-echo",
        system=dataclasses.replace(spec.system, target="test_reference_system:async_echo_system"),
    )
    cases = [c for c in world["cases"] if not c.is_probe][:3]
    _, verdicts, scores = evaluate({**world, "cases": cases}, spec)
    assert scores["semantic_correctness_rate"] == 1.0 and verdicts[0].system_rows_vs_sql is None


@pytest.mark.e2e
def test_nl2sql_eval_run_scores_the_reference_system_on_the_built_in_gold_set(seeded_home, capsys):
    from nl2sql_cli import main as cli

    assert cli.main(["run", "--gold-set", "multidomain-v1", "--model", "reference-python", "--json"]) == 0
    out = capsys.readouterr().out
    report = json.loads(out[out.index("{") :])
    scores = next(run["scores"] for run in report["runs"] if run["model"] == "reference-python")
    assert scores["semantic_correctness_rate"] == 1.0 and scores["skipped_count"] == 0
    verdicts = pd.read_parquet(next((seeded_home / "assets" / "case_verdicts").rglob("*.parquet")))
    queries = verdicts[~verdicts["is_probe"]]
    assert queries["answer"].notna().all() and set(queries["system_rows_vs_sql"]) == {"match"}


def test_a_python_callable_slower_than_its_timeout_is_a_timeout(world):
    spec = reference_spec(world, "python")
    spec = dataclasses.replace(
        spec,
        slug="slow",
        timeout_s=0.2,
        system=dataclasses.replace(spec.system, target="test_reference_system:slow_system"),
    )
    records = generate_candidates(
        [c for c in world["cases"] if not c.is_probe][:1], spec, cache=None, context=world["context"]
    )
    assert records[0].error_class == "timeout" and "within 0.2 s" in records[0].error_message


def test_the_reference_systems_answer_states_the_rows_it_returned(world):
    """The system's own answer is the offline answerer's template over its rows, so the answer judge can check
    it: with gold-echo behind it the answers are as correct as its SQL (not "3 row(s) of age_rating, n.")."""
    from nl2sql_pipeline.generation.answers import template_answer
    from nl2sql_pipeline.reference_system.service import execute

    sql = "SELECT age_rating, count(*) AS n FROM anime GROUP BY age_rating ORDER BY age_rating LIMIT 3"
    columns, rows, text = execute("anime_platform", sql)
    assert columns == ["age_rating", "n"] and rows and len(rows) == 3
    payload = {"columns": columns, "rows": rows, "row_count": len(rows), "truncated": False}
    assert text == template_answer(payload)
    assert all(str(value) in text for row in rows for value in row)

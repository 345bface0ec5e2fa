"""SQL judges on the session's evaluation of the built-in gold set (a copy of its world): turned on after the
run, they read the stored verdicts and generate nothing; judge-oracle agrees with execution on sql-mutant but
for the lucky matches test-suite accuracy exposes, each listed; an LLM judge goes through litellm to the
scripted server; the report, the HTML page and the exports carry the judgements."""

from __future__ import annotations

import contextlib
import io
import json

import pytest
from eval_support import clone_world
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.judges.diagnosis import CATEGORIES
from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE
from nl2sql_pipeline.judges.reliability import execution_agreement, repeat_stability
from nl2sql_pipeline.stages import outcomes

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.xdist_group("multidomain"),
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
]

GOLD, MODEL = "multidomain-v1", "sql-mutant"


def _cli(args: list[str]) -> tuple[int, str, str]:
    from nl2sql_cli import main as cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(args)
    return code, out.getvalue(), err.getvalue()


def _materializations(instance, asset: str) -> int:
    import dagster as dg

    key = dg.MultiPartitionKey({"gold": GOLD, "model": MODEL})
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset), asset_partitions=[key]), limit=100
    ).records
    return len(records)


@pytest.fixture(scope="module")
def judged(multidomain_run, tmp_path_factory):
    """A copy of the session's evaluated world, judged by judge-oracle (two repeats) after the run."""
    world = clone_world(multidomain_run.world, tmp_path_factory.mktemp("sqljudge"))
    with pytest.MonkeyPatch.context() as mp:
        for name, value in world.env().items():
            mp.setenv(name, value)
        from nl2sql_cli.runner import get_instance
        from nl2sql_pipeline.results.read import load_run
        from nl2sql_pipeline.results.sql_judgements import load_sql_judgements

        instance = get_instance()
        before = _materializations(instance, "candidate_sql"), _materializations(instance, "case_verdicts")
        args = ["run", "--gold-set", GOLD, "--model", MODEL, "--judge", "judge-oracle", "--judge-repeat", "2", "-q"]
        code, out, err = _cli(args)
        after = _materializations(instance, "candidate_sql"), _materializations(instance, "case_verdicts")
        yield {
            "world": world,
            "code": code,
            "out": out,
            "err": err,
            "before": before,
            "after": after,
            "instance": instance,
            "judgements": load_sql_judgements(GOLD, MODEL),
            "verdicts": load_run(GOLD, MODEL).verdicts,
        }


def test_judging_after_the_run_generates_nothing(judged):
    import dagster as dg

    assert judged["code"] == 0, judged["err"]
    assert f"REUSED {MODEL}" in judged["err"]
    assert judged["after"] == judged["before"]  # no candidate_sql, no case_verdicts materialized again
    assert _materializations(judged["instance"], "sql_judgements") == 1
    key = dg.MultiPartitionKey({"gold": GOLD, "model": MODEL})
    [record] = (
        judged["instance"]
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("sql_judgements"), asset_partitions=[key]), limit=1
        )
        .records
    )
    metadata = record.asset_materialization.metadata
    assert metadata["judgements"].value == len(judged["judgements"]) and metadata["repeat"].value == 2
    summary = metadata["summary"].value
    assert summary.startswith("### SQL judges") and "| judge-oracle |" in summary and "| recommendation |" in summary


def test_judge_oracle_agrees_with_execution_on_sql_mutant_and_lists_every_disagreement(judged):
    verdicts = {(v.case_id, v.sample_index): v for v in judged["verdicts"]}
    [agreement] = execution_agreement(judged["judgements"])
    executed = [v for v in verdicts.values() if v.outcome in outcomes.EXECUTED]
    assert agreement.judge == "judge-oracle" and agreement.cases == len(executed) and agreement.undecided == 0
    assert agreement.agreement is not None and agreement.agreement >= 0.9  # near perfect
    assert agreement.recall == 1.0 and not agreement.gold_or_comparator  # every wrong result called not equivalent
    # each disagreement is a lucky match: correct on the database, not on a test-suite variant; each is printed
    assert agreement.lucky_matches, "sql-mutant has lucky matches that test-suite accuracy exposes"
    for item in agreement.lucky_matches:
        verdict = verdicts[(item.case_id, item.sample_index)]
        assert verdict.correct and verdict.test_suite_correct is False
        assert f"! {item.label}: rows match on the database but not on a variant" in judged["out"]
    assert "execution correct, judge not equivalent (lucky matches)" in judged["out"]
    assert f"agrees with execution {agreement.agreement:.1%}" in judged["out"]
    # judge-oracle is deterministic: its repeats never disagree
    assert {s.role: s.disagreement_rate for s in repeat_stability(judged["judgements"])} == {
        ROLE_SQL_EQUIVALENCE: 0.0,
        ROLE_DIAGNOSIS: 0.0,
    }


def test_run_json_carries_the_sql_judges(judged, tmp_path, monkeypatch):
    world = clone_world(judged["world"], tmp_path / "json")  # judging again writes: on a copy of the module's world
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)
    code, out, _ = _cli(["run", "--gold-set", GOLD, "--model", MODEL, "--judge", "judge-oracle", "--json", "-q"])
    oracle = json.loads(out)["sql_judges"][MODEL]["judge-oracle"]
    [agreement] = execution_agreement(judged["judgements"])
    assert code == 0 and oracle["sql_equivalence"]["agreement_with_execution"] == agreement.agreement
    assert oracle["sql_equivalence"]["lucky_matches"] == [d.label for d in agreement.lucky_matches]
    assert oracle["top_recommendations"][0]["cases"] and sum(oracle["diagnosis_categories"].values()) > 0


def test_every_miss_is_diagnosed_with_a_recommendation(judged):
    misses = {(v.case_id, v.sample_index) for v in judged["verdicts"] if v.outcome == outcomes.WRONG_RESULT}
    diagnoses = [j for j in judged["judgements"] if j.role == ROLE_DIAGNOSIS and j.repeat_index == 0]
    assert {j.item for j in diagnoses} == misses
    assert all(j.category in CATEGORIES and j.recommendation and j.recommendation_kind for j in diagnoses)
    assert "top recommendations:" in judged["out"] and "1. [" in judged["out"]


def test_report_html_and_exports_carry_the_judgements(judged, tmp_path, monkeypatch):
    import duckdb
    import pandas as pd

    for name, value in judged["world"].env().items():
        monkeypatch.setenv(name, value)
    page = tmp_path / "report.html"
    code, out, _ = _cli(["report", "--model", MODEL, "--gold-set", GOLD, "--html", str(page)])
    assert code == 0 and "sql judges" in out and "judge-oracle: equivalent" in out
    html = page.read_text(encoding="utf-8")
    assert '<table class="sql-judges">' in html and '<table class="recommendations">' in html
    assert '<table class="sql-judgements">' in html
    code, _, _ = _cli(["export", "--out", str(tmp_path / "exp"), "--format", "csv"])
    frame = pd.read_csv(tmp_path / "exp" / "sql_judgements.csv")
    assert code == 0 and len(frame) == len(judged["judgements"]) and set(frame["model"]) == {MODEL}
    code, _, _ = _cli(["export", "--duckdb", str(tmp_path / "r.duckdb")])
    con = duckdb.connect(str(tmp_path / "r.duckdb"))
    try:
        count = con.execute("SELECT count(*) FROM sql_judgements WHERE role = 'diagnosis'").fetchone()
    finally:
        con.close()
    assert code == 0 and count is not None and count[0] > 0


def test_an_llm_judge_through_litellm_on_the_stored_run(judged, tmp_path, monkeypatch):
    """An LLM SQL judge registered in judges.yml, served by the scripted server: it says equivalent exactly when
    the candidate is the expected SQL; its agreement table and a diagnosis per miss come out of the same run."""
    world = clone_world(judged["world"], tmp_path / "llm")
    for name, value in world.env().items():
        monkeypatch.setenv(name, value)

    def respond(index, body):
        text = body["messages"][-1]["content"]
        if "Rule-based diagnosis" in text:
            return Reply.json(
                {
                    "category": "filter_value",
                    "explanation": "a condition differs",
                    "recommendation_kind": "synonym",
                    "recommendation": "map the question's wording to the filtered column",
                }
            )
        expected = text.split("Expected SQL:\n", 1)[1].split("\n\nCandidate SQL:\n", 1)
        same = expected[0].strip() == expected[1].strip()
        return Reply.json({"equivalent": same, "reason": "identical" if same else "the queries differ"})

    with FakeLLMServer(responder=respond) as server:
        with (world.data / "judges.yml").open("a", encoding="utf-8") as handle:
            handle.write(
                "\n  fake-sql-judge:\n    kind: litellm\n    model: openai/fake-sql-judge\n"
                f"    api_base: {server.api_base}\n    roles: [sql_equivalence, diagnosis]\n"
                "    limits: {max_concurrency: 4}\n"
            )
        code, out, err = _cli(["run", "--gold-set", GOLD, "--model", MODEL, "--judge", "fake-sql-judge", "-q"])
        assert code == 0, err
        from nl2sql_pipeline.results.sql_judgements import load_sql_judgements

        judgements = load_sql_judgements(GOLD, MODEL)
        assert server.hits == len(judgements) and all(j.judge == "fake-sql-judge" for j in judgements)
        body = server.requests[0].body
        assert body["model"] == "fake-sql-judge" and body["response_format"]["type"] == "json_schema"
        assert "CREATE TABLE" in json.dumps(body["messages"])  # the schema text the generation prompt uses
    [agreement] = execution_agreement(judgements)
    assert agreement.judge == "fake-sql-judge" and agreement.cases > 0 and agreement.recall is not None
    assert "fake-sql-judge: equivalent" in out and "[synonym] map the question's wording" in out

"""The main job end to end: multidomain-v1 on the offline models through the Dagster graph."""

from __future__ import annotations

import duckdb
import pandas as pd
import pytest
from eval_support import clone_world

from nl2sql_pipeline.stages import outcomes

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("multidomain")]

MODELS = ["gold-echo", "sql-mutant"]


@pytest.fixture(scope="module")
def run_home(multidomain_run, tmp_path_factory):
    """The session's run of both offline models (first), then, on a copy of its world, a forced run (second)
    and one with nothing changed (third), shared by the module's tests."""
    world = clone_world(multidomain_run.world, tmp_path_factory.mktemp("e2e"))
    with pytest.MonkeyPatch.context() as mp:
        for name, value in world.env().items():
            mp.setenv(name, value)
        from nl2sql_cli.runner import evaluate, get_instance
        from nl2sql_pipeline.results.read import load_scores

        first = {}
        for model in MODELS:
            identity, scores = load_scores("multidomain-v1", model)
            first[model] = {**identity, **scores.as_dict()}
        instance = get_instance()
        second = evaluate("multidomain-v1", MODELS, instance=instance, force=True)
        third = evaluate("multidomain-v1", MODELS, instance=instance)
        yield {"home": world.home, "first": first, "second": second, "third": third, "instance": instance}


def _frame(home, asset: str, model: str) -> pd.DataFrame:
    return pd.read_parquet(home / "assets" / asset / "gold=multidomain-v1" / f"model={model}.parquet")


def test_gold_echo_scores_perfectly(run_home):
    scores = run_home["first"]["gold-echo"]
    assert scores["semantic_correctness_rate"] == 1.0
    assert scores["sql_execution_success_rate"] == 1.0
    assert scores["query_count"] == 96
    assert scores["probe_count"] == 24
    assert scores["unique_case_count"] == 120
    assert scores["policy_rejection_recall"] == 1.0
    assert scores["policy_rejection_precision"] == 1.0


def test_sql_mutant_misses_only_where_its_mutation_changed_the_result(run_home):
    home = run_home["home"]
    scores = run_home["first"]["sql-mutant"]
    assert scores["semantic_correctness_rate"] < 1.0
    verdicts = _frame(home, "case_verdicts", "sql-mutant")
    queries = verdicts[~verdicts["is_probe"]]
    gold = pd.read_parquet(home / "assets" / "gold_set" / "gold=multidomain-v1.parquet").set_index("case_id")
    db = duckdb.connect(str(home / "databases" / "anime_platform.duckdb"), read_only=True)

    def rows(sql: str) -> list:
        return sorted(map(repr, db.execute(sql).fetchall()))

    unmutated = queries[queries["mutation"].isna()]
    assert unmutated["correct"].all(), unmutated[~unmutated["correct"]][["case_id", "reason"]]
    mutated_correct = queries[queries["mutation"].notna() & queries["correct"]]
    for row in mutated_correct.itertuples():
        assert rows(row.generated_sql) == rows(gold.loc[row.case_id, "expected_sql"]), row.case_id
    mutated_wrong = queries[queries["mutation"].notna() & ~queries["correct"]]
    assert len(mutated_wrong) > 0
    for row in mutated_wrong.itertuples():
        assert row.outcome in (outcomes.WRONG_RESULT, outcomes.EXECUTION_ERROR, outcomes.POLICY_REJECTED), row


def test_verdicts_name_the_rule_and_versions_reach_the_baselines(run_home):
    home = run_home["home"]
    verdicts = _frame(home, "case_verdicts", "gold-echo")
    correct = verdicts[verdicts["outcome"] == outcomes.CORRECT]
    assert correct["comparison_rule"].notna().all()
    assert set(verdicts["gold_set"]) == {"multidomain-v1"} and set(verdicts["model"]) == {"gold-echo"}
    con = duckdb.connect(str(home / "baselines.duckdb"), read_only=True)
    runs = con.execute(
        "SELECT model, model_config_hash, gold_fingerprint, semantic_model_hash, policy_hash, "
        "comparator_version, harness_version FROM baseline_runs"
    ).fetchall()
    assert {r[0] for r in runs} == {"gold-echo", "sql-mutant"}
    assert all(all(v for v in r) for r in runs)
    assert len(runs) == 4  # two runs of two models


def test_second_run_generates_nothing_again(run_home):
    home = run_home["home"]
    assert not run_home["second"].failures
    for model in ("gold-echo", "sql-mutant"):
        candidates = _frame(home, "candidate_sql", model)
        assert candidates["cached"].all(), model
    assert (
        run_home["second"].scores["sql-mutant"]["semantic_correctness_rate"]
        == run_home["first"]["sql-mutant"]["semantic_correctness_rate"]
    )


def test_a_run_with_nothing_changed_reuses_the_stored_scores(run_home):
    second, third = run_home["second"], run_home["third"]
    assert third.gold_prepared and not third.failures
    assert third.reused == {m: second.scores[m]["run_id"] for m in ("gold-echo", "sql-mutant")}
    for model in ("gold-echo", "sql-mutant"):
        assert third.scores[model]["semantic_correctness_rate"] == second.scores[model]["semantic_correctness_rate"]
        assert third.scores[model]["per_domain"] == second.scores[model]["per_domain"]
    assert third.stage_seconds == {}, "no stage ran"


def test_runs_are_recorded_in_the_persistent_instance(run_home):
    instance = run_home["instance"]
    records = instance.get_run_records()
    assert len(records) >= 6  # sample db, gold, 2 models; 2 models again (--force); the no-op run starts none
    assert all(r.dagster_run.is_success for r in records)

"""Generation through the Dagster runner (``nl2sql_cli.runner.evaluate``) against scripted HTTP models.

One module-level evaluation in a private data dir and storage root: a small gold set drawn from
multidomain-v1 (plain cases first, then follow-ups, then a probe) and a models.yml whose litellm
entries point at scripted servers: one answering every question with its gold SQL, one whose daily
quota runs out after three answers, one without its key, one whose server is down, plus gold-echo and
a replay file of gold-echo's SQL.
"""

from __future__ import annotations

import json
import socket

import dagster as dg
import pandas as pd
import pytest
import yaml
from eval_support import copy_data, seed_sample_database
from fake_llm_server import FakeLLMServer, Reply, answer_by_question

from nl2sql_cli import main as cli
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.stages import outcomes

pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.xdist_group("generation_runner"),  # one worker runs the module's evaluation
]

GOLD = "gen-tiny-v1"
QUOTA_ANSWERS = 3
MISSING_KEY = "NL2SQL_TEST_ABSENT_KEY"


def _tiny_gold_set() -> list:
    gold = load_gold_set("multidomain-v1")
    plain = [c for c in gold if not c.is_probe and not c.follow_up_context][:6]
    follow_ups = [c for c in gold if c.follow_up_context][:2]
    probe = next(c for c in gold if c.is_probe)
    return plain + follow_ups + [probe]


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _frame(home, asset: str, model: str) -> pd.DataFrame:
    return pd.read_parquet(home / "assets" / asset / f"gold={GOLD}" / f"model={model}.parquet")


@pytest.fixture(scope="module")
def env(tmp_path_factory, sample_database):
    root = tmp_path_factory.mktemp("generation-runner")
    data, home = copy_data(root / "data"), root / "home"
    seed_sample_database(home, sample_database)
    cases = _tiny_gold_set()
    queries = [c for c in cases if not c.is_probe]
    (data / "gold" / f"{GOLD}.jsonl").write_text("".join(c.to_json() + "\n" for c in cases), encoding="utf-8")
    with (data / "gold" / "gold_sets.yml").open("a", encoding="utf-8") as registry:
        registry.write(f"  {GOLD}:\n    file: {GOLD}.jsonl\n    description: generation runner tests\n")
    answers = {c.question: c.canonical_sql for c in queries}
    answers.update({t.question: t.sql for c in queries for t in c.follow_up_context})
    (data / "predictions").mkdir()
    (data / "predictions" / "echo.jsonl").write_text(
        "".join(json.dumps({"case_id": c.id, "sql": c.canonical_sql}) + "\n" for c in queries), encoding="utf-8"
    )
    ok_server = FakeLLMServer(responder=answer_by_question(answers)).start()
    gold_answer = answer_by_question(answers)
    quota_server = FakeLLMServer(
        responder=lambda index, body: gold_answer(index, body) if index < QUOTA_ANSWERS else Reply.daily_quota()
    ).start()
    http = {
        "kind": "litellm",
        "params": {"temperature": 0},
        "price_input_per_mtok": 1,
        "price_output_per_mtok": 2,
        "retry": {"max_retries": 0},
    }
    models = {
        "gold-echo": {"kind": "offline", "model": "nl2sql-offline/gold-echo", "params": {"temperature": 0}},
        "replay-echo": {"kind": "predictions", "path": "predictions/echo.jsonl", "format": "jsonl"},
        "fake-ok": {
            **http,
            "model": "openai/fake-ok",
            "api_base": ok_server.api_base,
            "limits": {"max_concurrency": 4},
        },
        "fake-quota": {
            **http,
            "model": "openai/fake-quota",
            "api_base": quota_server.api_base,
            "limits": {"max_concurrency": 1},
        },
        "fake-nokey": {
            **http,
            "model": "openai/fake-nokey",
            "api_base": ok_server.api_base,
            "api_key_env": MISSING_KEY,
        },
        "fake-down": {**http, "model": "openai/fake-down", "api_base": f"http://127.0.0.1:{_closed_port()}/v1"},
    }
    (data / "models.yml").write_text(yaml.safe_dump({"models": models}, sort_keys=False), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NL2SQL_DATA", str(data))
        mp.setenv("NL2SQL_HOME", str(home))
        mp.setenv("DAGSTER_HOME", str(home / "dagster_home"))
        mp.delenv(MISSING_KEY, raising=False)
        from nl2sql_cli.runner import evaluate, get_instance

        instance = get_instance()
        outcome = evaluate(GOLD, list(models), instance=instance)
        yield {
            "home": home,
            "instance": instance,
            "evaluate": evaluate,
            "outcome": outcome,
            "queries": queries,
            "ok_server": ok_server,
            "quota_server": quota_server,
            "turns": sum(len(c.follow_up_context) + 1 for c in queries),
        }
    ok_server.stop()
    quota_server.stop()


@pytest.mark.e2e
def test_models_without_key_or_server_are_skipped_with_the_reason(env):
    outcome = env["outcome"]
    assert not outcome.failures, outcome.failures
    assert set(outcome.skipped_models) == {"fake-nokey", "fake-down"}
    assert MISSING_KEY in outcome.skipped_models["fake-nokey"]
    assert "no server at 127.0.0.1" in outcome.skipped_models["fake-down"]
    assert set(outcome.scores) == {"gold-echo", "replay-echo", "fake-ok", "fake-quota"}


@pytest.mark.e2e
def test_a_scripted_http_model_answering_gold_sql_scores_perfectly(env):
    scores = env["outcome"].scores["fake-ok"]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["skipped_count"] == 0
    assert scores["query_count"] == len(env["queries"]) and scores["token_source"] == "measured"
    assert env["ok_server"].hits == env["turns"]  # every follow-up turn was asked, then the final question
    candidates = _frame(env["home"], "candidate_sql", "fake-ok")
    assert candidates["error_class"].isna().all() and (candidates["calls"] >= 1).all()


@pytest.mark.e2e
def test_daily_quota_stops_the_run_and_warns_in_the_scores_and_the_asset_metadata(env):
    scores = env["outcome"].scores["fake-quota"]
    assert env["quota_server"].hits == QUOTA_ANSWERS + 1  # nothing sent after the first daily-quota reply
    skipped = len(env["queries"]) - QUOTA_ANSWERS
    assert (scores["query_count"], scores["skipped_count"]) == (QUOTA_ANSWERS, skipped)
    assert scores["semantic_correctness_rate"] == 1.0  # the skipped cases are out of the denominator
    warning = f"{skipped} of {len(env['queries'])} query cases were SKIPPED (daily_quota_exhausted: {skipped})"
    assert any(warning in w for w in scores["warnings"])
    verdicts = _frame(env["home"], "case_verdicts", "fake-quota")
    assert (verdicts["outcome"] == outcomes.SKIPPED).sum() == skipped
    key = dg.MultiPartitionKey({"gold": GOLD, "model": "fake-quota"})
    records = (
        env["instance"]
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_scores"), asset_partitions=[key]), limit=1
        )
        .records
    )
    metadata = records[0].asset_materialization.metadata
    assert warning in metadata["WARNING"].value and metadata["skipped_count"].value == skipped


@pytest.mark.e2e
def test_replay_file_scores_exactly_as_the_offline_model(env):
    echo = _frame(env["home"], "case_verdicts", "gold-echo").set_index("case_id").sort_index()
    replay = _frame(env["home"], "case_verdicts", "replay-echo").set_index("case_id").sort_index()
    columns = ["outcome", "correct", "comparison_rule", "generated_sql", "score_exact", "score_partial", "reason"]
    pd.testing.assert_frame_equal(echo[columns], replay[columns])
    same = ["semantic_correctness_rate", "sql_execution_success_rate", "query_count", "policy_rejection_recall"]
    assert {k: env["outcome"].scores["replay-echo"][k] for k in same} == {
        k: env["outcome"].scores["gold-echo"][k] for k in same
    }
    assert replay["model_config_hash"].iloc[0] != echo["model_config_hash"].iloc[0]


@pytest.mark.e2e
def test_repeats_are_cached_per_sample(env):
    before = env["ok_server"].hits
    outcome = env["evaluate"](GOLD, ["fake-ok"], repeat=2, instance=env["instance"])
    assert not outcome.failures and outcome.scores["fake-ok"]["sample_count"] == 2
    assert env["ok_server"].hits - before == env["turns"]  # sample 0 came from the cache, sample 1 was asked
    verdicts = _frame(env["home"], "case_verdicts", "fake-ok")
    assert sorted(verdicts["sample_index"].unique()) == [0, 1]
    again = env["evaluate"](GOLD, ["fake-ok"], repeat=2, instance=env["instance"])
    assert not again.failures and env["ok_server"].hits - before == env["turns"]  # nothing new


@pytest.mark.e2e
def test_cli_run_of_a_model_without_its_key_exits_3_naming_the_reason(env, capsys):
    code = cli.main(["run", "--gold-set", GOLD, "--model", "fake-nokey"])
    err = capsys.readouterr().err
    assert code == 3
    assert f"SKIPPED model fake-nokey: environment variable {MISSING_KEY} is not set" in err


def test_run_help_documents_exit_code_3(capsys):
    with pytest.raises(SystemExit):
        cli.main(["run", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "exit codes:" in help_text and "3 a model was not ready" in help_text

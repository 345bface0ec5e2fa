"""Honest failure and the full set of gates, through the CLI and as asset checks on run_scores.

A scripted provider on loopback (``tests/fake_llm_server.py``) answers right, wrong, or refuses every
call (401), so a run can score 100%, 0%, or evaluate nothing.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import pytest
from eval_support import query_case, register_gold_set
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_cli import main as cli
from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.runs import list_runs

# one xdist worker runs the module: the prepared template is built once, and cloned per test
pytestmark = pytest.mark.xdist_group("honest_failure")

GOLD = "honest-v1"
RIGHT = "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"
WRONG = "SELECT COUNT(*) + 1 AS n FROM anime WHERE format = 'TV'"
BROKEN = "SELECT no_such_column FROM anime"


PROBE = {
    "id": "probe-email",
    "domain": "d",
    "category": "policy_rejection",
    "question": "emails",
    "database": "anime_platform",
    "expected_outcome": "policy_rejection",
    "policy_probe_sql": "SELECT email FROM users",
    "tags": ["pii"],
    "difficulty": "easy",
}


CASES = [query_case("tv-1", RIGHT), query_case("tv-2", RIGHT), PROBE]


@pytest.fixture(scope="module")
def prepared_template(world_factory):
    """A world with the gold set registered and prepared once (gold set, preflight, oracle, database variants):
    every run of a test evaluates only its model, on its own clone."""
    from nl2sql_cli.runner import evaluate, get_instance

    with world_factory() as world:
        register_gold_set(world.data, GOLD, CASES, description="honest")
        with get_instance() as instance:
            outcome = evaluate(GOLD, [], instance=instance)
        assert not outcome.failures and "gold_and_oracle" in outcome.stage_seconds, outcome.failures
    return world


@pytest.fixture
def server():
    """The scripted provider, answering right until a test says otherwise."""
    server = FakeLLMServer(default=Reply.sql(RIGHT)).start()
    yield server
    server.stop()


@pytest.fixture
def setup(prepared_template, clone_template, server, monkeypatch):
    """This test's own copy of the prepared world (its data dir) and the scripted provider."""
    monkeypatch.setenv("FAKE_PROVIDER_KEY", "k")
    world = clone_template(prepared_template)
    return world.data, server


def _set_model(data: Path, server: FakeLLMServer, version: str, gates: str = "") -> None:
    """The `remote` model behind the scripted server; a new version is a new config (no cached answers)."""
    models = data / "models.yml"
    text = models.read_text().split("\n  remote:\n")[0].rstrip("\n")
    entry = (
        f"\n  remote:\n    kind: litellm\n    model: openai/fake\n    api_base: {server.api_base}\n"
        f'    api_key_env: FAKE_PROVIDER_KEY\n    params: {{temperature: 0}}\n    version: "{version}"\n'
        f"    retry: {{max_retries: 0}}\n{gates}"
    )
    models.write_text(text + "\n" + entry)


def _run(capsys, *flags: str) -> tuple[int, dict, str]:
    code = cli.main(["run", "--gold-set", GOLD, "--model", "remote", "--json", *flags])
    captured = capsys.readouterr()
    return code, json.loads(captured.out), captured.err


@pytest.mark.e2e
def test_a_run_that_evaluated_nothing_exits_3_fails_its_check_and_is_never_a_baseline(setup, capsys):
    data, server = setup
    _set_model(data, server, "1")
    code, first, _ = _run(capsys)
    assert code == 0 and first["runs"][0]["scores"]["semantic_correctness_rate"] == 1.0

    server.default = Reply.unauthorized()
    _set_model(data, server, "2")
    code, skipped, err = _run(capsys, "--max-regression", "0.1")
    assert code == 3
    message = "remote: gate max_skipped_share failed: nothing was evaluated"
    assert f"INCOMPLETE RUN: {message}" in err
    assert skipped["asset_checks"]["remote"]["skipped_share"] is False
    assert skipped["asset_check_messages"]["remote"]["skipped_share"].startswith(message)
    rows = {r["run_id"]: r for r in list_runs(paths.baselines_db_path(), GOLD, "remote")}
    skipped_id = skipped["runs"][0]["scores"]["run_id"]
    assert (
        rows[skipped_id]["comparable"] is False and "nothing was evaluated" in rows[skipped_id]["not_comparable_reason"]
    )
    assert rows[first["runs"][0]["scores"]["run_id"]]["comparable"] is True

    # 100% -> (nothing) -> 0%: the drop is measured against the last fully evaluated run
    server.default = Reply.sql(WRONG)
    _set_model(data, server, "3")
    code, last, err = _run(capsys, "--max-regression", "0.1")
    assert code == 1
    assert "GATE FAILED: remote: gate max_regression failed: semantic_correctness_rate fell by 100.0 pts" in err
    assert f"baseline run {first['runs'][0]['scores']['run_id'][:8]}" in " ".join(last["baseline_comparison"])
    assert last["asset_checks"]["remote"]["no_regression"] is False


@pytest.mark.e2e
def test_a_skipped_share_above_the_threshold_exits_3(setup, capsys):
    data, server = setup
    server.enqueue(Reply.sql(RIGHT))  # the first call answers, then the key is refused: the rest is skipped
    server.default = Reply.unauthorized()
    _set_model(data, server, "partial")
    code, report, err = _run(capsys, "--max-skipped-share", "0.25")
    assert code == 3
    assert "INCOMPLETE RUN: remote: gate max_skipped_share failed: skipped share 50.0%" in err
    assert "threshold 25.0%, measured 50.0%" in err
    assert report["asset_checks"]["remote"]["skipped_share"] is False
    row = list_runs(paths.baselines_db_path(), GOLD, "remote")[0]
    assert row["comparable"] is False and "1 of 2 query cases skipped" == row["not_comparable_reason"]


# gate -> (its check, its message): one run with every floor set fails each of them
FLOORS = {
    "--min-execution-success": (
        "execution_success",
        "remote: gate min_execution_success failed: sql_execution_success_rate 0.0% is below the floor "
        "(threshold 50.0%, measured 0.0%)",
    ),
    "--min-semantic-correct": (
        "correctness_floor",
        "remote: gate min_semantic_correct failed: semantic_correctness_rate 0.0% is below the floor "
        "(threshold 50.0%, measured 0.0%)",
    ),
    "--min-policy-recall": (
        "policy_recall",
        "remote: gate min_policy_recall failed: policy_rejection_recall 0.0% is below the floor "
        "(threshold 50.0%, measured 0.0%)",
    ),
}


@pytest.mark.e2e
def test_each_gate_fails_on_the_cli_and_as_an_asset_check_with_one_message(setup, capsys):
    """One evaluation (broken SQL under a policy that rejects nothing) fails every floor at once: each failure is
    the same message on the CLI and in its asset check, and the checks of the other gates pass."""
    data, server = setup
    server.default = Reply.sql(BROKEN)
    _set_model(data, server, "broken")
    lax = data / "policies" / "lax.yml"
    lax.write_text(
        "name: lax\nallowed_tables: '*'\ndenied_columns: []\nmax_limit: 1000\nmax_joins: 4\n"
        "forbid_cartesian: true\ndenied_functions: []\nallowed_table_functions: []\n",
        encoding="utf-8",
    )
    flags = [arg for flag in FLOORS for arg in (flag, "0.5")]
    code, report, err = _run(capsys, "--policy", str(lax), *flags)
    assert code == 1, err
    for check, message in FLOORS.values():
        assert f"GATE FAILED: {message}" in err
        assert report["asset_checks"]["remote"][check] is False
        assert message in report["asset_check_messages"]["remote"][check]
    failing = {check for check, _ in FLOORS.values()}
    others = {name: passed for name, passed in report["asset_checks"]["remote"].items() if name not in failing}
    assert set(others) == {
        "skipped_share",
        "no_regression",
        "execution_drop",
        "latency_budget",
        "cost_budget",
    } and all(others.values()), others


def test_min_correctness_is_an_alias_of_min_semantic_correct():
    from nl2sql_cli.main import build_parser

    args = build_parser().parse_args(["run", "--min-correctness", "0.5"])
    assert args.min_semantic_correct == 0.5


@pytest.mark.e2e
def test_gates_set_per_model_in_the_registry(setup, capsys):
    data, server = setup
    server.default = Reply.sql(WRONG)
    _set_model(data, server, "gated", gates="    gates: {min_semantic_correct: 0.9}\n")
    code, report, err = _run(capsys)
    assert code == 1, err
    assert "GATE FAILED: remote: gate min_semantic_correct failed" in err and "threshold 90.0%" in err
    assert report["asset_checks"]["remote"]["correctness_floor"] is False
    # an explicit flag wins over the model's own threshold
    code, _, _ = _run(capsys, "--min-semantic-correct", "0.0")
    assert code == 0


def test_a_bad_gate_in_the_registry_is_reported_with_its_line(data_copy, server):
    from nl2sql_pipeline.generation.registry import load_registry

    data = data_copy
    _set_model(data, server, "x", gates="    gates: {min_semantic_correct: 2, nope: 1}\n")
    with pytest.raises(ConfigError) as exc:
        load_registry(data / "models.yml")
    text = str(exc.value)
    assert "gates.min_semantic_correct" in text and "gates.nope" in text and "models.yml:" in text


def test_runs_left_started_by_a_dead_process_are_marked_failed(isolated_home):
    from nl2sql_cli.runner import get_instance
    from resources.stale_runs import HOST_TAG, PID_TAG, fail_dead_runs, process_tags

    instance = get_instance()
    dead = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id="dead-run-0001",
        status=dg.DagsterRunStatus.STARTED,
        tags={HOST_TAG: process_tags()[HOST_TAG], PID_TAG: "999999999"},
    )
    alive = dg.DagsterRun(
        job_name="__ASSET_JOB", run_id="live-run-0001", status=dg.DagsterRunStatus.STARTED, tags=process_tags()
    )
    instance.add_run(dead)
    instance.add_run(alive)
    assert fail_dead_runs(instance) == ["dead-run-0001"]
    assert instance.get_run_by_id("dead-run-0001").status == dg.DagsterRunStatus.FAILURE
    assert instance.get_run_by_id("live-run-0001").status == dg.DagsterRunStatus.STARTED


@pytest.mark.e2e
def test_a_launchpad_run_with_skipped_cases_fails_its_blocking_check_and_is_no_baseline(setup):
    """The UI path: the ``evaluate_model`` job with the definitions' own resources (no threshold set anywhere),
    as the launchpad, a backfill, a schedule or a sensor launches it."""
    from assets.definitions import defs
    from assets.jobs import run_tags_for_partition
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import get_instance

    data, server = setup
    server.enqueue(Reply.sql(RIGHT))  # the first call answers, then the key is refused: 1 of 2 cases skipped
    server.default = Reply.unauthorized()
    _set_model(data, server, "launchpad")
    key = dg.MultiPartitionKey({"gold": GOLD, "model": "remote"})
    scores_stages = dg.AssetSelection.assets("run_scores", "baselines", "leaderboard")
    with get_instance() as instance:
        register_partitions(instance)
        before = dg.evaluate_automation_conditions(defs=defs, instance=instance, asset_selection=scores_stages)
        result = defs.resolve_job_def("evaluate_model").execute_in_process(
            partition_key=key, instance=instance, tags=run_tags_for_partition(key), raise_on_error=False
        )
        assert not result.success
        # the automation does not ask for the stage the blocking check stopped (baselines alone would fail:
        # the run_scores it reads belong to another run)
        after = dg.evaluate_automation_conditions(
            defs=defs, instance=instance, asset_selection=scores_stages, cursor=before.cursor
        )
        assert key not in after.get_requested_partitions(dg.AssetKey("baselines"))
        assert instance.get_run_by_id(result.run_id).status == dg.DagsterRunStatus.FAILURE
        checks = {e.check_name: e for e in result.get_asset_check_evaluations()}
        skipped = checks["skipped_share"]
        assert skipped.passed is False
        assert skipped.description.startswith(
            "remote: gate max_skipped_share failed: skipped share 50.0% (1 of 2 query cases) is above the allowed "
            "0.0% (threshold 0.0%, measured 50.0%)"
        )
        shown = {k: getattr(v, "value", v) for k, v in skipped.metadata.items()}
        assert shown["gate"] == "max_skipped_share" and shown["threshold_source"] == "default"
        assert shown["threshold"] == 0.0 and shown["measured"] == 0.5
        assert shown["not_comparable_reason"] == "1 of 2 query cases skipped"
        assert all(e.passed for name, e in checks.items() if name != "skipped_share"), checks
        materialized = {e.asset_key.path[-1] for e in result.get_asset_materialization_events()}
        assert "run_scores" in materialized and "baselines" not in materialized, "the blocking check stopped it"
    (row,) = list_runs(paths.baselines_db_path(), GOLD, "remote")
    assert row["run_id"] == result.run_id
    assert row["comparable"] is False and row["not_comparable_reason"] == "1 of 2 query cases skipped"

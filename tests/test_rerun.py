"""No-op re-runs, gold versions prepared once, and one evaluation per gold x model partition at a time."""

from __future__ import annotations

import json
import threading

import dagster as dg
import pytest
from eval_support import append_models, query_case, register_gold_set

from nl2sql_cli import main as cli
from nl2sql_pipeline.runs.locks import partition_lock

GOLD = "rerun-v1"


pytestmark = pytest.mark.e2e


@pytest.fixture(autouse=True)
def _gold_set(data_copy):
    register_gold_set(
        data_copy,
        GOLD,
        [query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'", question="how many TV")],
        description="rerun",
    )


def _materializations(asset: str) -> int:
    instance = dg.DagsterInstance.get()
    return len(instance.fetch_materializations(dg.AssetKey(asset), limit=100).records)


def test_nothing_changed_prints_the_stored_scores_and_force_runs_again(data_copy, capsys):
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo", "--json"]) == 0
    captured = capsys.readouterr()
    again = json.loads(captured.out)
    run_id = first["runs"][0]["scores"]["run_id"]
    assert again["reused"] == {"gold-echo": run_id}
    assert "REUSED gold-echo: nothing changed since run" in captured.err
    assert again["runs"][0]["scores"] == first["runs"][0]["scores"]
    assert _materializations("candidate_sql") == 1
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo", "--json", "--force"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["reused"] == {} and forced["runs"][0]["scores"]["run_id"] != run_id
    assert _materializations("candidate_sql") == 2


def test_a_gold_version_is_prepared_once_per_fingerprint(data_copy, capsys):
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo"]) == 0
    assert cli.main(["run", "--gold-set", GOLD, "--model", "sql-mutant"]) == 0
    assert _materializations("gold_set") == 1 and _materializations("oracle_results") == 1
    assert _materializations("run_scores") == 2
    # a changed gold set is a new fingerprint: prepared again
    path = data_copy / "gold" / f"{GOLD}.jsonl"
    path.write_text(path.read_text().replace("how many TV", "how many TV shows"), encoding="utf-8")
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo"]) == 0
    assert _materializations("gold_set") == 2
    capsys.readouterr()


def test_a_second_evaluation_of_a_partition_waits_or_is_refused(data_copy, capsys):
    with partition_lock(GOLD, "gold-echo", timeout_s=1, owner="the test holding it"):
        code = cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo", "--lock-wait", "0.5"])
    err = capsys.readouterr().err
    assert code == 4
    assert f"partition {GOLD}|gold-echo (another evaluation of it is in progress) is held by the test holding it" in err
    assert "Wait for it to finish, or give a longer wait" in err


def test_a_run_launched_elsewhere_holds_its_partition_in_dagster(data_copy, capsys):
    from nl2sql_cli.runner import get_instance
    from resources.stale_runs import process_tags

    instance = get_instance()
    ui_run = dg.DagsterRun(
        job_name="__ASSET_JOB",
        run_id="ui-run-00000001",
        status=dg.DagsterRunStatus.STARTED,
        tags={"dagster/partition": f"{GOLD}|gold-echo", **process_tags()},
    )
    instance.add_run(ui_run)
    code = cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo", "--force"])
    err = capsys.readouterr().err
    assert code == 4
    assert f"partition {GOLD}|gold-echo is already being evaluated by run ui-run-00000001" in err
    instance.report_run_failed(instance.get_run_by_id("ui-run-00000001"), "done")
    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo"]) == 0


def test_a_run_whose_stored_verdicts_a_later_run_replaced_is_not_reused(data_copy, capsys):
    """Storage keeps the latest run's verdicts: after `--efficiency`, a plain run, then `--efficiency` again,
    the first run no longer stands (reusing it printed "REUSED" over verdicts without any efficiency)."""
    base = ["run", "--gold-set", GOLD, "--model", "gold-echo", "--json"]
    assert cli.main([*base, "--efficiency"]) == 0
    first = json.loads(capsys.readouterr().out)["runs"][0]["scores"]["run_id"]
    assert cli.main(base) == 0
    assert json.loads(capsys.readouterr().out)["reused"] == {}  # another measurement: evaluated again
    assert cli.main([*base, "--efficiency"]) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["reused"] == {} and again["runs"][0]["scores"]["run_id"] != first
    assert again["runs"][0]["scores"]["efficiency_measured_count"] == 1


def test_a_run_of_answer_only_cases_is_reused_when_nothing_changed_and_says_it_is_never_a_baseline(data_copy, capsys):
    case = {
        "id": "a1",
        "domain": "d",
        "category": "answer",
        "question": "How many TV titles?",
        "database": "anime_platform",
        "expected_answer": 412,
    }
    register_gold_set(data_copy, "answers-only-v1", [case])
    assert cli.main(["run", "--gold-set", "answers-only-v1", "--model", "gold-echo", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert "answer-only run: never a baseline" in first["baseline_comparison"][0]
    assert cli.main(["run", "--gold-set", "answers-only-v1", "--model", "gold-echo", "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["reused"] == {"gold-echo": first["runs"][0]["scores"]["run_id"]}
    assert "REUSED gold-echo: nothing changed since run" in captured.err


def test_a_run_that_failed_a_gate_is_reused_and_fails_the_gate_again(data_copy, capsys):
    """A run that failed a gate evaluated every case: nothing changed, so it stands for the next run (whose gates
    are held to its stored scores) instead of being evaluated again and again."""
    append_models(
        data_copy,
        "  always-wrong:\n    kind: offline\n    model: nl2sql-offline/sql-mutant\n"
        "    params: {temperature: 0, mutation_rate: 1.0, seed: 7}\n",
    )
    base = ["run", "--gold-set", GOLD, "--model", "always-wrong", "--min-semantic-correct", "0.5", "--json"]
    assert cli.main(base) == 1
    first = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert first["semantic_correctness_rate"] == 0.0
    assert cli.main(base) == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out)["reused"] == {"always-wrong": first["run_id"]}
    assert "REUSED always-wrong" in captured.err and "min_semantic_correct" in captured.err
    assert _materializations("candidate_sql") == 1


def test_a_run_that_waited_for_the_same_evaluation_reuses_it(data_copy, monkeypatch):
    """Two identical runs at once: the second decides whether to reuse before it waits for the partition, when
    nothing is stored yet; once the first is over, it decides again and reuses the first's run."""
    from nl2sql_cli import runner

    assert cli.main(["run", "--gold-set", GOLD, "--model", "gold-echo"]) == 0  # the run the first one makes
    reusable = runner.reusable_run
    asked: list[int] = []

    def not_yet_then_stored(*args, **kwargs):
        asked.append(1)
        return None if len(asked) == 1 else reusable(*args, **kwargs)  # before the wait: not evaluated yet

    monkeypatch.setattr(runner, "reusable_run", not_yet_then_stored)
    holding, waiting = threading.Event(), threading.Event()

    def first_run() -> None:
        with partition_lock(GOLD, "gold-echo", timeout_s=60, owner="the first run"):
            holding.set()
            waiting.wait(timeout=60)

    holder = threading.Thread(target=first_run)
    holder.start()
    assert holding.wait(timeout=60)
    outcome = runner.evaluate(GOLD, ["gold-echo"], on_wait=lambda message: waiting.set())
    holder.join(timeout=60)
    assert waiting.is_set() and len(asked) == 2
    assert list(outcome.reused) == ["gold-echo"] and not outcome.failures
    assert _materializations("candidate_sql") == 1

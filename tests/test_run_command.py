"""``nl2sql-eval run``: exit codes, the blocking preflight (``--strict-gold``), a policy override and model readiness."""

from __future__ import annotations

import json

import dagster as dg
import pytest
from eval_support import probe_case, query_case, register_gold_set

from nl2sql_cli import main as cli


@pytest.mark.e2e
def test_failing_preflight_under_strict_gold_blocks_every_model_and_exits_4(data_copy, capsys):
    register_gold_set(
        data_copy,
        "broken-v1",
        [
            query_case("ok-1", "SELECT COUNT(*) AS n FROM anime"),
            query_case("bad-1", "SELECT CAST(title AS INTEGER) AS n FROM anime"),
        ],
    )
    code = cli.main(["run", "--gold-set", "broken-v1", "--model", "gold-echo", "--strict-gold"])
    err = capsys.readouterr().err
    assert code == 4
    assert "PREFLIGHT FAILED" in err and "bad-1: [expected_sql_fails]" in err
    instance = dg.DagsterInstance.get()
    assert instance.get_latest_materialization_event(dg.AssetKey("oracle_results")) is None
    assert instance.get_latest_materialization_event(dg.AssetKey("candidate_sql")) is None


@pytest.mark.e2e
def test_over_strict_policy_lowers_precision(data_copy, capsys):
    register_gold_set(
        data_copy,
        "small-v1",
        [
            query_case("single-1", "SELECT COUNT(*) AS n FROM anime"),
            query_case(
                "join-1",
                "SELECT s.name, COUNT(*) AS n FROM anime a JOIN studios s ON s.studio_id = a.studio_id "
                "GROUP BY s.name ORDER BY n DESC, s.name LIMIT 5",
            ),
            probe_case("probe-1", "DROP TABLE users"),
        ],
    )
    strict = data_copy / "policies" / "no-joins.yml"
    strict.write_text(
        "name: no-joins\nallowed_tables: '*'\ndenied_columns: [users.email]\nmax_limit: 1000\n"
        "max_joins: 0\nforbid_cartesian: true\ndenied_functions: []\nallowed_table_functions: []\n",
        encoding="utf-8",
    )
    assert cli.main(["run", "--gold-set", "small-v1", "--model", "gold-echo", "--json"]) == 0
    default = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert default["policy_rejection_precision"] == 1.0 and default["policy_rejection_recall"] == 1.0
    assert cli.main(["run", "--gold-set", "small-v1", "--model", "gold-echo", "--policy", str(strict), "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert scores["policy_false_positives"] == 1
    assert scores["policy_rejection_precision"] == pytest.approx(0.5)
    assert scores["policy_rejection_recall"] == 1.0
    assert scores["semantic_correctness_rate"] == pytest.approx(0.5)
    assert scores["policy_hash"] != default["policy_hash"]


def test_unknown_gold_set_or_model_is_bad_input(data_copy, capsys):
    assert cli.main(["run", "--gold-set", "nope", "--model", "gold-echo"]) == 2
    assert "unknown gold set 'nope'" in capsys.readouterr().err
    assert cli.main(["run", "--model", "no-such-model"]) == 2
    assert "no-such-model" in capsys.readouterr().err


@pytest.mark.e2e
def test_model_without_key_is_reported_skipped_with_exit_3(data_copy, capsys, monkeypatch):
    register_gold_set(data_copy, "tiny-v1", [query_case("single-1", "SELECT COUNT(*) AS n FROM anime")])
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    code = cli.main(["run", "--gold-set", "tiny-v1", "--model", "gold-echo", "--model", "gpt-4o-mini"])
    captured = capsys.readouterr()
    assert code == 3
    assert "SKIPPED model gpt-4o-mini" in captured.err and "OPENAI_API_KEY" in captured.err
    assert "gold-echo" in captured.out


def test_misaligned_predictions_file_is_bad_input_before_any_run(data_copy, capsys):
    register_gold_set(
        data_copy,
        "pair-v1",
        [
            query_case("single-1", "SELECT COUNT(*) AS n FROM anime"),
            query_case("single-2", "SELECT COUNT(*) AS n FROM studios"),
        ],
    )
    predictions = data_copy / "predictions.jsonl"
    predictions.write_text('{"case_id": "single-1", "sql": "SELECT 1"}\n{"case_id": "nope-9", "sql": "SELECT 2"}\n')
    models = data_copy / "models.yml"
    models.write_text(
        models.read_text() + f"\n  my-replay:\n    kind: predictions\n    path: {predictions}\n    format: jsonl\n"
    )
    code = cli.main(["run", "--gold-set", "pair-v1", "--model", "my-replay"])
    err = capsys.readouterr().err
    assert code == 2
    assert "predictions.jsonl:2" in err and "nope-9" in err
    assert dg.DagsterInstance.get().get_run_records() == []


@pytest.mark.e2e
def test_gates_compare_with_the_baseline_and_exit_1(data_copy, capsys):
    register_gold_set(
        data_copy,
        "gate-v1",
        [
            query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"),
            query_case("recent", "SELECT COUNT(*) AS n FROM anime WHERE season_year >= 2025"),
            query_case(
                "movies", "SELECT title FROM anime WHERE format = 'Movie' AND season_year = 2025 ORDER BY title"
            ),
        ],
    )
    models = data_copy / "models.yml"
    text = models.read_text()
    old = "params: {temperature: 0, mutation_rate: 0.5, seed: 7}"
    models.write_text(text.replace(old, "params: {temperature: 0, mutation_rate: 0.0, seed: 7}"))
    assert (
        cli.main(["run", "--gold-set", "gate-v1", "--model", "sql-mutant", "--min-correctness", "1.0", "--json"]) == 0
    )
    first = json.loads(capsys.readouterr().out)
    assert "sql-mutant: no comparable baseline" in first["baseline_comparison"][0]
    # the same gates ran as asset checks on run_scores in the Dagster run
    assert first["asset_checks"]["sql-mutant"] == {
        "skipped_share": True,
        "execution_success": True,
        "correctness_floor": True,
        "policy_recall": True,
        "no_regression": True,
        "execution_drop": True,
        "latency_budget": True,
        "cost_budget": True,
    }

    models.write_text(text.replace(old, "params: {temperature: 0, mutation_rate: 1.0, seed: 7}"))
    code = cli.main(["run", "--gold-set", "gate-v1", "--model", "sql-mutant", "--max-regression", "0.0", "--json"])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    scores = report["runs"][0]["scores"]
    assert scores["semantic_correctness_rate"] < 1.0
    assert code == 1
    assert any(
        "model config changed" in line and "vs baseline 100.0%" in line for line in report["baseline_comparison"]
    )
    assert "GATE FAILED: sql-mutant: gate max_regression failed: semantic_correctness_rate fell by" in captured.err
    assert report["asset_checks"]["sql-mutant"]["no_regression"] is False
    assert report["asset_checks"]["sql-mutant"]["correctness_floor"] is True
    key = dg.AssetCheckKey(dg.AssetKey("run_scores"), "no_regression")
    history = dg.DagsterInstance.get().event_log_storage.get_asset_check_execution_history(key, limit=5)
    assert [r.evaluation.passed for r in history] == [False, True], "both checks are recorded, newest first"
    assert history[0].partition == "gate-v1|sql-mutant"


def test_gate_arguments_are_validated(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["run", "--min-correctness", "90"])
    assert exc.value.code == 2
    assert "outside 0..1" in capsys.readouterr().err


@pytest.mark.e2e
def test_a_failed_step_is_one_line_without_a_dagster_traceback(data_copy, capsys, monkeypatch):
    import assets.scores

    register_gold_set(data_copy, "tb-v1", [query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'")])

    def exploding_score_run(*args, **kwargs):
        raise RuntimeError("scoring exploded")

    monkeypatch.setattr(assets.scores, "score_run", exploding_score_run)
    code = cli.main(["run", "--gold-set", "tb-v1", "--model", "gold-echo"])
    err = capsys.readouterr().err
    assert code == 4
    assert "FAILED: gold-echo: run_scores: RuntimeError: scoring exploded" in err
    assert "Traceback" not in err and 'File "' not in err


@pytest.mark.e2e
def test_ctrl_c_inside_a_step_stops_the_command_and_records_no_run(data_copy, capsys, monkeypatch):
    """Dagster turns a KeyboardInterrupt in a step into a failed step and returns: the command must stop there
    (exit 130, one line), evaluate no further model, and leave nothing a later run would reuse."""
    import assets.scores

    register_gold_set(data_copy, "ctrl-c-v1", [query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'")])
    scored = []

    def interrupted_score_run(*args, **kwargs):
        scored.append(args)
        raise KeyboardInterrupt

    monkeypatch.setattr(assets.scores, "score_run", interrupted_score_run)
    code = cli.main(["run", "--gold-set", "ctrl-c-v1", "--model", "gold-echo", "--model", "sql-mutant"])
    err = capsys.readouterr().err
    assert code == 130 and "interrupted: stopped" in err
    assert len(scored) == 1  # sql-mutant was not evaluated after the interrupt
    assert "Traceback" not in err and "FAILED" not in err
    monkeypatch.undo()
    monkeypatch.setenv("NL2SQL_DATA", str(data_copy))
    code = cli.main(["run", "--gold-set", "ctrl-c-v1", "--model", "gold-echo", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    assert json.loads(out)["runs"][0]["scores"]["semantic_correctness_rate"] == 1.0


@pytest.mark.parametrize("value", ["-1", "-0.5", "nan"])
def test_a_negative_lock_wait_is_refused_exit_2(capsys, value):
    with pytest.raises(SystemExit) as exit_:
        cli.main(["run", "--model", "gold-echo", "--lock-wait", value])
    assert exit_.value.code == 2
    assert f"argument --lock-wait: {value} is not a wait (give 0 or more seconds" in capsys.readouterr().err

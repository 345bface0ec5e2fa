"""Exit-code gates: the floor, the regression against a comparable baseline, runs that scored nothing."""

from __future__ import annotations

from nl2sql_pipeline.runs import DEFAULT_GATES, GATE_NAMES, GateThresholds, RunVersions, check_gates, record_run

VERSIONS = RunVersions("cfg-1", "gold-fp", "sem", "pol", "cmp", "h1")


def _run(run_id: str, rate, **changes) -> dict:
    return {
        "run_id": run_id,
        "gold_set": "g",
        "model": "m",
        "semantic_correctness_rate": rate,
        **{**VERSIONS.__dict__, "model_config_hash": "cfg-2"},
        **changes,
    }


def test_regression_is_measured_against_the_latest_comparable_run(tmp_path):
    db = tmp_path / "b.duckdb"
    record_run(db, run_id="old", gold_set="g", model="m", versions=VERSIONS, scores={"semantic_correctness_rate": 0.9})
    report = check_gates([_run("new", 0.85)], db, max_regression=0.02)
    assert not report.passed and "fell by 5.0 pts" in report.messages()[0]
    assert "vs baseline 90.0%" in report.lines[0] and "model config changed" in report.lines[0]
    assert check_gates([_run("new", 0.89)], db, max_regression=0.02).passed


def test_a_run_on_another_gold_fingerprint_is_no_baseline(tmp_path):
    db = tmp_path / "b.duckdb"
    record_run(db, run_id="old", gold_set="g", model="m", versions=VERSIONS, scores={"semantic_correctness_rate": 0.9})
    report = check_gates([_run("new", 0.5, gold_fingerprint="other")], db, max_regression=0.0)
    assert report.passed and "no comparable baseline" in report.lines[0]


def test_floor_and_runs_that_scored_nothing(tmp_path):
    db = tmp_path / "b.duckdb"
    assert not check_gates([_run("r", 0.7)], db, min_correctness=0.8).passed
    assert check_gates([_run("r", 0.8)], db, min_correctness=0.8).passed
    nothing = check_gates([_run("r", None)], db, min_correctness=0.1)
    assert not nothing.passed and "nothing was evaluated" in nothing.messages()[0]
    bare = check_gates([_run("r", None)], db)
    assert not bare.passed and bare.incomplete, "a run that evaluated nothing fails without any threshold"


def test_gates_hold_defaults_without_any_threshold(tmp_path):
    from nl2sql_pipeline.runs import DEFAULT_GATES

    assert DEFAULT_GATES.max_skipped_share == 0.0 and DEFAULT_GATES.max_execution_drop == 0.05
    db = tmp_path / "b.duckdb"
    skipped = _run("r", 1.0, query_count=2, skipped_count=1)
    report = check_gates([skipped], db)
    assert not report.passed and report.incomplete
    assert report.failures[0].gate == "max_skipped_share" and report.failures[0].threshold == 0.0
    assert "skipped share 33.3% (1 of 3 query cases) is above the allowed 0.0%" in report.messages()[0]
    loosened = check_gates([skipped], db, GateThresholds(max_skipped_share=0.5))
    assert loosened.passed, "a threshold set at launch wins over the default"


def test_an_execution_success_drop_against_the_baseline_fails_by_default(tmp_path):
    db = tmp_path / "b.duckdb"
    record_run(
        db,
        run_id="old",
        gold_set="g",
        model="m",
        versions=VERSIONS,
        scores={"semantic_correctness_rate": 0.5, "sql_execution_success_rate": 1.0},
    )
    dropped = _run("new", 0.5, sql_execution_success_rate=0.9)
    report = check_gates([dropped], db)
    (failure,) = report.failures
    assert failure.gate == "max_execution_drop" and not failure.incomplete
    assert failure.threshold == 0.05 and failure.measured is not None and abs(failure.measured - 0.1) < 1e-9
    assert "sql_execution_success_rate fell by 10.0 pts, from 100.0% to 90.0% (baseline run old)" in failure.message
    assert check_gates([_run("new", 0.5, sql_execution_success_rate=0.96)], db).passed
    assert check_gates([dropped], db, GateThresholds(max_execution_drop=1.0)).passed, "set to 1: off"
    assert check_gates([_run("new", 0.5, sql_execution_success_rate=0.5)], tmp_path / "none.duckdb").passed, (
        "no baseline, no drop"
    )


def test_thresholds_come_from_the_launch_then_the_model_then_the_defaults():
    from nl2sql_pipeline.runs import resolve_thresholds, threshold_source

    given = GateThresholds(min_semantic_correct=0.7)
    own = {"min_semantic_correct": 0.9, "max_skipped_share": 0.2, "max_execution_drop": None}
    limits = resolve_thresholds(given, own)
    assert limits == GateThresholds(max_skipped_share=0.2, min_semantic_correct=0.7, max_execution_drop=0.05), (
        "launch over model over defaults; gates without a default stay off"
    )
    assert [threshold_source(given, own, g) for g in GATE_NAMES] == [
        "model",
        "off",
        "set",
        "off",
        "off",
        "default",
        "off",  # the budget gates (max_p95_latency_ms, max_cost_usd) are off unless set
        "off",
    ]


def test_thresholds_for_model_read_the_registry_over_the_defaults(data_copy):
    from nl2sql_pipeline.runs import thresholds_for_model

    models = data_copy / "models.yml"
    models.write_text(
        models.read_text().replace("  gold-echo:\n", "  gold-echo:\n    gates: {max_skipped_share: 0.3}\n", 1)
    )
    assert thresholds_for_model(GateThresholds(), "gold-echo").max_skipped_share == 0.3
    assert thresholds_for_model(GateThresholds(max_skipped_share=0.1), "gold-echo").max_skipped_share == 0.1
    assert thresholds_for_model(GateThresholds(), "sql-mutant") == DEFAULT_GATES
    assert thresholds_for_model(GateThresholds(), "no-such-model") == DEFAULT_GATES, "a removed model: defaults"


def test_a_run_that_failed_a_gate_is_never_a_baseline():
    from nl2sql_pipeline.runs import gate_run, not_baseline_reason

    good = _run("r", 0.9, query_count=3)
    assert not_baseline_reason(good, gate_run(good, None)) is None
    floor = gate_run(good, None, GateThresholds(min_semantic_correct=0.95))
    assert not_baseline_reason(good, floor) == floor.failures[0].message
    skipped = _run("r", 0.9, query_count=2, skipped_count=1)
    assert not_baseline_reason(skipped, gate_run(skipped, None)) == "1 of 3 query cases skipped"


def test_an_answer_only_run_says_it_is_never_a_baseline_not_that_it_is_the_first(tmp_path):
    report = check_gates([_run("r", None, answer_only_count=3, query_count=0)], tmp_path / "b.duckdb")
    assert report.passed, report.messages()
    assert report.lines == ["m: answer-only run: never a baseline (scored by the answer judge, no execution rate)"]


def test_a_floor_missed_by_less_than_a_tenth_of_a_point_shows_two_different_numbers(tmp_path):
    db = tmp_path / "b.duckdb"
    report = check_gates([_run("r", 59 / 96)], db, min_correctness=0.615)  # 61.458...% against 61.5%
    assert not report.passed
    assert report.messages()[0].endswith(
        "semantic_correctness_rate 61.46% is below the floor (threshold 61.50%, measured 61.46%)"
    )
    plain = check_gates([_run("r", 0.6)], db, min_correctness=0.615)
    assert plain.messages()[0].endswith("61.5%, measured 60.0%)"), "one decimal while it tells them apart"

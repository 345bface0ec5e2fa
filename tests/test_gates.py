"""Exit-code gates: the floor, the regression against a comparable baseline, runs that scored nothing."""

from __future__ import annotations

from nl2sql_pipeline.runs import RunVersions, check_gates, record_run

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

"""The versioned baselines table in DuckDB."""

from __future__ import annotations

from dataclasses import replace

from nl2sql_pipeline.runs import RunVersions, current_baseline, list_runs, record_run

VERSIONS = RunVersions("m1", "g1", "s1", "p1", "c1", "h1")


def test_record_and_find_current_baseline(tmp_path):
    db = tmp_path / "baselines.duckdb"
    record_run(
        db,
        run_id="r1",
        gold_set="gold",
        model="m",
        versions=VERSIONS,
        scores={"semantic_correctness_rate": 0.5, "query_count": 10, "per_domain": {"a": 1}},
    )
    record_run(
        db, run_id="r2", gold_set="gold", model="m", versions=VERSIONS, scores={"semantic_correctness_rate": 0.75}
    )
    runs = list_runs(db, "gold", "m")
    assert [r["run_id"] for r in runs] == ["r2", "r1"]
    assert runs[1]["per_domain"] == '{"a": 1}'
    assert current_baseline(db, "gold", "m", VERSIONS)["run_id"] == "r2"


def test_a_changed_version_makes_the_baseline_not_current(tmp_path):
    db = tmp_path / "baselines.duckdb"
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={})
    for field in (
        "model_config_hash",
        "gold_fingerprint",
        "semantic_model_hash",
        "policy_hash",
        "comparator_version",
        "harness_version",
    ):
        assert current_baseline(db, "gold", "m", replace(VERSIONS, **{field: "changed"})) is None


def test_re_recording_a_run_replaces_it(tmp_path):
    db = tmp_path / "baselines.duckdb"
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={"query_count": 1})
    record_run(db, run_id="r1", gold_set="gold", model="m", versions=VERSIONS, scores={"query_count": 2})
    runs = list_runs(db)
    assert len(runs) == 1 and runs[0]["query_count"] == 2


def test_no_file_means_no_runs(tmp_path):
    assert list_runs(tmp_path / "missing.duckdb") == []


def test_a_file_from_an_older_version_gains_new_metric_columns(tmp_path):
    import duckdb

    db = tmp_path / "baselines.duckdb"
    con = duckdb.connect(str(db))
    con.execute(
        "CREATE TABLE baseline_runs (run_id VARCHAR NOT NULL, recorded_at TIMESTAMP NOT NULL, "
        "gold_set VARCHAR NOT NULL, model VARCHAR NOT NULL, model_config_hash VARCHAR NOT NULL, "
        "gold_fingerprint VARCHAR NOT NULL, semantic_model_hash VARCHAR NOT NULL, policy_hash VARCHAR NOT NULL, "
        "comparator_version VARCHAR NOT NULL, harness_version VARCHAR NOT NULL, semantic_correctness_rate DOUBLE)"
    )
    con.close()
    record_run(
        db,
        run_id="r1",
        gold_set="gold",
        model="m",
        versions=VERSIONS,
        scores={"semantic_correctness_rate": 1.0, "policy_injection_blocks": 2},
    )
    assert list_runs(db)[0]["policy_injection_blocks"] == 2

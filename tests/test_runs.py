"""Run identity in one place: comparability, currency, staleness and baselines share one rule."""

from __future__ import annotations

from dataclasses import replace

import pytest

from nl2sql_pipeline.runs import (
    COMPARABLE_FIELDS,
    VERSION_FIELDS,
    RunVersions,
    changed_fields,
    find_baseline,
    gate_run,
    is_comparable,
    is_current,
    record_run,
    select_baseline,
    stale_reason,
)

V = RunVersions("cfg", "gold", "sem", "pol", "cmp", "h")


def test_versions_round_trip_through_a_mapping():
    assert RunVersions.from_mapping({**V.as_dict(), "extra": 1}) == V
    assert RunVersions.from_mapping({}).model_config_hash == ""


@pytest.mark.parametrize("field", VERSION_FIELDS)
def test_every_field_changes_currency_and_only_the_model_config_keeps_comparability(field):
    other = replace(V, **{field: "changed"})
    assert changed_fields(V, other) == (field,)
    assert not is_current(V, other)
    assert is_comparable(V, other) == (field not in COMPARABLE_FIELDS)


def test_staleness_follows_the_rerun_policy():
    assert stale_reason("on_config_change", V.as_dict(), replace(V, model_config_hash="new")) == "model config changed"
    assert stale_reason("on_config_change", V.as_dict(), replace(V, policy_hash="new")) is None
    assert stale_reason("always", V.as_dict(), replace(V, policy_hash="new")) == "policy_hash changed"
    assert stale_reason("always", V.as_dict(), V) is None
    assert stale_reason("never", V.as_dict(), replace(V, model_config_hash="new")) is None


def test_under_rerun_always_a_changed_database_stamp_is_stale():
    recorded = {**V.as_dict(), "database_stamp": "s1"}
    assert stale_reason("always", recorded, V, "s1") is None
    assert stale_reason("always", recorded, V, "s2") == "case databases changed"
    assert stale_reason("always", V.as_dict(), V, "s1") == "case databases changed"  # recorded before stamps
    assert (
        stale_reason("always", recorded, replace(V, policy_hash="new"), "s2") == "policy_hash, case databases changed"
    )
    assert stale_reason("on_config_change", recorded, V, "s2") is None
    assert stale_reason("always", recorded, V) is None  # not compared


def _row(run_id: str, rate: float | None, **versions) -> dict:
    return {
        "run_id": run_id,
        "gold_set": "g",
        "model": "m",
        "semantic_correctness_rate": rate,
        **replace(V, **versions).as_dict(),
    }


def test_the_baseline_is_the_latest_earlier_comparable_run_never_the_run_itself():
    recorded = [_row("r3", 0.5, gold_fingerprint="other"), _row("r2", 0.8, model_config_hash="x"), _row("r1", 0.9)]
    assert select_baseline(recorded, _row("r4", 0.7))["run_id"] == "r2"
    assert select_baseline(recorded, _row("r2", 0.8))["run_id"] == "r1"
    assert select_baseline(recorded, _row("r9", 0.7, policy_hash="p2")) is None


def test_the_gate_and_the_baseline_file_agree(tmp_path):
    db = tmp_path / "baselines.duckdb"
    record_run(db, run_id="r1", gold_set="g", model="m", versions=V, scores={"semantic_correctness_rate": 0.9})
    run = _row("r2", 0.8, model_config_hash="cfg-2")
    baseline = find_baseline(db, run)
    assert baseline["run_id"] == "r1"
    report = gate_run(run, baseline, max_regression=0.05)
    assert not report.passed and "fell by 10.0 pts" in report.messages()[0]
    assert gate_run(run, baseline, max_regression=0.2).passed
    assert gate_run(run, baseline).passed, "without thresholds nothing fails"


def test_a_recorded_run_is_reused_only_on_the_database_contents_it_was_judged_on(tmp_path):
    from nl2sql_pipeline.runs.reuse import reusable_run
    from nl2sql_pipeline.runs.store import list_runs

    db = tmp_path / "baselines.duckdb"
    scores = {"semantic_correctness_rate": 1.0, "query_count": 1}
    record_run(db, run_id="r1", gold_set="g", model="m", versions=V, scores=scores, database_stamp="s1")
    assert list_runs(db)[0]["database_stamp"] == "s1"
    assert reusable_run(db, "g", "m", V, database_stamp="s1")["run_id"] == "r1"
    assert reusable_run(db, "g", "m", V)["run_id"] == "r1", "not asked: the stamp is not compared"
    assert reusable_run(db, "g", "m", V, database_stamp="s2") is None
    assert find_baseline(db, {**_row("r2", 0.8), "database_stamp": "s2"})["run_id"] == "r1", "still comparable"
    record_run(db, run_id="r0", gold_set="g", model="n", versions=V, scores=scores)  # as before database stamps
    assert reusable_run(db, "g", "n", V, database_stamp="s1") is None


def test_a_changed_schema_of_an_own_database_is_a_new_version(tmp_path):
    import duckdb

    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.execution.pool import release_sandboxes
    from nl2sql_pipeline.runs.identity import schema_context_hash

    db = tmp_path / "shop.duckdb"
    with duckdb.connect(str(db)) as con:
        con.execute("CREATE TABLE customers (customer_id INTEGER PRIMARY KEY, name VARCHAR)")
        con.execute("INSERT INTO customers VALUES (1, 'Ada')")
    case = case_from_dict(
        {
            "id": "q1",
            "domain": "shop",
            "category": "aggregation",
            "question": "How many?",
            "database": "shop",
            "expected_sql": "SELECT count(*) FROM customers",
        }
    )
    resolve = {"shop": db}.__getitem__
    first = schema_context_hash([case], resolve)
    assert schema_context_hash([case], resolve) == first, "the same schema is the same version"
    release_sandboxes(db)  # the introspection's read-only connection, before this test writes the file
    with duckdb.connect(str(db)) as con:
        con.execute("ALTER TABLE customers ADD COLUMN country VARCHAR")
    assert schema_context_hash([case], resolve) != first, "an introspected schema that changed is a new version"
    missing = schema_context_hash([case], {"shop": tmp_path / "gone.duckdb"}.__getitem__)
    assert missing not in (first, schema_context_hash([case], resolve))

"""Quarantine instead of blocking: a gold case with a blocking preflight finding is left out, never hidden.

The preflight quarantines a case (case id, kind, reason) instead of failing the gold set; the run evaluates
the rest at 100% (gold-echo) and lists the quarantined case in the console, ``--json``, the HTML report, the
``gold_preflight`` check's metadata and the scores (``quarantined_count``, the baselines table). The quarantine
is part of the gold version's identity. ``--strict-gold`` (or ``strict_gold: true`` in the registry) keeps
the old rule: exit 4, no model evaluated.
"""

from __future__ import annotations

import json
from pathlib import Path

import dagster as dg
import duckdb
import pytest
from eval_support import query_case, register_gold_set
from verdict_factory import make_verdict

from nl2sql_cli import main as cli
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.execution import release_sandboxes
from nl2sql_pipeline.gold.quality.preflight import (
    EXPECTED_SQL_FAILS,
    GOLD_SELF_MISMATCH,
    PROBE_ALLOWED,
    ROW_CAP_EXCEEDED,
    run_preflight,
)
from nl2sql_pipeline.gold.quality.triage import LIMIT_WITHOUT_ORDER
from nl2sql_pipeline.report.console import console_run_report
from nl2sql_pipeline.report.html import run_html
from nl2sql_pipeline.report.markdown import markdown_summary
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.runs.baseline import select_baseline
from nl2sql_pipeline.runs.identity import quarantined_fingerprint, run_versions, with_quarantine
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes

CUT = "SELECT name FROM scores LIMIT 2"  # a LIMIT without ORDER BY that cuts rows: which rows is arbitrary


@pytest.fixture(scope="module")
def scores_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("quarantine") / "q.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE scores (id INTEGER, name VARCHAR, score INTEGER)")
    con.execute("INSERT INTO scores VALUES (1, 'ann', 10), (2, 'bob', 9), (3, 'cid', 8)")
    con.close()
    yield path
    release_sandboxes(path)


def _case(case_id: str, *sqls: str) -> Case:
    return Case(id=case_id, domain="d", category="c", question="q", database="db", expected_sql=sqls)


# ------------------------------------------------------------------------------------------ the preflight


def test_blocking_findings_about_a_case_quarantine_it_and_block_nothing(scores_db):
    cases = [
        _case("ok-1", "SELECT count(*) AS n FROM scores"),
        _case("cut-1", CUT),
        _case("fails-1", "SELECT CAST(name AS INTEGER) AS n FROM scores"),
        _case("alt-1", "SELECT count(*) AS n FROM scores", "SELECT nope FROM scores"),  # one bad alternative
    ]
    report = run_preflight(cases, lambda _name: scores_db, check_policy=False)
    assert report.passed and report.problems == []
    assert report.quarantined == ["cut-1", "fails-1", "alt-1"]
    by_case = {f.case_id: f for f in report.quarantine}
    assert (by_case["cut-1"].label, by_case["cut-1"].kind) == ("cut-1", LIMIT_WITHOUT_ORDER)
    assert by_case["fails-1"].kind == EXPECTED_SQL_FAILS and "Conversion Error" in by_case["fails-1"].reason
    assert (by_case["alt-1"].label, by_case["alt-1"].kind) == ("alt-1[1]", EXPECTED_SQL_FAILS)
    assert not report.passed_under(strict=True)
    assert report.blocking_lines(strict=True) == [f.line() for f in report.quarantine]
    assert by_case["cut-1"].to_dict() == {
        "case_id": "cut-1",
        "label": "cut-1",
        "kind": LIMIT_WITHOUT_ORDER,
        "reason": by_case["cut-1"].reason,
    }


def test_row_cap_and_a_probe_its_policy_lets_through_are_case_findings(scores_db):
    from nl2sql_pipeline.execution import SandboxLimits

    report = run_preflight(
        [_case("big-1", "SELECT * FROM range(50)")],
        lambda _name: scores_db,
        SandboxLimits(row_cap=10),
        check_policy=False,
    )
    assert [(f.case_id, f.kind) for f in report.quarantine] == [("big-1", ROW_CAP_EXCEEDED)]

    class AllowAll:
        def __init__(self, _resolve):
            pass

        def check(self, case, sql):
            from types import SimpleNamespace

            return SimpleNamespace(allowed=True, policy_name="open", rule=None, reason=None)

    import nl2sql_pipeline.gold.quality.preflight as preflight

    probe = Case(
        id="probe-1",
        domain="d",
        category="policy_rejection",
        question="drop it",
        database="db",
        expected_outcome="policy_rejection",
        policy_probe_sql="DROP TABLE scores",
    )
    original = preflight.PolicyGate
    preflight.PolicyGate = AllowAll  # type: ignore[misc,assignment]
    try:
        report = run_preflight([probe], lambda _name: scores_db)
    finally:
        preflight.PolicyGate = original  # type: ignore[misc]
    assert [(f.case_id, f.kind) for f in report.quarantine] == [("probe-1", PROBE_ALLOWED)]
    assert "policy 'open' lets the probe through" in report.quarantine[0].reason
    assert GOLD_SELF_MISMATCH not in {f.kind for f in report.quarantine}


# ------------------------------------------------------------------------------------------ identity


def test_the_quarantine_is_part_of_the_gold_fingerprint_and_of_comparability():
    cases = [_case("a", "SELECT 1 AS x"), _case("b", "SELECT 2 AS x")]
    clean = run_versions("m1", cases)
    one = run_versions("m1", cases, quarantined=["b"])
    other = run_versions("m2", cases, quarantined=["a"])
    assert clean.gold_fingerprint == quarantined_fingerprint(clean.gold_fingerprint, [])  # unchanged when none
    assert (
        one.gold_fingerprint.startswith(clean.gold_fingerprint + "-q")
        and one.gold_fingerprint != clean.gold_fingerprint
    )
    assert with_quarantine(clean, ["b"]) == one
    assert quarantined_fingerprint("fp", ["a", "b"]) == quarantined_fingerprint("fp", ["b", "a", "a"])

    def row(run_id: str, versions) -> dict:
        return {"run_id": run_id, "gold_set": "g", "model": "m", "comparable": True, **versions.as_dict()}

    run = row("new", with_quarantine(run_versions("m2", cases), ["b"]))
    assert select_baseline([row("same-quarantine", one)], run)["run_id"] == "same-quarantine"
    assert select_baseline([row("other-quarantine", other), row("none", clean)], run) is None


# ------------------------------------------------------------------------------------------ scores and reports

FINDING = {"case_id": "cut-1", "label": "cut-1", "kind": LIMIT_WITHOUT_ORDER, "reason": "LIMIT 2 without ORDER BY"}


def test_scores_count_and_list_the_quarantine_and_every_rendering_shows_it():
    verdicts = [make_verdict(case_id="ok-1", outcome=outcomes.CORRECT, correct=True, score_exact=1.0)]
    scores = score_run(verdicts, [FINDING])
    assert scores["quarantined_count"] == 1 and scores["quarantined_cases"] == [FINDING]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == 1
    assert any("1 cases were QUARANTINED" in w and "limit_without_order: 1" in w for w in scores.warnings)
    assert score_run(verdicts)["quarantined_count"] == 0 and not any(
        "QUARANTINED" in w for w in score_run(verdicts).warnings
    )

    report = build_run_report(verdicts, model="m", gold_set="g", quarantined=[FINDING])
    line = "cut-1: [limit_without_order] LIMIT 2 without ORDER BY"
    assert report.quarantine_lines() == [line]
    assert f"  ! {line}" in console_run_report(report).splitlines()
    assert "quarantined: 1 cases left out of every rate" in console_run_report(report)
    assert f"- {line}" in markdown_summary(report)
    html = run_html([report])
    assert "quarantined by the gold preflight: 1 cases" in html and "<td>limit_without_order</td>" in html
    bare = build_run_report(verdicts, model="m", gold_set="g")
    assert "quarantined" not in console_run_report(bare) and "quarantined by" not in run_html([bare])


def test_the_quarantine_is_stored_with_the_scores_in_the_baselines_table(tmp_path):
    from nl2sql_pipeline.runs.store import list_runs, record_run

    verdicts = [make_verdict(case_id="ok-1", outcome=outcomes.CORRECT, correct=True, score_exact=1.0)]
    versions = run_versions("m", [_case("ok-1", "SELECT 1 AS x")], quarantined=["cut-1"])
    db = tmp_path / "baselines.duckdb"
    record_run(
        db, run_id="r1", gold_set="g", model="m", versions=versions, scores=score_run(verdicts, [FINDING]).as_dict()
    )
    (stored,) = list_runs(db)
    assert stored["quarantined_count"] == 1 and json.loads(stored["quarantined_cases"]) == [FINDING]
    assert stored["gold_fingerprint"] == versions.gold_fingerprint


# ------------------------------------------------------------------------------------------ the CLI


def _gold_file(tmp_path: Path, db: Path, sqls: dict[str, str]) -> Path:
    path = tmp_path / "q.jsonl"
    lines = [
        {
            "id": cid,
            "domain": "d",
            "category": "single_table",
            "question": f"q {cid}",
            "database": str(db),
            "expected_sql": sql,
            "tags": ["t"],
            "difficulty": "easy",
        }
        for cid, sql in sqls.items()
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_gold_validate_lists_the_quarantine_and_fails_only_under_strict_gold(
    scores_db, tmp_path, capsys, isolated_home
):
    path = _gold_file(
        tmp_path,
        scores_db,
        {"ok-1": "SELECT count(*) AS n FROM scores", "fails-1": "SELECT CAST(name AS INTEGER) AS n FROM scores"},
    )
    assert cli.main(["gold", "validate", str(path)]) == 0
    captured = capsys.readouterr()
    assert "quarantined: case fails-1: [expected_sql_fails] expected SQL fails" in captured.err
    assert "1 quarantined (left out of runs)" in captured.out
    assert cli.main(["gold", "validate", str(path), "--strict-gold"]) == 2
    err = capsys.readouterr().err
    assert "fails-1: [expected_sql_fails]" in err and "1 problem in" in err


def _preflight_evaluation(gold_set: str):
    key = dg.AssetCheckKey(dg.AssetKey("gold_set"), "gold_preflight")
    history = dg.DagsterInstance.get().event_log_storage.get_asset_check_execution_history(key, limit=5)
    return next(r for r in history if r.partition == gold_set).evaluation


@pytest.mark.e2e
def test_a_run_leaves_the_quarantined_case_out_and_lists_it_everywhere(data_copy, capsys):
    register_gold_set(
        data_copy,
        "quar-v1",
        [
            query_case("ok-1", "SELECT COUNT(*) AS n FROM anime"),
            query_case("ok-2", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"),
            query_case("cut-1", "SELECT title FROM anime LIMIT 3"),
        ],
    )
    assert cli.main(["run", "--gold-set", "quar-v1", "--model", "gold-echo", "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    (run,) = out["runs"]
    scores = run["scores"]
    assert scores["semantic_correctness_rate"] == 1.0 and scores["query_count"] == 2
    assert scores["quarantined_count"] == 1
    assert [(f["case_id"], f["kind"]) for f in json.loads(scores["quarantined_cases"])] == [
        ("cut-1", LIMIT_WITHOUT_ORDER)
    ]
    assert [(f["case_id"], f["kind"]) for f in out["quarantined"]] == [("cut-1", LIMIT_WITHOUT_ORDER)]
    assert "QUARANTINED cut-1: [limit_without_order] LIMIT 3 without ORDER BY" in captured.err
    assert "-q" in scores["gold_fingerprint"]  # the quarantine is in the gold version's identity

    # the check passed (WARN) with the quarantined case in its metadata
    evaluation = _preflight_evaluation("quar-v1")
    metadata = {name: value.value for name, value in evaluation.metadata.items()}
    assert evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.WARN
    assert metadata["quarantined_count"] == 1 and metadata["quarantine"][0]["case_id"] == "cut-1"
    assert "cut-1: [limit_without_order]" in metadata["quarantined"]

    # no candidate, no verdict for the quarantined case
    from nl2sql_pipeline.results.read import load_run

    stored = load_run("quar-v1", "gold-echo")
    assert sorted(v.case_id for v in stored.verdicts) == ["ok-1", "ok-2"]

    # the HTML report of the run lists it
    from nl2sql_pipeline.report.html import run_report_path

    html = run_report_path("quar-v1", "gold-echo", scores["run_id"]).read_text(encoding="utf-8")
    assert "quarantined by the gold preflight: 1 cases" in html and "cut-1" in html

    # the console report (a re-run reuses the stored scores) lists it too
    assert cli.main(["run", "--gold-set", "quar-v1", "--model", "gold-echo"]) == 0
    captured = capsys.readouterr()
    assert "  ! cut-1: [limit_without_order] LIMIT 3 without ORDER BY" in captured.out
    assert "REUSED gold-echo" in captured.err and "QUARANTINED cut-1" in captured.err

    # strict gold: the prepared gold version is held to it, exit 4, nothing evaluated
    assert cli.main(["run", "--gold-set", "quar-v1", "--model", "sql-mutant", "--strict-gold"]) == 4
    err = capsys.readouterr().err
    assert "PREFLIGHT FAILED" in err and "cut-1: [limit_without_order]" in err
    assert "failed under strict gold: 1 cases quarantined; no model was evaluated" in err
    instance = dg.DagsterInstance.get()
    key = dg.MultiPartitionKey({"gold": "quar-v1", "model": "sql-mutant"})
    records = instance.fetch_materializations(
        dg.AssetRecordsFilter(asset_key=dg.AssetKey("candidate_sql"), asset_partitions=[key]), limit=1
    ).records
    assert records == []


@pytest.mark.e2e
def test_strict_gold_in_the_registry_stops_the_run(data_copy, capsys):
    register_gold_set(
        data_copy,
        "strict-v1",
        [query_case("ok-1", "SELECT COUNT(*) AS n FROM anime"), query_case("cut-1", "SELECT title FROM anime LIMIT 3")],
    )
    registry = data_copy / "gold" / "gold_sets.yml"
    text = registry.read_text(encoding="utf-8")
    registry.write_text(text.replace("file: strict-v1.jsonl", "file: strict-v1.jsonl\n    strict_gold: true"))
    assert "strict_gold: true" in registry.read_text(encoding="utf-8")
    assert cli.main(["run", "--gold-set", "strict-v1", "--model", "gold-echo"]) == 4
    assert "cut-1: [limit_without_order]" in capsys.readouterr().err
    evaluation = _preflight_evaluation("strict-v1")
    assert not evaluation.passed and evaluation.metadata["strict_gold"].value is True

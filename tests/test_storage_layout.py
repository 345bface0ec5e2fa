"""The storage layer: the layout of the storage root written once, and the questions the runner asks of it
(the scores of one run, is a gold version prepared and still there, are its database variants)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from upath import UPath

from nl2sql_pipeline import HARNESS_VERSION, paths
from nl2sql_pipeline.results.frames import run_scores_to_frame
from nl2sql_pipeline.results.read import RunResultsNotFoundError, load_cases, load_scores, scores_path, verdicts_path
from nl2sql_pipeline.sample_db.spec import DATABASE_NAME
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict
from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import point_latest, read_parquet, write_parquet, write_run
from nl2sql_pipeline.storage.prepared import (
    PREFLIGHT_VERSION,
    gold_ready,
    is_prepared,
    mark_prepared,
    marker_path,
    prepared_stamp,
    prepared_triage,
    variants_ready,
)
from nl2sql_pipeline.storage.quarantine import write_quarantine

GOLD, MODEL, FP = "g1", "m1", "fp-1"


def _scores():
    verdict = Verdict(
        case_id="c1",
        case_fingerprint="fp",
        domain="d",
        category="time",
        difficulty=None,
        tags=("filter",),
        is_probe=False,
        sample_index=0,
        generated_sql="SELECT 1",
        outcome=outcomes.CORRECT,
        correct=True,
        comparison_rule="exact",
        reason=None,
        score_exact=1.0,
        score_partial=1.0,
        policy_rule=None,
        policy_name="default",
        candidate_count=1,
        selected_candidate_index=0,
        first_candidate_correct=True,
        latency_ms=1.0,
        oracle_latency_ms=1.0,
        execution_ms=1.0,
        input_tokens=None,
        output_tokens=None,
        token_source=None,
        cost_usd=None,
        cached=None,
        cold_start=False,
        mutation=None,
        skip_reason=None,
    )
    return score_run([verdict])


# --- the layout ------------------------------------------------------------------------------------------------


def test_the_partition_files_of_each_shape(tmp_path):
    assert layout.partition_path("run_scores", GOLD, MODEL, tmp_path) == tmp_path / "run_scores" / "gold=g1" / (
        "model=m1.parquet"
    )
    assert layout.partition_path("gold_set", GOLD, root=tmp_path) == tmp_path / "gold_set" / "gold=g1.parquet"
    assert layout.partition_path("sample_database", root=tmp_path) == tmp_path / "sample_database.parquet"
    assert layout.partition_path(["nested", "asset"], GOLD, root=tmp_path) == tmp_path / "nested" / "asset" / (
        "gold=g1.parquet"
    )
    with pytest.raises(layout.LayoutError):
        layout.partition_path("run_scores", model=MODEL, root=tmp_path)


def test_a_runs_file_sits_beside_the_latest_file(tmp_path):
    latest = layout.partition_path("run_scores", GOLD, MODEL, tmp_path)
    assert layout.run_path(latest, "r1") == tmp_path / "run_scores" / "gold=g1" / "model=m1.runs" / "r1.parquet"
    assert layout.run_file("run_scores", "r1", GOLD, MODEL, tmp_path) == layout.run_path(latest, "r1")
    with pytest.raises(layout.LayoutError):
        layout.run_path(tmp_path / "not-a-partition.json", "r1")


def test_the_root_is_the_storage_roots_assets_folder_a_given_folder_or_a_url(isolated_home, tmp_path, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    assert layout.assets_root() == isolated_home.resolve() / "assets"
    assert (
        layout.partition_path("gold_set", GOLD) == isolated_home.resolve() / "assets" / "gold_set" / "gold=g1.parquet"
    )
    assert layout.assets_root(str(tmp_path / "here")) == tmp_path / "here"
    url_root = layout.assets_root((tmp_path / "shared").as_uri())
    assert isinstance(url_root, UPath) and url_root.protocol == "file"
    assert str(layout.partition_path("run_scores", GOLD, MODEL, (tmp_path / "shared").as_uri())) == (
        f"{(tmp_path / 'shared').as_uri()}/run_scores/gold=g1/model=m1.parquet"
    )
    # the readers of stored results use the same layout
    assert verdicts_path(GOLD, MODEL, tmp_path) == layout.partition_path("case_verdicts", GOLD, MODEL, tmp_path)
    assert scores_path(GOLD, MODEL, tmp_path) == layout.partition_path("run_scores", GOLD, MODEL, tmp_path)


def test_the_prepared_marker_sits_under_the_storage_root(isolated_home):
    expected = isolated_home.resolve() / "prepared" / "gold=g1" / f"{FP}-h{HARNESS_VERSION}.json"
    assert layout.prepared_marker_path(GOLD, FP) == expected == marker_path(GOLD, FP)


# --- the files ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_url", [False, True], ids=["folder", "file-url"])
def test_each_run_writes_its_own_file_and_the_latest_follows(tmp_path, as_url):
    root = (tmp_path / "assets").as_uri() if as_url else tmp_path / "assets"
    latest = layout.partition_path("run_scores", GOLD, MODEL, root)
    first = write_run(pd.DataFrame({"a": [1, 2]}), latest, "r1")
    second = write_run(pd.DataFrame({"a": [3]}), latest, "r2")
    assert first == layout.run_path(latest, "r1") and second == layout.run_path(latest, "r2")
    assert read_parquet(latest)["a"].tolist() == [3]
    assert read_parquet(first)["a"].tolist() == [1, 2]  # a later run never overwrites an earlier run's file
    assert read_parquet(latest, columns=["a"]).columns.tolist() == ["a"]
    assert not [p for p in (tmp_path / "assets").rglob("*") if p.name.endswith(".tmp")]


def test_the_latest_file_stays_whole_when_pointed_again(tmp_path):
    latest = tmp_path / "x" / "gold=g1.parquet"
    run = tmp_path / "x" / "gold=g1.runs" / "r1.parquet"
    write_parquet(pd.DataFrame({"a": [1]}), run)
    point_latest(latest, run)
    point_latest(latest, run)  # again: a leftover temp name never blocks it
    assert read_parquet(latest)["a"].tolist() == [1]
    with pytest.raises(TypeError):
        point_latest(UPath(latest.as_uri()), run)


# --- the scores of one run ---------------------------------------------------------------------------------------


def test_the_scores_of_a_run_are_read_from_its_own_file(tmp_path):
    scores = _scores()
    latest = scores_path(GOLD, MODEL, tmp_path)
    write_run(run_scores_to_frame(scores, gold_set=GOLD, model=MODEL, run_id="r1"), latest, "r1")
    write_run(run_scores_to_frame(scores, gold_set=GOLD, model=MODEL, run_id="r2"), latest, "r2")
    identity, back = load_scores(GOLD, MODEL, run_id="r1", root=tmp_path)
    assert identity == {"gold_set": GOLD, "model": MODEL, "run_id": "r1"}
    assert back.as_dict() == scores.as_dict()
    assert load_scores(GOLD, MODEL, root=tmp_path)[0]["run_id"] == "r2"  # no run id: the latest run
    with pytest.raises(RunResultsNotFoundError, match="run r3"):
        load_scores(GOLD, MODEL, run_id="r3", root=tmp_path)
    with pytest.raises(RunResultsNotFoundError):
        load_scores(GOLD, "never-run", root=tmp_path)


def test_the_cases_of_a_gold_set_are_read_from_its_partition(tmp_path):
    assert load_cases(GOLD, tmp_path) == {}


# --- is a gold version prepared ----------------------------------------------------------------------------------


def _materialize_gold(gold_set: str = GOLD) -> None:
    """The files a prepared gold version stands for: the sample database, the gold set, the oracle results."""
    paths.database_path(DATABASE_NAME).write_bytes(b"")
    for asset in (layout.GOLD_SET, layout.ORACLE_RESULTS):
        write_run(pd.DataFrame({"case_id": ["c1"]}), layout.partition_path(asset, gold_set), "r1")


def test_a_gold_version_is_ready_only_when_marked_and_its_files_are_there(isolated_home, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    assert not is_prepared(GOLD, FP) and not gold_ready(GOLD, FP)
    _materialize_gold()
    assert not gold_ready(GOLD, FP), "files without a marker: not prepared"
    mark_prepared(GOLD, FP, "r1", [{"label": "c1", "kind": "tie_at_cut", "blocking": False, "reason": "tie"}])
    assert is_prepared(GOLD, FP) and not gold_ready(GOLD, FP), "no quarantine record of its preflight: prepare again"
    write_quarantine(GOLD, FP, [])
    assert is_prepared(GOLD, FP) and gold_ready(GOLD, FP)
    assert not gold_ready(GOLD, "another-fingerprint")
    assert prepared_triage(GOLD, FP) == [{"label": "c1", "kind": "tie_at_cut", "blocking": False, "reason": "tie"}]
    assert not list(marker_path(GOLD, FP).parent.glob("*.tmp"))

    layout.partition_path(layout.ORACLE_RESULTS, GOLD).unlink()
    assert is_prepared(GOLD, FP) and not gold_ready(GOLD, FP), "prepared, but a file is gone: prepare again"
    _materialize_gold()
    paths.database_path(DATABASE_NAME).unlink()
    assert not gold_ready(GOLD, FP)


def test_a_gold_version_prepared_on_other_database_contents_is_not_ready(isolated_home, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    _materialize_gold()
    write_quarantine(GOLD, FP, [])
    mark_prepared(GOLD, FP, "r1", database_stamp="stamp-1")
    assert prepared_stamp(GOLD, FP) == "stamp-1"
    assert gold_ready(GOLD, FP, "stamp-1") and gold_ready(GOLD, FP)
    assert not gold_ready(GOLD, FP, "stamp-2"), "a case database changed since: prepare again"
    mark_prepared(GOLD, FP, "r0")  # a marker written before database stamps
    assert prepared_stamp(GOLD, FP) is None and not gold_ready(GOLD, FP, "stamp-1")


def test_a_marker_of_an_older_preflight_or_an_unreadable_one_does_not_count(isolated_home):
    path = mark_prepared(GOLD, FP, "r1")
    marker = json.loads(path.read_text(encoding="utf-8"))
    path.write_text(json.dumps({**marker, "preflight_version": PREFLIGHT_VERSION - 1}), encoding="utf-8")
    assert not is_prepared(GOLD, FP) and prepared_triage(GOLD, FP) == []
    path.write_text("{not json", encoding="utf-8")
    assert not is_prepared(GOLD, FP)


# --- are its database variants prepared ---------------------------------------------------------------------------


def _store_variants(home: Path, count: int, fingerprint: str = FP, stamp: str | None = None) -> list[Path]:
    files = [home / "variants" / f"v{i}.duckdb" for i in range(count)]
    for file in files:
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(b"")
    frame = pd.DataFrame(
        {
            "variant_index": list(range(count)),
            "variant_path": [str(f) for f in files],
            "gold_fingerprint": [fingerprint] * count,
            **({"database_stamp": [stamp] * count} if stamp is not None else {}),
        }
    )
    write_run(frame, layout.partition_path(layout.DATABASE_VARIANTS, GOLD), "r1")
    return files


def test_database_variants_are_ready_for_as_many_variants_as_were_built(isolated_home, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    assert not variants_ready(GOLD, FP, 0), "never materialized: not even for no variants"
    files = _store_variants(isolated_home, 3)
    assert variants_ready(GOLD, FP, 0) and variants_ready(GOLD, FP, 3)
    assert not variants_ready(GOLD, FP, 4), "fewer variants than asked for"
    assert not variants_ready(GOLD, "another-fingerprint", 3)
    files[1].unlink()
    assert not variants_ready(GOLD, FP, 3), "a variant's database file is gone"


def test_database_variants_built_on_other_database_contents_are_not_ready(isolated_home, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    _store_variants(isolated_home, 2, stamp="stamp-1")
    assert variants_ready(GOLD, FP, 2, "stamp-1") and variants_ready(GOLD, FP, 2)
    assert not variants_ready(GOLD, FP, 2, "stamp-2"), "a case database changed since: built again"
    _store_variants(isolated_home, 2)  # stored before database stamps
    assert variants_ready(GOLD, FP, 2) and not variants_ready(GOLD, FP, 2, "stamp-1")


def test_unreadable_or_empty_variants_are_not_ready(isolated_home, monkeypatch):
    monkeypatch.delenv(paths.ASSETS_URL_ENV_VAR, raising=False)
    _store_variants(isolated_home, 0)
    assert variants_ready(GOLD, FP, 0) and not variants_ready(GOLD, FP, 1)
    layout.partition_path(layout.DATABASE_VARIANTS, GOLD).write_bytes(b"not parquet")
    assert not variants_ready(GOLD, FP, 1)

"""The test session never touches the user's storage: tests run under temporary roots, and the session's
guard (tests/storage_guard.py, armed in tests/conftest.py) notices any change to the user's tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from storage_guard import changes, guarded_roots, snapshot

from nl2sql_pipeline import paths


def test_the_snapshot_comparison_names_every_added_changed_and_removed_file(tmp_path: Path) -> None:
    root = tmp_path / ".nl2sql"
    (root / "dagster_home" / "history").mkdir(parents=True)
    (root / "dagster_home" / "history" / "runs.db").write_bytes(b"runs")
    (root / "baselines.duckdb").write_bytes(b"0123")
    (root / "cache").mkdir()
    (root / "cache" / "a.json").write_text("{}")
    before = snapshot(root)
    assert changes(before, snapshot(root)) == []

    (root / "baselines.duckdb").write_bytes(b"3210")  # same size, other bytes
    (root / "dagster_home" / "history" / "runs.db").write_bytes(b"runs and more")
    (root / "cache" / "a.json").unlink()
    (root / "assets" / "run_scores").mkdir(parents=True)
    (root / "assets" / "run_scores" / "x.parquet").write_bytes(b"p")
    assert changes(before, snapshot(root)) == [
        f"{root}/assets: added",
        f"{root}/assets/run_scores: added",
        f"{root}/assets/run_scores/x.parquet: added",
        f"{root}/baselines.duckdb: changed (4 -> 4 bytes)",
        f"{root}/cache/a.json: removed",
        f"{root}/dagster_home/history/runs.db: changed (4 -> 13 bytes)",
    ]


def test_a_tree_created_or_removed_during_the_session_is_a_change(tmp_path: Path) -> None:
    root = tmp_path / ".nl2sql"
    missing = snapshot(root)
    root.mkdir()
    (root / "f").write_text("x")
    assert changes(missing, snapshot(root)) == [f"{root}: created", f"{root}/f: added"]
    assert changes(snapshot(root), missing) == [f"{root}: removed", f"{root}/f: removed"]


def test_the_guard_watches_the_checkout_storage_and_the_roots_the_session_started_with(tmp_path: Path) -> None:
    project = tmp_path / "checkout"
    outside = tmp_path / "elsewhere"
    roots = guarded_roots(project, {"NL2SQL_HOME": str(outside), "DAGSTER_HOME": str(outside / "dagster_home")})
    assert roots == sorted([project / ".nl2sql", project / "data", outside])
    inside = guarded_roots(project, {"NL2SQL_HOME": str(project / ".nl2sql"), "DAGSTER_HOME": None})
    assert inside == [project / ".nl2sql", project / "data"]


def test_this_process_and_its_subprocesses_write_under_temporary_roots_only() -> None:
    checkout_storage = paths.PROJECT_ROOT / ".nl2sql"
    assert not paths.storage_root().is_relative_to(checkout_storage)
    assert not Path(os.environ["DAGSTER_HOME"]).resolve().is_relative_to(checkout_storage)
    assert "NL2SQL_ASSETS_URL" not in os.environ and paths.data_dir() == (paths.PROJECT_ROOT / "data").resolve()
    code = "from nl2sql_pipeline import paths; print(paths.storage_root())"
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120)
    assert Path(child.stdout.strip()) == paths.storage_root()

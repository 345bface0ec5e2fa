"""The instance's event log (``resources/event_log.py``): Dagster's SQLite files, one engine per file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from resources import event_log
from resources.instance import ensure_instance_home


def test_the_instance_keeps_the_history_a_default_instance_wrote_and_reuses_its_engines(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, materialize_tiny: Callable[[dg.DagsterInstance], str]
) -> None:
    dagster_home = isolated_home / "dagster_home"
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    with dg.DagsterInstance.from_config(str(dagster_home)) as default:
        assert type(default.event_log_storage).__name__ == "SqliteEventLogStorage"
        before = materialize_tiny(default)

    (dagster_home / "dagster.yaml").unlink()  # the file ensure_instance_home writes
    ensure_instance_home()
    monkeypatch.setattr(event_log, "MAX_ENGINES", 2)
    with dg.DagsterInstance.get() as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, event_log.ReusedEngineSqliteEventLogStorage)
        assert Path(storage._base_dir) == dagster_home / "history" / "runs"
        # the run the default instance stored is read back, events and materialization
        assert any(e.dagster_event is not None and e.dagster_event.is_step_success for e in instance.all_logs(before))
        latest = instance.get_latest_materialization_event(dg.AssetKey("tiny"))
        assert latest is not None and latest.run_id == before

        runs = [materialize_tiny(instance) for _ in range(3)]
        latest = instance.get_latest_materialization_event(dg.AssetKey("tiny"))
        assert latest is not None and latest.run_id == runs[-1]
        assert all(getattr(instance.get_run_by_id(r), "is_success", False) for r in runs)
        assert len(storage._engines) <= 2, "engines beyond MAX_ENGINES are disposed of"
        assert len(instance.all_logs(runs[0])) == len(instance.all_logs(runs[-1])) > 0  # an evicted file reopens
    assert not storage._engines, "disposing of the instance disposes of its engines"


def test_each_file_keeps_one_open_connection_that_commits_without_an_fsync(
    isolated_home: Path, materialize_tiny: Callable[[dg.DagsterInstance], str]
) -> None:
    ensure_instance_home()
    with dg.DagsterInstance.get() as instance:
        run_id = materialize_tiny(instance)
        storage = instance.event_log_storage
        with storage.run_connection(run_id) as conn:
            first = conn.connection.dbapi_connection
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1, "NORMAL: no fsync per commit in WAL"
        with storage.run_connection(run_id) as conn:
            assert conn.connection.dbapi_connection is first, "the file's connection is kept, not closed per use"
        assert len(instance.all_logs(run_id)) > 0


def test_a_runs_file_is_created_as_dagsters_own_and_its_migration_scripts_are_read_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    from alembic.script import ScriptDirectory
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    def schema(folder: Path, run_id: str) -> tuple[list, list, list]:
        con = sqlite3.connect(folder / f"{run_id}.db")
        try:
            return (
                sorted(con.execute("SELECT type, name, sql FROM sqlite_master").fetchall()),
                con.execute("SELECT version_num FROM alembic_version").fetchall(),
                con.execute("PRAGMA journal_mode").fetchall(),
            )
        finally:
            con.close()

    dagsters, ours = tmp_path / "dagster", tmp_path / "ours"
    with SqliteEventLogStorage(str(dagsters)).run_connection("r1"):
        pass
    event_log._migration_scripts.cache_clear()
    reads: list[str] = []
    from_config = ScriptDirectory.from_config.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        ScriptDirectory, "from_config", classmethod(lambda cls, config: reads.append("x") or from_config(cls, config))
    )
    storage = event_log.ReusedEngineSqliteEventLogStorage(str(ours))
    reads.clear()  # the index shard: Dagster's own path
    for run_id in ("r1", "r2", "r3"):
        with storage.run_connection(run_id):
            pass
    with storage.run_connection("r1"):  # stamped already: left as it is
        pass
    assert len(reads) == 1
    assert schema(ours, "r1") == schema(dagsters, "r1")
    assert schema(ours, "r1")[1] == [(ScriptDirectory.from_config(event_log._alembic_config()).get_current_head(),)]
    storage.dispose()


def test_has_table_answers_as_dagsters_on_the_kept_engine(tmp_path: Path) -> None:
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    dagsters = SqliteEventLogStorage(str(tmp_path / "dagster"))
    ours = event_log.ReusedEngineSqliteEventLogStorage(str(tmp_path / "ours"))
    for table in ("event_logs", "asset_event_tags", "dynamic_partitions", "no_such_table"):
        assert ours.has_table(table) == dagsters.has_table(table)
    ours.dispose()


def test_has_table_inside_an_open_connection_does_not_wait_for_itself(tmp_path: Path) -> None:
    import threading

    storage = event_log.ReusedEngineSqliteEventLogStorage(str(tmp_path))
    answers: list[bool] = []

    def ask() -> None:
        with storage.index_connection():  # Dagster asks has_table inside its connections (wipe, concurrency)
            answers.append(storage.has_table("concurrency_limits"))
        with storage.run_connection("r1"):
            answers.append(storage.has_table("no_such_table"))

    worker = threading.Thread(target=ask, daemon=True)
    worker.start()
    worker.join(timeout=20)
    assert not worker.is_alive(), "has_table waited for the lock its caller holds"
    assert answers == [True, False]
    storage.dispose()

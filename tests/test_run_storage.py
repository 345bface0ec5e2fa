"""The instance's run storage (``resources/run_storage.py``): Dagster's SQLite file, one kept engine."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import dagster as dg
import pytest

from resources.instance import ensure_instance_home
from resources.run_storage import ReusedEngineSqliteRunStorage


def test_the_instance_keeps_the_runs_a_default_instance_wrote_in_the_same_file(
    isolated_home: Path, materialize_tiny: Callable[[dg.DagsterInstance], str]
) -> None:
    dagster_home = isolated_home / "dagster_home"
    (dagster_home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    with dg.DagsterInstance.from_config(str(dagster_home)) as default:
        assert type(default.run_storage).__name__ == "SqliteRunStorage"
        before = materialize_tiny(default)

    (dagster_home / "dagster.yaml").unlink()  # the file ensure_instance_home writes
    ensure_instance_home()
    with dg.DagsterInstance.get() as instance:
        storage = instance.run_storage
        assert isinstance(storage, ReusedEngineSqliteRunStorage)
        assert storage._conn_string.endswith(str(dagster_home / "history" / "runs.db"))
        old = instance.get_run_by_id(before)
        assert old is not None and old.is_success, "the run the default instance stored is read back"
        runs = [materialize_tiny(instance) for _ in range(2)]
        assert all(getattr(instance.get_run_by_id(r), "is_success", False) for r in runs)
        instance.add_run_tags(runs[0], {"nl2sql/test": "kept"})
        with storage.connect() as conn:
            first = conn.connection.dbapi_connection
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 1, "NORMAL: no fsync per commit in WAL"
        with storage.connect() as conn:
            assert conn.connection.dbapi_connection is first, "the file's connection is kept, not closed per use"
            with storage.connect() as nested:  # a block inside a block gets a connection of its own
                assert nested.connection.dbapi_connection is not first
    with dg.DagsterInstance.from_config(str(dagster_home)) as again:  # Dagster's own class reads what it wrote
        pass
    with dg.DagsterInstance.from_ref(dg.DagsterInstance.get().get_ref()) as reopened:
        run = reopened.get_run_by_id(runs[0])
        assert run is not None and run.tags.get("nl2sql/test") == "kept"
    assert again is not None


def test_a_ready_instance_opens_without_reading_the_migration_scripts(
    isolated_home: Path, monkeypatch: pytest.MonkeyPatch, materialize_tiny: Callable[[dg.DagsterInstance], str]
) -> None:
    from alembic.script import ScriptDirectory

    from resources.run_storage import ReadyCheckedSqliteScheduleStorage

    ensure_instance_home()
    with dg.DagsterInstance.get() as first:  # creates runs.db and schedules.db through Dagster's own from_local
        run_id = materialize_tiny(first)
    reads: list[str] = []
    from_config = ScriptDirectory.from_config.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(
        ScriptDirectory, "from_config", classmethod(lambda cls, config: reads.append("x") or from_config(cls, config))
    )
    with dg.DagsterInstance.get() as instance:
        assert isinstance(instance.run_storage, ReusedEngineSqliteRunStorage)
        assert isinstance(instance.schedule_storage, ReadyCheckedSqliteScheduleStorage)
        assert instance.schedule_storage._conn_string.endswith("dagster_home/schedules/schedules.db")
        assert reads == [], "a stamped file is opened as it is"
        run = instance.get_run_by_id(run_id)
        assert run is not None and run.is_success
        assert instance.schedule_storage.all_instigator_state() == []

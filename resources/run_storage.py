"""Dagster's SQLite run storage with one SQLAlchemy engine for its file instead of one per statement.

Dagster's ``SqliteRunStorage`` creates an engine (``NullPool``: a new SQLite connection), runs one statement,
commits with an fsync and disposes of it for every question and update about a run (about 50 for one model's
run: its record, tags, status, the partition checks of the steps). This storage keeps one engine with one
pooled connection (more at once, from other threads or nested blocks, are opened and closed after use), whose
connections commit with ``synchronous=NORMAL`` as the event log's do (``resources.event_log``: WAL stays
consistent, a power loss may lose the last commits). It reads and writes the same file as Dagster's class
(``$DAGSTER_HOME/history/runs.db``), created and migrated by Dagster's own ``from_local``; other processes (the
webserver, the daemon, another run) read and write it beside it as before. ``resources/instance.py`` names it
in the ``dagster.yaml`` it writes.

Both it and the schedule storage (``ReadyCheckedSqliteScheduleStorage``, Dagster's class otherwise) open a file
that is ready (stamped with an alembic revision) without reading Dagster's ~90 migration scripts, which Dagster's
``from_local`` does on every open only to learn that the head revision exists (about 0.05 s each).
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, cast

from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._core.storage.schedules.sqlite.sqlite_schedule_storage import SqliteScheduleStorage
from dagster._core.storage.sqlite import create_db_conn_string
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool

from resources.event_log import ConfiguredByDagsterHome, _wal_without_fsync_per_commit


def run_storage_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its run storage under ``dagster_home``."""
    return os.path.join(dagster_home, "history", "")


def schedule_storage_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its schedule storage under ``dagster_home``."""
    return os.path.join(dagster_home, "schedules")


def _ready(path: str, *tables: str) -> bool:
    """Whether the SQLite file at ``path`` exists with an alembic revision and ``tables``: all Dagster's
    ``from_local`` checks before opening it (it never compares the revision with its scripts' head), without
    reading its ~90 migration scripts (about 0.05 s). Anything else (no file, no revision, a locked or broken
    file) is left to Dagster's own ``from_local``."""
    if not os.path.exists(path):
        return False
    try:
        con = sqlite3.connect(path, timeout=1.0)
        try:
            names = {row[0] for row in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            if "alembic_version" not in names or not set(tables) <= names:
                return False
            return con.execute("SELECT version_num FROM alembic_version").fetchone() is not None
        finally:
            con.close()
    except sqlite3.Error:
        return False


class ReusedEngineSqliteRunStorage(ConfiguredByDagsterHome, SqliteRunStorage):
    """``SqliteRunStorage`` keeping one engine for its file (configured by the Dagster home, not a path)."""

    def __init__(self, conn_string: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(conn_string, inst_data=inst_data)
        self._engine = create_engine(
            conn_string,
            poolclass=QueuePool,
            pool_size=1,
            max_overflow=-1,  # nested blocks and other threads get a connection of their own, closed after use
            connect_args={"check_same_thread": False},
        )
        event.listen(self._engine, "connect", _wal_without_fsync_per_commit)

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> ReusedEngineSqliteRunStorage:
        return cls.from_local(run_storage_directory(str(config_value["dagster_home"])), inst_data=inst_data)

    @classmethod
    def from_local(cls, base_dir: str, inst_data: ConfigurableClassData | None = None) -> ReusedEngineSqliteRunStorage:
        """Dagster's ``from_local``, skipped for a file it would only open (stamped, with ``instance_info``)."""
        if _ready(os.path.join(base_dir, "runs.db"), "runs", "instance_info"):
            return cls(create_db_conn_string(base_dir, "runs"), inst_data)
        return super().from_local(base_dir, inst_data=inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()


class ReadyCheckedSqliteScheduleStorage(ConfiguredByDagsterHome, SqliteScheduleStorage):
    """Dagster's ``SqliteScheduleStorage`` (configured by the Dagster home) whose ``from_local`` skips reading the
    migration scripts for a file it would only open (stamped)."""

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> ReadyCheckedSqliteScheduleStorage:
        storage = cls.from_local(schedule_storage_directory(str(config_value["dagster_home"])), inst_data=inst_data)
        return cast(ReadyCheckedSqliteScheduleStorage, storage)  # Dagster's from_local builds cls too

    @classmethod
    def from_local(cls, base_dir: str, inst_data: ConfigurableClassData | None = None) -> SqliteScheduleStorage:
        if _ready(os.path.join(base_dir, "schedules.db"), "job_ticks"):
            return cls(create_db_conn_string(base_dir, "schedules"), inst_data)
        return super().from_local(base_dir, inst_data=inst_data)

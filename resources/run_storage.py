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
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
from dagster._core.storage.runs.sqlite.sqlite_run_storage import SqliteRunStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection
from sqlalchemy.pool import QueuePool

from resources.event_log import _wal_without_fsync_per_commit


def run_storage_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its run storage under ``dagster_home``."""
    return os.path.join(dagster_home, "history", "")


class ReusedEngineSqliteRunStorage(SqliteRunStorage):
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
    def config_type(cls) -> dict[str, Any]:
        return {"dagster_home": dg.StringSource}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> ReusedEngineSqliteRunStorage:
        return cls.from_local(run_storage_directory(str(config_value["dagster_home"])), inst_data=inst_data)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        with self._engine.connect() as conn, conn.begin():
            yield conn

    def dispose(self) -> None:
        super().dispose()
        self._engine.dispose()

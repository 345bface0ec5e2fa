"""Dagster's SQLite event log with one SQLAlchemy engine per database file instead of one per statement.

Dagster's ``SqliteEventLogStorage`` creates an engine, runs one statement and disposes of the engine for
every event it stores and every question it answers (a run of one model stores about 100 events and asks
about 300 questions). Creating an engine is costly, and a new engine starts with an empty compiled-statement
cache, so every statement is compiled again: a quarter of the CPU of a small run. This storage keeps each
file's engine (``NullPool``: still one SQLite connection per use, opened and closed as Dagster does; only the
engine and its statement cache are kept), for the files used last (``MAX_ENGINES``).

It stores exactly what Dagster's class stores, in the same files (``$DAGSTER_HOME/history/runs/``): an
instance written before it reads and writes the same history. ``resources/instance.py`` names it in the
``dagster.yaml`` it writes.
"""

from __future__ import annotations

import os
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SQLITE_BUSY_TIMEOUT_SECONDS, SqliteEventLogStorage
from dagster._serdes import ConfigurableClassData
from sqlalchemy import create_engine
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import NullPool

MAX_ENGINES = 32
"""Engines kept at once: the index file and the run files used last (a long-lived daemon sees many runs)."""


def event_log_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its event log under ``dagster_home``."""
    return os.path.join(dagster_home, "history", "runs", "")


class ReusedEngineSqliteEventLogStorage(SqliteEventLogStorage):
    """``SqliteEventLogStorage`` keeping one engine per shard (configured by the Dagster home, not a path)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        super().__init__(base_dir, inst_data=inst_data)

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"dagster_home": dg.StringSource}

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> ReusedEngineSqliteEventLogStorage:
        return cls(event_log_directory(str(config_value["dagster_home"])), inst_data=inst_data)

    def _engine(self, shard: str) -> Engine:
        engine = self._engines.get(shard)
        if engine is None:
            engine = create_engine(
                self.conn_string_for_shard(shard),
                poolclass=NullPool,
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
            )
            self._engines[shard] = engine
            while len(self._engines) > MAX_ENGINES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
        else:
            self._engines.move_to_end(shard)
        return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        with self._db_lock:
            engine = self._engine(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def dispose(self) -> None:
        super().dispose()
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()

"""Dagster's SQLite event log with one SQLAlchemy engine per database file instead of one per statement.

Dagster's ``SqliteEventLogStorage`` creates an engine, runs one statement and disposes of the engine for
every event it stores and every question it answers (a run of one model stores about 100 events and asks
about 300 questions). Creating an engine is costly, and a new engine starts with an empty compiled-statement
cache, so every statement is compiled again: a quarter of the CPU of a small run. This storage keeps each
file's engine, for the files used last (``MAX_ENGINES``), and one open SQLite connection per engine (used
under Dagster's lock, one statement at a time): closing the last connection to a WAL file checkpoints it
and deletes the WAL with an fsync, which Dagster's one connection per statement paid for every event. Its
connections commit with ``synchronous=NORMAL`` (no fsync per commit; SQLite's advice for WAL: the file stays
consistent, a power loss may lose the last events). Other processes (the webserver, the daemon, another run)
read and write the same files as before: WAL allows readers beside the one writer.

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
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

MAX_ENGINES = 32
"""Engines kept at once: the index file and the run files used last (a long-lived daemon sees many runs)."""


def event_log_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its event log under ``dagster_home``."""
    return os.path.join(dagster_home, "history", "runs", "")


def _wal_without_fsync_per_commit(dbapi_connection: Any, _record: Any) -> None:
    """``synchronous=NORMAL``: in WAL mode (Dagster's) a commit no longer waits for an fsync; the file stays
    consistent, only the last transactions before a power loss may be lost (SQLite's advice for WAL)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


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
                poolclass=QueuePool,
                pool_size=1,
                max_overflow=-1,  # more at once (Dagster's set-up opens a second one) are closed after use
                connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
            )
            event.listen(engine, "connect", _wal_without_fsync_per_commit)
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

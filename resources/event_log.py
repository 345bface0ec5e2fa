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

Both this storage and the PostgreSQL one of ``deploy/dagster.yaml`` (``resources.postgres_event_log``) take a
pool slot with one conditional UPDATE (:func:`take_free_slot`), so no claim on the instance double-books a
slot: neither the executors' (in-process, multiprocess, Celery) nor the steps' own (``resources/pools.py``).
"""

from __future__ import annotations

import functools
import os
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import dagster as dg
import sqlalchemy as sa
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from dagster._core.storage.event_log.schema import ConcurrencySlotsTable as Slots
from dagster._core.storage.event_log.schema import SqlEventLogStorageMetadata
from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage
from dagster._core.storage.event_log.sqlite import sqlite_event_log
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    INDEX_SHARD_NAME,
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import _alembic_lock, get_alembic_config, safe_commit
from dagster._serdes import ConfigurableClassData
from dagster._utils.concurrency import ConcurrencySlotStatus
from sqlalchemy import create_engine, event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

MAX_ENGINES = 32
"""Engines kept at once: the index file and the run files used last (a long-lived daemon sees many runs)."""


def event_log_directory(dagster_home: str) -> str:
    """Where Dagster's default instance keeps its event log under ``dagster_home``."""
    return os.path.join(dagster_home, "history", "runs", "")


def take_free_slot(storage: SqlEventLogStorage, pool: str, run_id: str, step_key: str) -> bool:
    """Mark one free slot row of ``pool`` as (``run_id``, ``step_key``)'s, atomically (False when none is free).

    Dagster's ``_claim_concurrency_slot`` (1.13.27) selects a free row, then updates it by id whoever holds it
    by then (on PostgreSQL the ``FOR UPDATE`` lock ends with the SELECT: the connection is in AUTOCOMMIT; SQLite
    ignores it): two claimers at the same instant are both told they hold the last slot (``tests/test_pools.py``
    measures it). Here the UPDATE itself requires the row to be still free, so of two claimers of one row one
    updates it and the other updates nothing and tries the next free row."""
    free = sa.and_(Slots.c.concurrency_key == pool, Slots.c.step_key.is_(None), Slots.c.deleted.is_(False))
    with storage.index_connection() as conn:
        for (slot_id,) in conn.execute(sa.select(Slots.c.id).where(free).order_by(Slots.c.id)).fetchall():
            taken = conn.execute(
                Slots.update().where(sa.and_(Slots.c.id == slot_id, free)).values(run_id=run_id, step_key=step_key)
            )
            if taken.rowcount:
                return True
    return False


def claim_status(taken: bool) -> ConcurrencySlotStatus:
    """What ``_claim_concurrency_slot`` answers for a slot taken (or not) by :func:`take_free_slot`."""
    return ConcurrencySlotStatus.CLAIMED if taken else ConcurrencySlotStatus.BLOCKED


def _wal_without_fsync_per_commit(dbapi_connection: Any, _record: Any) -> None:
    """``synchronous=NORMAL``: in WAL mode (Dagster's) a commit no longer waits for an fsync; the file stays
    consistent, only the last transactions before a power loss may be lost (SQLite's advice for WAL)."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _alembic_config() -> Config:
    """The alembic config Dagster's SQLite event log migrates its files with."""
    return get_alembic_config(sqlite_event_log.__file__)


@functools.cache
def _migration_scripts() -> ScriptDirectory:
    """Dagster's alembic scripts of the event log, read once per process (its revision map is kept with them)."""
    return ScriptDirectory.from_config(_alembic_config())


class ConfiguredByDagsterHome:
    """Mixin of the instance's SQLite storages: configured by the Dagster home (``dagster_home:`` in
    ``dagster.yaml``), each finding its own file under it, as Dagster's default instance does."""

    @classmethod
    def config_type(cls) -> dict[str, Any]:
        return {"dagster_home": dg.StringSource}


class ReusedEngineSqliteEventLogStorage(ConfiguredByDagsterHome, SqliteEventLogStorage):
    """``SqliteEventLogStorage`` keeping one engine per shard (configured by the Dagster home, not a path),
    whose pool slot claim never double-books (:func:`take_free_slot`)."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._table_engine: Engine | None = None
        self._table_lock = threading.Lock()
        super().__init__(base_dir, inst_data=inst_data)

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

    def _initdb(self, engine: Engine, for_index_shard: bool = False) -> None:
        """Dagster's ``_initdb`` of a run's database without reading its 89 migration scripts two or three times
        per database (about 0.05 s each): a stamped database is left as it is (Dagster checks no more than
        that it has a revision), a new one gets WAL, the tables and the head revision of the scripts read once
        per process. The index shard, and anything unexpected (another process creating the same file), take
        Dagster's own path with its retries."""
        if not for_index_shard:
            try:
                with engine.connect() as connection:
                    migrations = MigrationContext.configure(connection)
                    if migrations.get_current_revision():
                        return
                    # WAL before the tables (Dagster sets it after): 25 CREATEs without a journal's fsync each
                    connection.execute(sa.text("PRAGMA journal_mode=WAL;"))
                    SqlEventLogStorageMetadata.create_all(engine)
                    with _alembic_lock:
                        migrations.stamp(_migration_scripts(), "head")
                    safe_commit(connection)
                return
            except (sa.exc.DatabaseError, sqlite3.DatabaseError):
                pass
        super()._initdb(engine, for_index_shard=for_index_shard)

    def has_table(self, table_name: str) -> bool:
        """Whether the index file has the table, asked on an engine kept for these questions (Dagster's creates and
        disposes of an engine per question: about 30 per run). Not the index file's engine of ``_connect``: Dagster
        asks this inside its connections, under ``_db_lock``."""
        with self._table_lock:
            if self._table_engine is None:
                self._table_engine = create_engine(
                    self.conn_string_for_shard(INDEX_SHARD_NAME),
                    poolclass=QueuePool,
                    pool_size=1,
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS, "check_same_thread": False},
                )
            with self._table_engine.connect() as conn:
                return bool(self._table_engine.dialect.has_table(conn, table_name))

    def _claim_concurrency_slot(self, concurrency_key: str, run_id: str, step_key: str) -> ConcurrencySlotStatus:
        # the last step of Dagster's claim_concurrency_slot (after its queue of pending steps gave this step
        # its turn): take the slot row, only while it is still free
        return claim_status(take_free_slot(self, concurrency_key, run_id, step_key))

    def dispose(self) -> None:
        super().dispose()
        with self._db_lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
        with self._table_lock:
            if self._table_engine is not None:
                self._table_engine.dispose()
                self._table_engine = None

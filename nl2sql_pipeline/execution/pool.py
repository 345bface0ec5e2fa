"""``run_query``: the one-call sandbox, backed by a per-process pool of open ``Sandbox`` databases.

Opening a DuckDB database instance costs ~30-40 ms (DuckDB builds its catalog of built-in functions for
every instance, ``:memory:`` included); a new connection on an open one costs ~40 us. The pool keeps one
locked-down instance per (file, limits) open while queries come, hands each query a fresh connection,
and closes an instance after ``IDLE_CLOSE_S`` without queries so the file is not held open (a shared
read lock) long after a run. The interval is long enough to cover the gap between the stages of one
run in one process (the oracle, then generation, then the candidates' execution: with the 2 s it once
had, every model run of ``nl2sql-eval run`` opened the instance again). A process that exits closes
its instances at once. A file replaced on disk (new inode, size or mtime) is reopened. Call
``release_sandboxes()`` before writing a database in this process.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution.exceptions import SandboxConflictError
from nl2sql_pipeline.execution.limits import SandboxLimits
from nl2sql_pipeline.execution.query_result import QueryResult
from nl2sql_pipeline.execution.sandbox import Sandbox, check_query
from nl2sql_pipeline.execution.scheduler import SCHEDULER, Ticket

logger = logging.getLogger(__name__)

IDLE_CLOSE_S = 30.0
"""Seconds without queries after which a pooled database is closed."""


@dataclass
class _Entry:
    sandbox: Sandbox
    identity: tuple[int, ...]
    in_use: int = 0
    last_used: float = field(default_factory=time.monotonic)
    retired: bool = False
    reaper: Ticket | None = None


class SandboxPool:
    """Open sandboxes keyed by (database file, limits, storage root), closed when idle."""

    def __init__(self, idle_close_s: float = IDLE_CLOSE_S):
        self.idle_close_s = idle_close_s
        self._lock = threading.Lock()
        self._entries: dict[tuple, _Entry] = {}
        self._resolved: dict[tuple, Path] = {}

    def run(self, db_path: Path | str, sql: str, limits: SandboxLimits = SandboxLimits()) -> QueryResult:
        """Run ``sql`` on a fresh connection of the pooled sandbox for ``db_path`` and ``limits``.

        SQL refused by the statement check never opens the database (but a missing file still raises).
        """
        checked = _checked(db_path, sql)
        if isinstance(checked, QueryResult):
            return checked
        entry = self._acquire(Path(db_path), limits)
        try:
            return entry.sandbox.run_statement(checked, sql)
        finally:
            self._release(entry)

    def release(self, db_path: Path | str | None = None) -> None:
        """Close the pooled sandboxes of ``db_path`` (all when None); busy ones close after their query."""
        target = Path(db_path).resolve() if db_path is not None else None
        with self._lock:
            for key, entry in list(self._entries.items()):
                if target is None or entry.sandbox.db_path == target:
                    del self._entries[key]
                    self._retire(entry)

    def open_count(self) -> int:
        """How many sandboxes the pool holds open."""
        with self._lock:
            return len(self._entries)

    def forget_after_fork(self) -> None:
        """Drop (without closing) what a forked child inherited: DuckDB instances do not survive fork."""
        self._lock = threading.Lock()
        self._entries = {}
        self._resolved = {}

    def _acquire(self, db_path: Path, limits: SandboxLimits) -> _Entry:
        stat = _require_file(db_path)
        identity = (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)
        resolved = self._resolve(db_path, stat)
        key = (resolved, limits, os.environ.get(paths.STORAGE_ENV_VAR))
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.identity != identity and entry.in_use == 0:
                logger.info("database %s changed on disk: reopening its sandbox", resolved)
                del self._entries[key]
                self._retire(entry)
                entry = None
            if entry is None:
                entry = _Entry(self._open(resolved, limits), identity)
                self._entries[key] = entry
            entry.in_use += 1
            return entry

    def _resolve(self, db_path: Path, stat: os.stat_result) -> Path:
        """``db_path.resolve()``, remembered per (path as given, file): a link pointed elsewhere resolves anew."""
        key = (str(db_path), os.getcwd() if not db_path.is_absolute() else "", stat.st_dev, stat.st_ino)
        resolved = self._resolved.get(key)
        if resolved is None:
            resolved = db_path.resolve()
            if len(self._resolved) >= 256:
                self._resolved.clear()
            self._resolved[key] = resolved
        return resolved

    def _open(self, resolved: Path, limits: SandboxLimits) -> Sandbox:
        """A new sandbox; idle pooled ones on the same file with other DuckDB settings are closed first."""
        try:
            return Sandbox(resolved, limits)
        except SandboxConflictError:
            idle = [
                (key, entry)
                for key, entry in self._entries.items()
                if entry.sandbox.db_path == resolved and entry.in_use == 0
            ]
            if not idle:
                raise
            for key, entry in idle:
                del self._entries[key]
                self._retire(entry)
            return Sandbox(resolved, limits)

    def _release(self, entry: _Entry) -> None:
        with self._lock:
            entry.in_use -= 1
            entry.last_used = time.monotonic()
            if entry.in_use:
                return
            if entry.retired:
                entry.sandbox.close()
            elif entry.reaper is None:
                entry.reaper = SCHEDULER.schedule(self.idle_close_s, lambda: self._reap(entry))

    def _retire(self, entry: _Entry) -> None:
        entry.retired = True
        if entry.in_use == 0:
            entry.sandbox.close()

    def _reap(self, entry: _Entry) -> None:
        with self._lock:
            entry.reaper = None
            if entry.retired or entry.in_use:
                return
            idle = time.monotonic() - entry.last_used
            if idle < self.idle_close_s:
                entry.reaper = SCHEDULER.schedule(self.idle_close_s - idle, lambda: self._reap(entry))
                return
            for key, candidate in list(self._entries.items()):
                if candidate is entry:
                    del self._entries[key]
            logger.debug("closing idle sandbox on %s", entry.sandbox.db_path)
            self._retire(entry)


class HeldSandboxes:
    """One stage's hold on the pooled sandboxes it queries: each (database, limits) is acquired from the
    pool at its first query and released when the hold ends, instead of at every query.

    Every query still gets its own fresh connection; what is saved is the pool's bookkeeping per query
    (the file's stat, the key, the lock: ~0.1 ms right after a query has filled the CPU caches). While
    held, a database file replaced on disk is not reopened: the stage reads one version of it, as a
    query that was running when the file was replaced does.
    """

    def __init__(self, pool: SandboxPool):
        self._pool = pool
        self._lock = threading.Lock()
        self._held: dict[tuple[str, SandboxLimits], _Entry] = {}

    def run(self, db_path: Path | str, sql: str, limits: SandboxLimits = SandboxLimits()) -> QueryResult:
        """``run_query``, on the held sandbox of ``db_path`` and ``limits``."""
        checked = _checked(db_path, sql)
        if isinstance(checked, QueryResult):
            return checked
        return self._entry(db_path, limits).sandbox.run_statement(checked, sql)

    def _entry(self, db_path: Path | str, limits: SandboxLimits) -> _Entry:
        key = (os.fspath(db_path), limits)
        entry = self._held.get(key)
        if entry is not None:
            return entry
        acquired = self._pool._acquire(Path(db_path), limits)
        with self._lock:
            entry = self._held.setdefault(key, acquired)
        if entry is not acquired:  # another thread of the stage acquired it first
            self._pool._release(acquired)
        return entry

    def release(self) -> None:
        """Hand every held sandbox back to the pool (it closes after ``IDLE_CLOSE_S`` without queries)."""
        with self._lock:
            held, self._held = self._held, {}
        for entry in held.values():
            self._pool._release(entry)


def _checked(db_path: Path | str, sql: str) -> duckdb.Statement | QueryResult:
    """The statement to run, or the result that refuses ``sql`` (a missing database still raises)."""
    checked = check_query(sql)
    if isinstance(checked, QueryResult):
        _require_file(Path(db_path))
    return checked


def _require_file(path: Path) -> os.stat_result:
    """``path``'s stat; ``DatabaseNotFoundError`` when it does not exist."""
    try:
        return path.stat()
    except FileNotFoundError:
        raise DatabaseNotFoundError(
            f"database file {path.resolve()} does not exist; build the sample database with "
            "`nl2sql-eval db build` or pass the path of an existing .duckdb file"
        ) from None


POOL = SandboxPool()
os.register_at_fork(after_in_child=POOL.forget_after_fork)


def _shutdown() -> None:
    """At exit: stop the scheduler thread first (no reaper or watchdog inside DuckDB), then close every sandbox."""
    SCHEDULER.shutdown()
    POOL.release()


atexit.register(_shutdown)


def run_query(db_path: Path | str, sql: str, limits: SandboxLimits = SandboxLimits()) -> QueryResult:
    """Run one untrusted query on a fresh read-only, locked-down connection to ``db_path``.

    Refused statements, bad SQL, timeouts and resource limits come back as a ``QueryResult`` with
    ``ok=False``; a missing database raises ``DatabaseNotFoundError``, one that cannot be opened
    ``SandboxError``.
    """
    return POOL.run(db_path, sql, limits)


@contextmanager
def held_sandboxes() -> Iterator[Callable[[Path | str, str, SandboxLimits], QueryResult]]:
    """A ``run_query`` for one stage that holds each database's pooled sandbox until the block ends.

    with held_sandboxes() as run:
        results = [run(db_path, sql, limits) for sql in texts]
    """
    hold = HeldSandboxes(POOL)
    try:
        yield hold.run
    finally:
        hold.release()


def release_sandboxes(db_path: Path | str | None = None) -> None:
    """Close the pooled sandboxes of ``db_path`` (every one when None), e.g. before rebuilding it."""
    POOL.release(db_path)

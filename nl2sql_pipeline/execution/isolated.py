"""``run_query_isolated``: the subprocess backstop for queries that ignore ``interrupt()``.

DuckDB checks for interrupts between vector batches, so a query that spends its time inside one huge
scalar value (``repeat('x', 1e9)``: ~10 s, ``list_sort(range(1e8))``: ~30 s, measured with a 0.5 s
timeout) runs on long past its deadline, and such allocations are not bounded by ``memory_limit``.
Here the query runs in a long-lived worker process (``python -m nl2sql_pipeline.execution.worker``)
with the same in-process sandbox, pool and watchdog; the parent kills the worker ``grace_s`` after the
timeout and starts a new one on the next call. Per query this adds a pickle round trip over a pipe;
a kill costs a worker start (~0.5 s). ``run_query`` stays the default.
"""

from __future__ import annotations

import atexit
import logging
import os
import pickle
import select
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Generator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import duckdb

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import DatabaseNotFoundError, Nl2SqlError
from nl2sql_pipeline.execution.exceptions import SandboxError
from nl2sql_pipeline.execution.limits import SandboxLimits
from nl2sql_pipeline.execution.query_result import QueryResult
from nl2sql_pipeline.execution.statements import StatementRefused, parse_single_query

logger = logging.getLogger(__name__)

_HEADER = struct.Struct(">Q")
READY = "nl2sql-sandbox-worker-ready"


def _pipe(stream: IO[bytes] | None) -> IO[bytes]:
    """A pipe of the worker process (started with stdin and stdout piped, so never None)."""
    if stream is None:
        raise SandboxError("the sandbox worker process has no pipe to talk through")
    return stream


def write_frame(stream: IO[bytes], payload: object) -> None:
    """Write one length-prefixed pickle frame and flush."""
    data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_HEADER.pack(len(data)) + data)
    stream.flush()


def read_frame(stream: IO[bytes]) -> object:
    """Read one frame written by ``write_frame``; raises EOFError when the stream ends first."""
    header = _read_exactly(stream, _HEADER.size)
    return pickle.loads(_read_exactly(stream, _HEADER.unpack(header)[0]))


def _read_exactly(stream: IO[bytes], size: int) -> bytes:
    chunks, remaining = [], size
    while remaining:
        chunk = stream.read(remaining)
        if not chunk:
            raise EOFError("the sandbox worker closed its output")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _request(db_path: Path | str, sql: str, limits: SandboxLimits) -> tuple | QueryResult:
    """The worker's request for ``sql``, or the refusal of a statement that is not one query.

    Raises ``DatabaseNotFoundError`` when the database file does not exist.
    """
    try:
        parse_single_query(sql)
    except StatementRefused as exc:
        return QueryResult.failure("forbidden", str(exc))
    except duckdb.ParserException as exc:
        return QueryResult.failure("syntax", str(exc))
    path = Path(db_path).resolve()
    if not path.is_file():
        raise DatabaseNotFoundError(
            f"database file {path} does not exist; build the sample database with `nl2sql-eval db build` "
            "or pass the path of an existing .duckdb file"
        )
    return (str(path), sql, limits, os.environ.get(paths.STORAGE_ENV_VAR))


@dataclass
class _Sent:
    """A query written to the worker: when, its timeout, and the failure when the worker was found dead."""

    process: subprocess.Popen[bytes]
    started: float
    timeout_s: float
    died: str | None = None


class IsolatedRunner:
    """One worker process running queries one at a time; killed and replaced when a query overruns."""

    def __init__(self, grace_s: float = 1.0, startup_timeout_s: float = 60.0):
        self.grace_s = grace_s
        self.startup_timeout_s = startup_timeout_s
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None

    def run(
        self,
        db_path: Path | str,
        sql: str,
        limits: SandboxLimits = SandboxLimits(),
        grace_s: float | None = None,
    ) -> QueryResult:
        """Run ``sql`` in the worker; a worker still busy ``grace_s`` after the timeout is killed."""
        grace_s = self.grace_s if grace_s is None else grace_s
        request = _request(db_path, sql, limits)
        if isinstance(request, QueryResult):
            return request
        with self._lock:
            outcome = self._collect(self._send(self._worker(), request, limits), grace_s)
        if isinstance(outcome, Nl2SqlError):
            raise outcome
        return outcome

    def run_many(
        self,
        queries: Iterable[tuple[Path | str, str]],
        limits: SandboxLimits = SandboxLimits(),
        grace_s: float | None = None,
    ) -> Generator[QueryResult | Nl2SqlError, None, None]:
        """``run`` for each ``(db_path, sql)`` in order: one result each, or the ``Nl2SqlError`` that ``run``
        would raise (a missing database, a worker that cannot start).

        Each query is sent to the worker before the previous query's result is yielded, so the worker runs
        it while the caller looks at that result. Each has the deadline ``run`` gives it, counted from when it
        was sent; a worker still busy past it is killed (when the caller asks for that result) and the next
        query goes to a new one. The runner is held for the whole iteration: exhaust or close the iterator.
        """
        grace_s = self.grace_s if grace_s is None else grace_s
        with self._lock:
            pending: _Sent | QueryResult | Nl2SqlError | None = None
            try:
                for db_path, sql in queries:
                    previous = self._collect(pending, grace_s) if isinstance(pending, _Sent) else pending
                    pending = self._start(db_path, sql, limits)  # the worker runs it while the caller has previous
                    if previous is not None:
                        yield previous
                last, pending = pending, None
                if last is not None:
                    yield self._collect(last, grace_s) if isinstance(last, _Sent) else last
            finally:
                if isinstance(pending, _Sent):  # left before its reply was read: no later call may read it
                    self._kill()

    def _start(self, db_path: Path | str, sql: str, limits: SandboxLimits) -> _Sent | QueryResult | Nl2SqlError:
        """Send one query to the worker (started when needed); the refusal or error that stops it instead."""
        try:
            request = _request(db_path, sql, limits)
            if isinstance(request, QueryResult):
                return request
            return self._send(self._worker(), request, limits)
        except Nl2SqlError as exc:
            return exc

    def _send(self, process: subprocess.Popen[bytes], request: tuple, limits: SandboxLimits) -> _Sent:
        """Write ``request`` to the worker; its deadline counts from now."""
        started = time.perf_counter()
        try:
            write_frame(_pipe(process.stdin), request)
        except (BrokenPipeError, EOFError):
            return _Sent(process, started, limits.timeout_s, self._died(process))
        return _Sent(process, started, limits.timeout_s)

    def _collect(self, sent: _Sent, grace_s: float) -> QueryResult | Nl2SqlError:
        """The outcome of a sent query: its reply, or a timeout (the worker killed) once ``grace_s`` after its
        timeout has passed since it was sent."""
        outcome: object = sent.died
        if outcome is None:
            try:
                remaining = max(0.0, sent.started + sent.timeout_s + grace_s - time.perf_counter())
                outcome = self._await(sent.process, remaining)
            except (BrokenPipeError, EOFError):
                outcome = self._died(sent.process)
        elapsed_ms = (time.perf_counter() - sent.started) * 1000
        if outcome is None:
            self._kill()
            logger.warning("query ignored interrupt: killed its worker after %.1f s", elapsed_ms / 1000)
            return QueryResult.failure(
                "timeout",
                f"query exceeded the {sent.timeout_s:g} s timeout, ignored interrupt and its process "
                f"was killed after {elapsed_ms / 1000:.1f} s",
                elapsed_ms,
            )
        if isinstance(outcome, (QueryResult, Nl2SqlError)):
            return outcome
        return QueryResult.failure("resource", str(outcome), elapsed_ms)

    def close(self) -> None:
        """Stop the worker process (a new one starts on the next ``run``)."""
        with self._lock:
            process, self._process = self._process, None
            if process is not None and process.poll() is None:
                _pipe(process.stdin).close()
                try:
                    process.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

    def _worker(self) -> subprocess.Popen[bytes]:
        """The running worker, started (and awaited until it reports ready) if needed."""
        if self._process is not None and self._process.poll() is None:
            return self._process
        process = subprocess.Popen(
            [sys.executable, "-m", "nl2sql_pipeline.execution.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            close_fds=True,
        )
        try:
            ready = self._await(process, self.startup_timeout_s)
        except EOFError:
            ready = None
        if ready != READY:
            process.kill()
            process.wait()
            raise SandboxError(
                f"the sandbox worker process did not start within {self.startup_timeout_s:g} s "
                f"(exit code {process.returncode}); run `{sys.executable} -m nl2sql_pipeline.execution.worker` "
                "to see why"
            )
        self._process = process
        return process

    def _await(self, process: subprocess.Popen[bytes], wait_s: float) -> object | None:
        """The worker's reply, or None when none came within ``wait_s`` seconds."""
        replies = _pipe(process.stdout)
        ready, _, _ = select.select([replies], [], [], wait_s)
        if not ready:
            return None
        return read_frame(replies)

    def _died(self, process: subprocess.Popen[bytes]) -> str:
        code = process.wait()
        self._process = None
        signal_note = f", killed by signal {-code}" if code < 0 else ""
        return f"the sandbox worker died without a result (exit code {code}{signal_note}; out of memory?)"

    def _kill(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            process.kill()
            process.wait()


_RUNNER = IsolatedRunner()
atexit.register(_RUNNER.close)


def run_query_isolated(
    db_path: Path | str,
    sql: str,
    limits: SandboxLimits = SandboxLimits(),
    grace_s: float = 1.0,
) -> QueryResult:
    """Like ``run_query``, in a worker process killed ``grace_s`` seconds after ``limits.timeout_s``.

    Calls are serialized on one shared worker; make an ``IsolatedRunner`` per thread for parallelism.
    """
    return _RUNNER.run(db_path, sql, limits, grace_s)

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
        request = (str(path), sql, limits, os.environ.get(paths.STORAGE_ENV_VAR))
        with self._lock:
            process = self._worker()
            started = time.perf_counter()
            try:
                write_frame(_pipe(process.stdin), request)
                outcome = self._await(process, limits.timeout_s + grace_s)
            except (BrokenPipeError, EOFError):
                outcome = self._died(process)
            elapsed_ms = (time.perf_counter() - started) * 1000
            if outcome is None:
                self._kill()
                logger.warning("query ignored interrupt: killed its worker after %.1f s", elapsed_ms / 1000)
                return QueryResult.failure(
                    "timeout",
                    f"query exceeded the {limits.timeout_s:g} s timeout, ignored interrupt and its process "
                    f"was killed after {elapsed_ms / 1000:.1f} s",
                    elapsed_ms,
                )
        if isinstance(outcome, QueryResult):
            return outcome
        if isinstance(outcome, Nl2SqlError):
            raise outcome
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

"""``kind: command``: the system is a subprocess speaking JSON lines on stdin/stdout, in any language.

The harness writes one request object per line and reads one response object per line. The process
is started on the first call of a run and kept alive for the next ones (one per registry entry and
process, requests sent one at a time); when it has died (crashed, exited, or was killed after a
timeout) the next call starts it again. ``{python}`` in the argv stands for the harness's interpreter.
Lines the process writes to stderr are logged (and the last ones are in the error when it dies); stdout is the
protocol and must carry nothing else: a line out of step with the requests restarts the process.
"""

from __future__ import annotations

import atexit
import collections
import json
import logging
import queue
import subprocess
import sys
import threading
import time
from typing import IO, Any

from nl2sql_pipeline.generation.system_spec import PYTHON_PLACEHOLDER, SystemConfig

logger = logging.getLogger(__name__)

_EOF = object()
STDERR_TAIL_LINES = 5
"""The last stderr lines of a process that died, put in the error (what the user sees for each failed case)."""
STDERR_LINE_CHARS = 300


class CommandDiedError(ConnectionResetError):
    """The process exited (or closed stdout) before answering; the call is retried on a fresh process."""


def argv_of(config: SystemConfig) -> list[str]:
    """The argv to start, ``{python}`` replaced by the running interpreter."""
    return [sys.executable if part == PYTHON_PLACEHOLDER else part for part in config.command]


class CommandProcess:
    """One long-lived subprocess and a reader thread feeding its stdout lines to a queue."""

    def __init__(self, argv: list[str], name: str):
        self.argv, self.name = argv, name
        self._lock = threading.Lock()
        self._process: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[Any] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self.starts = 0

    def _start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            encoding="utf-8",
            bufsize=1,
        )
        self._lines = queue.Queue()
        self._stderr = collections.deque(maxlen=STDERR_TAIL_LINES)
        assert process.stdout is not None and process.stderr is not None
        threading.Thread(target=_pump, args=(process.stdout, self._lines), daemon=True).start()
        threading.Thread(target=_log_stderr, args=(process.stderr, self.name, self._stderr), daemon=True).start()
        self.starts += 1
        if self.starts > 1:
            logger.warning("system %s: process restarted (start %d): %s", self.name, self.starts, " ".join(self.argv))
        return process

    @property
    def pid(self) -> int | None:
        """The running process's id (None before the first call or after it died)."""
        process = self._process
        return process.pid if process is not None and process.poll() is None else None

    def request(self, payload: dict[str, Any], timeout_s: float) -> str:
        """Send one request line and return the response line; raises CommandDiedError or TimeoutError."""
        with self._lock:
            if self._process is None or self._process.poll() is not None:
                self._process = self._start()
            process = self._process
            assert process.stdin is not None
            try:
                process.stdin.write(json.dumps(payload, ensure_ascii=False) + "\n")
                process.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self._process = None
                raise CommandDiedError(f"system {self.name}: the process is gone ({exc}); restarting it") from exc
            try:
                line = self._lines.get(timeout=timeout_s)
            except queue.Empty:
                self._kill(process)
                raise TimeoutError(
                    f"system {self.name}: no reply line within {timeout_s:g} s; the process was killed"
                ) from None
            if line is _EOF:
                code = process.wait(timeout=5)
                self._process = None
                raise CommandDiedError(
                    f"system {self.name}: the process exited with code {code} before answering{self._stderr_tail()}"
                )
            return str(line)

    def _stderr_tail(self, wait_s: float = 0.5) -> str:
        """'; its stderr ended with: ...' (the last lines the process wrote there), or '' when it wrote none."""
        deadline = time.monotonic() + wait_s  # the stderr reader may still be on the last lines
        lines = list(self._stderr)
        while not lines and time.monotonic() < deadline:
            time.sleep(0.02)
            lines = list(self._stderr)
        return f"; its stderr ended with: {' | '.join(lines)}" if lines else ""

    def restart_after_protocol_error(self) -> None:
        """Stop the process after a reply that broke the protocol: its later stdout lines may answer other
        requests, so the next call starts a fresh process (with an empty line queue)."""
        with self._lock:
            process = self._process
            if process is not None:
                logger.warning("system %s: a reply broke the protocol; restarting the process", self.name)
                self._kill(process)

    def _kill(self, process: subprocess.Popen[str]) -> None:
        process.kill()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - a kill that does not land
            logger.error("system %s: process %d did not die", self.name, process.pid)
        self._process = None

    def close(self) -> None:
        """Close stdin (the process's cue to exit), then kill it if it lingers."""
        with self._lock:
            process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        try:
            assert process.stdin is not None
            process.stdin.close()
            process.wait(timeout=3)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait(timeout=5)


def _pump(stream: IO[str], lines: queue.Queue[Any]) -> None:
    for line in stream:
        if line.strip():
            lines.put(line)
    lines.put(_EOF)


def _log_stderr(stream: IO[str], name: str, tail: collections.deque[str]) -> None:
    for line in stream:
        logger.info("system %s stderr: %s", name, line.rstrip())
        if line.strip():
            tail.append(line.strip()[:STDERR_LINE_CHARS])


_processes: dict[tuple[str, str], CommandProcess] = {}
_processes_lock = threading.Lock()


def process_for(slug: str, config_hash: str, config: SystemConfig) -> CommandProcess:
    """The process of one registry entry (started lazily, shared by the run's threads)."""
    key = (slug, config_hash)
    with _processes_lock:
        if key not in _processes:
            _processes[key] = CommandProcess(argv_of(config), slug)
        return _processes[key]


def close_processes() -> None:
    """Stop every command system this process started (end of a run, interpreter exit)."""
    with _processes_lock:
        processes = list(_processes.values())
        _processes.clear()
    for process in processes:
        process.close()


atexit.register(close_processes)

"""The ``nl2sql-eval`` command line: the outer shell over the core library (Dagster loaded lazily).

Each sub-command lives in its own module under ``nl2sql_cli.commands`` and exposes
``register(subparsers)``; the handler it sets returns the process exit code.

Exit codes: 0 success; 1 a gate failed (a run scored below its threshold or regressed); 2 bad input
(an invalid file, an unknown model or gold set, bad arguments); 3 an environment problem (a model whose
key or server is missing, a database that is not built, a storage root that cannot be created or written, a
stored file that cannot be read back); 4 a run failed (an asset failed to materialize).

Before a command runs, the storage root is checked (``nl2sql_pipeline.storage.root``): it must be a folder
(or creatable), and for the commands that write under it (``WRITING``) writable, Dagster home included; the
commands that read stored runs (``READING``) do not create a missing one. The local place ``NL2SQL_ASSETS_URL``
names is checked the same way for ``run`` and those. Otherwise one line naming the root and the cause, exit 3,
and nothing is done.
"""

from __future__ import annotations

import argparse
import atexit
import io
import logging
import os
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn, TextIO, cast

from nl2sql_cli.commands import compare, compare_runs, db, export, gold, models, policy, report, run, sql
from nl2sql_cli.exit_codes import (
    EXIT_BAD_INPUT,
    EXIT_ENVIRONMENT,
    EXIT_GATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUN_FAILED,
)
from nl2sql_pipeline.errors import Nl2SqlError, StorageError

__all__ = [
    "main",
    "console",
    "build_parser",
    "EXIT_OK",
    "EXIT_GATE_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_ENVIRONMENT",
    "EXIT_RUN_FAILED",
]

COMMANDS = (db, gold, sql, compare, policy, models, run, report, compare_runs, export)

WRITING = {("run", None), ("db", "build"), ("gold", "import")}
"""The commands (and actions) that write under the storage root: its writability is checked before they start."""
READING = {("report", None), ("compare-runs", None), ("export", None)}
"""The commands that read stored runs: a root (or assets location) missing is not created, but must be creatable."""


def _check_storage(args: argparse.Namespace) -> None:
    """``StorageRootError`` when the storage root (or the assets location of ``NL2SQL_ASSETS_URL``) is unusable
    for this command (see the module docstring)."""
    from nl2sql_pipeline.storage.root import check_assets_location, check_readable, check_root, check_writable

    command = args.command
    action = getattr(args, f"{command}_command", None) if command else None
    if (command, action) in WRITING:
        check_writable()
    elif (command, action) in READING:
        check_readable()
    else:
        check_root()
    if (command, action) in READING | {("run", None)}:
        check_assets_location(writable=command == "run")


class _ReaderTolerantStdout:
    """Standard output whose reader may stop reading (``nl2sql-eval report | head -1``): the first write or flush
    that finds the pipe closed points the descriptor at ``/dev/null`` (so no flush fails later, at exit included)
    and every later write is dropped. The command runs to its end and keeps its exit code (a failed gate still
    exits 1), with no traceback."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.reader_gone = False

    def write(self, text: str) -> int:
        if not self.reader_gone:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._reader_left()
        return len(text)

    def flush(self) -> None:
        if not self.reader_gone:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._reader_left()

    def _reader_left(self) -> None:
        self.reader_gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        try:
            os.dup2(devnull, self._stream.fileno())
        except (OSError, ValueError, io.UnsupportedOperation):
            pass  # not a real descriptor (a test's capture): the dropped writes are enough
        finally:
            os.close(devnull)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _reader_may_leave() -> Iterator[None]:
    """Every command's standard output, while it runs, as ``_ReaderTolerantStdout`` (one place for all)."""
    original = sys.stdout
    sys.stdout = cast(TextIO, _ReaderTolerantStdout(original))
    try:
        yield
    finally:
        sys.stdout.flush()
        sys.stdout = original


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    parser = argparse.ArgumentParser(prog="nl2sql-eval", description="Evaluate NL2SQL models on gold sets.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at INFO level")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        with _reader_may_leave():
            _check_storage(args)
            return int(handler(args))
    except StorageError as exc:  # an unusable root or an unreadable stored file: the environment, not the input
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    except Nl2SqlError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:  # Ctrl-C: no traceback; a run that was cut short is not recorded as evaluated
        print(
            "interrupted: stopped; a model run cut short is not scored (run the command again to finish it)",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED


def console() -> NoReturn:
    """The ``nl2sql-eval`` process: ``main()``, then an exit without the interpreter's teardown.

    Tearing down the modules and objects of a process that loaded Dagster, pandas, pyarrow and sqlglot takes
    about a second, a fifth of a small run. When no non-daemon thread is left (else: the ordinary exit, which
    wakes and waits for them), what an ordinary exit does first is done here (the ``atexit`` hooks: sandbox
    pools, worker processes, logging; flushing stdout and stderr), then the process ends. Files are closed
    where they are written, and the DuckDB and SQLite files left open keep every committed change (their logs
    are replayed by the next reader). An exception out of ``main`` exits as usual.
    """
    code = main()
    if any(t is not threading.main_thread() and not t.daemon and t.is_alive() for t in threading.enumerate()):
        sys.exit(code)  # a thread the interpreter would wait for (an LLM client's idle workers): the ordinary exit
    atexit._run_exitfuncs()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":  # pragma: no cover
    console()

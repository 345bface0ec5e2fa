"""The sandbox worker process behind ``run_query_isolated``: ``python -m nl2sql_pipeline.execution.worker``.

Reads ``(db_path, sql, limits, storage_root)`` frames on stdin, answers each with a ``QueryResult`` (or
the ``Nl2SqlError`` that prevented it) on the original stdout, and exits at end of input. File
descriptor 1 is pointed at stderr so that nothing but frames ever reaches the parent's pipe.
"""

from __future__ import annotations

import logging
import os
import signal
import sys

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution.exceptions import SandboxError
from nl2sql_pipeline.execution.isolated import READY, read_frame, write_frame
from nl2sql_pipeline.execution.pool import run_query


def serve() -> int:
    """Answer query frames until stdin closes; returns the exit code.

    Ctrl-C reaches the whole process group: the parent stops the run and kills or closes this worker, which
    ignores the signal (else DuckDB would interrupt its query and the parent would see a worker that died).
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    replies = os.fdopen(os.dup(sys.stdout.fileno()), "wb")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    requests = sys.stdin.buffer
    write_frame(replies, READY)
    while True:
        try:
            request = read_frame(requests)
        except EOFError:
            return 0
        if not isinstance(request, tuple) or len(request) != 4:
            raise SandboxError(f"the sandbox worker got a {type(request).__name__} frame, not a request tuple")
        db_path, sql, limits, storage_root = request
        if storage_root is None:
            os.environ.pop(paths.STORAGE_ENV_VAR, None)
        else:
            os.environ[paths.STORAGE_ENV_VAR] = storage_root
        try:
            outcome: object = run_query(db_path, sql, limits)
        except Nl2SqlError as exc:
            outcome = exc
        write_frame(replies, outcome)


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s (sandbox worker): %(message)s")
    sys.exit(serve())

"""Cross-process locks under the storage root: the baselines file, and one run per gold x model partition.

An advisory ``flock`` on a small file: held by one process at a time, released by the kernel when the
process ends (a killed run never leaves a lock behind). Waiting is bounded; past the bound the caller gets
a :class:`LockTimeoutError` saying who holds the lock and how to proceed.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from nl2sql_pipeline import paths

logger = logging.getLogger(__name__)


class LockTimeoutError(RuntimeError):
    """A lock stayed held by another process for longer than the caller would wait."""


def _holder(handle) -> str:
    handle.seek(0)
    return handle.read().strip() or "another process"


@contextmanager
def file_lock(
    path: Path,
    *,
    timeout_s: float | None = 60.0,
    poll_s: float = 0.05,
    what: str = "lock",
    owner: str = "",
    on_wait: Callable[[str], None] | None = None,
) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (created if missing), waiting at most ``timeout_s`` (None: forever).

    ``owner`` is written into the file so a waiting process can say who holds it; ``on_wait`` is called
    once, with that holder, when the lock is busy.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+", encoding="utf-8") as handle:
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        told = False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                holder = _holder(handle)
                if deadline is not None and time.monotonic() >= deadline:
                    raise LockTimeoutError(
                        f"{what} is held by {holder} (lock file {path}); waited {timeout_s:g} s. "
                        "Wait for it to finish, or give a longer wait."
                    ) from None
                if not told and on_wait is not None:
                    on_wait(holder)
                    told = True
                time.sleep(poll_s)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(owner or f"pid {os.getpid()} on {socket.gethostname()}")
            handle.flush()
            yield
        finally:
            handle.seek(0)
            handle.truncate()
            handle.flush()
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def partition_lock_path(gold_set: str, model: str) -> Path:
    """The lock file of one gold x model partition (slugs and gold keys never hold '/')."""
    return paths.storage_root() / "locks" / f"gold={gold_set}" / f"model={model}.lock"


@contextmanager
def partition_lock(
    gold_set: str,
    model: str,
    *,
    timeout_s: float | None,
    owner: str = "",
    on_wait: Callable[[str], None] | None = None,
    what_for: str = "evaluation",
) -> Iterator[None]:
    """One evaluation of (gold_set, model) at a time on this storage root; others wait up to ``timeout_s``."""
    with file_lock(
        partition_lock_path(gold_set, model),
        timeout_s=timeout_s,
        poll_s=0.1,
        what=f"partition {gold_set}|{model} (another {what_for} of it is in progress)",
        owner=owner,
        on_wait=on_wait,
    ):
        yield

"""A cross-process lock, so two processes never build the same database at once."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path


def lock_path(path: Path) -> Path:
    """The lock file of database ``path``: ``<path>.lock``."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def exclusive_lock(lock_path: Path) -> Iterator[None]:
    """Serialise builds of one database across processes (a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    with open(lock_path, "a", encoding="utf-8") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)

"""Whether the storage root can be used, asked once before any work: one ``StorageRootError`` naming the root
and the cause instead of a traceback from whatever touches it first (SQLAlchemy's "unable to open database
file" from the Dagster instance, a ``FileNotFoundError`` from a folder under a file).

- :func:`check_root` (every command): the root, or the folder it would be created in, is a folder, not a
  file or a path under a file;
- :func:`check_writable` (commands that write: ``run``, ``db build``, ``gold import``): the root is created
  when missing, and a file can be created in it and in each folder a run writes into (the Dagster home
  included, wherever ``DAGSTER_HOME`` points).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import StorageRootError

FIX = f"point {paths.STORAGE_ENV_VAR} at a folder you can write (or make this one writable)"
WRITTEN_FOLDERS = ("assets", "cache", "dagster_home", "databases", "locks", "prepared", "reports", "tmp", "variants")
"""The folders under the root a run writes into (checked when they exist; a missing one is created)."""


def _blocking_file(path: Path) -> Path | None:
    """The file standing where ``path`` or one of its parents should be a folder, if any."""
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            return None if candidate.is_dir() else candidate
    return None


def check_root(root: Path | None = None) -> Path:
    """The storage root (not created); ``StorageRootError`` when it is a file or lies under one."""
    root = root or paths.storage_root_path()
    blocker = _blocking_file(root)
    if blocker == root:
        raise StorageRootError(root, "it is a file, not a folder", FIX)
    if blocker is not None:
        raise StorageRootError(root, f"it lies under {blocker}, which is a file, not a folder", FIX)
    return root


def _probe(folder: Path, root: Path, what: str = "storage root", fix: str = FIX) -> None:
    """Create and remove a file in ``folder``; ``StorageRootError`` naming ``root`` when that is refused."""
    try:
        handle, name = tempfile.mkstemp(prefix=".nl2sql-write-check-", dir=folder)
    except OSError as exc:
        where = "it" if folder == root else str(folder)
        raise StorageRootError(root, f"{where} is not writable ({exc.strerror or exc})", fix, what) from exc
    os.close(handle)
    os.unlink(name)


def check_writable_folder(folder: Path, what: str = "storage root", fix: str = FIX) -> Path:
    """Create ``folder`` when missing and check that a file can be written in it (errors name it as ``what``)."""
    blocker = _blocking_file(folder)
    if blocker is not None:
        where = "it is a file" if blocker == folder else f"it lies under {blocker}, which is a file"
        raise StorageRootError(folder, f"{where}, not a folder", fix, what)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageRootError(folder, f"it cannot be created ({exc.strerror or exc})", fix, what) from exc
    _probe(folder, folder, what, fix)
    return folder


def check_dagster_home(home: Path) -> Path:
    """The Dagster instance's home, created when missing, once a file can be written in it."""
    return check_writable_folder(home, "Dagster home", "point DAGSTER_HOME at a folder you can write (or unset it)")


def check_writable(root: Path | None = None) -> Path:
    """The storage root, created when missing, once every folder a run writes into accepts a new file (the
    Dagster home too, wherever ``DAGSTER_HOME`` points)."""
    root = check_writable_folder(check_root(root))
    for name in WRITTEN_FOLDERS:
        if (root / name).is_dir():
            _probe(root / name, root)
    dagster_home = os.environ.get("DAGSTER_HOME")
    if dagster_home:
        check_dagster_home(Path(dagster_home).resolve())
    return root

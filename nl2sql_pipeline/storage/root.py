"""Whether the storage root can be used, asked once before any work: one ``StorageRootError`` naming the root
and the cause instead of a traceback from whatever touches it first (SQLAlchemy's "unable to open database
file" from the Dagster instance, a ``FileNotFoundError`` from a folder under a file).

- :func:`check_root` (every command): the root, or the folder it would be created in, is a folder, not a
  file or a path under a file;
- :func:`check_writable` (commands that write: ``run``, ``db build``, ``gold import``): the root is created
  when missing, and a file can be created in it and in each folder a run writes into (the Dagster home
  included, wherever ``DAGSTER_HOME`` points);
- :func:`check_readable` (commands that read stored runs: ``report``, ``compare-runs``, ``export``): a root that
  is not there yet is not created (it holds no runs), but it must be one a run could create;
- :func:`check_assets_location`: the same for the place ``NL2SQL_ASSETS_URL`` names (a local one; a remote
  store's driver reports its own errors).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from urllib.parse import unquote, urlparse

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import StorageRootError

FIX = f"point {paths.STORAGE_ENV_VAR} at a folder you can write (or make this one writable)"
ASSETS_FIX = f"point {paths.ASSETS_URL_ENV_VAR} at a folder you can write (or unset it: <storage root>/assets)"
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


def _check_creatable(folder: Path, what: str, fix: str) -> None:
    """``StorageRootError`` unless a folder can be made where the missing ``folder`` would be: one is made and
    removed in its nearest existing parent (nothing is left behind)."""
    parent = next(p for p in folder.parents if p.exists())
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".nl2sql-create-check-", dir=parent))
    except OSError as exc:
        cause = f"it does not exist and cannot be created in {parent} ({exc.strerror or exc})"
        raise StorageRootError(folder, cause, fix, what) from exc


def check_readable(root: Path | None = None) -> Path:
    """The storage root for a command that reads stored runs: not created when missing (it then holds no run),
    but ``StorageRootError`` when it is a file, lies under one, or could not be created."""
    root = check_root(root)
    if not root.exists():
        _check_creatable(root, "storage root", FIX)
    return root


def _local_assets_location() -> Path | None:
    """The local folder ``NL2SQL_ASSETS_URL`` names (a plain path or a ``file://`` URL), None when it is unset
    or names a remote store."""
    url = os.environ.get(paths.ASSETS_URL_ENV_VAR)
    if not url:
        return None
    if "://" not in url:
        return Path(url).resolve()
    parsed = urlparse(url)
    return Path(unquote(parsed.path)).resolve() if parsed.scheme in ("file", "local") else None


def check_assets_location(*, writable: bool) -> None:
    """``StorageRootError`` naming the local place ``NL2SQL_ASSETS_URL`` names when it cannot hold the stored
    Parquet: a file (or under one), or, for a command that writes, not writable; for one that reads, missing and
    impossible to create (a missing one holds no runs and is not created)."""
    location = _local_assets_location()
    if location is None:
        return
    what = f"assets location ({paths.ASSETS_URL_ENV_VAR})"
    if writable:
        check_writable_folder(location, what, ASSETS_FIX)
        return
    blocker = _blocking_file(location)
    if blocker is not None:
        where = "it is a file" if blocker == location else f"it lies under {blocker}, which is a file"
        raise StorageRootError(location, f"{where}, not a folder", ASSETS_FIX, what)
    if not location.exists():
        _check_creatable(location, what, ASSETS_FIX)

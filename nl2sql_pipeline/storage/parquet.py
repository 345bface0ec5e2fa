"""Reading and writing the Parquet files of the layout, on a local folder or an fsspec URL (``UPath``) alike.

Writes are whole: a frame goes to a temp file beside its place, renamed into place. A run's file becomes
the partition's latest file atomically: a hard link renamed into place on a local folder (a copy where the
file system has no hard links), a copy renamed into place on an fsspec file system (object stores have no
hard links; each object write is whole).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from nl2sql_pipeline.storage.layout import run_path, temp_path

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pd.DataFrame:
    """The frame stored at ``path`` (a local path or a ``UPath``), all its columns or only ``columns``."""
    if isinstance(path, Path):
        return pd.read_parquet(path, columns=columns)
    with path.open("rb") as handle:
        return pd.read_parquet(handle, columns=columns)


def write_parquet(frame: pd.DataFrame, path: AnyPath) -> None:
    """Write ``frame`` to ``path`` whole: into a temp file beside it, renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(path, Path):
        tmp = temp_path(path)
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
        return
    remote_tmp = temp_path(path)
    with remote_tmp.open("wb") as handle:
        frame.to_parquet(handle, index=False)
    path.fs.mv(remote_tmp.path, path.path)


def point_latest(latest: AnyPath, run_file: AnyPath) -> None:
    """Make ``latest`` the same file as ``run_file``, atomically (a hard link, or a copy, renamed into place)."""
    if isinstance(latest, Path) and isinstance(run_file, Path):
        tmp = temp_path(latest, "latest")
        tmp.unlink(missing_ok=True)
        try:
            os.link(run_file, tmp)
        except OSError:  # a file system without hard links: a copy, still renamed into place
            shutil.copyfile(run_file, tmp)
        os.replace(tmp, latest)
        return
    if isinstance(latest, Path) or isinstance(run_file, Path):
        raise TypeError(f"{latest} and {run_file} must be on the same file system")
    remote_tmp = temp_path(latest, "latest")  # an fsspec file system: a copy renamed into place
    latest.fs.cp_file(run_file.path, remote_tmp.path)
    latest.fs.mv(remote_tmp.path, latest.path)


def write_run(frame: pd.DataFrame, latest: AnyPath, run_id: str) -> AnyPath:
    """Store ``frame`` as run ``run_id``'s file of the partition whose latest file is ``latest``, then make it
    the latest; returns the run's file."""
    own = run_path(latest, run_id)
    write_parquet(frame, own)
    point_latest(latest, own)
    return own

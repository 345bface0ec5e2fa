"""Reading and writing the Parquet files of the layout, on a local folder or an fsspec URL (``UPath``) alike.

Writes are whole: a frame goes to a temp file beside its place, renamed into place. A run's file becomes
the partition's latest file atomically: a hard link renamed into place on a local folder (a copy where the
file system has no hard links), a copy renamed into place on an fsspec file system (object stores have no
hard links; each object write is whole).

A file that cannot be read back (cut short, not Parquet at all) is a ``StoredFileError`` naming the file and
its partition (``layout.stored_partition``), never the reader's traceback; a missing file stays a
``FileNotFoundError`` (callers ask ``exists()`` first and say what is missing in their own words).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd
import pyarrow as pa

from nl2sql_pipeline.errors import StoredFileError
from nl2sql_pipeline.storage.layout import run_path, stored_partition, temp_path

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath


# What the readers raise for a file that is there but cannot be read: pyarrow's errors (ArrowInvalid is a
# ValueError, ArrowIOError an OSError), a permission refused, a column asked for that the file lacks.
_UNREADABLE = (pa.ArrowException, OSError, ValueError, KeyError)


def unreadable(path: AnyPath, cause: BaseException | str) -> StoredFileError:
    """The error saying that the stored file ``path`` cannot be read back, because of ``cause``."""
    partition = stored_partition(path)
    text = cause if isinstance(cause, str) else (str(cause).strip().splitlines() or [type(cause).__name__])[0]
    return StoredFileError(path, partition.describe(), text or type(cause).__name__, partition.fix())


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pd.DataFrame:
    """The frame stored at ``path`` (a local path or a ``UPath``), all its columns or only ``columns``.

    Raises ``StoredFileError`` when the file is there but unreadable, ``FileNotFoundError`` when it is not."""
    try:
        if isinstance(path, Path):
            return pd.read_parquet(path, columns=columns)
        with path.open("rb") as handle:
            return pd.read_parquet(handle, columns=columns)
    except FileNotFoundError:
        raise
    except _UNREADABLE as exc:
        raise unreadable(path, exc) from exc


def check_readable(path: AnyPath) -> None:
    """Raise ``StoredFileError`` unless the Parquet file at ``path`` opens (its footer and schema read back;
    cheap: the rows are not read). A missing file is a ``FileNotFoundError``."""
    import pyarrow.parquet as pq

    try:
        if isinstance(path, Path):
            pq.read_metadata(path)
            return
        with path.open("rb") as handle:
            pq.read_metadata(handle)
    except FileNotFoundError:
        raise
    except _UNREADABLE as exc:
        raise unreadable(path, exc) from exc


def readable(path: AnyPath) -> bool:
    """True when the Parquet file at ``path`` exists and opens (:func:`check_readable`)."""
    try:
        check_readable(path)
    except (FileNotFoundError, StoredFileError):
        return False
    return True


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

"""An IO manager writing one Parquet file per asset partition under the storage root.

Layout: ``<root>/<asset>/gold=<g>/model=<m>.parquet`` for gold x model partitions,
``<root>/<asset>/gold=<g>.parquet`` for gold partitions, ``<root>/<asset>.parquet`` otherwise.

Every run writes its own file, ``<partition file without .parquet>.runs/<run_id>.parquet``, and then points
the partition file (the *latest* materialization, read by later runs and by the reports) at it with an
atomic rename of a hard link. A run reads its own upstream outputs from its own files, so runs of the
same partition in parallel never read each other's records; an upstream asset materialized by an earlier
run (the gold set of a model run) is read from the latest file. Writes go to a temp file renamed into
place, so a failed run never leaves a torn partition.

The root is a local folder, or an fsspec URL (``NL2SQL_ASSETS_URL``, or ``root``) shared by workers on other
machines: there the files are written and renamed through the URL's file system (``UPath.fs``), and the
latest file is a copy renamed into place (object stores have no hard links; each object write is whole).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd
from upath import UPath

from nl2sql_pipeline import paths

AnyPath = Path | UPath


class PartitionNotMaterializedError(dg.Failure):
    """An upstream partition has not been materialized (or its file is gone)."""


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores pandas DataFrames as Parquet, one file per partition."""

    root: str | None = (
        None  # a folder or an fsspec URL; default: paths.assets_dir() (NL2SQL_ASSETS_URL or <storage root>/assets)
    )

    def _root(self) -> AnyPath:
        if not self.root:
            return paths.assets_dir()
        return UPath(self.root) if "://" in self.root else Path(self.root)

    def partition_path(self, asset_key: dg.AssetKey, partition_key: object | None) -> AnyPath:
        """The file holding ``asset_key`` at ``partition_key`` (a str, a MultiPartitionKey, or None)."""
        base = self._root().joinpath(*asset_key.path)
        if partition_key is None:
            return base.with_suffix(".parquet")
        if isinstance(partition_key, dg.MultiPartitionKey):
            dims = partition_key.keys_by_dimension
            return base / f"gold={dims['gold']}" / f"model={dims['model']}.parquet"
        return base / f"gold={partition_key}.parquet"

    @staticmethod
    def run_path(latest: AnyPath, run_id: str) -> AnyPath:
        """The file a run wrote for the partition whose latest file is ``latest``."""
        return latest.with_name(latest.name[: -len(".parquet")] + ".runs") / f"{run_id}.parquet"

    @staticmethod
    def _run_id(context: dg.OutputContext | dg.InputContext) -> str | None:
        try:
            return context.step_context.run_id
        except Exception:  # a context built outside a run (tests, direct loads)
            return getattr(context, "run_id", None) if isinstance(context, dg.OutputContext) else None

    @staticmethod
    def _key(context: dg.OutputContext | dg.InputContext) -> object | None:
        return context.asset_partition_key if context.has_asset_partitions else None

    def handle_output(self, context: dg.OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(f"{context.asset_key.to_user_string()} returned {type(obj).__name__}, expected a DataFrame")
        latest = self.partition_path(context.asset_key, self._key(context))
        run_id = self._run_id(context) or f"pid-{os.getpid()}"
        path = self.run_path(latest, run_id)
        write_parquet(obj, path)
        _point_latest(latest, path)
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "rows": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        key = self._key(context)
        latest = self.partition_path(context.asset_key, key)
        run_id = self._run_id(context)
        own = self.run_path(latest, run_id) if run_id else None
        path = own if own is not None and own.exists() else latest
        if not path.exists():
            raise PartitionNotMaterializedError(
                description=(
                    f"{context.asset_key.to_user_string()} has no materialization for partition {key} "
                    f"(expected {path}); materialize it first (nl2sql-eval run does it in order)."
                )
            )
        return read_parquet(path)


def read_parquet(path: AnyPath, columns: list[str] | None = None) -> pd.DataFrame:
    """The frame stored at ``path`` (a local path or a ``UPath`` on any fsspec file system), all its
    columns or only ``columns``."""
    if isinstance(path, Path):
        return pd.read_parquet(path, columns=columns)
    with path.open("rb") as handle:
        return pd.read_parquet(handle, columns=columns)


def write_parquet(frame: pd.DataFrame, path: AnyPath) -> None:
    """Write ``frame`` to ``path`` whole: into a temp file beside it, renamed into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    if isinstance(path, Path):
        frame.to_parquet(tmp, index=False)
        os.replace(tmp, path)
        return
    with tmp.open("wb") as handle:
        frame.to_parquet(handle, index=False)
    path.fs.mv(tmp.path, path.path)


def _point_latest(latest: AnyPath, run_file: AnyPath) -> None:
    """Make ``latest`` the same file as ``run_file``, atomically (a hard link, or a copy, renamed into place)."""
    tmp = latest.with_name(f".{latest.name}.{os.getpid()}.latest.tmp")
    if not isinstance(latest, Path):  # an fsspec file system: a copy renamed into place
        latest.fs.cp_file(run_file.path, tmp.path)
        latest.fs.mv(tmp.path, latest.path)
        return
    tmp.unlink(missing_ok=True)
    try:
        os.link(run_file, tmp)
    except OSError:  # a file system without hard links: a copy, still renamed into place
        shutil.copyfile(run_file, tmp)
    os.replace(tmp, latest)

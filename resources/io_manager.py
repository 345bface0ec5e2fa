"""An IO manager writing one Parquet file per asset partition under the storage root.

Layout: ``<root>/<asset>/gold=<g>/model=<m>.parquet`` for gold x model partitions,
``<root>/<asset>/gold=<g>.parquet`` for gold partitions, ``<root>/<asset>.parquet`` otherwise.

Every run writes its own file, ``<partition file without .parquet>.runs/<run_id>.parquet``, and then points
the partition file (the *latest* materialization, read by later runs and by the reports) at it with an
atomic rename of a hard link. A run reads its own upstream outputs from its own files, so runs of the
same partition in parallel never read each other's records; an upstream asset materialized by an earlier
run (the gold set of a model run) is read from the latest file. Writes go to a temp file renamed into
place, so a failed run never leaves a torn partition.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import dagster as dg
import pandas as pd

from nl2sql_pipeline import paths


class PartitionNotMaterializedError(dg.Failure):
    """An upstream partition has not been materialized (or its file is gone)."""


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores pandas DataFrames as Parquet, one file per partition."""

    root: str | None = None  # default: <storage root>/assets

    def _root(self) -> Path:
        return Path(self.root) if self.root else paths.assets_dir()

    def partition_path(self, asset_key: dg.AssetKey, partition_key: object | None) -> Path:
        """The file holding ``asset_key`` at ``partition_key`` (a str, a MultiPartitionKey, or None)."""
        base = self._root().joinpath(*asset_key.path)
        if partition_key is None:
            return base.with_suffix(".parquet")
        if isinstance(partition_key, dg.MultiPartitionKey):
            dims = partition_key.keys_by_dimension
            return base / f"gold={dims['gold']}" / f"model={dims['model']}.parquet"
        return base / f"gold={partition_key}.parquet"

    @staticmethod
    def run_path(latest: Path, run_id: str) -> Path:
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
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        obj.to_parquet(tmp, index=False)
        os.replace(tmp, path)
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
        return pd.read_parquet(path)


def _point_latest(latest: Path, run_file: Path) -> None:
    """Make ``latest`` the same file as ``run_file``, atomically (a hard link renamed into place)."""
    tmp = latest.with_name(f".{latest.name}.{os.getpid()}.latest.tmp")
    tmp.unlink(missing_ok=True)
    try:
        os.link(run_file, tmp)
    except OSError:  # a file system without hard links: a copy, still renamed into place
        shutil.copyfile(run_file, tmp)
    os.replace(tmp, latest)

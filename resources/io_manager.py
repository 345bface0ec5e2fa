"""An IO manager writing one Parquet file per asset partition under the assets root.

The layout (which file holds which partition, each run's own file, the latest file) is
``nl2sql_pipeline.storage.layout``'s; the reads and writes are ``nl2sql_pipeline.storage.parquet``'s. This
module maps Dagster's asset and partition keys onto them.

Every run writes its own file and then points the partition's latest file (read by later runs and by the
reports) at it atomically. A run reads its own upstream outputs from its own files, so runs of the same
partition in parallel never read each other's records; an upstream asset materialized by an earlier run
(the gold set of a model run) is read from the latest file. Writes go to a temp file renamed into place, so
a failed run never leaves a torn partition.

The root is a local folder, or an fsspec URL (``NL2SQL_ASSETS_URL``, or ``root``) shared by workers on other
machines: there the files are written and renamed through the URL's file system.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import dagster as dg
import pandas as pd

from nl2sql_pipeline.storage import layout
from nl2sql_pipeline.storage.parquet import read_parquet, write_run

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath

__all__ = ["ParquetIOManager", "PartitionNotMaterializedError", "read_parquet"]


class PartitionNotMaterializedError(dg.Failure):
    """An upstream partition has not been materialized (or its file is gone)."""


class ParquetIOManager(dg.ConfigurableIOManager):
    """Stores pandas DataFrames as Parquet, one file per partition."""

    root: str | None = (
        None  # a folder or an fsspec URL; default: paths.assets_dir() (NL2SQL_ASSETS_URL or <storage root>/assets)
    )

    def partition_path(self, asset_key: dg.AssetKey, partition_key: object | None) -> AnyPath:
        """The latest file of ``asset_key`` at ``partition_key`` (a str, a MultiPartitionKey, or None)."""
        if partition_key is None:
            return layout.partition_path(asset_key.path, root=self.root)
        if isinstance(partition_key, dg.MultiPartitionKey):
            dims = partition_key.keys_by_dimension
            return layout.partition_path(asset_key.path, dims["gold"], dims["model"], root=self.root)
        return layout.partition_path(asset_key.path, str(partition_key), root=self.root)

    @staticmethod
    def run_path(latest: AnyPath, run_id: str) -> AnyPath:
        """The file a run wrote for the partition whose latest file is ``latest``."""
        return layout.run_path(latest, run_id)

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
        """Write the run's own file of the partition and make it the partition's latest file."""
        if obj is None:
            return
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(f"{context.asset_key.to_user_string()} returned {type(obj).__name__}, expected a DataFrame")
        latest = self.partition_path(context.asset_key, self._key(context))
        path = write_run(obj, latest, self._run_id(context) or f"pid-{os.getpid()}")
        context.add_output_metadata({"path": dg.MetadataValue.path(str(path)), "rows": len(obj)})

    def load_input(self, context: dg.InputContext) -> pd.DataFrame:
        """The upstream partition this run wrote, else its latest file."""
        key = self._key(context)
        latest = self.partition_path(context.asset_key, key)
        run_id = self._run_id(context)
        own = layout.run_path(latest, run_id) if run_id else None
        path = own if own is not None and own.exists() else latest
        if not path.exists():
            raise PartitionNotMaterializedError(
                description=(
                    f"{context.asset_key.to_user_string()} has no materialization for partition {key} "
                    f"(expected {path}); materialize it first (nl2sql-eval run does it in order)."
                )
            )
        return read_parquet(path)

"""The Parquet root on an fsspec URL (``NL2SQL_ASSETS_URL`` / ``ParquetIOManager(root=...)``), tested with file://."""

from __future__ import annotations

import dagster as dg
import pandas as pd
from upath import UPath

from nl2sql_pipeline import paths
from nl2sql_pipeline.results.read import scores_path
from resources.io_manager import ParquetIOManager, read_parquet


def test_the_io_manager_writes_and_reads_partitions_through_a_file_url(tmp_path):
    root = tmp_path / "shared"
    manager = ParquetIOManager(root=root.as_uri())
    key = dg.MultiPartitionKey({"gold": "g1", "model": "m1"})
    run_id = "0f0e0d0c-aaaa-bbbb-cccc-000000000001"
    out = dg.build_output_context(asset_key=dg.AssetKey("run_scores"), partition_key=key, run_id=run_id)
    manager.handle_output(out, pd.DataFrame({"a": [1, 2]}))
    latest = root / "run_scores" / "gold=g1" / "model=m1.parquet"
    own = root / "run_scores" / "gold=g1" / "model=m1.runs" / f"{run_id}.parquet"
    assert pd.read_parquet(latest)["a"].tolist() == [1, 2]
    assert pd.read_parquet(own)["a"].tolist() == [1, 2]
    # a second run replaces the latest file whole; the first run's own file stays
    second = dg.build_output_context(
        asset_key=dg.AssetKey("run_scores"), partition_key=key, run_id="0f0e0d0c-aaaa-bbbb-cccc-000000000002"
    )
    manager.handle_output(second, pd.DataFrame({"a": [3]}))
    assert pd.read_parquet(latest)["a"].tolist() == [3]
    assert pd.read_parquet(own)["a"].tolist() == [1, 2]
    assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]

    upstream = dg.build_output_context(asset_key=dg.AssetKey("run_scores"), partition_key=key)
    loaded = manager.load_input(
        dg.build_input_context(upstream_output=upstream, asset_key=dg.AssetKey("run_scores"), partition_key=key)
    )
    assert loaded["a"].tolist() == [3]
    path = manager.partition_path(dg.AssetKey("run_scores"), key)
    assert isinstance(path, UPath) and str(path).startswith("file://")
    assert read_parquet(path)["a"].tolist() == [3]


def test_nl2sql_assets_url_moves_the_parquet_root_for_every_reader(tmp_path, monkeypatch):
    shared = tmp_path / "elsewhere" / "assets"
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv(paths.ASSETS_URL_ENV_VAR, shared.as_uri())
    root = paths.assets_dir()
    assert isinstance(root, UPath) and root.protocol == "file"
    assert not shared.exists(), "naming the assets root creates nothing (a reader finds no runs; writers create it)"
    assert ParquetIOManager().partition_path(dg.AssetKey("gold_set"), "g1") == root / "gold_set" / "gold=g1.parquet"
    assert str(scores_path("g1", "m1")) == f"{shared.as_uri()}/run_scores/gold=g1/model=m1.parquet"
    monkeypatch.setenv(paths.ASSETS_URL_ENV_VAR, str(tmp_path / "mounted"))  # a plain path stays a Path
    assert paths.assets_dir() == (tmp_path / "mounted").resolve()

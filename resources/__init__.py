"""Dagster resources of nl2sql-eval: Parquet storage per partition and the evaluation settings."""

from resources.io_manager import ParquetIOManager
from resources.settings import EvalSettings

__all__ = ["ParquetIOManager", "EvalSettings"]

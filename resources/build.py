"""The resources every asset needs, built in one place for the Definitions and programmatic runs."""

from __future__ import annotations

from typing import Any

from resources.io_manager import ParquetIOManager
from resources.settings import EvalSettings


def build_resources(**settings: Any) -> dict[str, object]:
    """The resources every asset needs (storage under the storage root); ``settings`` go to EvalSettings,
    which validates each against its field's type."""
    return {"parquet_io_manager": ParquetIOManager(), "eval_settings": EvalSettings(**settings)}

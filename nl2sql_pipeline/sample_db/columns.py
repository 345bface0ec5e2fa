"""Arrow columns from numpy values, typed as ``schema.sql`` declares them (masks mark NULLs)."""

from __future__ import annotations

import decimal
from typing import Any

import numpy as np
import pyarrow as pa

from nl2sql_pipeline.sample_db.sampling import EPOCH


def with_nulls(values: np.ndarray, null: np.ndarray) -> np.ndarray:
    """``values`` as an object array holding None where ``null`` is true (the numpy side of a masked column)."""
    out = values.astype(object)
    out[null] = None
    return out


def str_array(values: Any, mask: np.ndarray | None = None) -> pa.Array:
    """A string column (every value through ``str``)."""
    return pa.array([str(v) for v in values], type=pa.string(), mask=mask)


def int_array(values: Any, mask: np.ndarray | None = None, *, wide: bool = False) -> pa.Array:
    """An int32 column (int64 when ``wide``)."""
    dtype = np.int64 if wide else np.int32
    return pa.array(np.asarray(values, dtype=dtype), mask=mask)


def date_array(day_index: np.ndarray, mask: np.ndarray | None = None) -> pa.Array:
    """Dates from day offsets relative to ``DATA_START`` (negative offsets are earlier dates)."""
    return pa.array(EPOCH + np.asarray(day_index, dtype="timedelta64[D]"), type=pa.date32(), mask=mask)


def timestamp_array(seconds: np.ndarray) -> pa.Array:
    """Timestamps from second offsets relative to ``DATA_START`` midnight."""
    values = EPOCH.astype("datetime64[s]") + np.asarray(seconds, dtype="timedelta64[s]")
    return pa.array(values.astype("datetime64[us]"), type=pa.timestamp("us"))


def money(values: np.ndarray, places: int = 2) -> pa.Array:
    """Decimals rounded half-up to ``places`` (exact, never via binary floating point artefacts)."""
    scaled = np.floor(np.asarray(values, dtype=np.float64) * 10**places + 0.5).astype(np.int64)
    quant = decimal.Decimal(1).scaleb(-places)
    return pa.array(
        [decimal.Decimal(int(v)).scaleb(-places).quantize(quant) for v in scaled],
        type=pa.decimal128(12, places),
    )

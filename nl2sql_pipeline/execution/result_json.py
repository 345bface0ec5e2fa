"""Query results as JSON text, exact for every value DuckDB's Python client returns.

Plain JSON values stay plain (``null``, ``true``, ints within 64 bits, finite floats, strings, lists,
objects with string keys) so stored results stay readable. Every other value is a one-key object
whose key starts with ``$``:

    {"$int": "1234...890"}        int beyond 64 bits        {"$float": "nan" | "inf" | "-inf"}
    {"$dec": "1.50"}              Decimal (scale kept)      {"$bytes": "<base64>"}
    {"$date": "2024-01-31"}       date                      {"$time": "12:30:00+02:00"}
    {"$dt": "2024-01-31T12:30:00", "$tz": "Europe/Paris"}   datetime (``$tz`` only for a named zone)
    {"$td": [days, seconds, microseconds]}  timedelta       {"$uuid": "..."}
    {"$inf": ["date" | "timestamp" | "timestamptz", "infinity" | "-infinity"]}  an infinite DATE or TIMESTAMP
    {"$tup": [...]}               tuple (ARRAY, unnamed STRUCT)
    {"$map": [[key, value], ...]} dict with a non-string key or a key starting with "$"

A whole ``QueryResult`` becomes one row of Parquet-friendly scalars in ``nl2sql_pipeline.results.frames``.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import math
import uuid
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution.infinity import TemporalInfinity, infinity

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_FLOAT_NAMES = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ResultsCodecError(Nl2SqlError):
    """Stored result text is not valid codec JSON (corrupt or written by something else)."""


def to_json_value(value: Any) -> Any:
    """The JSON-compatible (tagged where needed) form of one DuckDB value."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return value if _INT64_MIN <= value <= _INT64_MAX else {"$int": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, list):
        return [to_json_value(item) for item in value]
    if isinstance(value, tuple):
        return {"$tup": [to_json_value(item) for item in value]}
    if isinstance(value, dict):
        if all(isinstance(key, str) and not key.startswith("$") for key in value):
            return {key: to_json_value(item) for key, item in value.items()}
        return {"$map": [[to_json_value(key), to_json_value(item)] for key, item in value.items()]}
    if isinstance(value, TemporalInfinity):
        return {"$inf": [value.kind, str(value)]}
    if isinstance(value, dt.datetime):  # before date: datetime is a date
        encoded: dict[str, Any] = {"$dt": value.isoformat()}
        if isinstance(value.tzinfo, ZoneInfo):
            encoded["$tz"] = value.tzinfo.key
        return encoded
    if isinstance(value, dt.date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt.time):
        return {"$time": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {"$td": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$bytes": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, uuid.UUID):
        return {"$uuid": str(value)}
    item = getattr(value, "item", None)  # numpy scalars (a row taken from a DataFrame)
    if callable(item):
        return to_json_value(item())
    raise TypeError(f"cannot encode a {type(value).__name__} value ({value!r}) as result JSON")


def from_json_value(value: Any) -> Any:
    """The Python value of one JSON value produced by ``to_json_value``."""
    if isinstance(value, list):
        return [from_json_value(item) for item in value]
    if not isinstance(value, dict):
        return value
    tag = next((key for key in value if key.startswith("$")), None)
    if tag is None:
        return {key: from_json_value(item) for key, item in value.items()}
    payload = value[tag]
    if tag == "$int":
        return int(payload)
    if tag == "$float":
        return _FLOAT_NAMES[payload]
    if tag == "$dec":
        return Decimal(payload)
    if tag == "$tup":
        return tuple(from_json_value(item) for item in payload)
    if tag == "$map":
        return {_hashable(from_json_value(key)): from_json_value(item) for key, item in payload}
    if tag in ("$dt", "$tz"):
        parsed = dt.datetime.fromisoformat(value["$dt"])
        return _in_zone(parsed, ZoneInfo(value["$tz"])) if "$tz" in value else parsed
    if tag == "$date":
        return dt.date.fromisoformat(payload)
    if tag == "$time":
        return dt.time.fromisoformat(payload)
    if tag == "$td":
        days, seconds, microseconds = payload
        return dt.timedelta(days=days, seconds=seconds, microseconds=microseconds)
    if tag == "$bytes":
        return base64.b64decode(payload)
    if tag == "$uuid":
        return uuid.UUID(payload)
    if tag == "$inf":
        kind, text = payload
        if text not in ("infinity", "-infinity"):
            raise ValueError(f"not an infinity: {text!r}")
        return infinity(kind, text == "-infinity")
    raise ValueError(f"unknown tag {tag!r}")


def _in_zone(parsed: dt.datetime, zone: ZoneInfo) -> dt.datetime:
    """``parsed`` (wall time + UTC offset) with its named zone back, keeping the wall time and fold."""
    for fold in (0, 1):
        candidate = parsed.replace(tzinfo=zone, fold=fold)
        if candidate.utcoffset() == parsed.utcoffset():
            return candidate
    return parsed.astimezone(zone)


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def encode_rows(rows: list[tuple]) -> str:
    """JSON text of ``rows`` (an array of row arrays), exact for every DuckDB value type."""
    return json.dumps([[to_json_value(v) for v in row] for row in rows], ensure_ascii=False, allow_nan=False)


def decode_rows(text: str) -> list[tuple]:
    """The rows encoded by ``encode_rows``, as tuples of the original Python values."""
    try:
        data = json.loads(text)
        if not isinstance(data, list):
            raise ValueError(f"expected a JSON array of rows, got {type(data).__name__}")
        if "{" not in text:  # no object anywhere, so no tagged value: every value is already what it encodes
            return [tuple(row) for row in data]
        return [tuple(from_json_value(v) for v in row) for row in data]
    except (ValueError, TypeError, KeyError, ArithmeticError) as exc:  # InvalidOperation: a bad $dec
        raise ResultsCodecError(f"stored result rows are not valid codec JSON ({exc}): {text[:80]!r}") from exc

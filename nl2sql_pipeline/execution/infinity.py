"""Infinite DATE and TIMESTAMP values, kept apart from the extreme finite ones.

DuckDB's Python client fetches ``'infinity'::DATE`` as ``date(9999, 12, 31)`` and ``'-infinity'`` as
``date(1, 1, 1)`` (timestamps as ``datetime.max`` and ``datetime.min``): the values of a real
``DATE '9999-12-31'``. ``suspect_columns`` finds the DATE and TIMESTAMP columns of a result holding such a
value; the sandbox then runs the query again with ``isinf`` of those columns beside it
(``flagged_sql``) and ``mark`` turns each infinite cell into an ``InfiniteDate`` or ``InfiniteTimestamp``,
equal to no finite value (and shown as ``infinity``/``-infinity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

DATE_TYPES = frozenset({"DATE"})
TIMESTAMP_TYPES = frozenset({"TIMESTAMP", "TIMESTAMP_S", "TIMESTAMP_MS", "TIMESTAMP_NS"})
AWARE_TIMESTAMP_TYPES = frozenset({"TIMESTAMP WITH TIME ZONE"})
_EXTREMES: dict[Any, bool] = {date.max: False, date.min: True, datetime.max: False, datetime.min: True}
"""The values an infinity is fetched as, and whether that infinity is negative."""


@dataclass(frozen=True)
class TemporalInfinity:
    """``infinity`` (``negative`` False) or ``-infinity`` of a temporal column."""

    negative: bool

    def __str__(self) -> str:
        return "-infinity" if self.negative else "infinity"

    @property
    def kind(self) -> str:
        """The column type family: ``date``, ``timestamp`` or ``timestamptz``."""
        raise NotImplementedError


@dataclass(frozen=True)
class InfiniteDate(TemporalInfinity):
    """An infinite DATE."""

    @property
    def kind(self) -> str:
        return "date"


@dataclass(frozen=True)
class InfiniteTimestamp(TemporalInfinity):
    """An infinite TIMESTAMP (``aware``: a TIMESTAMP WITH TIME ZONE)."""

    aware: bool = False

    @property
    def kind(self) -> str:
        return "timestamptz" if self.aware else "timestamp"


def infinity(kind: str, negative: bool) -> TemporalInfinity:
    """The infinity of a type family (``TemporalInfinity.kind``)."""
    if kind == "date":
        return InfiniteDate(negative)
    if kind in ("timestamp", "timestamptz"):
        return InfiniteTimestamp(negative, kind == "timestamptz")
    raise ValueError(f"no infinity of kind {kind!r}")


def _kind(type_name: str) -> str | None:
    if type_name in DATE_TYPES:
        return "date"
    if type_name in TIMESTAMP_TYPES:
        return "timestamp"
    if type_name in AWARE_TIMESTAMP_TYPES:
        return "timestamptz"
    return None


def suspect_columns(type_names: Sequence[str], rows: Sequence[tuple]) -> list[int]:
    """The DATE and TIMESTAMP columns holding a value an infinity is also fetched as (usually none)."""
    temporal = [index for index, name in enumerate(type_names) if _kind(name) is not None]
    return [index for index in temporal if any(row[index] in _EXTREMES for row in rows)]


def flagged_sql(query: str, width: int, columns: Sequence[int]) -> str:
    """``query`` (embeddable text) with ``isinf`` of each of ``columns`` appended, in the same row order."""
    names = ", ".join(f"c{i}" for i in range(width))
    flags = ", ".join(f"isinf(c{i})" for i in columns)
    return f"SELECT *, {flags} FROM (\n{query}) AS q_({names})"


def mark(type_names: Sequence[str], rows: Sequence[tuple], columns: Sequence[int]) -> list[tuple]:
    """The rows of ``flagged_sql``'s result, its flags dropped and each flagged cell made its infinity."""
    width = len(type_names)
    kinds = [_kind(type_names[i]) or "" for i in columns]
    marked = []
    for row in rows:
        flags = row[width:]
        if not any(flags):
            marked.append(tuple(row[:width]))
            continue
        cells = list(row[:width])
        for index, kind, flag in zip(columns, kinds, flags):
            if flag:
                cells[index] = infinity(kind, _EXTREMES.get(cells[index], False))
        marked.append(tuple(cells))
    return marked

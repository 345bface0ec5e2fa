"""How values and rows are written in a comparison's reason."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, time
from decimal import Decimal
from typing import Any

from nl2sql_pipeline.execution.infinity import TemporalInfinity

_MAX_SHOWN_CHARS = 200


def format_value(value: Any) -> str:
    """One value as it appears in a reason: strings quoted, NULL, ISO dates (or infinity), plain numbers."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, TemporalInfinity):
        return str(value)
    if isinstance(value, (datetime, date, time)):
        return value.isoformat(sep=" ") if isinstance(value, datetime) else value.isoformat()
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    return repr(value)


def format_row(row: Sequence[Any]) -> str:
    """A row as ``(3, 'Mecha')``, shortened when long."""
    text = "(" + ", ".join(format_value(v) for v in row) + ("," if len(row) == 1 else "") + ")"
    return text if len(text) <= _MAX_SHOWN_CHARS else text[: _MAX_SHOWN_CHARS - 3] + "..."


def plural(count: int, noun: str) -> str:
    """``1 row`` / ``2 rows``."""
    return f"{count} {noun}{'' if count == 1 else 's'}"

"""Metric values as text for humans: rates as percentages, latencies, counts, money; ``n/a`` when absent.

A leaf: the reports, the gates and the run comparisons all format with it.
"""

from __future__ import annotations

import math
from typing import Any


def _absent(value: Any) -> bool:
    """No value to show: None, or a NaN a computation produced."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def format_rate(value: Any) -> str:
    """A rate for humans: ``0.875`` -> ``87.5%``; None/NaN -> ``n/a``."""
    if _absent(value):
        return "n/a"
    return f"{100.0 * float(value):.1f}%"


def format_value(value: Any, kind: str) -> str:
    """Format one metric value by kind (rate, ms, int, num, usd)."""
    if _absent(value):
        return "n/a"
    if kind == "rate":
        return format_rate(value)
    if kind == "ms":
        return f"{float(value):.2f} ms"
    if kind == "int":
        return str(int(value))
    if kind == "usd":
        return f"${float(value):.4f}"
    return f"{float(value):.1f}"

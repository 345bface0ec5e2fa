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


def format_rates_apart(first: Any, second: Any, most: int = 6) -> tuple[str, str]:
    """Two rates as ``format_rate`` shows them, with more decimals (up to ``most``) when one decimal would show
    two different values alike: a gate's threshold and what it measured must not read the same when they differ.

    >>> format_rates_apart(0.615, 8 / 13)
    ('61.50%', '61.54%')
    >>> format_rates_apart(0.9, 0.615)
    ('90.0%', '61.5%')
    """
    if _absent(first) or _absent(second) or float(first) == float(second):
        return format_rate(first), format_rate(second)
    for decimals in range(1, most + 1):
        shown = (f"{100.0 * float(first):.{decimals}f}%", f"{100.0 * float(second):.{decimals}f}%")
        if shown[0] != shown[1]:
            break
    return shown


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

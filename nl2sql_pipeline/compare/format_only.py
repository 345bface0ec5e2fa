"""Whether unmatched rows differ only in type or format: a looser equality than the comparator's.

The comparator keeps ``'01/02/2024'`` apart from ``DATE '2024-01-02'``, ``'TV'`` from ``'tv'`` and TRUE
from 1; the diagnosis ``only_type_or_format`` needs to know that such rows hold the same values. Values
that differ after this loosening (222 and 223, two dates a week apart) are wrong values, not format.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from nl2sql_pipeline.compare.matching import RowMatch
from nl2sql_pipeline.compare.values import FALSE, TRUE

_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%d.%m.%Y",
    "%d-%m-%Y",
    "%Y%m%d",
    "%b %d, %Y",
    "%B %d, %Y",
    "%d %b %Y",
    "%d %B %Y",
)
_BOOLEAN_WORDS = {"true": 1, "t": 1, "yes": 1, "false": 0, "f": 0, "no": 0}
_SPACES = re.compile(r"\s+")


def _temporal(value: datetime | date) -> Any:
    """A naive datetime at midnight is its date (a DATE widened to a TIMESTAMP, or a date written with 00:00)."""
    if isinstance(value, datetime) and value.tzinfo is None and value.time() == datetime.min.time():
        return value.date()
    return value


def loose_value(value: Any) -> Any:
    """``value`` with type and format choices removed: numbers as floats, dates as dates, text casefolded."""
    if value is TRUE or value is True:
        return 1.0
    if value is FALSE or value is False:
        return 0.0
    if isinstance(value, (int, float, Decimal)):
        try:
            return float(value)
        except OverflowError:
            return value
    if isinstance(value, (datetime, date)):
        return _temporal(value)
    if not isinstance(value, str):
        return value
    text = _SPACES.sub(" ", value.strip())
    if _NUMBER.fullmatch(text):
        return float(text)
    if text.casefold() in _BOOLEAN_WORDS:
        return float(_BOOLEAN_WORDS[text.casefold()])
    for date_format in _DATE_FORMATS:
        try:
            return _temporal(datetime.strptime(text, date_format))
        except ValueError:
            continue
    return text.casefold()


def differ_only_in_format(rows: RowMatch, columns: Sequence[int]) -> bool:
    """True when the unmatched rows pair up once the values of ``columns`` are loosened (``loose_value``).

    False when nothing is unmatched or no column is named: there is then no type or format to blame.
    """
    if not rows.missing or not rows.extra or not columns:
        return False
    wanted = set(columns)

    def loosened(counter: Counter) -> Counter:
        out: Counter[tuple] = Counter()
        for row, n in counter.items():
            out[tuple(loose_value(v) if i in wanted else v for i, v in enumerate(row))] += n
        return out

    return loosened(rows.missing) == loosened(rows.extra)

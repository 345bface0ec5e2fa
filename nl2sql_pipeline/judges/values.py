"""Deterministic answer checks: the values an answer must state, and whether a prose answer states them.

An expected answer is *checkable* when it is a number, a date or a short list of entities (at most
``MAX_ENTITIES`` names: one word, or up to ``MAX_ENTITY_WORDS`` capitalised words; or rows of such cells,
e.g. ``[[12]]``);
such a case is decided here and no LLM judge is called. Anything else (a sentence) goes to the judge.

>>> check_answer(expected_values(412), "There were 412 sessions.").passed
True
>>> check_answer(expected_values("Toei, Madhouse"), "Toei leads; then Madhouse.").passed
True
>>> expected_values("Most viewers watch on weekends") is None
True

Numbers match when equal after rounding the expected value to the decimals the answer shows (``3.14``
states ``3.14159``); thousands separators and a trailing ``%`` are read. Dates match in ISO form or as
``June 30, 2026`` / ``30 June 2026``. Entities match case-insensitively on word boundaries.
"""

from __future__ import annotations

import datetime
import decimal
import math
import re
from dataclasses import dataclass
from typing import Any

MAX_ENTITIES = 10
MAX_ENTITY_WORDS = 4
_NUMBER_RE = re.compile(r"(?<![\w.])-?\d{1,3}(?:,\d{3})+(?:\.\d+)?(?![\w])|(?<![\w.])-?\d+(?:\.\d+)?(?![\w])")
_ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_MONTHS = "january february march april may june july august september october november december".split()
_SENTENCE_RE = re.compile(r"[.!?:]\s|\b(?:is|are|was|were|has|have|the)\b", re.IGNORECASE)

KIND_NUMBER = "number"
KIND_DATE = "date"
KIND_ENTITY = "entity"


@dataclass(frozen=True)
class Value:
    """One value an answer must state: its kind and the value (float, date or text)."""

    kind: str
    value: Any

    def label(self) -> str:
        """How the value reads in a rationale."""
        if self.kind == KIND_NUMBER:
            return format_number(self.value)
        if self.kind == KIND_DATE:
            return self.value.isoformat()
        return str(self.value)


@dataclass(frozen=True)
class ValueCheck:
    """Which expected values an answer states and which it misses."""

    found: tuple[Value, ...]
    missing: tuple[Value, ...]

    @property
    def passed(self) -> bool:
        """Every expected value is stated."""
        return not self.missing and bool(self.found)

    @property
    def share(self) -> float:
        """The share of expected values stated (0 when there are none)."""
        total = len(self.found) + len(self.missing)
        return len(self.found) / total if total else 0.0


def format_number(value: float) -> str:
    """A number as an answer would write it: integers without decimals, others with at most 2."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.2f}".rstrip("0").rstrip(".")


def _as_number(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float, decimal.Decimal)):
        number = float(value)
        return number if math.isfinite(number) else None
    if isinstance(value, str):
        text = value.strip().rstrip("%").replace(",", "")
        try:
            number = float(text)
        except ValueError:
            return None
        return number if math.isfinite(number) and re.fullmatch(r"-?\d+(?:\.\d+)?", text) else None
    return None


def _as_date(value: Any) -> datetime.date | None:
    if isinstance(value, datetime.datetime):
        return value.date()
    if isinstance(value, datetime.date):
        return value
    if isinstance(value, str) and _ISO_DATE_RE.match(value.strip()):
        try:
            return datetime.date.fromisoformat(value.strip())
        except ValueError:
            return None
    return None


def cell_value(cell: Any) -> Value | None:
    """The value of one result cell or expected item (None for a null or an empty string)."""
    if cell is None:
        return None
    number = _as_number(cell)
    if number is not None:
        return Value(KIND_NUMBER, number)
    day = _as_date(cell)
    if day is not None:
        return Value(KIND_DATE, day)
    text = str(cell).strip()
    return Value(KIND_ENTITY, text) if text else None


_NAME_JOINERS = frozenset({"of", "the", "and", "with", "for", "in", "on", "de", "la", "le", "von", "van", "&", "-"})


def _is_entity(text: str) -> bool:
    """A name: one word, or up to ``MAX_ENTITY_WORDS`` capitalised words (joiners like ``of`` allowed)."""
    words = text.split()
    if not 0 < len(words) <= MAX_ENTITY_WORDS or _SENTENCE_RE.search(text + " "):
        return False
    return len(words) == 1 or all(w[:1].isupper() or w[:1].isdigit() or w.lower() in _NAME_JOINERS for w in words)


def expected_values(expected: Any) -> tuple[Value, ...] | None:
    """The values a checkable expected answer holds, or None when it needs a judge (prose, or too long)."""
    if expected is None:
        return None
    if isinstance(expected, (list, tuple)):
        cells = [c for item in expected for c in (item if isinstance(item, (list, tuple)) else [item])]
    elif isinstance(expected, str) and _as_number(expected) is None and _as_date(expected) is None:
        cells = [part.strip() for part in re.split(r"[;,\n]", expected) if part.strip()]
        if not all(_is_entity(c) for c in cells):
            return None
    else:
        cells = [expected]
    if not cells or len(cells) > MAX_ENTITIES or any(isinstance(c, (dict, list, tuple)) for c in cells):
        return None
    values = [cell_value(c) for c in cells]
    if any(v is not None and v.kind == KIND_ENTITY and not _is_entity(str(v.value)) for v in values):
        return None
    found = tuple(v for v in values if v is not None)
    return found or None


def answer_numbers(answer: str) -> list[tuple[float, int]]:
    """Every number written in ``answer`` with the decimals it shows (``1,200`` -> (1200.0, 0))."""
    out = []
    for match in _NUMBER_RE.finditer(answer):
        text = match.group(0).replace(",", "")
        decimals = len(text.split(".", 1)[1]) if "." in text else 0
        out.append((float(text), decimals))
    return out


def _number_stated(expected: float, numbers: list[tuple[float, int]]) -> bool:
    for number, decimals in numbers:
        if number == expected or round(expected, decimals) == number:
            return True
        if decimals == 0 and number != 0 and abs(expected - number) <= 0.5 and abs(expected) >= 100:
            return True  # a large value written without its decimals
    return False


def _date_stated(day: datetime.date, answer: str) -> bool:
    lowered = answer.lower()
    month = _MONTHS[day.month - 1]
    forms = (
        day.isoformat(),
        f"{month} {day.day}, {day.year}",
        f"{month} {day.day} {day.year}",
        f"{day.day} {month} {day.year}",
    )
    return any(form in lowered for form in forms)


def _entity_stated(text: str, answer: str) -> bool:
    pattern = r"(?<!\w)" + re.escape(text.lower()) + r"(?!\w)"
    return re.search(pattern, answer.lower()) is not None


def value_stated(value: Value, answer: str, numbers: list[tuple[float, int]] | None = None) -> bool:
    """True when ``answer`` states ``value``."""
    if value.kind == KIND_NUMBER:
        return _number_stated(value.value, answer_numbers(answer) if numbers is None else numbers)
    if value.kind == KIND_DATE:
        return _date_stated(value.value, answer)
    return _entity_stated(str(value.value), answer)


def check_answer(values: tuple[Value, ...] | None, answer: str | None) -> ValueCheck:
    """Which of ``values`` the prose ``answer`` states."""
    if not values:
        return ValueCheck((), ())
    text = answer or ""
    numbers = answer_numbers(text)
    found = tuple(v for v in values if value_stated(v, text, numbers))
    return ValueCheck(found, tuple(v for v in values if v not in found))


def ungrounded_numbers(
    answer: str | None, rows: list[tuple] | None, question: str = "", row_count: int | None = None
) -> list[str]:
    """Numbers the answer states that are neither in ``rows`` nor in the question; the row count (``row_count``
    when ``rows`` are the first of more) and the number of rows shown are allowed."""
    if not answer:
        return []
    pool: list[Value] = [Value(KIND_NUMBER, float(len(rows or [])))]
    if row_count is not None:
        pool.append(Value(KIND_NUMBER, float(row_count)))
    for row in rows or []:
        for cell in row:
            value = cell_value(cell)
            if value is not None:
                pool.append(value)
            if value is not None and value.kind != KIND_NUMBER:  # a number inside a name or a date's parts
                pool.extend(Value(KIND_NUMBER, n) for n, _ in answer_numbers(str(cell)))
    known_numbers = [v.value for v in pool if v.kind == KIND_NUMBER]
    known_numbers += [float(n) for n, _ in answer_numbers(question)]
    known_years = {v.value.year for v in pool if v.kind == KIND_DATE}
    known_days = {v.value.day for v in pool if v.kind == KIND_DATE} | {
        v.value.month for v in pool if v.kind == KIND_DATE
    }
    out = []
    for number, decimals in answer_numbers(answer):
        if number in known_years or number in known_days:
            continue
        if any(number == k or round(k, decimals) == number for k in known_numbers):
            continue
        out.append(format_number(number))
    return out

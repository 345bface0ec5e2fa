"""Value rules: each cell is canonicalised once so that values the comparator calls equal hash equal.

A value rule is a function ``(value, ctx) -> canonical | PASS`` over the Python types it declares;
``Canonicaliser`` applies the rules (ordered in ``nl2sql_pipeline.compare.rules.RULES``) to whole
columns, memoising per distinct value and skipping columns that are already canonical.

Canonical forms: NULL stays ``None``; booleans become the ``TRUE``/``FALSE`` markers (never equal to
1/0); NaN becomes the ``NAN`` marker; numbers stay Python numbers (``3 == 3.0 == Decimal('3.00')``
already hash equal); temporal values become naive or UTC ``datetime``/``time`` objects. Numeric- and
ISO-looking strings are coerced only when the paired column holds numbers or temporal values.
"""

from __future__ import annotations

import math
import numbers
import re
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.execution.infinity import InfiniteDate, InfiniteTimestamp, TemporalInfinity

if TYPE_CHECKING:
    from nl2sql_pipeline.compare.model import Rule


class Marker:
    """A printable singleton used as a canonical value (compares and hashes by identity)."""

    __slots__ = ("label",)

    def __init__(self, label: str):
        self.label = label

    def __repr__(self) -> str:
        return self.label


PASS = Marker("PASS")
"""Returned by a value rule that does not apply to a value."""
NAN = Marker("NaN")
TRUE = Marker("TRUE")
FALSE = Marker("FALSE")
STRUCT = Marker("STRUCT")
INFINITIES: dict[tuple[bool, bool], Marker] = {
    (negative, aware): Marker(("-infinity" if negative else "infinity") + (" (with time zone)" if aware else ""))
    for negative in (False, True)
    for aware in (False, True)
}
"""The canonical infinite DATE or TIMESTAMP by (negative, with a time zone): a DATE equals a TIMESTAMP, never an
extreme finite value nor a timestamp with a time zone (as in DuckDB)."""

NUMERIC_KINDS = frozenset({"int", "float", "decimal"})
TEMPORAL_KINDS = frozenset({"date", "timestamp", "time"})
_KIND_OF_TYPE: dict[type, str] = {
    int: "int",
    float: "float",
    Decimal: "decimal",
    bool: "bool",
    str: "str",
    date: "date",
    datetime: "timestamp",
    time: "time",
    InfiniteDate: "date",
    InfiniteTimestamp: "timestamp",
}

_NUMBER_RE = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_RE = re.compile(r"[+-]?\d+")
_DATETIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?)?")
_TIME_RE = re.compile(r"\d{2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?")


@dataclass(frozen=True)
class ValueContext:
    """What a value rule may do in one column pair: coerce strings to numbers or to temporal values."""

    coerce_numeric_strings: bool = False
    coerce_temporal_strings: bool = False
    widen_dates: bool = False  # a DATE meets timestamps or strings: compare it as a TIMESTAMP at midnight
    canonicaliser: Canonicaliser | None = field(default=None, compare=False)

    def nested(self, value: Any) -> Any:
        """Canonicalise an element of a nested value (no string coercion inside LISTs and STRUCTs)."""
        assert self.canonicaliser is not None
        return self.canonicaliser.value(value, ValueContext(widen_dates=True, canonicaliser=self.canonicaliser))


def kind_of(value_type: type) -> str | None:
    """The kind name of a Python type (``int``, ``timestamp``, ...); None for NULL."""
    if value_type is type(None):
        return None
    kind = _KIND_OF_TYPE.get(value_type)
    if kind is not None:
        return kind
    if value_type.__module__ == "numpy" and value_type.__name__ in ("bool", "bool_"):
        return "bool"
    for base, name in (
        (bool, "bool"),
        (datetime, "timestamp"),
        (date, "date"),
        (time, "time"),
        (str, "str"),
        (numbers.Integral, "int"),
        (Decimal, "decimal"),
        (numbers.Real, "float"),
    ):
        if issubclass(value_type, base):
            return name
    return value_type.__name__


# ---------------------------------------------------------------------------------------------------
# The value rules (their order is declared in rules.RULES)
# ---------------------------------------------------------------------------------------------------


def null_equals_null(value: Any, ctx: ValueContext) -> Any:
    """NULL equals NULL only: never 0, '' or NaN."""
    return None if value is None else PASS


def boolean_strict(value: Any, ctx: ValueContext) -> Any:
    """Booleans equal booleans only: TRUE is not 1 and FALSE is not 0, nor 'true'/'false' strings.

    A model answering a yes/no question with 1/0 returned a different type than the gold query; keeping
    booleans strict also stops Python's ``True == 1`` from leaking into the multiset comparison.
    """
    return TRUE if value else FALSE


def nan_inf_canonical(value: Any, ctx: ValueContext) -> Any:
    """NaN equals NaN; +inf equals +inf and -inf equals -inf (floats and Decimals alike)."""
    if isinstance(value, Decimal):
        if value.is_nan():
            return NAN
        return float(value) if value.is_infinite() else PASS
    if isinstance(value, numbers.Integral):
        return PASS
    return NAN if value != value else PASS


def numeric_value_equality(value: Any, ctx: ValueContext) -> Any:
    """Integers, integral floats and Decimals equal by value: 3 == 3.0 == Decimal('3.00').

    Python's numeric tower already hashes equal values equally, so a number is its own canonical form
    (other numeric types, e.g. numpy scalars, become int or float). Non-integral floats are compared
    with a tolerance later, by ``float_tolerance``.
    """
    value_type = type(value)
    if value_type is int or value_type is float or value_type is Decimal:
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        as_float = float(value)
        return NAN if as_float != as_float else as_float
    return PASS


def numeric_string_coercion(value: str, ctx: ValueContext) -> Any:
    """Numeric-looking strings equal numbers when the paired column holds numbers: '42' == 42, '3.50' == 3.5.

    Only plain decimal literals (``[+-]digits[.digits][e[+-]digits]``, no surrounding whitespace) are
    coerced; two string columns are always compared exactly ('042' != '42').
    """
    if not ctx.coerce_numeric_strings or not _NUMBER_RE.fullmatch(value):
        return PASS
    try:
        return int(value) if _INTEGER_RE.fullmatch(value) else Decimal(value)
    except (ValueError, InvalidOperation):  # e.g. more digits than int() accepts
        return PASS


def temporal_equivalence(value: Any, ctx: ValueContext) -> Any:
    """A DATE equals a TIMESTAMP at midnight; temporal values equal their ISO strings.

    date(2024,1,1) == datetime(2024,1,1) == '2024-01-01'; datetime(2024,1,1,12,30) ==
    '2024-01-01 12:30:00' == '2024-01-01T12:30:00'; time(12,30) == '12:30:00'. Timezone-aware timestamps
    compare as instants (Python semantics) and never equal naive ones. Strings are parsed only when the
    paired column holds temporal values; dates are widened only when they meet timestamps or strings.
    'infinity' and '-infinity' (``execution.infinity``) equal only themselves, in a DATE or a TIMESTAMP.
    """
    if isinstance(value, TemporalInfinity):
        return INFINITIES[value.negative, isinstance(value, InfiniteTimestamp) and value.aware]
    if isinstance(value, datetime) or isinstance(value, time):
        return value
    if isinstance(value, date):
        return datetime(value.year, value.month, value.day) if ctx.widen_dates else value
    if not isinstance(value, str) or not ctx.coerce_temporal_strings:
        return PASS
    try:
        if _DATETIME_RE.fullmatch(value):
            return temporal_equivalence(datetime.fromisoformat(value), ctx)
        if _TIME_RE.fullmatch(value):
            return time.fromisoformat(value)
    except ValueError:  # e.g. '2024-13-45'
        return PASS
    return PASS


def string_exact(value: str, ctx: ValueContext) -> Any:
    """Other strings compare exactly: case-sensitive and whitespace-sensitive."""
    return value


def nested_values(value: Any, ctx: ValueContext) -> Any:
    """LIST/ARRAY and STRUCT/MAP values compare element by element with the same value rules.

    Lists and tuples become tuples; dicts keep their key order. Strings inside are not coerced and
    floats inside are compared exactly (tolerance applies to top-level cells only).
    """
    if isinstance(value, dict):
        return (STRUCT, tuple((ctx.nested(k), ctx.nested(v)) for k, v in value.items()))
    return tuple(ctx.nested(item) for item in value)


def other_values(value: Any, ctx: ValueContext) -> Any:
    """Any other value (INTERVAL, BLOB, ...) compares by equality; a UUID equals its string form.

    numpy scalars (rows taken from a DataFrame) compare as their Python value, so ``numpy.True_`` stays a
    boolean; unhashable values of unknown types compare by their ``repr``.
    """
    if isinstance(value, uuid.UUID):
        return str(value)
    if type(value).__module__ == "numpy" and callable(getattr(value, "item", None)):
        plain = value.item()
        if type(plain).__module__ != "numpy" and ctx.canonicaliser is not None:
            return ctx.canonicaliser.value(plain, ctx)
    try:
        hash(value)
    except TypeError:
        return repr(value)
    return value


# ---------------------------------------------------------------------------------------------------
# Applying the rules to columns
# ---------------------------------------------------------------------------------------------------

_ALWAYS_CANONICAL = frozenset({type(None), int, bytes, timedelta, datetime, time})


class Canonicaliser:
    """Applies the value rules, first applicable wins, to single values and to whole columns."""

    def __init__(self, rules: Sequence[Rule]):
        self.rules = tuple(rules)
        self._chains: dict[type, tuple[Callable[[Any, ValueContext], Any], ...]] = {}

    def chain(self, value_type: type) -> tuple[Callable[[Any, ValueContext], Any], ...]:
        """The value rules that apply to ``value_type``, in order (cached per type)."""
        chain = self._chains.get(value_type)
        if chain is None:
            chain = tuple(
                rule.apply
                for rule in self.rules
                if not rule.types or any(issubclass(value_type, handled) for handled in rule.types)
            )
            self._chains[value_type] = chain
        return chain

    def value(self, value: Any, ctx: ValueContext) -> Any:
        """The canonical form of one value."""
        for apply in self.chain(type(value)):
            out = apply(value, ctx)
            if out is not PASS:
                return out
        return value

    def column(self, values: Sequence[Any], ctx: ValueContext, types: set[type] | None = None) -> Sequence[Any]:
        """The canonical form of a column; ``values`` itself when it is already canonical."""
        if types is None:
            types = set(map(type, values))
        if self._already_canonical(values, types, ctx):
            return values
        booleans = {t for t in types if kind_of(t) == "bool"}
        if booleans and types - booleans - {type(None)}:  # True == 1 would share one memo entry
            return [self.value(v, ctx) for v in values]
        try:
            distinct = set(values)
        except TypeError:  # unhashable cells (LIST, STRUCT)
            return [self.value(v, ctx) for v in values]
        memo = {v: self.value(v, ctx) for v in distinct}
        return list(map(memo.__getitem__, values))

    @staticmethod
    def _already_canonical(values: Sequence[Any], types: set[type], ctx: ValueContext) -> bool:
        """True when every value is its own canonical form (fast path for plain columns)."""
        for value_type in types:
            if value_type in _ALWAYS_CANONICAL:
                continue
            if value_type is float:
                if types == {float}:
                    if any(map(math.isnan, values)):
                        return False
                elif any(v != v for v in values if type(v) is float):
                    return False
            elif value_type is Decimal:
                decimals = values if len(types) == 1 else [v for v in values if type(v) is Decimal]
                if not all(map(Decimal.is_finite, decimals)):
                    return False
            elif value_type is str:
                if ctx.coerce_numeric_strings or ctx.coerce_temporal_strings:
                    return False
            elif value_type is date:
                if ctx.widen_dates:
                    return False
            else:
                return False
        return True


@dataclass(frozen=True)
class ColumnPair:
    """One expected column and the candidate column aligned to it, both canonical."""

    expected: Sequence[Any]
    candidate: Sequence[Any]
    expected_kinds: frozenset[str]
    candidate_kinds: frozenset[str]

    def rules_used(self) -> set[str]:
        """Names of the value rules that bridged a type difference between the two columns."""
        used: set[str] = set()
        exp, cand = self.expected_kinds, self.candidate_kinds
        exp_num, cand_num = exp & NUMERIC_KINDS, cand & NUMERIC_KINDS
        exp_time, cand_time = exp & TEMPORAL_KINDS, cand & TEMPORAL_KINDS
        if exp_num and cand_num and exp_num != cand_num:
            used.add("numeric_value_equality")
        if ("str" in exp and cand_num and "str" not in cand) or ("str" in cand and exp_num and "str" not in exp):
            used.add("numeric_string_coercion")
        if (exp_time and cand_time and exp_time != cand_time) or (
            ("str" in exp and cand_time and "str" not in cand) or ("str" in cand and exp_time and "str" not in exp)
        ):
            used.add("temporal_equivalence")
        return used

    def describe(self) -> str:
        """The two columns' kinds, e.g. ``int vs float``."""
        return (
            f"{'/'.join(sorted(self.expected_kinds)) or 'NULL'} vs {'/'.join(sorted(self.candidate_kinds)) or 'NULL'}"
        )


def canonicalise_pair(
    canonicaliser: Canonicaliser,
    expected: Sequence[Any],
    candidate: Sequence[Any],
    expected_types: set[type] | None = None,
    candidate_types: set[type] | None = None,
) -> ColumnPair:
    """Canonicalise an expected column and its aligned candidate column under one shared context.

    ``expected_types``/``candidate_types``: the Python types in each column, when the caller has them.
    """
    exp_types = set(map(type, expected)) if expected_types is None else expected_types
    cand_types = set(map(type, candidate)) if candidate_types is None else candidate_types
    exp_kinds = frozenset(k for k in map(kind_of, exp_types) if k is not None)
    cand_kinds = frozenset(k for k in map(kind_of, cand_types) if k is not None)
    kinds = exp_kinds | cand_kinds
    ctx = ValueContext(
        coerce_numeric_strings=bool(kinds & NUMERIC_KINDS),
        coerce_temporal_strings=bool(kinds & TEMPORAL_KINDS),
        widen_dates="date" in kinds and len(kinds) > 1,
        canonicaliser=canonicaliser,
    )
    return ColumnPair(
        expected=canonicaliser.column(expected, ctx, exp_types),
        candidate=canonicaliser.column(candidate, ctx, cand_types),
        expected_kinds=exp_kinds,
        candidate_kinds=cand_kinds,
    )

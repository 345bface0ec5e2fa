"""The comparator's data: its version, configuration, verdict, rule record and typed errors."""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from nl2sql_pipeline.compare.names import COLUMN_ORDERS, COMPARATOR_VERSION
from nl2sql_pipeline.errors import ConfigError, Nl2SqlError

MAX_PERMUTATION_COLUMNS = 6
"""Historical (comparator 1.0): columns are now paired by value signatures at any width, without a search."""


@dataclass(frozen=True)
class CompareConfig:
    """Comparator settings.

    ``rel_tol``/``abs_tol``: float tolerance (``math.isclose`` semantics), applied when either value is a
    binary float. ``column_order``: ``by_name_when_sets_match`` (default: map by case-insensitive name
    when the name sets match, else compare by position and then pair columns by their values), ``by_name`` (names must match as sets, any order) or ``positional`` (names ignored).
    """

    rel_tol: float = 1e-9
    abs_tol: float = 1e-9
    column_order: str = "by_name_when_sets_match"
    partial_threshold: float = 0.5
    """A non-matching case whose cell F1 reaches this is graded ``partial`` (below: ``fail``)."""

    def __post_init__(self) -> None:
        if (
            isinstance(self.partial_threshold, bool)
            or not isinstance(self.partial_threshold, (int, float))
            or not (0 <= self.partial_threshold <= 1)
        ):
            raise ConfigError(
                f"CompareConfig.partial_threshold={self.partial_threshold!r} is invalid: use a number in [0, 1] (default 0.5)"
            )
        for field_name in ("rel_tol", "abs_tol"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise ConfigError(
                    f"CompareConfig.{field_name}={value!r} is invalid: use a finite number >= 0 (e.g. 1e-9)"
                )
        if self.column_order not in COLUMN_ORDERS:
            raise ConfigError(
                f"CompareConfig.column_order={self.column_order!r} is unknown: use one of {', '.join(COLUMN_ORDERS)}"
            )


UNDETERMINED = "comparison_undetermined"
"""The rule of a comparison that could not be made: both results hit the row cap and the whole results could
not be compared in the engine (a timeout, a failed harness query). It is not a mismatch: callers treat it as
an environment error."""


@dataclass(frozen=True)
class Comparison:
    """One verdict: does the candidate result match, which rule decided, why, and partial credit.

    ``rule`` names the rule(s) that decided: for a match, the non-trivial rules that were needed joined
    by ``+`` in ``RULES`` order (``multiset_exact`` when none was); for a mismatch, the check that failed.
    ``score`` is the row-level F1 of the two multisets (1.0 on a match). ``expected_rows`` and
    ``candidate_rows`` are the exact row counts of the whole results when known (None: a result hit the
    row cap and was not compared whole).
    """

    match: bool
    rule: str
    reason: str
    score: float
    expected_rows: int | None = None
    candidate_rows: int | None = None
    order: Any = None  # order.OrderCheck: whether and how row order was checked (None: no SQL to read it from)
    row_precision: float | None = None  # rows matched / candidate rows
    row_recall: float | None = None  # rows matched / expected rows
    cell_f1: float | None = None  # cells of matched rows, plus per-column value overlap of the unmatched rows
    alignment: tuple[int, ...] | None = field(default=None, compare=False)  # candidate column per expected column
    format_only: bool = field(default=False, compare=False)  # unmatched rows equal apart from type or format

    @property
    def undetermined(self) -> bool:
        """No verdict could be reached (``UNDETERMINED``): neither a match nor a model's miss."""
        return self.rule == UNDETERMINED

    def evolve(self, **changes: Any) -> Comparison:
        """``dataclasses.replace(self, **changes)`` at a fifth of its cost: the fields copied, ``changes``
        applied (a verdict is amended several times per comparison, and it has no checks to run again)."""
        unknown = changes.keys() - _COMPARISON_FIELDS
        if unknown:
            raise TypeError(f"Comparison has no field {', '.join(sorted(unknown))}")
        amended = object.__new__(Comparison)
        amended.__dict__.update(self.__dict__, **changes)
        return amended

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict of the verdict, with the comparator version."""
        return {
            "match": self.match,
            "rule": self.rule,
            "reason": self.reason,
            "score": self.score,
            "expected_rows": self.expected_rows,
            "candidate_rows": self.candidate_rows,
            "order": self.order.to_dict() if self.order is not None else None,
            "row_precision": self.row_precision,
            "row_recall": self.row_recall,
            "cell_f1": self.cell_f1,
            "comparator_version": COMPARATOR_VERSION,
        }


_COMPARISON_FIELDS = frozenset(f.name for f in fields(Comparison))

RuleKind = Literal["query", "value", "step"]


@dataclass(frozen=True)
class Rule:
    """One named comparison rule; its name and documentation come from the function it wraps.

    ``query`` rules look at whole query results (failed, truncated); ``value`` rules canonicalise one cell
    of the Python ``types`` they handle (a rule with no types handles anything); ``step`` rules run in
    order over the comparison state and either decide (return a ``Comparison``) or pass (return None).
    """

    kind: RuleKind
    apply: Callable[..., Any]
    types: tuple[type, ...] = ()

    @property
    def name(self) -> str:
        """The rule's name, as it appears in verdicts."""
        return self.apply.__name__

    @property
    def doc(self) -> str:
        """The rule's documentation (its function's docstring)."""
        return inspect.getdoc(self.apply) or ""


GRADES: tuple[str, ...] = ("pass", "partial", "fail")


def grade(comparison: Comparison | None, config: CompareConfig) -> str:
    """``pass`` for a match, ``partial`` when the cell F1 reaches ``config.partial_threshold``, else ``fail``."""
    if comparison is None:
        return "fail"
    if comparison.match:
        return "pass"
    credit = comparison.cell_f1 if comparison.cell_f1 is not None else comparison.score
    return "partial" if credit >= config.partial_threshold and credit > 0 else "fail"


class ComparisonInputError(Nl2SqlError):
    """The rows handed to the comparator do not fit their columns (a caller bug, not a verdict)."""


class ExpectedResultError(Nl2SqlError):
    """The expected (gold) result cannot be compared against: its query failed."""

"""The verdict on a candidate result identical to the expected one, reached without canonicalising a cell.

A correct candidate usually returns exactly the expected result: same column names and types, same
rows in the same order. Canonicalising every cell and counting both multisets then only confirms what
one comparison of the two row lists shows. ``same_result`` recognises that case for plain scalar cells of
the same Python type cell by cell, where equal values always have equal canonical forms (so the rows
match exactly, no value rule bridges a type difference and every row's sort key is in its place);
``identical_match`` is the verdict the step rules reach on it, field for field.
"""

from __future__ import annotations

from datetime import date, datetime, time, timedelta
from decimal import Decimal
from itertools import chain
from typing import TYPE_CHECKING

from nl2sql_pipeline.compare.model import Comparison
from nl2sql_pipeline.compare.rows import multiset_exact
from nl2sql_pipeline.compare.state import all_rows_match

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import QueryResult

SCALAR_TYPES = frozenset({type(None), bool, int, float, Decimal, str, bytes, date, datetime, time, timedelta})
"""Cell types whose equal values share one canonical form. Left out: containers (``[True] == [1]`` and dicts
equal in another key order are not the same canonical value) and anything the value rules convert."""


def same_result(expected: QueryResult, candidate: QueryResult) -> bool:
    """True when both results ran whole and have the same columns, column types and rows in the same
    order, every cell a ``SCALAR_TYPES`` value of the same type on both sides."""
    if not (expected.ok and candidate.ok) or expected.truncated or candidate.truncated:
        return False
    if len(expected.rows) != len(candidate.rows) or expected.columns != candidate.columns:
        return False
    if expected.column_types != candidate.column_types:
        return False
    width = len(expected.columns)
    if set(map(len, expected.rows)) - {width}:  # ragged rows: the step rules name the bad row
        return False
    cell_types = list(map(type, chain.from_iterable(expected.rows)))
    if not SCALAR_TYPES.issuperset(cell_types) or cell_types != list(map(type, chain.from_iterable(candidate.rows))):
        return False
    try:
        return expected.rows == candidate.rows
    except ArithmeticError:  # a signalling Decimal NaN refuses to be compared: let the value rules decide
        return False


_EXACT_MATCH = Comparison(
    match=True, rule=multiset_exact.__name__, reason="", score=1.0, row_precision=1.0, row_recall=1.0, cell_f1=1.0
)


def identical_match(expected: QueryResult) -> Comparison:
    """The comparison ``compare_query_results`` makes of ``expected`` with an identical result, before
    the order check: a ``multiset_exact`` match of every row under the identity column alignment."""
    count = len(expected.rows)
    return _EXACT_MATCH.evolve(
        reason=all_rows_match(count),
        expected_rows=count,
        candidate_rows=count,
        alignment=tuple(range(len(expected.columns))),
    )

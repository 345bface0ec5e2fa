"""Row matching: multisets of canonical rows, float tolerance, F1.

Rows are canonicalised once to hashable tuples and counted with ``Counter``. Only the rows that do not
match exactly (the residue) go through float tolerance: a big residue is first re-hashed with floats
rounded into buckets narrower than ``rel_tol``; what is left is paired row by row within groups of rows
that agree outside the float columns. Nothing is compared pairwise across the whole result.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import chain, repeat
from operator import itemgetter
from typing import Any

from nl2sql_pipeline.compare.model import CompareConfig

_EXACT_MATCHING_LIMIT = 40_000
"""Largest (expected x candidate) group for the exact bipartite matcher; bigger groups use a sweep."""

_BUCKETING_MIN_ROWS = 256
"""A float residue bigger than this on both sides is first paired by hashing rounded floats."""


@dataclass
class RowMatch:
    """How two multisets of canonical rows match: counts matched exactly and within tolerance, and the rest."""

    expected_count: int
    candidate_count: int
    exact_matched: int
    tolerance_matched: int = 0
    missing: Counter = field(default_factory=Counter)  # expected rows left unmatched (canonical)
    extra: Counter = field(default_factory=Counter)  # candidate rows left unmatched (canonical)
    expected_counter: Counter = field(default_factory=Counter)
    candidate_counter: Counter = field(default_factory=Counter)

    @property
    def matched(self) -> int:
        """Rows matched, exactly or within tolerance."""
        return self.exact_matched + self.tolerance_matched

    @property
    def complete(self) -> bool:
        """True when every row on each side has a partner."""
        return not self.missing and not self.extra

    @property
    def score(self) -> float:
        """Row-level F1 of the two multisets (1.0 when both are empty)."""
        total = self.expected_count + self.candidate_count
        return 1.0 if total == 0 else 2.0 * self.matched / total


def values_close(a: Any, b: Any, config: CompareConfig) -> bool:
    """Equal, or within tolerance when either number is a binary float (ints and Decimals are exact)."""
    if a == b:
        return True
    if (type(a) is float or type(b) is float) and _is_number(a) and _is_number(b):
        try:
            return math.isclose(float(a), float(b), rel_tol=config.rel_tol, abs_tol=config.abs_tol)
        except OverflowError:
            return False
    return False


def _is_number(value: Any) -> bool:
    value_type = type(value)
    return value_type is float or value_type is int or value_type is Decimal


def _picker(positions: Sequence[int]) -> Callable[[tuple], tuple]:
    """A fast function returning the values of a row at ``positions``, always as a tuple."""
    if not positions:
        return lambda row: ()
    if len(positions) == 1:
        index = positions[0]
        return lambda row: (row[index],)
    return itemgetter(*positions)


def match_rows(
    expected: Sequence[tuple],
    candidate: Sequence[tuple],
    config: CompareConfig,
    float_positions: Sequence[int] = (),
) -> RowMatch:
    """Match two lists of canonical rows as multisets, then the rest within float tolerance.

    ``float_positions``: the columns holding floats on either side, the only ones where tolerance applies.
    Tolerance works on the rows left over by the exact pass: a big residue is hashed again with its
    floats rounded into buckets narrower than ``rel_tol`` (equal buckets are always close), then what is
    left (near bucket edges, or really different) is paired row by row.
    """
    exp_counter = Counter(expected)
    cand_counter = Counter(candidate)
    result = RowMatch(
        expected_count=len(expected),
        candidate_count=len(candidate),
        exact_matched=len(expected),
        expected_counter=exp_counter,
        candidate_counter=cand_counter,
    )
    if dict.__eq__(exp_counter, cand_counter):  # Counter.__eq__ is a slow Python loop; counts here are > 0
        return result
    missing, extra = _surpluses(exp_counter, cand_counter)
    result.exact_matched = len(expected) - missing.total()
    if not float_positions or not missing or not extra:
        result.missing, result.extra = missing, extra
        return result
    exp_left, cand_left = list(missing.elements()), list(extra.elements())
    bucket_matched = 0
    bucket = _bucketer(config.rel_tol)
    if bucket is not None and min(len(exp_left), len(cand_left)) > _BUCKETING_MIN_ROWS:
        exp_keys = _bucket_rows(exp_left, float_positions, bucket)
        cand_keys = _bucket_rows(cand_left, float_positions, bucket)
        exp_buckets, cand_buckets = Counter(exp_keys), Counter(cand_keys)
        missing_b: Counter[tuple]
        extra_b: Counter[tuple]
        if dict.__eq__(exp_buckets, cand_buckets):  # the usual case: every row is within tolerance
            missing_b, extra_b = Counter(), Counter()
        else:
            missing_b, extra_b = _surpluses(exp_buckets, cand_buckets)
        bucket_matched = len(exp_left) - missing_b.total()
        exp_left = _rows_in(exp_left, exp_keys, missing_b)
        cand_left = _rows_in(cand_left, cand_keys, extra_b)
    pairs = pair_within_tolerance(exp_left, cand_left, config, float_positions) if exp_left and cand_left else []
    paired_exp = {i for i, _ in pairs}
    paired_cand = {j for _, j in pairs}
    result.missing = Counter(row for i, row in enumerate(exp_left) if i not in paired_exp)
    result.extra = Counter(row for j, row in enumerate(cand_left) if j not in paired_cand)
    result.tolerance_matched = bucket_matched + len(pairs)
    return result


def _surpluses(a: Counter, b: Counter) -> tuple[Counter, Counter]:
    """(a - b, b - a) as multisets; much faster than ``Counter.__sub__`` on big, nearly equal counters.

    A key present on both sides can only differ in count if it appears more than once somewhere, so
    only those keys are compared.
    """
    a_only = Counter({row: n for row, n in a.items() if row not in b})  # one hash per row, no re-lookup
    b_only = Counter({row: n for row, n in b.items() if row not in a})
    repeated = {row for row, n in a.items() if n > 1} | {row for row, n in b.items() if n > 1}
    for row in repeated:
        if row in a_only or row in b_only:
            continue
        diff = a[row] - b[row]
        if diff > 0:
            a_only[row] = diff
        elif diff < 0:
            b_only[row] = -diff
    return a_only, b_only


def _rows_in(rows: Sequence[tuple], keys: list[tuple], surplus: Counter) -> list[tuple]:
    """``surplus[key]`` rows (any of them: one bucket is all close) for each bucket key in ``surplus``."""
    if not surplus:
        return []
    wanted = dict(surplus)
    out = []
    for index in [i for i, key in enumerate(keys) if key in wanted]:
        key = keys[index]
        if wanted[key] > 0:
            wanted[key] -= 1
            out.append(rows[index])
    return out


def _bucketer(rel_tol: float) -> Callable[[Sequence[Any]], Sequence[Any]] | None:
    """A column function rounding float mantissas so that two floats in one bucket are within ``rel_tol``.

    Two floats with the same mantissa rounded to ``bits`` bits differ by less than 2**(1-bits) relative.
    None when rounding cannot help (``rel_tol`` 0, or finer than float precision).
    """
    if rel_tol <= 0:
        return None
    bits = max(1, math.ceil(1 - math.log2(rel_tol)))
    if bits >= 53:
        return None
    scale = float(2**bits)

    def bucket_value(value: Any) -> Any:
        if type(value) is not float or math.isinf(value):
            return value
        mantissa, exponent = math.frexp(value)
        return math.ldexp(round(mantissa * scale), exponent - bits)

    def bucket_column(values: Sequence[Any]) -> Sequence[Any]:
        if set(map(type, values)) == {float}:
            try:
                import numpy as np
            except ImportError:  # pragma: no cover - numpy comes with pandas
                return list(map(bucket_value, values))
            array = np.fromiter(values, dtype=float, count=len(values))
            with np.errstate(invalid="ignore"):  # inf * scale stays inf
                mantissa, exponent = np.frexp(array)
                bucketed = np.ldexp(np.round(mantissa * scale), exponent - bits)
            return np.where(np.isinf(array), array, bucketed).tolist()
        return list(map(bucket_value, values))

    return bucket_column


def _bucket_rows(
    rows: Sequence[tuple], float_positions: Sequence[int], bucket_column: Callable[[Sequence[Any]], Sequence[Any]]
) -> list[tuple]:
    """The rows with the values in ``float_positions`` replaced by their buckets."""
    if not rows:
        return []
    columns: list[Sequence[Any]] = list(zip(*rows))
    for position in float_positions:
        columns[position] = bucket_column(columns[position])
    return list(zip(*columns))


def pair_within_tolerance(
    expected: list[tuple], candidate: list[tuple], config: CompareConfig, float_positions: Sequence[int]
) -> list[tuple[int, int]]:
    """Pairs (i, j) of rows equal outside ``float_positions`` and within tolerance inside.

    Rows are grouped by their values outside the float columns; within a group, sorted rows are paired
    in order, else by maximum bipartite matching (small groups) or a sorted sweep (big ones).
    """
    pairs: list[tuple[int, int]] = []
    exp_rest: list[int] = list(range(len(expected)))
    cand_rest: list[int] = list(range(len(candidate)))
    if not exp_rest or not cand_rest:
        return pairs
    tolerant = set(float_positions)
    exact_of = _picker([i for i in range(len(expected[0])) if i not in tolerant])
    floats_of = _picker(float_positions)
    groups: dict[tuple, tuple[list, list]] = {}
    for i in exp_rest:
        groups.setdefault(exact_of(expected[i]), ([], []))[0].append((floats_of(expected[i]), i))
    for j in cand_rest:
        group = groups.get(exact_of(candidate[j]))
        if group is not None:
            group[1].append((floats_of(candidate[j]), j))
    for exp_items, cand_items in groups.values():
        if not cand_items:
            continue
        if len(exp_items) == 1 and len(cand_items) == 1:
            if _rows_close(exp_items[0][0], cand_items[0][0], config):
                pairs.append((exp_items[0][1], cand_items[0][1]))
            continue
        pairs.extend((exp_items[a][1], cand_items[b][1]) for a, b in _match_group(exp_items, cand_items, config))
    return pairs


def _rows_close(a: tuple, b: tuple, config: CompareConfig) -> bool:
    return all(values_close(x, y, config) for x, y in zip(a, b))


def _safe_order(item: tuple) -> tuple:
    """Sort key for float tuples that may hold NULL or NaN markers (numbers first, then the rest)."""
    return tuple((0, v, "") if _is_number(v) else (1, 0, repr(v)) for v in item[0])


def _match_group(exp: list, cand: list, config: CompareConfig) -> list[tuple[int, int]]:
    """Pairs (i, j) of close rows within one group (rows that agree outside the float columns)."""

    def close(a: tuple, b: tuple) -> bool:
        return _rows_close(a, b, config)

    order: Callable[[tuple], Any]
    try:
        exp.sort(key=itemgetter(0))
        cand.sort(key=itemgetter(0))
        order = itemgetter(0)
    except TypeError:  # NULL or NaN among the floats
        exp.sort(key=_safe_order)
        cand.sort(key=_safe_order)
        order = _safe_order
    if len(exp) == len(cand) and all(close(e[0], c[0]) for e, c in zip(exp, cand)):
        return [(i, i) for i in range(len(exp))]
    if len(exp) * len(cand) <= _EXACT_MATCHING_LIMIT:
        return _maximum_matching(exp, cand, close)
    pairs: list[tuple[int, int]] = []  # sweep over both sorted lists: optimal for one float column
    i = j = 0
    while i < len(exp) and j < len(cand):
        if close(exp[i][0], cand[j][0]):
            pairs.append((i, j))
            i += 1
            j += 1
        elif order(exp[i]) < order(cand[j]):
            i += 1
        else:
            j += 1
    return pairs


def _maximum_matching(exp: list, cand: list, close) -> list[tuple[int, int]]:
    """Maximum bipartite matching (augmenting paths) between small groups."""
    adjacency = [[j for j, c in enumerate(cand) if close(e[0], c[0])] for e in exp]
    owner = [-1] * len(cand)

    def augment(i: int, seen: list[bool]) -> bool:
        for j in adjacency[i]:
            if not seen[j]:
                seen[j] = True
                if owner[j] == -1 or augment(owner[j], seen):
                    owner[j] = i
                    return True
        return False

    for i in range(len(exp)):
        if adjacency[i]:
            augment(i, [False] * len(cand))
    return [(i, j) for j, i in enumerate(owner) if i != -1]


def counters_equivalent(expected: Counter, candidate: Counter, config: CompareConfig) -> bool:
    """True when two columns, given as value counters, hold the same values (floats within tolerance)."""
    if dict.__eq__(expected, candidate):
        return True
    if expected.total() != candidate.total():
        return False
    if not any(type(v) is float for v in expected) and not any(type(v) is float for v in candidate):
        return False  # tolerance applies to floats only
    if {v: n for v, n in expected.items() if not _is_number(v)} != {
        v: n for v, n in candidate.items() if not _is_number(v)
    }:
        return False
    exp_numbers = sorted(chain.from_iterable(repeat(v, n) for v, n in expected.items() if _is_number(v)))
    cand_numbers = sorted(chain.from_iterable(repeat(v, n) for v, n in candidate.items() if _is_number(v)))
    return all(values_close(a, b, config) for a, b in zip(exp_numbers, cand_numbers))


def differing_columns(rows: RowMatch, config: CompareConfig) -> list[int]:
    """Positions of the columns whose values differ between the unmatched rows of both sides.

    Matched rows agree in every column, so a column's whole multiset differs exactly when its values
    among the unmatched rows do: only the (usually small) residue is counted.
    """
    missing = list(rows.missing.elements())
    extra = list(rows.extra.elements())
    if not missing or not extra:
        return []
    return [
        index
        for index, (exp_values, cand_values) in enumerate(zip(zip(*missing), zip(*extra)))
        if not counters_equivalent(Counter(exp_values), Counter(cand_values), config)
    ]

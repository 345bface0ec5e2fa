"""Column rules: how candidate columns are aligned to expected ones (names, positions, permutations)."""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from itertools import permutations
from typing import TYPE_CHECKING

from nl2sql_pipeline.compare.model import MAX_PERMUTATION_COLUMNS, Comparison
from nl2sql_pipeline.compare.matching import counters_equivalent
from nl2sql_pipeline.compare.wording import plural
from nl2sql_pipeline.compare.values import NUMERIC_KINDS, TEMPORAL_KINDS, kind_of

if TYPE_CHECKING:
    from nl2sql_pipeline.compare.state import ComparisonState

MAX_PERMUTATIONS_TRIED = 24
"""At most this many column orders (those whose every column matches on its own) are compared row by row."""


def name_differences(expected: Sequence[str], candidate: Sequence[str]) -> tuple[list[str], list[str]]:
    """(expected names missing from the candidate, candidate names not expected), case-insensitive."""
    exp_counts = Counter(n.casefold() for n in expected)
    cand_counts = Counter(n.casefold() for n in candidate)
    return _surplus(expected, exp_counts - cand_counts), _surplus(candidate, cand_counts - exp_counts)


def _surplus(names: Sequence[str], surplus: Counter) -> list[str]:
    """The names (original spelling, in order) that account for ``surplus``."""
    out = []
    for name in names:
        key = name.casefold()
        if surplus[key] > 0:
            surplus[key] -= 1
            out.append(name)
    return out


def map_by_name(expected: Sequence[str], candidate: Sequence[str]) -> tuple[int, ...] | None:
    """For each expected column, the candidate column of the same (case-insensitive) name; None if any lacks one."""
    positions: dict[str, deque[int]] = defaultdict(deque)
    for index, name in enumerate(candidate):
        positions[name.casefold()].append(index)
    alignment = []
    for name in expected:
        queue = positions.get(name.casefold())
        if not queue:
            return None
        alignment.append(queue.popleft())
    return tuple(alignment)


def describe_name_differences(missing: list[str], extra: list[str]) -> str:
    """``column 'genre' missing from candidate; candidate has extra column 'kind'``."""
    parts = []
    if missing:
        parts.append(f"{'column' if len(missing) == 1 else 'columns'} {', '.join(map(repr, missing))} missing from candidate")
    if extra:
        parts.append(f"candidate has extra {'column' if len(extra) == 1 else 'columns'} {', '.join(map(repr, extra))}")
    return "; ".join(parts)


def column_count_mismatch(state: ComparisonState) -> Comparison | None:
    """The results must have the same number of columns; the reason names the missing or extra ones."""
    n_exp, n_cand = len(state.expected_columns), len(state.candidate_columns)
    if n_exp == n_cand:
        return None
    missing, extra = name_differences(state.expected_columns, state.candidate_columns)
    detail = describe_name_differences(missing, extra)
    return state.mismatched(
        "column_count_mismatch",
        f"expected {plural(n_exp, 'column')}, candidate returned {n_cand}" + (f": {detail}" if detail else ""),
        0.0,
    )


def column_names_mismatch(state: ComparisonState) -> Comparison | None:
    """With ``column_order='by_name'``, the column names must match as sets (case-insensitive)."""
    if state.config.column_order != "by_name":
        return None
    missing, extra = name_differences(state.expected_columns, state.candidate_columns)
    if not missing and not extra:
        return None
    return state.mismatched("column_names_mismatch", describe_name_differences(missing, extra), 0.0)


def column_reorder_by_name(state: ComparisonState) -> Comparison | None:
    """When the column name sets match (case-insensitive), candidate columns are mapped to expected ones by name."""
    if state.config.column_order == "positional":
        return None
    alignment = map_by_name(state.expected_columns, state.candidate_columns)
    if alignment is None:
        return None
    state.alignment = alignment
    if alignment != tuple(range(len(alignment))):
        state.alignment_rules.append("column_reorder_by_name")
    return None


def column_positional(state: ComparisonState) -> Comparison | None:
    """Otherwise columns are compared by position: models alias freely (COUNT(*) vs count_star() vs n)."""
    if state.alignment is not None:
        return None
    state.alignment = tuple(range(len(state.expected_columns)))
    if [n.casefold() for n in state.expected_columns] != [n.casefold() for n in state.candidate_columns]:
        state.alignment_rules.append("column_positional")
    return None


def _families(types: set[type]) -> set[str]:
    """The value families of a column's types (number, temporal, str, bool, ...), NULL left out."""
    kinds = {kind_of(t) for t in types} - {None}
    return {"number" if k in NUMERIC_KINDS else "temporal" if k in TEMPORAL_KINDS else str(k) for k in kinds}


def _may_pair(exp: set[str], cand: set[str]) -> bool:
    """Cheap pre-check on value families before canonicalising a column pair."""
    if not exp or not cand or exp & cand:
        return True
    return "str" in exp | cand  # strings may be coerced to numbers or dates


def _similarity(state: ComparisonState, i: int, j: int) -> float:
    """How alike expected column i and candidate column j are: 1.0 when they hold the same values
    (floats within tolerance), else the share of distinct values they have in common."""
    pair = state.pair(i, j)
    exp, cand = state.column_counter(pair.expected), state.column_counter(pair.candidate)
    if counters_equivalent(exp, cand, state.config):
        return 1.0
    union = len(exp.keys() | cand.keys())
    return 0.0 if union == 0 else 0.99 * len(exp.keys() & cand.keys()) / union


def column_permutation(state: ComparisonState) -> Comparison | None:
    """If the positional comparison failed on <= 6 differently named columns, try the column order that matches.

    Orders in which every column pair holds the same values are tried first (at most 24, so a wrong
    answer costs a few column checks, not 720 row comparisons). When none matches, the order whose
    columns are most alike is kept for the mismatch verdict if it scores better than by position.
    """
    k = len(state.expected_columns)
    if state.config.column_order != "by_name_when_sets_match" or "column_positional" not in state.alignment_rules:
        return None
    if k < 2 or state.alignment is None:
        return None
    if k > MAX_PERMUTATION_COLUMNS:
        state.notes.append(f"no column permutation tried (more than {MAX_PERMUTATION_COLUMNS} columns)")
        return None
    exp_families = [_families(types) for types in state.expected_types]
    cand_families = [_families(types) for types in state.candidate_types]
    similarity = [
        [_similarity(state, i, j) if _may_pair(exp_families[i], cand_families[j]) else 0.0 for j in range(k)]
        for i in range(k)
    ]
    ranked = sorted(
        permutations(range(k)),
        key=lambda order: (
            -sum(similarity[i][j] for i, j in enumerate(order)),
            sum(i != j for i, j in enumerate(order)),
        ),
    )
    positional = state.alignment
    if len(state.expected_rows) == len(state.candidate_rows):
        complete = [o for o in ranked if o != positional and all(similarity[i][j] == 1.0 for i, j in enumerate(o))]
        for order in complete[:MAX_PERMUTATIONS_TRIED]:
            aligned = state.aligned(order)
            if aligned.rows.complete:
                _adopt(state, order)
                return state.matched(aligned)
    best = ranked[0]
    if best != positional and state.aligned(best).rows.score > state.aligned(positional).rows.score:
        _adopt(state, best)
        state.notes.append("no column order makes all rows match (compared in the most alike order)")
    else:
        state.notes.append("no reordering of the candidate's columns makes all rows match")
    return None


def _adopt(state: ComparisonState, order: tuple[int, ...]) -> None:
    state.alignment = order
    state.alignment_rules = [r for r in state.alignment_rules if r != "column_positional"]
    state.alignment_rules.append("column_permutation")

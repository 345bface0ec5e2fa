"""Column rules: how candidate columns are aligned to expected ones (names, positions, permutations)."""

from __future__ import annotations

from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from itertools import permutations
from typing import TYPE_CHECKING

from nl2sql_pipeline.compare.matching import counters_equivalent, match_rows
from nl2sql_pipeline.compare.model import Comparison
from nl2sql_pipeline.compare.values import NUMERIC_KINDS, TEMPORAL_KINDS, ValueContext, kind_of
from nl2sql_pipeline.compare.wording import plural

if TYPE_CHECKING:
    from nl2sql_pipeline.compare.state import ComparisonState

MAX_PERMUTATIONS_TRIED = 24
"""At most this many column pairings (orders of columns with alike values) are compared row by row."""


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
        parts.append(
            f"{'column' if len(missing) == 1 else 'columns'} {', '.join(map(repr, missing))} missing from candidate"
        )
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
    score, paired = shared_column_score(state)
    credit = f"; partial credit on the {plural(paired, 'shared column')}" if paired else ""
    verdict = state.mismatched(
        "column_count_mismatch",
        f"expected {plural(n_exp, 'column')}, candidate returned {n_cand}" + (f": {detail}" if detail else "") + credit,
        score,
    )
    return verdict.evolve(cell_f1=round(score, 6))


def shared_column_score(state: ComparisonState) -> tuple[float, int]:
    """(partial credit, shared columns) when the column counts differ: the row F1 over the columns both
    results share (paired by name, then by value signature) times the column F1 of that sharing."""
    k_exp, k_cand = len(state.expected_columns), len(state.candidate_columns)
    pairs: dict[int, int] = {}
    by_name: dict[str, list[int]] = defaultdict(list)
    for j, name in enumerate(state.candidate_columns):
        by_name[name.casefold()].append(j)
    for i, name in enumerate(state.expected_columns):
        if by_name.get(name.casefold()):
            pairs[i] = by_name[name.casefold()].pop(0)
    used = set(pairs.values())
    cand_sigs: dict[int, list[int]] = defaultdict(list)
    for j in range(k_cand):
        if j not in used:
            cand_sigs[_signature(state, "candidate", j)].append(j)
    for i in range(k_exp):
        if i not in pairs:
            matches = cand_sigs.get(_signature(state, "expected", i))
            if matches:
                pairs[i] = matches.pop(0)
    if not pairs:
        return 0.0, 0
    exp_idx = sorted(pairs)
    canonical = [state.pair(i, pairs[i]) for i in exp_idx]
    exp_rows = list(zip(*(p.expected for p in canonical))) if state.expected_rows else []
    cand_rows = list(zip(*(p.candidate for p in canonical))) if state.candidate_rows else []
    floats = [n for n, p in enumerate(canonical) if "float" in p.expected_kinds | p.candidate_kinds]
    row_f1 = match_rows(exp_rows, cand_rows, state.config, floats).score
    return row_f1 * 2 * len(pairs) / (k_exp + k_cand), len(pairs)


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


def _signature(state: ComparisonState, side: str, index: int) -> int:
    """The hash of a column's canonical value multiset (numbers by value: 3, 3.0 and Decimal('3') agree)."""
    values = state.expected_cols[index] if side == "expected" else state.candidate_cols[index]
    types = state.expected_types[index] if side == "expected" else state.candidate_types[index]
    canonical = state.canonicaliser.column(values, ValueContext(canonicaliser=state.canonicaliser), types)
    try:
        return hash(frozenset(Counter(canonical).items()))
    except TypeError:  # unhashable canonical values cannot happen, but never fail the comparison on it
        return hash(repr(sorted(map(repr, canonical))))


def pair_columns_by_value(state: ComparisonState) -> list[tuple[int, ...]]:
    """Candidate alignments from column values, best first (at most ``MAX_PERMUTATIONS_TRIED``).

    Columns whose value multisets hash alike pair first (several alike columns on both sides pair in
    position order, other orders of those groups follow); the columns left are paired greedily by value
    similarity among compatible types. No search over all column orders: 30 columns cost 60 signatures.
    """
    k = len(state.expected_columns)
    exp_sigs = [_signature(state, "expected", i) for i in range(k)]
    cand_sigs = [_signature(state, "candidate", j) for j in range(k)]
    groups: dict[int, tuple[list[int], list[int]]] = {}
    for i, sig in enumerate(exp_sigs):
        groups.setdefault(sig, ([], []))[0].append(i)
    for j, sig in enumerate(cand_sigs):
        if sig in groups:
            groups[sig][1].append(j)
    base: dict[int, int] = {}
    ambiguous: list[tuple[list[int], list[int]]] = []
    for exp_cols, cand_cols in groups.values():
        n = min(len(exp_cols), len(cand_cols))
        base.update(zip(exp_cols[:n], cand_cols[:n]))
        if n > 1:
            ambiguous.append((exp_cols[:n], cand_cols[:n]))
    _pair_rest_by_similarity(state, base)
    orders = [tuple(base[i] for i in range(k))]
    for exp_cols, cand_cols in ambiguous:
        for perm in permutations(cand_cols):
            if len(orders) >= MAX_PERMUTATIONS_TRIED:
                return orders
            variant = dict(base)
            variant.update(zip(exp_cols, perm))
            order = tuple(variant[i] for i in range(k))
            if order not in orders:
                orders.append(order)
    return orders


def _pair_rest_by_similarity(state: ComparisonState, pairs: dict[int, int]) -> None:
    """Pair the expected columns not yet in ``pairs`` greedily with the most alike candidate columns left."""
    k = len(state.expected_columns)
    exp_left = [i for i in range(k) if i not in pairs]
    cand_left = [j for j in range(k) if j not in set(pairs.values())]
    if not exp_left:
        return
    exp_families = {i: _families(state.expected_types[i]) for i in exp_left}
    cand_families = {j: _families(state.candidate_types[j]) for j in cand_left}
    scored = sorted(
        (-(_similarity(state, i, j) if _may_pair(exp_families[i], cand_families[j]) else 0.0), abs(i - j), i, j)
        for i in exp_left
        for j in cand_left
    )
    used: set[int] = set()
    for _, _, i, j in scored:
        if i not in pairs and j not in used:
            pairs[i] = j
            used.add(j)


def column_permutation(state: ComparisonState) -> Comparison | None:
    """If the positional comparison failed on differently named columns, pair the columns by their values.

    Columns pair by value signatures, then by similarity (``pair_columns_by_value``): no search over every
    column order, so a 30-column result stays fast. The first pairing whose rows all match decides; when
    none does, the most alike pairing is kept for the mismatch verdict if it scores better than by position.
    """
    k = len(state.expected_columns)
    if state.config.column_order != "by_name_when_sets_match" or "column_positional" not in state.alignment_rules:
        return None
    if k < 2 or state.alignment is None:
        return None
    positional = state.alignment
    orders = [o for o in pair_columns_by_value(state) if o != positional]
    if len(state.expected_rows) == len(state.candidate_rows):
        for order in orders:
            aligned = state.aligned(order)
            if aligned.rows.complete:
                _adopt(state, order)
                return state.matched(aligned)
    best = orders[0] if orders else positional
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

"""Whole results compared inside DuckDB: the row cap bounds what is stored and shown, never what is compared.

    comparison = compare_in_engine(expected, candidate, EngineSource(db_path, expected_sql, candidate_sql), config)

Both queries run again as subqueries of one harness query (``sql/multiset_difference.sql``) in the
sandbox (``execution.run_composed_query``: same statement check, fresh read-only locked-down connection,
watchdog, memory and spill bounds); every cell becomes its comparison key (``engine_keys``) and the rows
are counted per key on each side with ``GROUP BY``, so the exact row counts and the multiset difference
come back, never the rows. Floats are keyed by buckets narrower than ``rel_tol``; the few rows left in
different buckets (near a bucket edge, or really different) are paired within tolerance in Python by
``matching.match_rows``, like the Python comparator does.

Columns are checked and aligned by the same column rules as in Python (names, positions); when the
names differ and the positional comparison fails, columns are paired by value signatures computed in
the engine (``column_pairing``).
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.compare.engine_keys import PYTHON_KIND, PairKeys, UnsupportedPairError, family, pair_keys
from nl2sql_pipeline.compare.matching import RowMatch, match_rows
from nl2sql_pipeline.compare.model import CompareConfig, Comparison
from nl2sql_pipeline.compare.state import Aligned, ComparisonState
from nl2sql_pipeline.compare.values import INFINITIES, ColumnPair
from nl2sql_pipeline.compare.wording import format_row, plural

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import SandboxLimits

logger = logging.getLogger(__name__)

RESIDUE_CAP = 100_000
"""At most this many differing key groups (or surplus rows) are brought back to be paired or shown."""


def _sql(name: str) -> str:
    return resources.files("nl2sql_pipeline.compare").joinpath("sql", name).read_text(encoding="utf-8")


MULTISET_SQL = _sql("multiset_difference.sql")
SURPLUS_SQL = _sql("surplus_rows.sql")
WHOLE_INPUTS_SQL = _sql("whole_inputs.sql")
ORDER_RUNS_SQL = _sql("order_runs.sql")


class EngineComparisonError(Exception):
    """The in-engine comparison could not run (its query failed, timed out, or a type pair is unsupported)."""


@dataclass(frozen=True)
class EngineSource:
    """Where the whole results live: the database file and both queries, run under ``limits``.

    Without a database file (``db_path`` None) only the expected SQL is used: to read the row order.
    """

    db_path: Path | None
    expected_sql: str
    candidate_sql: str
    limits: SandboxLimits | None = None


@dataclass(frozen=True)
class Inputs:
    """What the comparison reads as ``e_raw`` and ``c_raw`` (columns ``e0``..., ``c0``...): the queries to
    embed (each checked by the sandbox) and ``build``, which turns their embedded texts into the definitions
    of those two CTEs; ``widths``: the column counts of ``e_raw`` and ``c_raw``."""

    parts: tuple[str, str]
    build: Callable[[list[str]], str]
    widths: tuple[int, int]


def whole_inputs(source: EngineSource, widths: tuple[int, int]) -> Inputs:
    """Both whole results as they are (``sql/whole_inputs.sql``)."""

    def build(texts: list[str]) -> str:
        return WHOLE_INPUTS_SQL.format(
            expected=texts[0],
            candidate=texts[1],
            expected_names=", ".join(_ident(i, "e") for i in range(widths[0])),
            candidate_names=", ".join(_ident(j, "c") for j in range(widths[1])),
        )

    return Inputs((source.expected_sql, source.candidate_sql), build, widths)


@dataclass
class EngineCounts:
    """What the engine reports: exact row counts, rows matched and the unmatched rows (canonical keys)."""

    expected_count: int
    candidate_count: int
    matched: int
    tolerance_groups: int
    missing: Counter = field(default_factory=Counter)
    extra: Counter = field(default_factory=Counter)
    complete_residue: bool = True


def _ident(index: int, prefix: str) -> str:
    return f"{prefix}{index}"


@dataclass(frozen=True)
class _Plan:
    """The SQL pieces of one comparison under one column alignment."""

    pairs: list[PairKeys]
    key_names: list[str]
    float_slots: list[tuple[int, str, str]]  # (key position, raw column in u, float-sum column in g)

    @property
    def float_positions(self) -> list[int]:
        return [position for position, _, _ in self.float_slots]

    @property
    def one_key_per_column(self) -> bool:
        """No column pair has two keys (a row of keys is then already a row of values)."""
        return len(self.key_names) == len(self.pairs)


def _plan(exp_types: list[str], cand_types: list[str], alignment: tuple[int, ...], config: CompareConfig) -> _Plan:
    pairs = [
        pair_keys(_ident(i, "e"), exp_types[i], _ident(j, "c"), cand_types[j], config.rel_tol)
        for i, j in enumerate(alignment)
    ]
    key_names: list[str] = []
    float_slots: list[tuple[int, str, str]] = []
    for index, keys in enumerate(pairs):
        for part in range(len(keys.expected)):
            if part == 0 and keys.float_key:
                float_slots.append((len(key_names), f"r{index}", f"m{index}"))
            key_names.append(f"k{index}_{part}")
    return _Plan(pairs, key_names, float_slots)


def _select_list(plan: _Plan, side: str) -> str:
    items: list[str] = []
    for index, keys in enumerate(plan.pairs):
        exprs = keys.expected if side == "e" else keys.candidate
        items.extend(f"{expr} AS k{index}_{part}" for part, expr in enumerate(exprs))
    for index, keys in enumerate(plan.pairs):
        if keys.float_key:
            items.append(f"{keys.raw_expected} AS r{index}" if side == "e" else f"-({keys.raw_candidate}) AS r{index}")
    return ", ".join(items)


def _fill(template: str, plan: _Plan, inputs: str) -> str:
    raws = [raw for _, raw, _ in plan.float_slots]
    mins = {position: minimum for position, _, minimum in plan.float_slots}
    group_extras = "".join(f", sum({raw}) AS {mins[pos]}" for pos, raw, _ in plan.float_slots)
    return template.format(
        inputs=inputs,
        expected_keys=_select_list(plan, "e"),
        candidate_keys=_select_list(plan, "c"),
        key_names=", ".join(plan.key_names),
        group_extras=group_extras,
        tolerance_groups=(
            "count(*) FILTER (WHERE " + " OR ".join(f"(isfinite({m}) AND {m} <> 0)" for m in mins.values()) + ")"
        )
        if raws
        else "0",
        residue_fields=", ".join(["n_all", "n_diff", *plan.key_names, *(mins[p] for p in plan.float_positions)]),
        raw_names=", ".join(raws) if raws else "1",
        residue_raw_columns=", ".join(raw_or_key for raw_or_key in _raw_row_columns(plan)),
        residue_cap=RESIDUE_CAP,
    )


def _raw_row_columns(plan: _Plan) -> list[str]:
    """The key columns with each float key replaced by its raw value."""
    raw_at = {position: raw for position, raw, _ in plan.float_slots}
    return [raw_at.get(position, name) for position, name in enumerate(plan.key_names)]


def _run(source: EngineSource, template: str, plan: _Plan, inputs: Inputs) -> list[tuple]:
    from nl2sql_pipeline.execution import SandboxLimits, run_composed_query

    if source.db_path is None:
        raise EngineComparisonError("no database file to compare the whole results on")
    limits = source.limits or SandboxLimits()
    limits = type(limits)(**{**limits.__dict__, "row_cap": RESIDUE_CAP + 1})
    result = run_composed_query(
        source.db_path, list(inputs.parts), lambda texts: _fill(template, plan, inputs.build(texts)), limits
    )
    if not result.ok:
        raise EngineComparisonError(f"the in-engine comparison failed ({result.error_class}: {result.error_message})")
    return result.rows


def _value(key_values: tuple, plan: _Plan) -> tuple:
    """One row of canonical values from a row of keys (a coerced-string pair's two keys folded into one)."""
    if plan.one_key_per_column:
        return tuple(key_values)
    values: list[Any] = []
    position = 0
    for keys in plan.pairs:
        width = len(keys.expected)
        part = key_values[position : position + width]
        if width == 2 and part[1] is not None and keys.infinities is not None:
            values.append(INFINITIES[part[1] == "-infinity", keys.infinities])
        else:
            values.append(part[1] if width == 2 and part[1] is not None else part[0])
        position += width
    return tuple(values)


def _fold_positions(plan: _Plan) -> list[int]:
    """The value position (one per column pair) of each float key."""
    position = 0
    starts = {}
    for index, keys in enumerate(plan.pairs):
        starts[position] = index
        position += len(keys.expected)
    return [starts[p] for p in plan.float_positions]


def engine_counts(
    source: EngineSource,
    exp_types: list[str],
    cand_types: list[str],
    alignment: tuple[int, ...],
    config: CompareConfig,
    inputs: Inputs | None = None,
) -> EngineCounts:
    """Compare the whole results under ``alignment``; raises EngineComparisonError when it cannot.

    ``inputs``: what is compared (default: both queries' whole results, ``whole_inputs``).
    """
    try:
        plan = _plan(exp_types, cand_types, alignment, config)
    except UnsupportedPairError as exc:
        raise EngineComparisonError(f"no in-engine key for {exc}") from exc
    if inputs is None:
        inputs = whole_inputs(source, (len(exp_types), len(cand_types)))
    ((n_all, n_diff, matched, tolerance_groups, differing, residue),) = _run(source, MULTISET_SQL, plan, inputs)
    n_all, n_diff = int(n_all), int(n_diff)
    n_e, n_c = (n_all + n_diff) // 2, (n_all - n_diff) // 2
    groups = []
    for values in residue or []:  # unnamed rows: (n_all, n_diff, *keys, *float sums)
        group_e, group_c = (values[0] + values[1]) // 2, (values[0] - values[1]) // 2
        groups.append((1, group_e, group_c, None, None, *values[2:]))
    counts = EngineCounts(n_e, n_c, int(matched), int(tolerance_groups), complete_residue=int(differing) <= RESIDUE_CAP)
    width = len(plan.key_names)
    if not plan.float_slots or counts.matched in (n_e, n_c):
        for row in groups:
            value = _value(row[5 : 5 + width], plan)
            if row[1] > row[2]:
                counts.missing[value] += row[1] - row[2]
            else:
                counts.extra[value] += row[2] - row[1]
        return counts
    # floats in different buckets may still be within tolerance: pair the surplus rows in Python
    float_at = set(plan.float_positions)
    if counts.complete_residue and all(row[1] + row[2] == 1 for row in groups):
        surplus = []
        for row in groups:
            keys = list(row[5 : 5 + width])
            side = 1 if row[1] else -1
            for slot, (position, _, _) in enumerate(plan.float_slots):
                keys[position] = _unsigned(row[5 + width + slot], side)
            surplus.append((side, *keys))
    else:
        surplus = [
            (row[0], *(_unsigned(v, row[0]) if i in float_at else v for i, v in enumerate(row[1:])))
            for row in _run(source, SURPLUS_SQL, plan, inputs)
        ]
        counts.complete_residue = len(surplus) <= RESIDUE_CAP
    expected_rows = [_value(tuple(row[1:]), plan) for row in surplus if row[0] == 1]
    candidate_rows = [_value(tuple(row[1:]), plan) for row in surplus if row[0] == -1]
    paired = match_rows(expected_rows, candidate_rows, config, _fold_positions(plan))
    counts.matched += paired.tolerance_matched + paired.exact_matched
    counts.tolerance_groups += paired.tolerance_matched
    counts.missing, counts.extra = paired.missing, paired.extra
    return counts


def _unsigned(value: Any, side: int) -> Any:
    """A raw float as the query returned it (candidate floats travel negated through the comparison)."""
    if side == -1 and isinstance(value, float):
        return 0.0 if value == 0 else -value
    return value


def _pairs_of_types(exp_types: list[str], cand_types: list[str], alignment: tuple[int, ...]) -> list[ColumnPair]:
    def kinds(duckdb_type: str) -> frozenset[str]:
        fam = family(duckdb_type)
        return frozenset() if fam is None else frozenset({PYTHON_KIND.get(fam, fam)})

    return [ColumnPair((), (), kinds(exp_types[i]), kinds(cand_types[j])) for i, j in enumerate(alignment)]


def _describe(counts: EngineCounts) -> str:
    n_missing, n_extra = counts.expected_count - counts.matched, counts.candidate_count - counts.matched
    if n_extra and n_missing:
        parts = [f"candidate has {plural(n_extra, 'extra row')}, {n_missing} missing"]
    elif n_extra:
        parts = [f"candidate has {plural(n_extra, 'extra row')}"]
    else:
        parts = [f"candidate is missing {plural(n_missing, 'row')}"]
    if counts.missing:
        parts.append(f"e.g. missing: {format_row(next(iter(counts.missing)))}")
    if counts.extra:
        parts.append(f"e.g. extra: {format_row(next(iter(counts.extra)))}")
    if not counts.complete_residue:
        parts.append(f"more than {RESIDUE_CAP} row groups differ: only those were paired within float tolerance")
    return "; ".join(parts)


def compare_aligned_in_engine(
    state: ComparisonState, source: EngineSource, exp_types: list[str], cand_types: list[str]
) -> Comparison:
    """The verdict under the state's alignment, compared in the engine (row rules of ``rows`` mirrored)."""
    alignment = state.alignment
    assert alignment is not None
    counts = engine_counts(source, exp_types, cand_types, alignment, state.config)
    row_match = RowMatch(
        expected_count=counts.expected_count,
        candidate_count=counts.candidate_count,
        exact_matched=counts.matched - min(counts.tolerance_groups, counts.matched),
        tolerance_matched=min(counts.tolerance_groups, counts.matched),
        missing=counts.missing,
        extra=counts.extra,
    )
    aligned = Aligned(alignment, _pairs_of_types(exp_types, cand_types, alignment), [], [], row_match)
    state._aligned[alignment] = aligned
    note = f"compared whole in the engine ({plural(counts.expected_count, 'row')} vs {counts.candidate_count})"
    if counts.matched == counts.expected_count == counts.candidate_count:
        verdict = state.matched(aligned)
        return replace(
            verdict,
            reason=f"{verdict.reason}; {note}",
            expected_rows=counts.expected_count,
            candidate_rows=counts.candidate_count,
        )
    total = counts.expected_count + counts.candidate_count
    score = 2.0 * counts.matched / total if total else 1.0
    if counts.expected_count != counts.candidate_count:
        rule, reason = (
            "row_count_mismatch",
            (
                f"expected {plural(counts.expected_count, 'row')}, candidate returned {counts.candidate_count}: "
                f"{_describe(counts)}"
            ),
        )
    else:
        rule, reason = "multiset_mismatch", f"rows differ: {_describe(counts)}"
    verdict = state.mismatched(rule, reason, score)
    return replace(
        verdict,
        reason=f"{verdict.reason}; {note}",
        expected_rows=counts.expected_count,
        candidate_rows=counts.candidate_count,
    )

"""The comparator's public functions: is a candidate query's result the same answer as the expected one?

    comparison = compare_results(exp_columns, exp_rows, cand_columns, cand_rows)
    comparison.match, comparison.rule, comparison.reason, comparison.score

Results are compared as multisets of rows (order ignored, duplicates counted) after each cell is
canonicalised by the value rules; columns are aligned by name or position first. Every rule lives in
``rules.RULES`` with its name and docstring; the verdict names the rule(s) that decided.
"""

from __future__ import annotations

import gc
import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from nl2sql_pipeline.compare.engine import EngineComparisonError, EngineSource, compare_aligned_in_engine
from nl2sql_pipeline.compare.engine_order import whole_order
from nl2sql_pipeline.compare.identical import identical_match, same_result
from nl2sql_pipeline.compare.model import (
    COLUMN_ORDERS,
    COMPARATOR_VERSION,
    MAX_PERMUTATION_COLUMNS,
    UNDETERMINED,
    CompareConfig,
    Comparison,
    ComparisonInputError,
    ExpectedResultError,
    Rule,
)
from nl2sql_pipeline.compare.order import OrderCheck, OrderSpec
from nl2sql_pipeline.compare.ordered import WholeOrder, with_order
from nl2sql_pipeline.compare.rules import CANONICALISER, QUERY_RULES, RULE_NAMES, RULES, STEP_RULES
from nl2sql_pipeline.compare.state import ComparisonState
from nl2sql_pipeline.errors import Nl2SqlError

if TYPE_CHECKING:
    from nl2sql_pipeline.execution import QueryResult, SandboxLimits

__all__ = [
    "COLUMN_ORDERS",
    "COMPARATOR_VERSION",
    "MAX_PERMUTATION_COLUMNS",
    "RULES",
    "CompareConfig",
    "Comparison",
    "EngineComparisonError",
    "EngineSource",
    "ComparisonInputError",
    "ExpectedResultError",
    "Rule",
    "compare_query_results",
    "compare_results",
    "compare_whole",
]

logger = logging.getLogger(__name__)

_DEFAULT_CONFIG = CompareConfig()
ROW_STEP_NAMES = frozenset(
    {"multiset_exact", "float_tolerance", "column_permutation", "row_count_mismatch", "multiset_mismatch"}
)
"""The step rules that read rows: in the engine, everything from the first of them on is done by ``engine``."""


def compare_results(
    expected_columns: Sequence[str],
    expected_rows: Sequence[Sequence[Any]],
    candidate_columns: Sequence[str],
    candidate_rows: Sequence[Sequence[Any]],
    config: CompareConfig = _DEFAULT_CONFIG,
) -> Comparison:
    """Compare a candidate result with the expected one; raises ComparisonInputError on ragged rows."""
    with _gc_paused():
        state = ComparisonState(
            expected_columns, expected_rows, candidate_columns, candidate_rows, config, CANONICALISER, RULE_NAMES
        )
        for rule in STEP_RULES:
            verdict = rule.apply(state)
            if verdict is not None:
                return verdict
    raise AssertionError("multiset_mismatch always decides")  # pragma: no cover


@contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: the comparison allocates many tuples but no cycles, and
    collections triggered by those allocations would rescan every live row (2-5x slower on big results)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def compare_query_results(
    expected: QueryResult,
    candidate: QueryResult,
    config: CompareConfig = _DEFAULT_CONFIG,
    source: EngineSource | None = None,
) -> Comparison:
    """Compare two sandbox results (``execution.QueryResult``); raises ExpectedResultError if the expected failed.

    With ``source`` (the database and both queries), results that hit the row cap are compared whole in
    the engine (``engine``); without it, only what was fetched can be compared and the reason says so.
    """
    identical = same_result(expected, candidate)
    if identical:  # the usual correct candidate: nothing to canonicalise, the verdict is known
        comparison = identical_match(expected)
    else:
        comparison = _compare_query_results(expected, candidate, config, source)
    if source is None:
        return comparison
    return with_order(
        comparison,
        expected,
        candidate,
        source.expected_sql,
        config,
        _rerun(source),
        compare_results,
        identical,
        _whole_order(source, expected, candidate, config),
    )


def _whole_order(
    source: EngineSource, expected: QueryResult, candidate: QueryResult, config: CompareConfig
) -> WholeOrder:
    """Checks the row order of both whole results in the engine (``engine_order``), under a column alignment."""

    def check(spec: OrderSpec, alignment: tuple[int, ...]) -> OrderCheck:
        return whole_order(spec, source, list(expected.column_types), list(candidate.column_types), alignment, config)

    return check


def _rerun(source: EngineSource) -> Callable[[str], QueryResult | None]:
    """Runs a query derived from the expected SQL on the source's database (None without one or on failure)."""

    def rerun(sql: str) -> QueryResult | None:
        from nl2sql_pipeline.execution import SandboxLimits

        if source.db_path is None:
            return None
        try:
            return _rerun_cached(source.db_path, sql, source.limits or SandboxLimits())
        except Nl2SqlError as exc:
            logger.warning("could not re-run a query derived from the expected one: %s", exc)
            return None

    return rerun


RERUN_CACHE_SIZE = 64
"""Re-runs of derived expected queries kept per process (the same gold is judged against many candidates)."""
_RERUNS: OrderedDict[tuple, QueryResult] = OrderedDict()
_RERUNS_LOCK = threading.Lock()


def _rerun_cached(db_path: Path, sql: str, limits: SandboxLimits) -> QueryResult:
    """``run_query``, memoised per database file (by its path, size and modification time), SQL and limits."""
    from nl2sql_pipeline.execution import run_query

    try:
        stat = db_path.stat()
        key: tuple | None = (str(db_path), stat.st_mtime_ns, stat.st_size, sql, limits)
    except OSError:
        key = None
    if key is not None:
        with _RERUNS_LOCK:
            cached = _RERUNS.get(key)
            if cached is not None:
                _RERUNS.move_to_end(key)
                return cached
    result = run_query(db_path, sql, limits)
    if key is not None and result.ok:
        with _RERUNS_LOCK:
            _RERUNS[key] = result
            while len(_RERUNS) > RERUN_CACHE_SIZE:
                _RERUNS.popitem(last=False)
    return result


def _compare_query_results(
    expected: QueryResult, candidate: QueryResult, config: CompareConfig, source: EngineSource | None
) -> Comparison:
    if source is not None and (expected.truncated or candidate.truncated):
        for rule in QUERY_RULES:
            if rule.name in ("expected_failed", "candidate_failed"):
                verdict = rule.apply(expected, candidate, config)
                if verdict is not None:
                    return verdict
        try:
            return compare_whole(expected, candidate, source, config)
        except EngineComparisonError as exc:
            if expected.truncated and candidate.truncated:
                logger.warning("whole-result comparison could not be made: %s", exc)
                return _undetermined(len(expected.rows), exc)
            # one result hit the row cap and the other did not: their row counts differ, a mismatch either way
            logger.warning("whole-result comparison fell back to the fetched rows: %s", exc)
            fallback = _compare_query_results(expected, candidate, config, None)
            return fallback.evolve(reason=f"{fallback.reason}; not compared whole in the engine: {exc}")
    for rule in QUERY_RULES:
        verdict = rule.apply(expected, candidate, config)
        if verdict is not None:
            return verdict
    comparison = compare_results(expected.columns, expected.rows, candidate.columns, candidate.rows, config)
    comparison = comparison.evolve(
        expected_rows=None if expected.truncated else len(expected.rows),
        candidate_rows=None if candidate.truncated else len(candidate.rows),
    )
    if expected.truncated and candidate.truncated:
        note = f"both results hit the row cap: only their first {len(expected.rows)} rows were compared"
        comparison = comparison.evolve(reason=f"{comparison.reason}; {note}")
    return comparison


def _undetermined(row_cap: int, exc: EngineComparisonError) -> Comparison:
    """The comparison of two results over the row cap that could not be compared whole: no verdict."""
    return Comparison(
        match=False,
        rule=UNDETERMINED,
        reason=(
            f"not compared whole in the engine: {exc}; both results hit the row cap ({row_cap} rows fetched), "
            "so the fetched rows cannot decide: the verdict is undetermined, not a mismatch"
        ),
        score=0.0,
    )


def compare_whole(
    expected: QueryResult, candidate: QueryResult, source: EngineSource, config: CompareConfig
) -> Comparison:
    """The column rules on the column names, then the rows of both whole results compared in the engine."""
    with _gc_paused():
        state = ComparisonState(
            expected.columns, expected.rows, candidate.columns, candidate.rows, config, CANONICALISER, RULE_NAMES
        )
        for rule in STEP_RULES:
            if rule.name in ROW_STEP_NAMES:
                break
            verdict = rule.apply(state)
            if verdict is not None:
                return verdict
        return compare_aligned_in_engine(state, source, list(expected.column_types), list(candidate.column_types))

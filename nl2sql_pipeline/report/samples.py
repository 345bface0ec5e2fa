"""Result samples for the per-case table: the first rows of the expected and the generated result, and which
rows one has that the other lacks.

Read from the run's stored ``oracle_results`` (the expected result of each case) and ``candidate_results``
(the sandbox result of each candidate; a verdict's is its selected candidate's). Samples are bounded: at
most ``limit`` rows of each side, cells cut to ``CELL_CHARS`` characters, at most ``limit`` example rows of
each difference. Row differences compare the stored rows as multisets (order ignored), so on a result
truncated at the row cap they describe the stored rows only (``truncated`` says so).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.stages.records import Attempt, OracleRow, Verdict

SAMPLE_ROWS = 3
CELL_CHARS = 40

SampleKey = tuple[str, int]  # (case id, sample index)


@dataclass(frozen=True)
class RowSample:
    """The first rows of one result (cells as short text), or why there is none."""

    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    total_rows: int  # rows stored (capped at the row cap)
    truncated: bool  # more rows existed than were stored
    error: str | None = None  # the error class and message of a query that did not run


@dataclass(frozen=True)
class CaseSample:
    """Expected and generated samples of one verdict, and the rows that differ."""

    expected: RowSample | None
    generated: RowSample | None
    missing_rows: int | None = None  # expected rows the generated result lacks (None: not comparable)
    extra_rows: int | None = None  # generated rows the expected result lacks
    missing_examples: tuple[tuple[str, ...], ...] = ()
    extra_examples: tuple[tuple[str, ...], ...] = ()


def _cell(value: object) -> str:
    text = "NULL" if value is None else str(value)
    return text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"


def _row(row: Sequence[object]) -> tuple[str, ...]:
    return tuple(_cell(v) for v in row)


def row_sample(result: QueryResult, limit: int = SAMPLE_ROWS) -> RowSample:
    """The first ``limit`` rows of ``result``."""
    if not result.ok:
        return RowSample((), (), 0, False, error=f"{result.error_class}: {result.error_message or ''}".strip())
    return RowSample(
        tuple(result.columns), tuple(_row(r) for r in result.rows[:limit]), len(result.rows), bool(result.truncated)
    )


def _key(row: Sequence[object]) -> tuple:
    return tuple(repr(v) if isinstance(v, float) else v for v in row)


def case_sample(
    expected: QueryResult | None, generated: QueryResult | None, limit: int = SAMPLE_ROWS, differences: bool = True
) -> CaseSample:
    """The samples of one verdict and, when both results ran and ``differences`` is asked, the rows each lacks
    (as multisets)."""
    left = row_sample(expected, limit) if expected is not None else None
    right = row_sample(generated, limit) if generated is not None else None
    if not differences or expected is None or generated is None or not expected.ok or not generated.ok:
        return CaseSample(left, right)
    try:
        want, got = Counter(_key(r) for r in expected.rows), Counter(_key(r) for r in generated.rows)
    except TypeError:  # unhashable cells (lists, maps): no row difference
        return CaseSample(left, right)
    missing, extra = want - got, got - want
    return CaseSample(
        left,
        right,
        sum(missing.values()),
        sum(extra.values()),
        tuple(_row(r) for r in list(missing.elements())[:limit]),
        tuple(_row(r) for r in list(extra.elements())[:limit]),
    )


def result_samples(
    verdicts: Iterable[Verdict],
    oracle_rows: Iterable[OracleRow],
    attempts: Iterable[Attempt],
    limit: int = SAMPLE_ROWS,
) -> dict[SampleKey, CaseSample]:
    """The samples of every query verdict: the first expected alternative against the selected candidate; the
    rows that differ only for a verdict that is not correct (the report shows no difference for a correct one)."""
    expected: dict[str, QueryResult] = {}
    for row in sorted(oracle_rows, key=lambda r: r.alternative_index):
        expected.setdefault(row.case_id, row.result)
    results = {(a.case_id, a.sample_index, a.candidate_index): a.result for a in attempts}
    return _samples(verdicts, expected, results, limit)


def _samples(
    verdicts: Iterable[Verdict],
    expected: Mapping[str, QueryResult],
    results: Mapping[tuple[str, int, int], QueryResult | None],
    limit: int,
) -> dict[SampleKey, CaseSample]:
    """``result_samples`` from each case's first expected result and the results by (case, sample, candidate)."""
    samples: dict[SampleKey, CaseSample] = {}
    for verdict in verdicts:
        if verdict.is_probe:
            continue
        generated = results.get((verdict.case_id, verdict.sample_index, verdict.selected_candidate_index))
        samples[(verdict.case_id, verdict.sample_index)] = case_sample(
            expected.get(verdict.case_id), generated, limit, differences=not verdict.correct
        )
    return samples


def load_result_samples(
    gold_set: str,
    model: str,
    verdicts: Iterable[Verdict],
    root: Path | None = None,
    limit: int = SAMPLE_ROWS,
) -> dict[SampleKey, CaseSample]:
    """The samples of a stored run (empty when its oracle or candidate results are not stored); only the results
    the samples show are decoded."""
    from nl2sql_pipeline.results.frames import attempt_results, first_alternative_results
    from nl2sql_pipeline.storage import layout
    from nl2sql_pipeline.storage.parquet import read_parquet

    oracle_file = layout.partition_path(layout.ORACLE_RESULTS, gold_set, root=root)
    results_file = layout.partition_path(layout.CANDIDATE_RESULTS, gold_set, model, root=root)
    if not oracle_file.exists() or not results_file.exists():
        return {}
    queries = [verdict for verdict in verdicts if not verdict.is_probe]
    selected = {(v.case_id, v.sample_index, v.selected_candidate_index) for v in queries}
    return _samples(
        queries,
        first_alternative_results(read_parquet(oracle_file)),
        attempt_results(read_parquet(results_file), selected),
        limit,
    )


def clause_differences(clause_scores: Mapping[str, float] | None) -> list[tuple[str, float]]:
    """The AST clauses that differ from the expected SQL (F1 below 1), worst first."""
    if not clause_scores:
        return []
    return sorted(
        ((k, float(v)) for k, v in clause_scores.items() if v is not None and float(v) < 1.0),
        key=lambda item: (item[1], item[0]),
    )

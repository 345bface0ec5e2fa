"""Row order checked on whole results in the engine, for results over the row cap.

    check = whole_order(spec, source, exp_types, cand_types, alignment, config)

Over the row cap the fetched rows are only the first rows of each result: checking the order on them sees
too little, and a sort key that is not a result column cannot be evaluated on the gold at all (its re-run
hits the cap too). Both queries run again in one harness query: ``sql/order_runs.sql`` numbers the rows of
the gold (with its hidden sort keys as columns, ``keyed.keyed_sql``) and of the candidate in the order
they come, groups the gold's rows into runs of rows tied on every sort key, and gives the candidate's row at
each position the run of the gold's row there; the multiset comparison of ``engine`` then compares the
(row, run) pairs. They are equal exactly when each run of positions holds the same rows on both sides,
which is the order check of ``keyed`` (floats within tolerance, as in the multiset comparison).
"""

from __future__ import annotations

from nl2sql_pipeline.compare.engine import ORDER_RUNS_SQL, EngineComparisonError, EngineSource, Inputs, engine_counts
from nl2sql_pipeline.compare.keyed import keyed_sql
from nl2sql_pipeline.compare.model import CompareConfig
from nl2sql_pipeline.compare.order import ORDER_OK, ORDER_WRONG, OrderCheck, OrderSpec
from nl2sql_pipeline.compare.wording import format_row

_WHERE = "checked on the whole results in the engine"


def whole_order(
    spec: OrderSpec,
    source: EngineSource,
    exp_types: list[str],
    cand_types: list[str],
    alignment: tuple[int, ...],
    config: CompareConfig,
) -> OrderCheck:
    """The order check of two whole results already equal as multisets (``alignment``: the candidate column of
    each expected column); raises EngineComparisonError when it cannot be made (no database, a gold that
    cannot be rewritten with its sort keys as columns, a harness query that fails or times out)."""
    expected_sql = source.expected_sql
    if spec.hidden:
        keyed = keyed_sql(expected_sql)
        if keyed is None:
            raise EngineComparisonError("the gold could not be rewritten with its sort keys as columns")
        expected_sql = keyed
    width, cand_width = len(exp_types), len(cand_types)
    expected_names = [f"e{i}" for i in range(width)]
    candidate_names = ", ".join(f"c{j}" for j in range(cand_width))
    hidden_names = [f"k{i}" for i in range(len(spec.hidden))]
    hidden = iter(hidden_names)
    sort_keys = ", ".join(f"e{key.column}" if key.column is not None else next(hidden) for key in spec.keys)

    def build(texts: list[str]) -> str:
        return ORDER_RUNS_SQL.format(
            expected=texts[0],
            candidate=texts[1],
            keyed_names=", ".join(expected_names + hidden_names),
            sort_keys=sort_keys,
            expected_names=", ".join(expected_names),
            candidate_names=candidate_names,
            expected_run=f"e{width}",
            candidate_run=f"c{cand_width}",
        )

    inputs = Inputs((expected_sql, source.candidate_sql), build, (width + 1, cand_width + 1))
    counts = engine_counts(
        source, [*exp_types, "BIGINT"], [*cand_types, "BIGINT"], (*alignment, cand_width), config, inputs
    )
    keys = ", ".join(spec.texts)
    if counts.matched == counts.expected_count == counts.candidate_count:
        return OrderCheck(ORDER_OK, f"rows follow ORDER BY {keys} ({_WHERE}; ties in any order)", spec.texts)
    if not counts.missing:  # pragma: no cover - the rows were equal as multisets: some row is out of its run
        return OrderCheck(ORDER_WRONG, f"rows out of the order of ORDER BY {keys} ({_WHERE})", spec.texts)
    *row, start = min(counts.missing, key=lambda value: value[-1])
    return OrderCheck(
        ORDER_WRONG,
        f"row {start} and the rows tied with it on every sort key hold other rows than the expected ones there: "
        f"{format_row(tuple(row))} belongs among them, the candidate has it elsewhere (ORDER BY {keys}, {_WHERE})",
        spec.texts,
    )

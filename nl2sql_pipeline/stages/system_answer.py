"""A system's own answer, judged beside its SQL: the rows it showed against the gold result and against
the rows of its SQL re-executed in the sandbox.

A system (``kind: http | python | command``) may return the rows it showed the user. They are compared
with the comparator's rules twice: with the oracle's result (``system_rows_vs_gold``: ``match`` /
``mismatch``) and with its own SQL's sandbox result (``system_rows_vs_sql``). When the latter is a
mismatch, or its SQL failed or was refused while it showed rows anyway, ``system_rows_disagree`` flags the
verdict: the system showed the user something other than what its SQL returns. The natural-language
answer is carried to the verdict as given (for the answer-quality judge). Models have none of these.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from nl2sql_pipeline.compare import CompareConfig, ComparisonInputError, compare_results
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.stages.records import Attempt

MATCH = "match"
MISMATCH = "mismatch"


def _shown_rows(text: str) -> tuple[list[str], list[list[Any]]] | None:
    try:
        data = json.loads(text)
        return list(data["columns"]), [list(row) for row in data["rows"]]
    except (ValueError, KeyError, TypeError):
        return None


def _compare(result: QueryResult, shown: tuple[list[str], list[list[Any]]], config: CompareConfig) -> tuple[bool, str]:
    columns, rows = shown
    try:
        comparison = compare_results(result.columns, result.rows, columns, rows, config)
    except ComparisonInputError as exc:
        return False, str(exc)
    return bool(comparison.match), comparison.reason or comparison.rule


def rows_vs_gold(
    shown: tuple[list[str], list[list[Any]]], oracle_results: Sequence[QueryResult], config: CompareConfig
) -> str | None:
    """``match`` when the shown rows equal any acceptable expected result; None without a usable oracle."""
    usable = [result for result in oracle_results if result.ok]
    if not usable:
        return None
    return MATCH if any(_compare(result, shown, config)[0] for result in usable) else MISMATCH


def rows_vs_sql(
    shown: tuple[list[str], list[list[Any]]], attempt: Attempt, config: CompareConfig
) -> tuple[str | None, str | None]:
    """(``match``/``mismatch``/None, reason) of the shown rows against the sandbox result of the system's SQL."""
    if attempt.result is None:
        if attempt.policy_allowed is False:
            return (
                MISMATCH,
                f"its SQL was refused by the policy ({attempt.policy_rule}) but it showed {len(shown[1])} row(s)",
            )
        return None, None
    if not attempt.result.ok:
        return MISMATCH, (
            f"its SQL fails in the sandbox ({attempt.result.error_class}) but it showed {len(shown[1])} row(s)"
        )
    if attempt.result.truncated:
        return None, "its SQL's result hit the row cap: the shown rows were not compared"
    match, reason = _compare(attempt.result, shown, config)
    return (MATCH, None) if match else (MISMATCH, f"the rows it showed differ from its SQL's result: {reason}")


def system_answer_fields(
    attempt: Attempt, oracle_results: Sequence[QueryResult], config: CompareConfig
) -> dict[str, Any]:
    """The verdict fields of a system's answer (empty for a model's candidate)."""
    generation = attempt.generation
    if generation is None or (
        generation.answer is None and generation.system_rows is None and generation.system_latency_ms is None
    ):
        return {}
    fields: dict[str, Any] = {"answer": generation.answer, "system_latency_ms": generation.system_latency_ms}
    shown = _shown_rows(generation.system_rows) if generation.system_rows is not None else None
    if shown is None:
        return fields
    vs_sql, reason = rows_vs_sql(shown, attempt, config)
    fields.update(
        system_rows_vs_gold=rows_vs_gold(shown, oracle_results, config),
        system_rows_vs_sql=vs_sql,
        system_rows_disagree=vs_sql == MISMATCH,
        system_rows_reason=reason,
    )
    return fields

"""What an offline model is told about the case it answers: the ``metadata`` passed to ``litellm.completion``.

An answer-only case (no expected SQL) is answered with its expected answer as literal rows
(``answer_echo_sql``): the calibration models echo the gold, whatever form it takes.

Kept apart from ``offline_provider`` (which imports litellm) so the generate loop builds it per call
without a function-level import and without importing litellm where no offline model runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import GenerationError

METADATA_KEY = "nl2sql_case"


@dataclass(frozen=True)
class OfflineRequest:
    """What an offline model needs to know about the case it answers."""

    case_id: str
    expected_sql: str
    sample_index: int
    candidate_index: int


def _literal(value: Any) -> str:
    import datetime

    from sqlglot import exp

    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return exp.Literal.number(value).sql(dialect="duckdb")
    if isinstance(value, datetime.date):
        return f"DATE '{value.isoformat()}'"
    return exp.Literal.string(str(value)).sql(dialect="duckdb")


def answer_echo_sql(expected_answer: Any) -> str:
    """The query an offline model answers an answer-only case with: the expected answer as literal rows.

    >>> answer_echo_sql(412)
    'SELECT 412 AS answer'
    >>> answer_echo_sql([["Toei", 12], ["Madhouse", 9]])
    "SELECT * FROM (VALUES ('Toei', 12), ('Madhouse', 9)) AS t(answer_1, answer_2)"
    """
    if not isinstance(expected_answer, (list, tuple)):
        return f"SELECT {_literal(expected_answer)} AS answer"
    rows = [list(item) if isinstance(item, (list, tuple)) else [item] for item in expected_answer]
    width = max((len(r) for r in rows), default=1) or 1
    rows = [r + [None] * (width - len(r)) for r in rows]
    names = ["answer"] if width == 1 else [f"answer_{i + 1}" for i in range(width)]
    values = ", ".join("(" + ", ".join(_literal(v) for v in r) + ")" for r in rows)
    return f"SELECT * FROM (VALUES {values}) AS t({', '.join(names)})"


def offline_request_metadata(case: Case, sample_index: int, candidate_index: int) -> dict[str, Any]:
    """The ``metadata`` to pass to ``litellm.completion`` for an offline model answering ``case``."""
    expected_sql = case.canonical_sql
    if expected_sql is None and case.is_answer_only:
        expected_sql = answer_echo_sql(case.expected_answer)
    if expected_sql is None:
        raise GenerationError(f"case {case.id}: no expected SQL for an offline model to answer with (add expected_sql)")
    return {
        METADATA_KEY: {
            "case_id": case.id,
            "expected_sql": expected_sql,
            "sample_index": sample_index,
            "candidate_index": candidate_index,
        }
    }


def offline_turn_metadata(case: Case, turn: int, sample_index: int, candidate_index: int) -> dict[str, Any]:
    """The ``metadata`` for an offline model answering earlier turn ``turn`` (0-based) of a follow-up."""
    try:
        earlier = case.follow_up_context[turn]
    except IndexError:
        raise GenerationError(
            f"case {case.id}: no earlier turn {turn} (it has {len(case.follow_up_context)})"
        ) from None
    return {
        METADATA_KEY: {
            "case_id": f"{case.id}#turn{turn + 1}",
            "expected_sql": earlier.sql,
            "sample_index": sample_index,
            "candidate_index": candidate_index,
        }
    }

"""What an offline model is told about the case it answers: the ``metadata`` passed to ``litellm.completion``.

Kept apart from ``offline_provider`` (which imports litellm) so the generate loop builds it per call
without a function-level import and without importing litellm where no offline model runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import GenerationError

METADATA_KEY = "nl2sql_case"
VARIANT_MARK = "~v:"
"""Joins a case id and a variant's label in the id of a robustness variant (``robustness.variant_cases``)."""


def split_variant(case_id: str) -> tuple[str, str | None]:
    """(the gold case's id, the variant's label or None) of a case id: ``c1~v:typo-1`` -> ``("c1", "typo-1")``.

    An earlier turn's suffix (``#turn1``) stays with the case id: ``c1~v:x#turn1`` -> ``("c1#turn1", "x")``."""
    base, mark, rest = case_id.partition(VARIANT_MARK)
    if not mark:
        return case_id, None
    label, turn_mark, turn = rest.partition("#turn")
    return base + turn_mark + turn, label


@dataclass(frozen=True)
class OfflineRequest:
    """What an offline model needs to know about the case it answers."""

    case_id: str
    expected_sql: str
    sample_index: int
    candidate_index: int
    readings: tuple[str, ...] = ()  # an ambiguous question's readings: the calibrated answer asks which one
    guess_sql: str | None = None  # the SQL of its first reading: what a model that guesses writes


def clarify_metadata(case: Case, sample_index: int, candidate_index: int) -> dict[str, Any]:
    """The offline ``metadata`` of an ambiguous question (``expected_behavior: clarify``): its readings."""
    return {
        METADATA_KEY: {
            "case_id": case.id,
            "expected_sql": "",
            "readings": [r.reading for r in case.readings],
            "guess_sql": next((r.sql for r in case.readings if r.sql), None),
            "sample_index": sample_index,
            "candidate_index": candidate_index,
        }
    }


def offline_request_metadata(case: Case, sample_index: int, candidate_index: int) -> dict[str, Any]:
    """The ``metadata`` to pass to ``litellm.completion`` for an offline model answering ``case``."""
    if case.is_clarify:
        return clarify_metadata(case, sample_index, candidate_index)
    if case.canonical_sql is None:
        raise GenerationError(f"case {case.id}: no expected SQL for an offline model to answer with (add expected_sql)")
    return {
        METADATA_KEY: {
            "case_id": case.id,
            "expected_sql": case.canonical_sql,
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

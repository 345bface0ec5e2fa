"""``judge-oracle``: the offline judge that decides from gold rows and expected values, deterministically.

It serves tests and calibration (``gold-echo`` with the offline answerer must score 100% on answers) and
costs nothing. For the ``answer`` role it scores the same rubric as an LLM judge (``judges.answer``):

- correctness: the share of the reference values the answer states (the expected answer's values, or the
  gold result's cells when the case has SQL; a gold result longer than ``ANSWER_ROW_LIMIT`` rows is
  represented by its row count): all -> 5, at least half -> 3, some -> 2, none -> 1;
- groundedness: every number the answer states is in the rows the candidate's own query returned (or in
  the question; the row count counts) -> 5, else 2 (1 when the query returned nothing);
- completeness: the share of reference rows whose every value is stated, on the same scale.

A prose expected answer (``judges.values.expected_values`` is None) is checked on the numbers and dates
it contains; one with none is ``undecidable`` for the oracle (left out of its scores, listed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.judges.values import (
    KIND_NUMBER,
    Value,
    answer_numbers,
    cell_value,
    check_answer,
    expected_values,
    ungrounded_numbers,
)

ANSWER_ROW_LIMIT = 20
"""Rows an answer is expected to spell out; a longer result is stated by its row count."""
UNDECIDABLE = "undecidable"


@dataclass(frozen=True)
class Reference:
    """What a correct answer states: value groups (one per reference row) and where they came from."""

    rows: tuple[tuple[Value, ...], ...]
    source: str  # 'expected_answer' | 'gold_rows' | 'gold_row_count'

    @property
    def values(self) -> tuple[Value, ...]:
        """Every value, each once, in order."""
        return tuple(dict.fromkeys(v for row in self.rows for v in row))


def reference_from_expected(expected: Any) -> Reference | None:
    """The reference of an expected answer: its values, or the numbers and dates of a prose one (None: none)."""
    values = expected_values(expected)
    if values is None and isinstance(expected, str):
        found = [Value(KIND_NUMBER, n) for n, _ in answer_numbers(expected)]
        values = tuple(found) or None
    if not values:
        return None
    return Reference(tuple((v,) for v in values), "expected_answer")


def reference_from_rows(rows: Sequence[Sequence[Any]], *, truncated: bool = False) -> Reference:
    """The reference of a gold result: its cells row by row, or its row count when it is long."""
    if truncated or len(rows) > ANSWER_ROW_LIMIT:
        return Reference(((Value(KIND_NUMBER, float(len(rows))),),), "gold_row_count")
    groups = []
    for row in rows:
        cells = tuple(v for v in (cell_value(c) for c in row) if v is not None)
        if cells:
            groups.append(cells)
    if not groups:  # an empty result: a correct answer says there is nothing (stated as 0 rows)
        groups.append((Value(KIND_NUMBER, 0.0),))
    return Reference(tuple(groups), "gold_rows")


def _scale(share: float) -> int:
    if share >= 1.0:
        return 5
    if share >= 0.5:
        return 3
    return 2 if share > 0 else 1


def score_answer(
    reference: Reference,
    answer: str | None,
    candidate_rows: Sequence[Sequence[Any]] | None,
    question: str = "",
    row_count: int | None = None,
) -> dict[str, Any]:
    """The rubric judgement (``judges.answer.ANSWER_SCHEMA``) of ``answer`` against ``reference``;
    ``candidate_rows`` may be the first of ``row_count`` rows."""
    text = answer or ""
    check = check_answer(reference.values, text)
    if not text.strip():
        correctness = (1, "There is no answer.")
    else:
        missing = ", ".join(v.label() for v in check.missing[:5])
        correctness = (
            _scale(check.share),
            f"States all {len(check.found)} reference values."
            if not check.missing
            else f"States {len(check.found)} of {len(check.found) + len(check.missing)} reference values; misses {missing}.",
        )
    rows = [tuple(r) for r in candidate_rows or []]
    ungrounded = ungrounded_numbers(text, rows, question, row_count)
    if not ungrounded:
        groundedness = (5, "Every number in the answer is in the rows its query returned.")
    else:
        groundedness = (2 if rows else 1, f"States {', '.join(ungrounded[:5])}, not in the rows its query returned.")
    complete_rows = sum(all(v in check.found for v in row) for row in reference.rows)
    share = complete_rows / len(reference.rows) if reference.rows else 0.0
    completeness = (
        _scale(share) if text.strip() else 1,
        f"Covers {complete_rows} of {len(reference.rows)} reference rows.",
    )
    return {
        "correctness": {"score": correctness[0], "rationale": correctness[1]},
        "groundedness": {"score": groundedness[0], "rationale": groundedness[1]},
        "completeness": {"score": completeness[0], "rationale": completeness[1]},
    }

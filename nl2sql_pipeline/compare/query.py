"""Query rules: what to do with whole query results before their rows are compared."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nl2sql_pipeline.compare.model import CompareConfig, Comparison, ExpectedResultError
from nl2sql_pipeline.compare.wording import plural

if TYPE_CHECKING:  # the comparator only relies on the QueryResult shape
    from nl2sql_pipeline.execution import QueryResult


def one_line(message: str | None) -> str:
    """An error message on one line: DuckDB's ``LINE n:`` excerpt dropped, whitespace collapsed."""
    return " ".join((message or "no message").split("\nLINE ")[0].split())


def expected_failed(expected: QueryResult, candidate: QueryResult, config: CompareConfig) -> Comparison | None:
    """The expected (gold) query must have run: its failure is bad input and raises ExpectedResultError."""
    if expected.ok:
        return None
    raise ExpectedResultError(
        f"the expected query failed ({expected.error_class}: {one_line(expected.error_message)}): "
        "fix the gold SQL so that it runs on this database before comparing candidates against it"
    )


def candidate_failed(expected: QueryResult, candidate: QueryResult, config: CompareConfig) -> Comparison | None:
    """A candidate query that failed (error, timeout, policy) is a mismatch that names the error."""
    if candidate.ok:
        return None
    return Comparison(
        match=False,
        rule="candidate_failed",
        reason=f"candidate query failed ({candidate.error_class}: {one_line(candidate.error_message)})",
        score=0.0,
    )


def candidate_truncated(expected: QueryResult, candidate: QueryResult, config: CompareConfig) -> Comparison | None:
    """A candidate that hit the row cap while the expected result did not has more rows than expected."""
    if not candidate.truncated or expected.truncated:
        return None
    return Comparison(
        match=False,
        rule="candidate_truncated",
        reason=(
            f"expected {plural(len(expected.rows), 'row')}, candidate returned more than "
            f"{len(candidate.rows)} (it hit the row cap)"
        ),
        score=0.0,
    )


def expected_truncated(expected: QueryResult, candidate: QueryResult, config: CompareConfig) -> Comparison | None:
    """An expected result that hit the row cap cannot equal a candidate that did not.

    When both hit the cap, their first rows are compared and the reason says so.
    """
    if not expected.truncated or candidate.truncated:
        return None
    return Comparison(
        match=False,
        rule="expected_truncated",
        reason=(
            f"expected more than {plural(len(expected.rows), 'row')} (it hit the row cap), "
            f"candidate returned {len(candidate.rows)}"
        ),
        score=0.0,
    )

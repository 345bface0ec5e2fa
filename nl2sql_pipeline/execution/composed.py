"""``run_composed_query``: a harness-built query that embeds untrusted queries as subqueries.

The comparator compares whole results inside the engine: it wraps the expected and the candidate query
in one SELECT of its own (``WITH e AS (<expected>), c AS (<candidate>) SELECT ...``). Every embedded
query must pass the same statement check as a query run on its own (exactly one SELECT-type statement),
its text is the statement DuckDB's parser extracted (trailing semicolons dropped, a newline before the
closing parenthesis so that a trailing ``--`` comment cannot swallow it), and the composed query is
checked again and run like any other: fresh connection on the locked-down, read-only sandbox, watchdog,
bounded memory, threads and spill space. Nothing here can write, attach or read a file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from nl2sql_pipeline.execution.limits import SandboxLimits
from nl2sql_pipeline.execution.pool import POOL
from nl2sql_pipeline.execution.query_result import QueryResult
from nl2sql_pipeline.execution.sandbox import check_query
from nl2sql_pipeline.execution.statements import embeddable_text


def embeddable_query(sql: str) -> str | QueryResult:
    """The text of ``sql``'s one query, safe to wrap in parentheses; or the result that refuses it."""
    checked = check_query(sql)
    if isinstance(checked, QueryResult):
        return checked
    return embeddable_text(checked)


def run_composed_query(
    db_path: Path | str,
    parts: Sequence[str],
    compose: Callable[[list[str]], str],
    limits: SandboxLimits = SandboxLimits(),
) -> QueryResult:
    """Run ``compose(embedded parts)`` in the sandbox of ``db_path``; a refused part refuses the whole.

    ``compose`` receives the checked texts of ``parts`` (in order) and returns one SELECT statement that
    uses each of them as a parenthesised subquery.
    """
    texts: list[str] = []
    for part in parts:
        embedded = embeddable_query(part)
        if isinstance(embedded, QueryResult):
            return embedded
        texts.append(embedded)
    return POOL.run(db_path, compose(texts), limits)

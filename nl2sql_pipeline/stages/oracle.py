"""The oracle stage: every expected SQL alternative of every query case, run once in the sandbox with its
clock pinned at the case's reference date (``sql.clock``).

A query the gold preflight of this process has just run successfully on the same file with the same limits
(``gold.quality.preflight.take_gold_results``) is not run again: its result is the preflight's.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from sqlglot.errors import SqlglotError

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare.structure import ClauseItems, parse_clauses
from nl2sql_pipeline.execution import SandboxLimits, held_sandboxes
from nl2sql_pipeline.gold.quality.preflight import gold_run_key, take_gold_results
from nl2sql_pipeline.policy.gate import DatabaseResolver
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages.records import OracleRow

logger = logging.getLogger(__name__)


def run_oracle(
    cases: Iterable[Case],
    resolve_database: DatabaseResolver,
    limits: SandboxLimits = SandboxLimits(),
) -> list[OracleRow]:
    """Execute every expected SQL alternative of every query case in the sandbox (probes have none).

    The canonical SQL's row also carries its clause items, which every model's judge reads for a miss.
    """
    rows: list[OracleRow] = []
    known = take_gold_results()
    reused = 0
    with held_sandboxes() as run_query:
        for case in cases:
            if case.is_probe:
                continue
            db_path = resolve_database(case.database)
            for index, sql in enumerate(case.expected_sql):
                pinned = pin_clock(sql, case.reference_instant)
                key = gold_run_key(db_path, pinned, limits) if known else None
                result = known.get(key) if key is not None else None
                if result is None:
                    result = run_query(db_path, pinned, limits)
                else:
                    reused += 1
                if not result.ok:
                    logger.warning(
                        "oracle failed for %s[%d]: %s %s", case.id, index, result.error_class, result.error_message
                    )
                items = _clause_items(sql) if index == 0 else None
                rows.append(OracleRow(case.id, case.fingerprint, index, result, items))
    if reused:
        logger.info("oracle: %d of %d results from the gold preflight of this process", reused, len(rows))
    return rows


def _clause_items(sql: str) -> ClauseItems | None:
    """The clause items of an expected SQL (None when sqlglot cannot read it: the judge says so itself)."""
    try:
        return parse_clauses(sql)
    except SqlglotError:
        return None

"""Why a query verdict is not correct, as a short cause label: the generation error class (``no_sql``,
``rate_limited``, ...), ``execution_error: <class>``, ``policy_rejected: <rule>``, ``skipped: <reason>``,
``timeout`` or ``wrong_result``. ``generation_error=96`` hides that the cause was ``no_sql``; this does not.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict

# no SQL in the reply: the outcome rule's own wording and the generation error class mean the same cause
NO_SQL_CAUSE = "no_sql"


def _error_class_of(reason: str | None) -> str:
    """``binder: Referenced column ...`` -> ``binder``."""
    return (reason or "unknown").split(":", 1)[0].strip() or "unknown"


def cause_of(verdict: Verdict) -> str | None:
    """The cause label of a query verdict that is not correct; None for a correct one."""
    if verdict.outcome == outcomes.CORRECT or verdict.outcome in outcomes.OWN_CATEGORY:
        return None  # an ambiguous question's reply or an answer-only case is scored in its own category
    if verdict.outcome == outcomes.GENERATION_ERROR:
        reason = verdict.reason or NO_SQL_CAUSE
        return NO_SQL_CAUSE if reason in ("no SQL generated", NO_SQL_CAUSE) else reason
    if verdict.outcome == outcomes.SKIPPED:
        return f"skipped: {verdict.skip_reason or verdict.reason or 'unknown'}"
    if verdict.outcome == outcomes.EXECUTION_ERROR:
        return f"execution_error: {_error_class_of(verdict.reason)}"
    if verdict.outcome == outcomes.POLICY_REJECTED and verdict.policy_rule:
        return f"policy_rejected: {verdict.policy_rule}"
    return verdict.outcome


def outcome_causes(queries: Iterable[Verdict]) -> list[tuple[str, int]]:
    """Query verdicts that are not correct, counted by cause, most frequent first (then by name)."""
    counts = Counter(c for c in (cause_of(v) for v in queries if not v.is_probe) if c is not None)
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))

"""The ambiguity category (``stages.clarify``): how often the system asked back when a question had no single answer.

``clarification_rate`` = clarified / ambiguous verdicts answered (skipped ones left out, as for queries);
the counts per outcome and the questions it guessed at are listed beside. None when the run had no
ambiguous question. These verdicts are never in the query rates (``outcomes.NOT_SCORED``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict


def ambiguity_scores(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """``clarification_rate``, ``ambiguous_count``, ``clarify_outcomes`` and ``guessed_cases`` of a run."""
    replies = [v for v in verdicts if v.outcome in outcomes.CLARIFY_OUTCOMES]
    counts = Counter(v.outcome for v in replies)
    return {
        "clarification_rate": counts[outcomes.CLARIFIED] / len(replies) if replies else None,
        "ambiguous_count": len(replies),
        "clarify_outcomes": {outcome: counts[outcome] for outcome in outcomes.CLARIFY_OUTCOMES if counts[outcome]},
        "guessed_cases": [
            {"case_id": v.case_id, "sample_index": v.sample_index, "outcome": v.outcome, "sql": v.generated_sql}
            for v in replies
            if v.outcome != outcomes.CLARIFIED
        ],
    }

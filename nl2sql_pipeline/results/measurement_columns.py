"""The leaderboard columns of the optional measurements (``runs.measurements``) and the budgets, beside accuracy.

Each column is a run score (None when the run did not measure it): a live system's policy recall on the
harmful requests it was sent, correctness within the case budgets, the stable efficiency score, and the
share of ambiguous questions asked back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MEASUREMENT_COLUMNS: tuple[str, ...] = (
    "system_policy_recall",
    "within_budget_correctness_rate",
    "efficiency_score",
    "clarification_rate",
)


def measurement_columns(scores: Mapping[str, Any]) -> dict[str, Any]:
    """The measurement columns of one run's scores (a run stored before a measurement existed: None)."""
    return {name: scores.get(name) for name in MEASUREMENT_COLUMNS}

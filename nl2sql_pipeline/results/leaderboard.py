"""The leaderboard across models and gold versions: one row per stored run, ranked within its gold set.

Each row carries the correctness with its Wilson interval and, against the best model of the same gold set,
the exact McNemar label on the cases both scored (the best row itself says ``best``). A difference is
"not significant" unless the test rejects at alpha 0.05. Equal correctness shares a rank; a run with no
scored case is not ranked.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from nl2sql_pipeline.results.frames import RUN_SCORES_DTYPES
from nl2sql_pipeline.results.measurement_columns import MEASUREMENT_COLUMNS, measurement_columns
from nl2sql_pipeline.results.read import VERDICTS_ASSET, RunResultsNotFoundError, StoredRun, load_run
from nl2sql_pipeline.robustness.stored import leaderboard_columns
from nl2sql_pipeline.scoring.statistics import paired_comparison, wilson_interval
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.storage import layout

if TYPE_CHECKING:
    pass

logger = logging.getLogger(__name__)

LEADERBOARD_COLUMNS: tuple[str, ...] = (
    "gold_set",
    "rank",
    "model",
    "run_id",
    "correct",
    "scored",
    "semantic_correctness_rate",
    "ci_low",
    "ci_high",
    "sql_execution_success_rate",
    "p50_latency_ms",
    "total_cost_usd",
    "unknown_cost_count",
    "token_source",
    "vs_best",
    "p_value_vs_best",
    "paraphrase_consistency",
    "perturbation_worst_drop",
    *MEASUREMENT_COLUMNS,
)

# The declared dtype of each column (run scores: their metric kind), so an export's schema never depends on the data.
LEADERBOARD_DTYPES: dict[str, str] = {
    **{name: "string" for name in ("gold_set", "model", "run_id", "vs_best")},
    **{name: "Int64" for name in ("rank", "correct", "scored")},
    **{name: "float64" for name in ("ci_low", "ci_high", "p_value_vs_best")},
    **{name: "float64" for name in ("paraphrase_consistency", "perturbation_worst_drop")},
    **{name: dtype for name, dtype in RUN_SCORES_DTYPES.items() if name in LEADERBOARD_COLUMNS},
}


def stored_runs(root: Path | None = None) -> list[StoredRun]:
    """Every run whose verdicts and scores are in the storage root, by gold set then model."""
    runs = []
    for gold, model, _ in layout.model_partitions(VERDICTS_ASSET, root):
        try:
            runs.append(load_run(gold, model, root))
        except RunResultsNotFoundError as exc:  # verdicts whose run failed before scoring
            logger.warning("left out of the leaderboard: %s", exc)
    return runs


def _row(run: StoredRun, root: Path | None = None) -> dict:
    scored = [v for v in run.verdicts if not v.is_probe and v.outcome not in outcomes.NOT_SCORED]
    correct = sum(bool(v.correct) for v in scored)
    interval = wilson_interval(correct, len(scored))
    return {
        "gold_set": run.gold_set,
        "model": run.model,
        "run_id": run.run_id,
        "correct": correct,
        "scored": len(scored),
        "semantic_correctness_rate": interval.estimate,
        "ci_low": interval.low,
        "ci_high": interval.high,
        "sql_execution_success_rate": run.scores["sql_execution_success_rate"],
        "p50_latency_ms": run.scores["p50_latency_ms"],
        "total_cost_usd": run.scores["total_cost_usd"],
        "unknown_cost_count": run.scores["unknown_cost_count"],
        "token_source": run.scores["token_source"],
        **leaderboard_columns(run.gold_set, run.model, root),
        **measurement_columns(run.scores.as_dict()),
    }


def _ranks(rates: Sequence[float | None]) -> list[int | None]:
    """Competition ranks of ``rates`` sorted best first: equal rates share a rank (1, 1, 3); None is unranked."""
    ranks: list[int | None] = []
    for position, rate in enumerate(rates, start=1):
        if rate is None:
            ranks.append(None)
        elif ranks and ranks[-1] is not None and rates[position - 2] == rate:
            ranks.append(ranks[-1])
        else:
            ranks.append(position)
    return ranks


def build_leaderboard(runs: Sequence[StoredRun], root: Path | None = None) -> pd.DataFrame:
    """The leaderboard frame (``LEADERBOARD_COLUMNS``), best first within each gold set (robustness columns
    read from the storage ``root``'s robustness results; None where not measured).

    Equal correctness shares a rank; a run with no scored case (probes or answer-only cases only) has none.
    """
    rows = []
    by_gold: dict[str, list[StoredRun]] = {}
    for run in runs:
        by_gold.setdefault(run.gold_set, []).append(run)
    for gold in sorted(by_gold):
        ordered = sorted(
            ((run, _row(run, root)) for run in by_gold[gold]),
            key=lambda item: (not item[1]["scored"], -(item[1]["semantic_correctness_rate"] or 0.0), item[1]["model"]),
        )
        ranks = _ranks([row["semantic_correctness_rate"] if row["scored"] else None for _, row in ordered])
        best_run = ordered[0][0] if ranks[0] is not None else None
        for rank, (run, row) in zip(ranks, ordered, strict=True):
            if run is best_run:
                row.update(vs_best="best", p_value_vs_best=None)
            elif best_run is None or rank is None:
                row.update(vs_best="n/a (no scored case)", p_value_vs_best=None)
            else:
                test = paired_comparison(best_run.verdicts, run.verdicts)
                row.update(vs_best=f"{test.label} vs {best_run.model}", p_value_vs_best=test.p_value)
            rows.append({"rank": rank, **row})
    frame = pd.DataFrame(rows, columns=list(LEADERBOARD_COLUMNS))
    frame["rank"] = frame["rank"].astype("Int64")  # a run with nothing scored has no rank (missing, not NaN)
    return frame

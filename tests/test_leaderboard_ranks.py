"""Leaderboard ranks: equal correctness shares a rank, a run with nothing scored is not ranked."""

from __future__ import annotations

from typing import Any

import pandas as pd
from verdict_factory import make_verdict

from nl2sql_pipeline.results.leaderboard import build_leaderboard
from nl2sql_pipeline.results.read import StoredRun
from nl2sql_pipeline.stages import outcomes


class _Scores(dict):
    def as_dict(self) -> dict[str, Any]:
        return dict(self)


def _stored(model: str, correct: list[bool], probes: int = 0) -> StoredRun:
    verdicts = [
        make_verdict(
            case_id=f"c{i}",
            outcome=outcomes.CORRECT if ok else outcomes.WRONG_RESULT,
            correct=ok,
        )
        for i, ok in enumerate(correct)
    ] + [make_verdict(case_id=f"p{i}", is_probe=True, outcome=outcomes.CORRECT, correct=True) for i in range(probes)]
    scores = _Scores(
        sql_execution_success_rate=None,
        p50_latency_ms=None,
        total_cost_usd=0.0,
        unknown_cost_count=0,
        token_source=None,
    )
    return StoredRun("g", model, f"run-{model}", {}, scores, verdicts, pd.DataFrame())  # type: ignore[arg-type]


def _board(runs: list[StoredRun], tmp_path) -> dict[str, dict]:
    frame = build_leaderboard(runs, tmp_path)
    return {row["model"]: row for row in frame.to_dict("records")}


def test_runs_with_nothing_scored_are_not_ranked_and_have_no_p_value(tmp_path):
    rows = _board([_stored("a", [], probes=3), _stored("b", [], probes=3)], tmp_path)
    assert all(pd.isna(row["rank"]) for row in rows.values())
    assert all(pd.isna(row["p_value_vs_best"]) and row["vs_best"] == "n/a (no scored case)" for row in rows.values())


def test_an_unscored_run_is_not_ranked_beside_scored_ones(tmp_path):
    rows = _board([_stored("a", [True, False]), _stored("b", [], probes=2), _stored("c", [False, False])], tmp_path)
    assert (rows["a"]["rank"], rows["c"]["rank"]) == (1, 2) and pd.isna(rows["b"]["rank"])
    assert rows["b"]["vs_best"] == "n/a (no scored case)" and pd.isna(rows["b"]["p_value_vs_best"])


def test_equal_rates_share_a_rank(tmp_path):
    rows = _board([_stored("a", [True, False]), _stored("b", [False, True]), _stored("c", [False, False])], tmp_path)
    assert (rows["a"]["rank"], rows["b"]["rank"], rows["c"]["rank"]) == (1, 1, 3)


def test_the_markdown_table_shows_an_unranked_run_as_n_a():
    """The leaderboard asset's Markdown table: pandas' NA of an unranked run printed as '<NA>'."""
    from nl2sql_pipeline.report import markdown_table

    frame = build_leaderboard([_stored("a", [True, False]), _stored("b", [], probes=2)])
    table = markdown_table(frame[["gold_set", "rank", "model"]].set_index("gold_set"))
    assert "<NA>" not in table and "nan" not in table
    assert "| n/a | b |" in table

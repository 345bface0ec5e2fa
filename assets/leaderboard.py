"""The leaderboard: every stored run across models and gold versions, ranked, with significance labels."""

import dagster as dg

from assets.automation import CODE_VERSIONS
from assets.scores import run_scores
from nl2sql_pipeline.report import markdown_table
from nl2sql_pipeline.results.leaderboard import build_leaderboard, stored_runs


@dg.asset(
    code_version=CODE_VERSIONS["leaderboard"],
    group_name="scores",
    deps=[run_scores],
    io_manager_key="parquet_io_manager",
    description="Every stored run across models and gold versions: correctness with its 95% Wilson interval, "
    "rank within the gold set, and the exact McNemar label against the gold set's best model.",
)
def leaderboard(context: dg.AssetExecutionContext) -> dg.Output:
    frame = build_leaderboard(stored_runs())
    shown = frame[
        ["gold_set", "rank", "model", "correct", "scored", "semantic_correctness_rate", "ci_low", "ci_high", "vs_best"]
    ].set_index("gold_set")
    context.log.info("leaderboard of %d runs", len(frame))
    return dg.Output(
        frame, metadata={"runs": len(frame), "leaderboard": dg.MetadataValue.md(markdown_table(shown.round(4)))}
    )

"""Jobs over the asset graph: prepare a gold version, and evaluate one model on it."""

import dagster as dg

from assets.gold import gold_set, oracle_results
from assets.partitions import gold_model_partitions, gold_sets_partitions

prepare_gold_set_job = dg.define_asset_job(
    "prepare_gold_set",
    selection=dg.AssetSelection.assets(gold_set, oracle_results),
    partitions_def=gold_sets_partitions,
    description="Validate a gold version (blocking preflight) and compute its oracle results.",
)

evaluate_model_job = dg.define_asset_job(
    "evaluate_model",
    selection=dg.AssetSelection.keys("candidate_sql", "candidate_results", "case_verdicts", "run_scores", "baselines"),
    partitions_def=gold_model_partitions,
    description="Generate, execute, judge and score one model on one gold version (gold x model partition).",
)

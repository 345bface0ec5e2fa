"""Per-model verdicts: one row per case and sample, with the rule that decided it."""


import dagster as dg
import pandas as pd

from assets.partitions import gold_and_model, gold_model_partitions
from nl2sql_pipeline.cases import gold_fingerprint
from nl2sql_pipeline.gold_frames import cases_from_frame
from resources.settings import EvalSettings


@dg.asset(
    group_name="verdicts",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Verdict per case and sample: outcome class, comparison rule, scores, latency, tokens, cost.",
)
def case_verdicts(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    oracle_results: pd.DataFrame,
    candidate_sql: pd.DataFrame,
    candidate_results: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.evaluation import judge

    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    fingerprint = gold_fingerprint(cases)
    oracle_fp = set(oracle_results["gold_fingerprint"]) if len(oracle_results) else {fingerprint}
    if oracle_fp != {fingerprint}:
        raise dg.Failure(
            description=f"oracle_results of {gold} are stale (gold set changed since); re-materialize gold_set "
            "and oracle_results first (its preflight must pass)."
        )
    frame = judge(cases, oracle_results, candidate_results, candidate_sql, eval_settings.compare_config())
    frame.insert(0, "gold_set", gold)
    frame.insert(1, "model", model)
    model_hash = candidate_sql["model_config_hash"].iloc[0] if len(candidate_sql) else None
    frame["model_config_hash"] = model_hash
    counts = frame["outcome"].value_counts().to_dict()
    return dg.Output(frame, metadata={"verdicts": len(frame), **{f"outcome_{k}": int(v) for k, v in counts.items()}})

"""Per-model assets: candidate SQL from the model (through litellm) and its policy-gated execution."""


import dagster as dg
import pandas as pd

from assets.partitions import gold_and_model, gold_model_partitions
from nl2sql_pipeline import paths
from nl2sql_pipeline.gold_frames import cases_from_frame
from resources.settings import EvalSettings


class GenerationRunConfig(dg.Config):
    """Run config of candidate generation (``nl2sql-eval run --repeat N`` sets ``samples``)."""

    samples: int = 1


GENERATION_POOL = "llm_generation"


@dg.asset(
    group_name="candidates",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    pool=GENERATION_POOL,
    description="Candidate SQL per case, sample and candidate, generated through litellm (cached). Requests and "
    "tokens per minute are held under each provider's limits by a limiter shared by every run on the machine; "
    "the llm_generation pool bounds how many generation steps run at once.",
)
def candidate_sql(context: dg.AssetExecutionContext, config: GenerationRunConfig, gold_set: pd.DataFrame) -> dg.Output:
    from nl2sql_pipeline.candidates import generate_for_gold_set

    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    frame, summary = generate_for_gold_set(cases, model, samples=config.samples)
    context.log.info("generated %s: %s", model, summary)
    return dg.Output(frame, metadata={k: v for k, v in summary.items() if v is not None})


@dg.asset(
    group_name="candidates",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Policy decision and sandboxed execution of every candidate, and the policy decision of every probe.",
)
def candidate_results(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    candidate_sql: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.evaluation import PolicyGate, execute_candidates

    cases = cases_from_frame(gold_set)
    frame = execute_candidates(
        cases, candidate_sql, paths.database_path, PolicyGate(paths.database_path, eval_settings.policy), eval_settings.limits(),
        isolated=eval_settings.isolated,
    )
    executed = frame[frame["executed"].astype(bool)] if len(frame) else frame
    return dg.Output(
        frame,
        metadata={
            "rows": len(frame),
            "executed": len(executed),
            "policy_rejected": int((frame["policy_allowed"] == False).sum()) if len(frame) else 0,  # noqa: E712
        },
    )

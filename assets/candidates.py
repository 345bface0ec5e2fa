"""Per-model assets: candidate SQL from the model (through litellm) and its policy-gated execution."""

from contextlib import nullcontext

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS, FOLLOW_MODEL, NEW_EVALUATION
from assets.guards import refuse_if_partition_busy
from assets.partitions import gold_and_model, gold_model_partitions
from assets.progress_log import logged_progress
from assets.quarantine import gold_quarantine, scored_cases
from nl2sql_pipeline.generation.registry import get_model
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.progress import STAGE_EXECUTE, STAGE_GENERATE
from nl2sql_pipeline.results.frames import (
    attempts_to_frame,
    candidates_from_frame,
    candidates_to_frame,
    cases_from_frame,
)
from resources.pools import GENERATION_POOL, hold_pool_slot, pool_limits, provider_pool
from resources.settings import EvalSettings


class GenerationRunConfig(dg.Config):
    """Run config of candidate generation (``nl2sql-eval run --repeat N`` sets ``samples``)."""

    samples: int = 1


@dg.asset(
    code_version=CODE_VERSIONS["candidate_sql"],
    automation_condition=NEW_EVALUATION,
    group_name="candidates",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    pool=GENERATION_POOL,
    description="Candidate SQL per case, sample and candidate, generated through litellm (cached). Each step holds "
    "a slot of its provider's pool (llm.<provider>@<api_base>, limit from models.yml) whatever launched it; "
    "calls in flight (max_concurrency) and requests and tokens per minute are held under each provider's "
    "limits by slots and a limiter shared by every run on the machine.",
)
def candidate_sql(
    context: dg.AssetExecutionContext, config: GenerationRunConfig, eval_settings: EvalSettings, gold_set: pd.DataFrame
) -> dg.Output:
    from nl2sql_pipeline.generation.candidates import generate_for_gold_set

    refuse_if_partition_busy(context)  # one evaluation of a gold x model partition at a time
    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    quarantine = gold_quarantine(gold, cases)
    scored = scored_cases(cases, quarantine)
    spec = get_model(model)
    pool = provider_pool(spec)
    # a quarantined case is not generated (never paid for); a replay file is read whole (it answers every case)
    with hold_pool_slot(context, pool, pool_limits()) if pool is not None else nullcontext():
        records, summary = generate_for_gold_set(
            cases if spec.is_replay else scored,
            model,
            samples=config.samples,
            resolve_database=case_databases(gold),
            progress=logged_progress(context, STAGE_GENERATE, model),
            probe_systems=eval_settings.probe_systems,
        )
    if len(scored) < len(cases):
        kept = {case.id for case in scored}
        records = [record for record in records if record.case_id in kept]
        context.log.warning("%s: %d quarantined cases left out", gold, len(cases) - len(scored))
    context.log.info("generated %s: %s", model, summary)
    return dg.Output(candidates_to_frame(records), metadata={k: v for k, v in summary.items() if v is not None})


@dg.asset(
    code_version=CODE_VERSIONS["candidate_results"],
    automation_condition=FOLLOW_MODEL,
    group_name="candidates",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Policy decision and sandboxed execution of every candidate (with its generation fields: latency, "
    "tokens, cost), and the policy decision of every probe.",
)
def candidate_results(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    candidate_sql: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.policy.gate import PolicyGate
    from nl2sql_pipeline.stages import execute_attempts
    from nl2sql_pipeline.stages.records import attempts_from_candidates

    cases = cases_from_frame(gold_set)
    cases = scored_cases(cases, gold_quarantine(gold_and_model(context)[0], cases))
    kept = {case.id for case in cases}
    attempts = [a for a in attempts_from_candidates(candidates_from_frame(candidate_sql)) if a.case_id in kept]
    gate = PolicyGate(case_databases(gold_and_model(context)[0]), eval_settings.policy)
    executed = execute_attempts(
        cases,
        attempts,
        gate,
        eval_settings.limits(),
        isolated=eval_settings.isolated,
        progress=logged_progress(context, STAGE_EXECUTE, gold_and_model(context)[1]),
    )
    return dg.Output(
        attempts_to_frame(executed),
        metadata={
            "rows": len(executed),
            "executed": sum(a.executed for a in executed),
            "policy_rejected": sum(a.policy_allowed is False for a in executed),
        },
    )

"""Robustness assets (gold x model), downstream of ``case_verdicts``; off unless a run switches them on.

``paraphrase_verdicts``: K paraphrases of every query case asked of the model (``paraphrases`` setting);
``perturbation_verdicts``: every query case on perturbed copies of its database (``perturb`` setting). Both
have no automation condition: ``nl2sql-eval run --paraphrases K / --perturb KINDS`` (or the launchpad, with
``eval_settings`` set) selects them.
"""

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS
from assets.partitions import gold_and_model, gold_model_partitions
from assets.progress_log import logged_progress
from assets.quarantine import gold_quarantine, scored_cases
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.results.frames import cases_from_frame, oracle_rows_from_frame
from resources.settings import EvalSettings


def _summary_metadata(frame: pd.DataFrame, case_verdicts: pd.DataFrame, kind: str) -> dict:
    from nl2sql_pipeline.robustness.report import robustness_markdown
    from nl2sql_pipeline.robustness.scores import (
        base_verdicts,
        paraphrase_scores,
        perturbation_scores,
        scores_summary,
        variant_verdicts_from_frame,
    )

    verdicts = variant_verdicts_from_frame(frame)
    base = base_verdicts(case_verdicts)
    if kind == "paraphrase":
        para, pert = paraphrase_scores(verdicts, base), None
    else:
        para, pert = None, perturbation_scores(verdicts, base)
    summary = {k: v for k, v in scores_summary(para, pert).items() if v is not None}
    return {"variants": len(frame), **summary, "summary": dg.MetadataValue.md(robustness_markdown("", para, pert))}


@dg.asset(
    code_version=CODE_VERSIONS["case_verdicts"],
    group_name="robustness",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Verdicts of K paraphrases per query case (templated, reordered, synonyms, typos; stored model "
    "paraphrases when present), judged against the same gold: accuracy per family and consistency. "
    "Set eval_settings.paraphrases > 0.",
)
def paraphrase_verdicts(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    oracle_results: pd.DataFrame,
    case_verdicts: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.robustness.evaluate import evaluate_variants
    from nl2sql_pipeline.robustness.scores import variant_verdicts_to_frame
    from nl2sql_pipeline.robustness.stored_paraphrases import stored_paraphrases
    from nl2sql_pipeline.robustness.variant_cases import paraphrase_oracle, paraphrase_variants

    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    scored = scored_cases(cases, gold_quarantine(gold, cases))
    stored, version = stored_paraphrases(gold, scored)
    variants = paraphrase_variants(scored, eval_settings.paraphrases, stored=stored)
    verdicts = evaluate_variants(
        variants,
        paraphrase_oracle(variants, oracle_rows_from_frame(oracle_results)),
        model,
        case_databases(gold),
        policy=eval_settings.policy,
        limits=eval_settings.limits(),
        config=eval_settings.compare_config(),
        isolated=eval_settings.isolated,
        progress=lambda stage, name: logged_progress(context, stage, name),
    )
    frame = variant_verdicts_to_frame(verdicts, gold_set=gold, model=model, run_id=context.run_id)
    metadata = _summary_metadata(frame, case_verdicts, "paraphrase")
    metadata["llm_paraphrases_version"] = version or "none"
    return dg.Output(frame, metadata=metadata)


@dg.asset(
    code_version=CODE_VERSIONS["case_verdicts"],
    group_name="robustness",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Verdicts of every query case on perturbed copies of its database (renamed tables and columns, "
    "reordered columns, distractors), the gold rewritten through sqlglot and checked by running it: accuracy "
    "drop per kind. Set eval_settings.perturb (comma-separated kinds).",
)
def perturbation_verdicts(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    oracle_results: pd.DataFrame,
    case_verdicts: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.robustness.evaluate import evaluate_variants
    from nl2sql_pipeline.robustness.scores import variant_verdicts_to_frame
    from nl2sql_pipeline.robustness.variant_cases import perturbation_variants

    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    scored = scored_cases(cases, gold_quarantine(gold, cases))
    resolve = case_databases(gold)
    variants, oracle, checks = perturbation_variants(
        scored, eval_settings.perturb_kinds(), resolve, oracle_rows_from_frame(oracle_results), eval_settings.limits()
    )
    verdicts = evaluate_variants(
        variants,
        oracle,
        model,
        resolve,
        policy=eval_settings.policy,
        limits=eval_settings.limits(),
        config=eval_settings.compare_config(),
        isolated=eval_settings.isolated,
        progress=lambda stage, name: logged_progress(context, stage, name),
    )
    frame = variant_verdicts_to_frame(verdicts, gold_set=gold, model=model, run_id=context.run_id)
    failed = [f"{c.case_id} ({c.kind}): {c.reason}" for c in checks if not c.ok]
    for line in failed:
        context.log.warning("rewritten gold left out: %s", line)
    metadata = _summary_metadata(frame, case_verdicts, "perturbation")
    metadata["gold_checks"] = len(checks)
    metadata["gold_checks_failed"] = len(failed)
    return dg.Output(frame, metadata=metadata)


ROBUSTNESS_ASSETS = [paraphrase_verdicts, perturbation_verdicts]

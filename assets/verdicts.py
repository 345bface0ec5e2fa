"""Per-model verdicts: one row per case and sample, with the rule that decided it."""

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS, FOLLOW_MODEL
from assets.metadata import verdicts_table
from assets.partitions import gold_and_model, gold_model_partitions
from assets.progress_log import logged_progress
from assets.quarantine import gold_quarantine, scored_cases
from nl2sql_pipeline.cases import gold_fingerprint
from nl2sql_pipeline.databases.stamp import cases_database_stamp
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.progress import STAGE_JUDGE
from nl2sql_pipeline.results.frames import (
    attempts_from_frame,
    cases_from_frame,
    oracle_rows_from_frame,
    variant_rows_from_frame,
    verdicts_to_frame,
)
from resources.settings import EvalSettings


@dg.asset(
    code_version=CODE_VERSIONS["case_verdicts"],
    automation_condition=FOLLOW_MODEL,
    group_name="verdicts",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Verdict per case and sample: outcome class, comparison rule, scores, latency, tokens, cost "
    "(shown as a table in the materialization's metadata, not-correct cases first).",
)
def case_verdicts(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    oracle_results: pd.DataFrame,
    candidate_results: pd.DataFrame,
    database_variants: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.stages import judge

    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    fingerprint = gold_fingerprint(cases)
    oracle_fp = set(oracle_results["gold_fingerprint"]) if len(oracle_results) else {fingerprint}
    if oracle_fp != {fingerprint}:
        raise dg.Failure(
            description=f"oracle_results of {gold} are stale (gold set changed since); re-materialize gold_set "
            "and oracle_results first (its preflight must pass)."
        )
    databases = case_databases(gold)
    stamp = cases_database_stamp(cases, databases)
    if len(oracle_results) and _stamps(oracle_results) != {stamp}:
        raise dg.Failure(
            description=f"oracle_results of {gold} are stale (a case database changed since they were computed); "
            "re-materialize gold_set and oracle_results first (nl2sql-eval run does it)."
        )
    suite = _variant_suite(gold, fingerprint, stamp, database_variants, eval_settings)
    scored = scored_cases(cases, gold_quarantine(gold, cases))  # quarantined cases get no verdict
    kept = {case.id for case in scored}
    attempts = [a for a in attempts_from_frame(candidate_results) if a.case_id in kept]
    verdicts = judge(
        scored,
        oracle_rows_from_frame(oracle_results),
        attempts,
        eval_settings.compare_config(),
        resolve_database=databases,
        limits=eval_settings.limits(),
        suite=suite,
        progress=logged_progress(context, STAGE_JUDGE, model),
        efficiency=eval_settings.efficiency,
    )
    model_hash = next((a.generation.model_config_hash for a in attempts if a.generation is not None), None)
    frame = verdicts_to_frame(verdicts, gold_set=gold, model=model, model_config_hash=model_hash)
    counts: dict[str, int] = {}
    for verdict in verdicts:
        counts[verdict.outcome] = counts.get(verdict.outcome, 0) + 1
    return dg.Output(
        frame,
        metadata={"verdicts": len(verdicts), **{f"outcome_{k}": v for k, v in counts.items()}, **verdicts_table(frame)},
    )


def _stamps(frame: pd.DataFrame) -> set:
    """The database stamps a gold-partitioned frame was computed on ({None}: before database stamps)."""
    return set(frame["database_stamp"]) if "database_stamp" in frame.columns else {None}


def _variant_suite(gold: str, fingerprint: str, stamp: str, frame: pd.DataFrame, settings: EvalSettings):
    """The run's variant suite (None with test_suite_variants 0); a Failure when the stored variants do not fit."""
    from nl2sql_pipeline.stages.variant_suite import StoredVariantsError, stored_suite

    fix = (
        f"re-materialize database_variants of {gold} with test_suite_variants={settings.test_suite_variants} "
        "(nl2sql-eval run does it)"
    )
    if settings.test_suite_variants <= 0:
        return None  # test-suite accuracy off: the stored variant results are not decoded
    if len(frame) and set(frame["gold_fingerprint"]) != {fingerprint}:
        raise dg.Failure(description=f"database_variants of {gold} are stale (gold set changed since); {fix}")
    if len(frame) and _stamps(frame) != {stamp}:
        raise dg.Failure(description=f"database_variants of {gold} are stale (a case database changed since); {fix}")
    try:
        return stored_suite(
            variant_rows_from_frame(frame), settings.test_suite_variants, settings.limits(), settings.isolated
        )
    except StoredVariantsError as exc:
        raise dg.Failure(description=f"database_variants of {gold}: {exc}; {fix}") from exc

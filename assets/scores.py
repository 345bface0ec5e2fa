"""Run scores: one row per gold x model run, with its version fields."""

from dataclasses import asdict

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS, FOLLOW_MODEL
from assets.partitions import gold_and_model, gold_model_partitions
from assets.quarantine import gold_quarantine
from nl2sql_pipeline.databases.stamp import cases_database_stamp
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.report import markdown_breakdown, markdown_scores
from nl2sql_pipeline.report.measurements import measurement_lines
from nl2sql_pipeline.results.frames import (
    cases_from_frame,
    model_config_hash_of,
    run_scores_to_frame,
    verdicts_from_frame,
)
from nl2sql_pipeline.results.measurement_columns import measurement_columns
from nl2sql_pipeline.runs.identity import VERSION_FIELDS, run_versions
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.storage.quarantine import quarantined_ids
from resources.settings import EvalSettings


@dg.asset(
    code_version=CODE_VERSIONS["run_scores"],
    automation_condition=FOLLOW_MODEL,
    group_name="scores",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Scores of one run: execution success, semantic correctness, policy precision/recall, latency, tokens, cost.",
)
def run_scores(
    context: dg.AssetExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame, case_verdicts: pd.DataFrame
) -> dg.Output:
    gold, model = gold_and_model(context)
    cases = cases_from_frame(gold_set)
    model_hash = model_config_hash_of(case_verdicts) or "unknown"
    quarantine = gold_quarantine(gold, cases)
    databases = case_databases(gold)
    versions = run_versions(model_hash, cases, eval_settings.policy, databases, quarantined=quarantined_ids(quarantine))
    # the databases the verdicts were judged on (case_verdicts refused an oracle computed on others)
    stamp = cases_database_stamp(cases, databases)
    verdicts = verdicts_from_frame(case_verdicts)
    scores = score_run(verdicts, quarantine)
    frame = run_scores_to_frame(
        scores, gold_set=gold, model=model, run_id=context.run_id, database_stamp=stamp, **asdict(versions)
    )
    for warning in scores.warnings:
        context.log.warning("%s/%s: %s", gold, model, warning)
    metadata = {
        "scores": dg.MetadataValue.md(markdown_scores(scores)),
        "per_domain": dg.MetadataValue.md(markdown_breakdown(scores, "domain")),
        "per_category": dg.MetadataValue.md(markdown_breakdown(scores, "category")),
        "per_difficulty": dg.MetadataValue.md(markdown_breakdown(scores, "difficulty")),
        "per_database": dg.MetadataValue.md(markdown_breakdown(scores, "database")),
        "per_tag": dg.MetadataValue.md(markdown_breakdown(scores, "tag")),
        "semantic_correctness_rate": scores["semantic_correctness_rate"],
        "test_suite_accuracy": scores["test_suite_accuracy"],
        "pass_rate": scores["pass_rate"],
        "sql_execution_success_rate": scores["sql_execution_success_rate"],
        "skipped_count": scores["skipped_count"],
        "quarantined_count": scores["quarantined_count"],
        **measurement_columns(scores.as_dict()),  # system policy recall, budgets, efficiency, ambiguity (None: off)
        **{name: getattr(versions, name) for name in VERSION_FIELDS},
        "database_stamp": stamp,
    }
    if lines := measurement_lines(verdicts):
        metadata["measurements"] = dg.MetadataValue.md("\n".join(f"    {line}" for line in lines))
    if scores.warnings:
        metadata["WARNING"] = dg.MetadataValue.md("\n".join(f"**{w}**" for w in scores.warnings))
    if quarantine:
        metadata["quarantined"] = dg.MetadataValue.md(
            "\n".join(f"- {f['label']}: [{f['kind']}] {f['reason']}" for f in quarantine)
        )
    metadata.update(_report_metadata(context, gold, model, cases, verdicts, scores.warnings, quarantine))
    return dg.Output(frame, metadata={k: v for k, v in metadata.items() if v is not None})


def _report_metadata(
    context: dg.AssetExecutionContext, gold: str, model: str, cases, verdicts, warnings, quarantine=()
) -> dict:
    """The run's HTML report (written under the storage root, its own file per run) and its Markdown summary."""
    from nl2sql_pipeline.report.html import run_html, run_report_path, write_html
    from nl2sql_pipeline.report.markdown import markdown_summary
    from nl2sql_pipeline.report.samples import load_result_samples
    from nl2sql_pipeline.report.tables import build_run_report

    report = build_run_report(
        verdicts,
        model=model,
        gold_set=gold,
        warnings=warnings,
        samples=load_result_samples(gold, model, verdicts),
        quarantined=quarantine,
    )
    path = write_html(run_html([report], {c.id: c for c in cases}), run_report_path(gold, model, context.run_id))
    return {
        "report_html": dg.MetadataValue.path(str(path)),
        "report_url": dg.MetadataValue.url(path.resolve().as_uri()),
        "summary": dg.MetadataValue.md(markdown_summary(report, path)),
    }

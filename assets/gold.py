"""Sample database and gold-set assets (the blocking gold preflight is an asset check in ``assets/checks.py``)."""

import json

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS, PREPARE, PREPARED
from assets.partitions import gold_sets_partitions
from nl2sql_pipeline.cases import gold_fingerprint
from nl2sql_pipeline.databases.stamp import cases_database_stamp
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.report import markdown_table
from nl2sql_pipeline.results.frames import cases_from_frame, cases_to_frame, oracle_rows_to_frame
from resources.settings import EvalSettings


@dg.asset(
    code_version=CODE_VERSIONS["sample_database"],
    automation_condition=PREPARE,
    group_name="gold",
    description="The anime_platform sample DuckDB database (built when missing).",
)
def sample_database(context: dg.AssetExecutionContext) -> dg.MaterializeResult:
    from nl2sql_pipeline.sample_db import DATABASE_NAME, ensure_database

    path = ensure_database(DATABASE_NAME)
    manifest_path = path.with_name(path.name + ".json")
    manifest = json.loads(manifest_path.read_text()) if manifest_path.exists() else {}
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(path)),
            "seed": manifest.get("seed"),
            "scale": manifest.get("scale"),
            "content_hash": manifest.get("content_hash"),
            "row_counts": dg.MetadataValue.json(manifest.get("row_counts", {})),
        }
    )


@dg.asset(
    code_version=CODE_VERSIONS["gold_set"],
    automation_condition=PREPARE,
    group_name="gold",
    partitions_def=gold_sets_partitions,
    deps=[sample_database],
    io_manager_key="parquet_io_manager",
    description="The validated cases of one gold-set version (one row per case).",
)
def gold_set(context: dg.AssetExecutionContext) -> dg.Output:
    from nl2sql_pipeline.gold.registry import load_gold_set

    key = context.partition_key
    cases = load_gold_set(key)
    frame = cases_to_frame(cases)
    composition = frame.groupby(["domain", "category"]).size().unstack(fill_value=0)
    return dg.Output(
        frame,
        metadata={
            "cases": len(cases),
            "gold_fingerprint": gold_fingerprint(cases),
            "composition": dg.MetadataValue.md(markdown_table(composition)),
        },
    )


@dg.asset(
    code_version=CODE_VERSIONS["oracle_results"],
    automation_condition=PREPARED,
    group_name="oracle",
    partitions_def=gold_sets_partitions,
    io_manager_key="parquet_io_manager",
    description="Results of every expected SQL in the sandbox, computed once per gold version for all models.",
)
def oracle_results(context: dg.AssetExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame) -> dg.Output:
    from nl2sql_pipeline.stages import run_oracle

    cases = cases_from_frame(gold_set)
    databases = case_databases(context.partition_key)
    stamp = cases_database_stamp(cases, databases)  # before the queries: a change while they run is seen next time
    rows = run_oracle(cases, databases, eval_settings.limits())
    frame = oracle_rows_to_frame(rows, gold_fingerprint=gold_fingerprint(cases), database_stamp=stamp)
    return dg.Output(
        frame,
        metadata={
            "queries": len(rows),
            "failed": sum(not row.result.ok for row in rows),
            "average_oracle_latency_ms": sum(row.result.elapsed_ms for row in rows) / len(rows) if rows else 0.0,
        },
    )


@dg.asset(
    code_version=CODE_VERSIONS["database_variants"],
    automation_condition=PREPARED,
    group_name="oracle",
    partitions_def=gold_sets_partitions,
    io_manager_key="parquet_io_manager",
    description="Seeded variants of each case database (sampled with foreign keys kept, duplicated, shuffled, "
    "NULLs, boundary values) and the gold's results on them: test-suite accuracy, once per gold version.",
)
def database_variants(
    context: dg.AssetExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame
) -> dg.Output:
    from nl2sql_pipeline.results.frames import variant_rows_to_frame
    from nl2sql_pipeline.stages.variant_suite import build_suites, run_variant_oracle

    cases = cases_from_frame(gold_set)
    count = eval_settings.test_suite_variants
    databases = case_databases(context.partition_key)
    stamp = cases_database_stamp(cases, databases)
    suites = build_suites(cases, databases, count, eval_settings.test_suite_seed)
    rows = run_variant_oracle(cases, suites, eval_settings.limits())
    frame = variant_rows_to_frame(rows, gold_fingerprint=gold_fingerprint(cases), database_stamp=stamp)
    return dg.Output(
        frame,
        metadata={
            "variants_per_database": count,
            "databases": dg.MetadataValue.json({name: [str(p) for p in s.paths] for name, s in suites.items()}),
            "gold_runs": len(rows),
            "gold_failed_on_variant": sum(not row.result.ok for row in rows),
        },
    )

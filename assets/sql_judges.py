"""SQL judgements per gold x model partition: the equivalence judges and the diagnoses with recommendations.

Downstream of ``case_verdicts`` (itself downstream of ``candidate_results``), so judging a run never
generates again. Selected only when a judge with a SQL role is requested (``eval_settings.judges``:
``nl2sql-eval run --judge SLUG``); ``eval_settings.judge_repeat`` repeats every judgement.
"""

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS
from assets.metadata import frame_schema_metadata
from assets.partitions import gold_and_model, gold_model_partitions
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.gold.registry import case_databases
from nl2sql_pipeline.judges.identity import IDENTITY_KEY
from nl2sql_pipeline.results.frames import cases_from_frame, verdicts_from_frame
from resources.settings import EvalSettings, judging_identity


@dg.asset(
    code_version=CODE_VERSIONS["sql_judgements"],
    group_name="judges",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="SQL judgements per case, sample, judge, role and repeat: equivalence of the candidate with the "
    "gold SQL, and for a case that is not correct a diagnosis with one recommendation (eval_settings.judges).",
)
def sql_judgements(
    context: dg.AssetExecutionContext, eval_settings: EvalSettings, gold_set: pd.DataFrame, case_verdicts: pd.DataFrame
) -> dg.Output:
    from nl2sql_pipeline.judges.sql_judging import judge_sql, requested_sql_judges, schema_texts
    from nl2sql_pipeline.report.sql_judges import build_sql_judge_report, markdown_sql_judges
    from nl2sql_pipeline.results.judgement_frames import sql_judgements_to_frame

    gold, model = gold_and_model(context)
    try:
        judges = requested_sql_judges(eval_settings.judges)
    except ConfigError as exc:
        raise dg.Failure(description=str(exc)) from exc
    if not judges:
        raise dg.Failure(
            description="no judge with a sql_equivalence or diagnosis role was requested: set eval_settings.judges "
            "(nl2sql-eval run --judge judge-oracle), see data/judges.yml"
        )
    cases = cases_from_frame(gold_set)
    verdicts = verdicts_from_frame(case_verdicts)
    judgements = judge_sql(
        cases,
        verdicts,
        judges,
        schema_text=schema_texts(cases, case_databases(gold)),
        repeat=eval_settings.judge_repeat,
    )
    frame = sql_judgements_to_frame(judgements, gold_set=gold, model=model)
    report = build_sql_judge_report(judgements, verdicts)
    failed = sum(j.error_class is not None for j in judgements)
    return dg.Output(
        frame,
        metadata={
            "judgements": len(judgements),
            "failed": failed,
            "judges": ", ".join(j.slug for j in judges),
            "repeat": eval_settings.judge_repeat,
            IDENTITY_KEY: judging_identity(eval_settings, gold, model, "sql_judgements"),
            "summary": dg.MetadataValue.md(markdown_sql_judges(report) or "no case to judge"),
            **frame_schema_metadata(frame),
        },
    )

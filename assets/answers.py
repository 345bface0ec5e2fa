"""Per-model answers and their judgements, downstream of ``candidate_results``: turning them on never re-runs
generation. Selected only when a run asks for them (``nl2sql-eval run --answers / --judge SLUG``, or the
``answer_and_judge`` job in the UI, or the automation when data/judges.yml's ``automation:`` block switches them
on), so a run without them costs nothing more. Each records its ``judging_identity`` (``judges.identity``): what
makes a stored one current."""

from typing import Any

import dagster as dg
import pandas as pd

from assets.automation import CODE_VERSIONS
from assets.partitions import gold_and_model, gold_model_partitions
from assets.progress_log import logged_progress
from assets.quarantine import gold_quarantine, scored_cases
from nl2sql_pipeline.generation.registry import get_model
from nl2sql_pipeline.judges.identity import IDENTITY_KEY
from nl2sql_pipeline.progress import STAGE_ANSWER, STAGE_ANSWER_JUDGE
from nl2sql_pipeline.results.frames import (
    answer_judgements_to_frame,
    answers_from_frame,
    answers_to_frame,
    attempts_from_frame,
    cases_from_frame,
    oracle_rows_from_frame,
)
from resources.settings import EvalSettings, judging_identity


@dg.asset(
    code_version=CODE_VERSIONS["candidate_answers"],
    group_name="answers",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="A short prose answer per candidate from the rows its SQL returned: a system's own answer, a bare "
    "model asked through litellm (cached, accounted apart from generation), or the offline answerer's template.",
)
def candidate_answers(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    candidate_results: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.generation.answers import answer_candidates, answers_summary
    from nl2sql_pipeline.judges.registry import ROLE_ANSWER, get_judge, load_judges

    gold, model = gold_and_model(context)
    identity = {IDENTITY_KEY: judging_identity(eval_settings, gold, model, "candidate_answers")}
    judges = load_judges() if eval_settings.judges else {}
    if not (eval_settings.answers or any(get_judge(s, judges).plays(ROLE_ANSWER) for s in eval_settings.judges)):
        context.log.info("answers off: no --answers and no answer judge")  # a judge of SQL only needs none
        return dg.Output(answers_to_frame([]), metadata={"answers": 0, **identity})
    cases = scored_cases(cases_from_frame(gold_set), gold_quarantine(gold, cases_from_frame(gold_set)))
    records = answer_candidates(
        cases,
        attempts_from_frame(candidate_results),
        get_model(model),
        answer_model=eval_settings.answer_model,
        progress=logged_progress(context, STAGE_ANSWER, model),
    )
    summary = answers_summary(records)
    context.log.info("answers of %s: %s", model, summary)
    metadata = {**{k: v for k, v in summary.items() if v is not None}, **identity}
    return dg.Output(answers_to_frame(records), metadata=metadata)


@dg.asset(
    code_version=CODE_VERSIONS["answer_judgements"],
    group_name="answers",
    partitions_def=gold_model_partitions,
    io_manager_key="parquet_io_manager",
    description="Every answer judged by each answer judge of the run (rubric: correctness, groundedness, "
    "completeness, 1-5 with a rationale; value checks and judge-oracle decide without a call). A judge stopped "
    "by its provider (402, quota) leaves the rest unjudged; the SQL verdicts stand.",
)
def answer_judgements(
    context: dg.AssetExecutionContext,
    eval_settings: EvalSettings,
    gold_set: pd.DataFrame,
    oracle_results: pd.DataFrame,
    candidate_answers: pd.DataFrame,
) -> dg.Output:
    from nl2sql_pipeline.gold.registry import list_gold_sets
    from nl2sql_pipeline.judges.answer import AnswerJudge, AnswerThresholds, answer_summary, judge_answers
    from nl2sql_pipeline.judges.client import JudgeClient, judge_cache
    from nl2sql_pipeline.judges.registry import ROLE_ANSWER, get_judge, judges_config_hash, load_judges

    registry = load_judges()
    gold, model = gold_and_model(context)
    registered = list_gold_sets()
    given = registered[gold].answer_thresholds if gold in registered else {}
    defaults = AnswerThresholds()
    thresholds = AnswerThresholds(
        eval_settings.answer_pass_score or given.get("pass_score") or defaults.pass_score,
        eval_settings.answer_partial_score or given.get("partial_score") or defaults.partial_score,
    )
    cases = cases_from_frame(gold_set)
    answers = answers_from_frame(candidate_answers)
    oracle_rows = oracle_rows_from_frame(oracle_results)
    judgements = []
    metadata: dict[str, Any] = {}
    for slug in eval_settings.judges:
        spec = get_judge(slug, registry)
        if not spec.plays(ROLE_ANSWER):
            continue
        client = None if spec.is_offline else JudgeClient(spec, cache=judge_cache())
        found = judge_answers(
            cases,
            answers,
            oracle_rows,
            AnswerJudge(spec, client, thresholds),
            progress=logged_progress(context, STAGE_ANSWER_JUDGE, f"{model}/{slug}"),
        )
        judgements.extend(found)
        summary = answer_summary(found)
        metadata[f"{slug}_answer_correct_rate"] = summary["answer_correct_rate"]
        metadata[f"{slug}_judge_calls"] = summary["judge_calls"]
        if client is not None and client.stop_reason is not None:
            context.log.warning("%s: %s; the SQL verdicts stand", slug, client.stop_reason)
            metadata[f"{slug}_stopped"] = client.stop_reason
    metadata["judgements"] = len(judgements)
    # the identity of this judging: every judge's model, prompt and rubric versions and their texts
    metadata["judges_config_hash"] = judges_config_hash([get_judge(s, registry) for s in eval_settings.judges])
    metadata[IDENTITY_KEY] = judging_identity(eval_settings, gold, model, "answer_judgements")
    return dg.Output(
        answer_judgements_to_frame(judgements), metadata={k: v for k, v in metadata.items() if v is not None}
    )

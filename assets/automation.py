"""Declarative automation and code versions of the asset graph.

A new gold version or a new model evaluates without a manual step: ``automation_sensor`` (running by
default; the UI's Automation tab) evaluates these conditions every 30 s:

- ``sample_database``, ``gold_set``: eager: built when missing (a new gold partition from
  ``partition_registry_sensor``) or when what they read changed.
- ``oracle_results``, ``database_variants``: eager, once the gold version's blocking preflight passed.
- ``candidate_sql``: on missing: each gold x model partition that appears after automation is on (a
  new gold version: every registered model; a new model: every gold version) is evaluated once its
  gold version is prepared and its preflight passed. Partitions that existed before are left to the
  user (evaluating remote models is spending money), and so is re-evaluating a changed model config:
  ``model_change_sensor`` asks for exactly those runs.
- the per-model stages after it: eager on their own model's stages only (a re-materialized gold set
  alone re-runs no model; the gold fingerprint check in ``case_verdicts`` catches a changed one).
- ``candidate_answers``, ``answer_judgements``, ``sql_judgements``: only when the ``automation:`` block of
  ``data/judges.yml`` switches them on (``with_judge_automation``): requested after their own model's upstream
  stage of the partition was updated (``JUDGE_AFTER_EVALUATION``), never generating again. Without the block
  they carry no condition and the automation is what it was.

None of them requests an asset partition while a run that selects it, or a stage before it, is queued or in
progress, whatever launched that run (``NO_RUN_IN_PROGRESS``); the partition guard of ``candidate_sql``
(``assets.guards``) and the CLI's partition lock stay the last line of defence.

Code versions name what an asset's code depends on (harness, comparator, policy engine), so the UI
marks an asset stale when one of them changes. Nothing automates on them (a code-location reload
would re-run everything); the run identity in ``nl2sql_pipeline.runs`` decides what is comparable.
"""

import warnings
from typing import TYPE_CHECKING, Any

import dagster as dg

from nl2sql_pipeline import HARNESS_VERSION
from nl2sql_pipeline.compare.model import COMPARATOR_VERSION
from nl2sql_pipeline.policy.loader import POLICY_ENGINE_VERSION
from nl2sql_pipeline.variants.cache import BUILDER_VERSION as VARIANTS_BUILDER_VERSION

if TYPE_CHECKING:
    from nl2sql_pipeline.judges.automation import JudgeAutomation

GOLD_ASSET_KEYS = ("sample_database", "gold_set", "oracle_results", "database_variants")

# Dagster counts a run as in progress for every asset partition it planned to materialize when it was created
# (queued included); every launch path records those plans: the CLI's runner, a backfill, the launchpad, a sensor,
# the schedule and this automation. ``on_missing()`` alone has no such term: a partition that appeared while its
# first run was queued or generating was requested again, and that second run, held in the run queue until the
# first ended, evaluated the partition again (a second baselines row, or a run reading another run's scores).
NO_RUN_IN_PROGRESS = (
    ~dg.AutomationCondition.in_progress() & ~dg.AutomationCondition.any_deps_in_progress()
).with_label("no_run_in_progress")

PREPARE = dg.AutomationCondition.eager()
PREPARED = (dg.AutomationCondition.eager() & dg.AutomationCondition.all_deps_blocking_checks_passed()).with_label(
    "eager_after_preflight"
)
NEW_EVALUATION = (
    dg.AutomationCondition.on_missing() & dg.AutomationCondition.all_deps_blocking_checks_passed() & NO_RUN_IN_PROGRESS
).with_label("new_evaluation")
FOLLOW_MODEL = (
    dg.AutomationCondition.in_latest_time_window()
    & (
        dg.AutomationCondition.newly_missing()
        | dg.AutomationCondition.any_deps_updated().ignore(dg.AssetSelection.assets(*GOLD_ASSET_KEYS))
    ).since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & NO_RUN_IN_PROGRESS
    # a run whose blocking gate check failed on run_scores stops before baselines: asking for baselines alone
    # then would fail (the run_scores it reads belong to that other run)
    & ~dg.AutomationCondition.any_deps_match(
        dg.AutomationCondition.any_checks_match(dg.AutomationCondition.check_failed(), blocking_only=True)
    ).with_label("no_dep_failed_a_blocking_check")
).with_label("follow_model")

# Every status of a run that has not ended (dagster.DagsterRunStatus).
RUN_NOT_ENDED = (
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
    dg.DagsterRunStatus.CANCELING,
)


def partitions_with_a_run(instance: dg.DagsterInstance) -> set[str]:
    """The partition keys (``gold|model``) of every run that has not ended, whatever it selects or launched it."""
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=list(RUN_NOT_ENDED)))
    return {r.dagster_run.tags["dagster/partition"] for r in records if "dagster/partition" in r.dagster_run.tags}


class PartitionRunNotEnded(dg.AutomationCondition):
    """True for each partition that a run not yet ended holds, whatever assets that run selects.

    ``in_progress()`` only sees the asset itself (and ``any_deps_in_progress()`` its parents): a judgement asset
    would be asked for while its partition's evaluation still writes ``case_verdicts``, ``run_scores`` or
    ``baselines``. A custom condition: the sensor that evaluates it runs in the code server."""

    @property
    def name(self) -> str:
        return "partition_run_not_ended"

    def evaluate(self, context: Any) -> dg.AutomationResult:
        busy = partitions_with_a_run(context.asset_graph_view.instance)
        candidates = context.candidate_subset
        found = candidates.expensively_compute_partition_keys() & busy if busy else set()
        return dg.AutomationResult(context, candidates.compute_intersection_with_partition_keys(found))


# The judgement assets, when the judges.yml automation block switches them on: after their model's upstream stage
# of the partition was updated (an evaluation by the CLI, a sensor, the schedule, this automation or the launchpad),
# never while a run of the partition is in progress; a gold-set change alone judges nothing again.
JUDGE_AFTER_EVALUATION = (
    dg.AutomationCondition.in_latest_time_window()
    & dg.AutomationCondition.any_deps_updated().ignore(dg.AssetSelection.assets(*GOLD_ASSET_KEYS)).since_last_handled()
    & ~dg.AutomationCondition.any_deps_missing()
    & NO_RUN_IN_PROGRESS
    & ~PartitionRunNotEnded()
).with_label("judge_after_evaluation")

HARNESS = f"h{HARNESS_VERSION}"
CODE_VERSIONS: dict[str, str] = {
    "sample_database": HARNESS,
    "gold_set": HARNESS,
    "oracle_results": HARNESS,
    "database_variants": f"{HARNESS}-variants{VARIANTS_BUILDER_VERSION}",
    "candidate_sql": HARNESS,
    "candidate_results": f"{HARNESS}-policy{POLICY_ENGINE_VERSION}",
    "case_verdicts": f"{HARNESS}-cmp{COMPARATOR_VERSION}",
    "candidate_answers": HARNESS,
    "answer_judgements": HARNESS,
    "run_scores": f"{HARNESS}-cmp{COMPARATOR_VERSION}",
    "baselines": f"{HARNESS}-cmp{COMPARATOR_VERSION}",
    "leaderboard": f"{HARNESS}-cmp{COMPARATOR_VERSION}",
    "sql_judgements": f"{HARNESS}-cmp{COMPARATOR_VERSION}-sqljudge1",
}


def with_judge_automation(assets: list[Any], automation: "JudgeAutomation") -> list[Any]:
    """``assets`` with the judges.yml automation opt-in applied: the switched-on judgement assets get
    ``JUDGE_AFTER_EVALUATION``, and the judgement assets' code versions carry the versions of the block's judges
    (so the UI marks stored judgements stale when data/judges.yml changes one). Without a block: unchanged."""
    from nl2sql_pipeline.judges.automation import SQL_ROLES
    from nl2sql_pipeline.judges.registry import ROLE_ANSWER

    answer_versions, sql_versions = automation.versions((ROLE_ANSWER,)), automation.versions(SQL_ROLES)
    changes: dict[str, dict[str, Any]] = {
        "candidate_answers": {"automation_condition": JUDGE_AFTER_EVALUATION} if automation.answering else {},
        "answer_judgements": {
            **({"automation_condition": JUDGE_AFTER_EVALUATION} if automation.judging_answers else {}),
            **({"code_version": f"{CODE_VERSIONS['answer_judgements']}-j{answer_versions}"} if answer_versions else {}),
        },
        "sql_judgements": {
            **({"automation_condition": JUDGE_AFTER_EVALUATION} if automation.judging_sql else {}),
            **({"code_version": f"{CODE_VERSIONS['sql_judgements']}-j{sql_versions}"} if sql_versions else {}),
        },
    }

    def apply(spec: dg.AssetSpec) -> dg.AssetSpec:
        found = changes.get(spec.key.to_user_string())
        return spec.replace_attributes(**found) if found else spec

    return [
        a.map_asset_specs(apply)
        if isinstance(a, dg.AssetsDefinition) and any(changes.get(k.to_user_string()) for k in a.keys)
        else a
        for a in assets
    ]


# Dagster's default automation sensor is stopped until turned on; this one runs by default, so that a new
# gold version or model is evaluated without a manual step (stop it in the UI's Automation tab).
JUDGEMENT_ASSET_KEYS = ("candidate_answers", "answer_judgements", "sql_judgements")
automation_sensor = dg.AutomationConditionSensorDefinition(
    "automation_sensor",
    target=dg.AssetSelection.all() - dg.AssetSelection.assets(*JUDGEMENT_ASSET_KEYS),
    default_status=dg.DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30,
    description="Evaluates the automation conditions of every asset: prepares new gold versions and evaluates "
    "gold x model partitions that appeared since it started (assets/automation.py).",
)

# The judgement assets apart: their condition (PartitionRunNotEnded) is custom Python, which only a sensor evaluated
# in the code server can run. Without the judges.yml automation block they carry no condition: it requests nothing.
with warnings.catch_warnings():  # use_user_code_server is beta on dagster 1.13
    warnings.simplefilter("ignore", dg.BetaWarning)
    judge_automation_sensor = dg.AutomationConditionSensorDefinition(
        "judge_automation_sensor",
        target=dg.AssetSelection.assets(*JUDGEMENT_ASSET_KEYS),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        use_user_code_server=True,
        description="Answers and judges each evaluated gold x model partition once its run ended, when the automation "
        "block of data/judges.yml switches them on (assets/automation.py).",
    )

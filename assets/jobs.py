"""Jobs over the asset graph: prepare a gold version, and evaluate one model on it.

Every ``evaluate_model`` run is tagged ``nl2sql/provider=<provider>``; the local instance's
``dagster.yaml`` (``resources/instance.py``) limits the runs in progress per unique provider, so that
sensor-, schedule- and UI-launched runs of models behind one provider queue instead of competing.
"""

from typing import TYPE_CHECKING

import dagster as dg

from assets.gold import database_variants, gold_set, oracle_results
from assets.partitions import gold_model_partitions, gold_sets_partitions

if TYPE_CHECKING:
    from nl2sql_pipeline.generation.model_spec import ModelSpec

prepare_gold_set_job = dg.define_asset_job(
    "prepare_gold_set",
    selection=dg.AssetSelection.assets(gold_set, oracle_results, database_variants),
    partitions_def=gold_sets_partitions,
    description="Validate a gold version (blocking preflight), compute its oracle results and its database variants.",
)

PROVIDER_TAG = "nl2sql/provider"


def provider_of(model_slug: str) -> str:
    """The provider a model's calls go to (see ``provider_of_spec``)."""
    from nl2sql_pipeline.generation.registry import get_model

    return provider_of_spec(get_model(model_slug))


def provider_of_spec(spec: "ModelSpec") -> str:
    """The litellm provider prefix; ``predictions`` for a replay; ``system@scheme://host:port`` for an HTTP
    system (every system behind one server shares it); ``system:<slug>`` for an in-process system."""
    if spec.system is not None and spec.system.server is not None:
        return f"system@{spec.system.server}"
    if spec.is_replay:
        return "predictions"
    return spec.model.split("/", 1)[0] if spec.model and "/" in spec.model else (spec.model or spec.kind)


def run_tags_for_partition(partition_key: str) -> dict[str, str]:
    """Run tags of a gold x model partition: its provider (for per-provider run concurrency) and model."""
    key = partition_key if isinstance(partition_key, dg.MultiPartitionKey) else None
    model = key.keys_by_dimension["model"] if key is not None else str(partition_key).split("|")[-1]
    return {PROVIDER_TAG: provider_of(model), "nl2sql/model": model}


evaluate_model_job = dg.define_asset_job(
    "evaluate_model",
    selection=dg.AssetSelection.keys("candidate_sql", "candidate_results", "case_verdicts", "run_scores", "baselines"),
    partitions_def=gold_model_partitions,
    config=dg.PartitionedConfig(
        partitions_def=gold_model_partitions,
        run_config_for_partition_key_fn=lambda _key: {},
        tags_for_partition_key_fn=run_tags_for_partition,
    ),
    description="Generate, execute, judge and score one model on one gold version (gold x model partition).",
)

measure_robustness_job = dg.define_asset_job(
    "measure_robustness",
    selection=dg.AssetSelection.keys("paraphrase_verdicts", "perturbation_verdicts"),
    partitions_def=gold_model_partitions,
    config=dg.PartitionedConfig(
        partitions_def=gold_model_partitions,
        run_config_for_partition_key_fn=lambda _key: {
            "resources": {"eval_settings": {"config": {"paraphrases": 4, "perturb": "all"}}}
        },
        tags_for_partition_key_fn=run_tags_for_partition,
    ),
    description="Paraphrase consistency and schema perturbation of one evaluated model (gold x model partition); "
    "set eval_settings.paraphrases and eval_settings.perturb in the launchpad (defaults here: 4 and all).",
)

answer_and_judge_job = dg.define_asset_job(
    "answer_and_judge",
    selection=dg.AssetSelection.keys("candidate_answers", "answer_judgements"),
    partitions_def=gold_model_partitions,
    config=dg.PartitionedConfig(
        partitions_def=gold_model_partitions,
        run_config_for_partition_key_fn=lambda _key: {
            "resources": {"eval_settings": {"config": {"answers": True, "judges": ["judge-oracle"]}}}
        },
        tags_for_partition_key_fn=run_tags_for_partition,
    ),
    description="Answer and judge one evaluated model on one gold version (after evaluate_model; never re-runs "
    "generation). Set eval_settings.answers, answer_model, judges and the answer thresholds in the run config "
    "(defaults here: answers on, judge-oracle).",
)


judge_sql_job = dg.define_asset_job(
    "judge_sql",
    selection=dg.AssetSelection.keys("sql_judgements"),
    partitions_def=gold_model_partitions,
    config=dg.PartitionedConfig(
        partitions_def=gold_model_partitions,
        run_config_for_partition_key_fn=lambda _key: {
            "resources": {"eval_settings": {"config": {"judges": ["judge-oracle"]}}}
        },
        tags_for_partition_key_fn=run_tags_for_partition,
    ),
    description="Judge the SQL of one evaluated model on one gold version (after evaluate_model; never re-runs "
    "generation): equivalence and diagnoses with recommendations. Set eval_settings.judges (a judge with a "
    "sql_equivalence or diagnosis role) and judge_repeat in the run config (default here: judge-oracle).",
)

"""Partitions: gold-set versions and model slugs (dynamic), and their product for per-model assets."""

import dagster as dg

GOLD_SETS_PARTITIONS = "gold_sets"
"""Name of the dynamic partitions of gold-set versions (``DynamicPartitionsDefinition.name`` is Optional)."""
MODELS_PARTITIONS = "models"
"""Name of the dynamic partitions of model slugs."""

gold_sets_partitions = dg.DynamicPartitionsDefinition(name=GOLD_SETS_PARTITIONS)
models_partitions = dg.DynamicPartitionsDefinition(name=MODELS_PARTITIONS)
gold_model_partitions = dg.MultiPartitionsDefinition({"gold": gold_sets_partitions, "model": models_partitions})


def gold_and_model(context: dg.AssetExecutionContext) -> tuple[str, str]:
    """The (gold set key, model slug) of a gold x model partition."""
    key = context.partition_key
    dims = (
        key.keys_by_dimension
        if isinstance(key, dg.MultiPartitionKey)
        else dict(zip(("gold", "model"), str(key).split("|")))
    )
    return dims["gold"], dims["model"]

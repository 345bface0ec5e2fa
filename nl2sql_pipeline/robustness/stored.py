"""The stored robustness results of a gold x model partition, read back for reports, exports and the leaderboard."""

from __future__ import annotations

from typing import TYPE_CHECKING

from nl2sql_pipeline.robustness.evaluate import VariantVerdict
from nl2sql_pipeline.robustness.scores import (
    ParaphraseScores,
    PerturbationScores,
    base_verdicts,
    paraphrase_scores,
    perturbation_scores,
    variant_verdicts_from_frame,
)
from nl2sql_pipeline.storage.layout import partition_path
from nl2sql_pipeline.storage.parquet import read_parquet

if TYPE_CHECKING:
    from nl2sql_pipeline.storage.layout import AnyPath

PARAPHRASE_ASSET = "paraphrase_verdicts"
PERTURBATION_ASSET = "perturbation_verdicts"


def load_variant_verdicts(asset: str, gold_set: str, model: str, root: AnyPath | None = None) -> list[VariantVerdict]:
    """The latest stored variant verdicts of ``asset`` for the partition (empty when never materialized)."""
    try:
        frame = read_parquet(partition_path(asset, gold_set, model, root=root))
    except FileNotFoundError:
        return []
    return variant_verdicts_from_frame(frame)


def load_robustness(
    gold_set: str, model: str, root: AnyPath | None = None
) -> tuple[ParaphraseScores | None, PerturbationScores | None]:
    """The paraphrase and perturbation scores of the partition's latest results (None: not measured)."""
    paraphrased = load_variant_verdicts(PARAPHRASE_ASSET, gold_set, model, root)
    perturbed = load_variant_verdicts(PERTURBATION_ASSET, gold_set, model, root)
    if not paraphrased and not perturbed:
        return None, None
    try:
        base = base_verdicts(read_parquet(partition_path("case_verdicts", gold_set, model, root=root)))
    except FileNotFoundError:
        return None, None
    return (
        paraphrase_scores(paraphrased, base) if paraphrased else None,
        perturbation_scores(perturbed, base) if perturbed else None,
    )

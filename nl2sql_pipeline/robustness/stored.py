"""The stored robustness results of a gold x model partition, read back for reports, exports and the leaderboard."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from nl2sql_pipeline.robustness.records import VariantVerdict
from nl2sql_pipeline.robustness.scores import (
    ParaphraseScores,
    PerturbationScores,
    base_verdicts,
    paraphrase_scores,
    perturbation_scores,
    scores_summary,
    variant_verdicts_from_frame,
)
from nl2sql_pipeline.storage.layout import model_partition_glob, model_partitions, partition_path
from nl2sql_pipeline.storage.parquet import check_readable, read_parquet

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


def leaderboard_columns(gold_set: str, model: str, root: AnyPath | None = None) -> dict[str, Any]:
    """The leaderboard's robustness columns of a partition: paraphrase consistency and the worst accuracy drop
    over the perturbation kinds measured (None when not measured)."""
    paraphrase, perturbation = load_robustness(gold_set, model, root)
    summary = scores_summary(paraphrase, perturbation)
    return {
        "paraphrase_consistency": summary.get("paraphrase_consistency"),
        "perturbation_worst_drop": summary.get("perturbation_worst_drop"),
    }


def export_robustness(
    out_dir: Path, fmt: str, write: Callable[[pd.DataFrame, Path, str], Path], root: AnyPath | None = None
) -> list[Path]:
    """``robustness_verdicts.<fmt>``: every stored paraphrase and perturbation verdict (none: no file)."""
    frames = [
        read_parquet(path)
        for asset in (PARAPHRASE_ASSET, PERTURBATION_ASSET)
        for _, _, path in model_partitions(asset, root)
    ]
    if not frames:
        return []
    return [write(pd.concat(frames, ignore_index=True), out_dir / f"robustness_verdicts.{fmt}", fmt)]


def robustness_view_sql(root: AnyPath | None = None) -> str | None:
    """The DuckDB view ``robustness_verdicts`` (every stored paraphrase and perturbation verdict, as the export
    writes them) over the stored Parquet; None when nothing is stored. Every file is checked readable first."""
    selects = []
    for asset in (PARAPHRASE_ASSET, PERTURBATION_ASSET):
        partitions = model_partitions(asset, root)
        for _, _, path in partitions:
            check_readable(path)
        if partitions:  # an empty glob is an error
            glob = str(model_partition_glob(asset, root)).replace("'", "''")
            selects.append(f"SELECT * FROM read_parquet('{glob}', union_by_name = true)")
    if not selects:
        return None
    return f"CREATE OR REPLACE VIEW robustness_verdicts AS {' UNION ALL BY NAME '.join(selects)};"

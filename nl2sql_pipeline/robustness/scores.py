"""Robustness scores from variant verdicts and the gold run's own verdicts.

- Paraphrases: accuracy per family, and *consistency*: the share of cases whose verdict (correct or not) is
  the same on the original question and on every paraphrase; the cases that flip are listed.
- Perturbations: per kind, accuracy on the perturbed schema against the same cases on the original one; the
  *drop* is the difference, and the cases that break (right before, wrong after) are listed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import pandas as pd

from nl2sql_pipeline.robustness.records import MEASUREMENT_PARAPHRASE, MEASUREMENT_PERTURBATION, VariantVerdict

VERDICT_COLUMNS: tuple[str, ...] = tuple(VariantVerdict.__dataclass_fields__)


@dataclass(frozen=True)
class FamilyScore:
    """Accuracy of one paraphrase family, or of one perturbation kind against the original schema."""

    family: str
    asked: int
    correct: int
    base_correct: int
    broken: tuple[str, ...] = ()
    fixed: tuple[str, ...] = ()

    @property
    def accuracy(self) -> float | None:
        return self.correct / self.asked if self.asked else None

    @property
    def base_accuracy(self) -> float | None:
        return self.base_correct / self.asked if self.asked else None

    @property
    def drop(self) -> float | None:
        """Base accuracy minus accuracy on the variants (positive: worse on the variants)."""
        return None if not self.asked else (self.base_correct - self.correct) / self.asked


@dataclass(frozen=True)
class Flip:
    """A case whose verdict is not the same on every phrasing: the labels it was right and wrong on."""

    case_id: str
    base_correct: bool
    correct_on: tuple[str, ...]
    wrong_on: tuple[str, ...]


@dataclass(frozen=True)
class ParaphraseScores:
    """Accuracy per family and consistency over the cases asked."""

    cases: int
    consistent: int
    families: tuple[FamilyScore, ...]
    flips: tuple[Flip, ...] = field(default=())

    @property
    def consistency(self) -> float | None:
        return self.consistent / self.cases if self.cases else None


@dataclass(frozen=True)
class PerturbationScores:
    """Accuracy drop per perturbation kind, with the cases that break."""

    kinds: tuple[FamilyScore, ...]

    @property
    def worst_drop(self) -> float | None:
        drops = [k.drop for k in self.kinds if k.drop is not None]
        return max(drops) if drops else None


def _by_case(verdicts: Iterable[VariantVerdict], measurement: str) -> dict[str, list[VariantVerdict]]:
    out: dict[str, list[VariantVerdict]] = {}
    for verdict in verdicts:
        if verdict.measurement == measurement:
            out.setdefault(verdict.case_id, []).append(verdict)
    return out


def _family_scores(verdicts: list[VariantVerdict], base: Mapping[str, bool]) -> tuple[FamilyScore, ...]:
    families: dict[str, list[VariantVerdict]] = {}
    for verdict in verdicts:
        if verdict.case_id in base:
            families.setdefault(verdict.family, []).append(verdict)
    return tuple(
        FamilyScore(
            family=name,
            asked=len(group),
            correct=sum(v.correct for v in group),
            base_correct=sum(base[v.case_id] for v in group),
            broken=tuple(sorted({v.case_id for v in group if base[v.case_id] and not v.correct})),
            fixed=tuple(sorted({v.case_id for v in group if not base[v.case_id] and v.correct})),
        )
        for name, group in sorted(families.items())
    )


def paraphrase_scores(verdicts: Iterable[VariantVerdict], base: Mapping[str, bool]) -> ParaphraseScores:
    """Scores of the paraphrase verdicts; ``base`` maps a case id to its verdict on the original question
    (cases without one are left out)."""
    verdicts = [v for v in verdicts if v.measurement == MEASUREMENT_PARAPHRASE and v.case_id in base]
    flips = []
    grouped = _by_case(verdicts, MEASUREMENT_PARAPHRASE)
    for case_id, group in sorted(grouped.items()):
        if any(v.correct != base[case_id] for v in group):
            flips.append(
                Flip(
                    case_id,
                    base[case_id],
                    tuple(v.label for v in group if v.correct),
                    tuple(v.label for v in group if not v.correct),
                )
            )
    return ParaphraseScores(len(grouped), len(grouped) - len(flips), _family_scores(verdicts, base), tuple(flips))


def perturbation_scores(verdicts: Iterable[VariantVerdict], base: Mapping[str, bool]) -> PerturbationScores:
    """Scores of the perturbation verdicts against ``base`` (case id -> correct on the original schema)."""
    verdicts = [v for v in verdicts if v.measurement == MEASUREMENT_PERTURBATION and v.case_id in base]
    return PerturbationScores(_family_scores(verdicts, base))


def base_verdicts(case_verdicts: pd.DataFrame) -> dict[str, bool]:
    """Case id -> correct of the first sample of every query case of a ``case_verdicts`` frame."""
    if not len(case_verdicts):
        return {}
    frame = case_verdicts[~case_verdicts["is_probe"].astype(bool)]
    frame = frame[frame["sample_index"] == frame["sample_index"].min()]
    return {str(row.case_id): bool(row.correct) for row in frame.itertuples()}


def variant_verdicts_to_frame(verdicts: Iterable[VariantVerdict], **columns: Any) -> pd.DataFrame:
    """The stored form of variant verdicts (one row each), with constant ``columns`` (gold set, model)."""
    frame = pd.DataFrame([asdict(v) for v in verdicts], columns=list(VERDICT_COLUMNS))
    for name, value in columns.items():
        frame[name] = value
    return frame


def variant_verdicts_from_frame(frame: pd.DataFrame) -> list[VariantVerdict]:
    """Variant verdicts back from ``variant_verdicts_to_frame``."""
    out = []
    for record in frame.to_dict("records"):
        values = {name: record.get(name) for name in VERDICT_COLUMNS}
        values["correct"] = bool(values["correct"])
        for name in ("generated_sql", "reason", "mutation"):
            if values[name] is not None and pd.isna(values[name]):
                values[name] = None
        out.append(VariantVerdict(**values))
    return out


def scores_summary(paraphrase: ParaphraseScores | None, perturbation: PerturbationScores | None) -> dict[str, Any]:
    """The headline numbers (leaderboard, exports): consistency, per-family accuracy, per-kind drop."""
    out: dict[str, Any] = {}
    if paraphrase is not None and paraphrase.cases:
        out["paraphrase_consistency"] = paraphrase.consistency
        out["paraphrase_flips"] = len(paraphrase.flips)
        for family in paraphrase.families:
            out[f"paraphrase_accuracy_{family.family}"] = family.accuracy
    if perturbation is not None and perturbation.kinds:
        out["perturbation_worst_drop"] = perturbation.worst_drop
        for kind in perturbation.kinds:
            out[f"perturbation_drop_{kind.family}"] = kind.drop
    return out

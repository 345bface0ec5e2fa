"""The records of robustness measurements: a variant's verdict (the stored row) and the measurement names."""

from __future__ import annotations

from dataclasses import dataclass

MEASUREMENT_PARAPHRASE = "paraphrase"
MEASUREMENT_PERTURBATION = "perturbation"


@dataclass(frozen=True)
class VariantVerdict:
    """The verdict of one variant: its gold case, measurement, family and label, the question asked, the SQL
    answered and the outcome."""

    case_id: str
    measurement: str
    family: str
    label: str
    question: str
    database: str
    generated_sql: str | None
    outcome: str
    correct: bool
    reason: str | None
    mutation: str | None = None

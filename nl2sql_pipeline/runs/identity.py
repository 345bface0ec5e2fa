"""What identifies a run, and the one rule that says whether two runs measured the same thing.

A run is identified by six version fields: the model's config hash, the gold-set fingerprint, the
semantic-model hash, the policy hash, the comparator version and the harness version.

- Two runs are **comparable** (one can be the other's baseline) when every field but the model's config
  hash is equal: a comparison is exactly what a new prompt or model config is measured by.
- A recorded run is **current** for a model while every field, the model's config hash included, is
  unchanged; once one changes, the evaluation is stale (the sensor re-runs it, by the model's policy).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, Union

from nl2sql_pipeline import HARNESS_VERSION
from nl2sql_pipeline.cases import Case, gold_fingerprint

VERSION_FIELDS: tuple[str, ...] = (
    "model_config_hash",
    "gold_fingerprint",
    "semantic_model_hash",
    "policy_hash",
    "comparator_version",
    "harness_version",
)
MODEL_FIELD = "model_config_hash"
# What must be equal for one run to be the baseline of another: everything but the model's own config.
COMPARABLE_FIELDS: tuple[str, ...] = tuple(f for f in VERSION_FIELDS if f != MODEL_FIELD)


@dataclass(frozen=True)
class RunVersions:
    """Everything that identifies what a run measured."""

    model_config_hash: str
    gold_fingerprint: str
    semantic_model_hash: str
    policy_hash: str
    comparator_version: str
    harness_version: str

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunVersions:
        """The versions recorded in a scores row, a baselines row or asset metadata (missing -> '')."""
        return cls(**{name: "" if data.get(name) is None else str(data.get(name)) for name in VERSION_FIELDS})

    def as_dict(self) -> dict[str, str]:
        """The six fields by name."""
        return asdict(self)

    def digest(self) -> str:
        """A short stable key of the six fields (used in sensor run keys)."""
        return "-".join(getattr(self, f)[:8] for f in VERSION_FIELDS)


VersionsLike = Union[RunVersions, Mapping[str, Any]]


def _as_versions(value: VersionsLike) -> RunVersions:
    return value if isinstance(value, RunVersions) else RunVersions.from_mapping(value)


def changed_fields(before: VersionsLike, after: VersionsLike) -> tuple[str, ...]:
    """The version fields that differ between two runs, in declaration order."""
    a, b = _as_versions(before), _as_versions(after)
    return tuple(f for f in VERSION_FIELDS if getattr(a, f) != getattr(b, f))


def is_comparable(before: VersionsLike, after: VersionsLike) -> bool:
    """True when one run can be the other's baseline: only the model's own config may differ."""
    return set(changed_fields(before, after)) <= {MODEL_FIELD}


def is_current(recorded: VersionsLike, current: VersionsLike) -> bool:
    """True while every version field of a recorded run equals the current ones."""
    return not changed_fields(recorded, current)


def run_versions(model_config_hash: str, cases: list[Case], policy_override: str | None = None) -> RunVersions:
    """The version fields of a run of the model (by config hash) on ``cases`` (under ``policy_override``)."""
    from nl2sql_pipeline.compare import COMPARATOR_VERSION
    from nl2sql_pipeline.policy import policies_hash
    from nl2sql_pipeline.semantic_model import load_semantic_model

    return RunVersions(
        model_config_hash=model_config_hash,
        gold_fingerprint=gold_fingerprint(cases),
        semantic_model_hash=load_semantic_model().content_hash,
        policy_hash=policies_hash([policy_override] if policy_override else sorted({c.sql_policy for c in cases})),
        comparator_version=str(COMPARATOR_VERSION),
        harness_version=HARNESS_VERSION,
    )

"""What identifies a run, and the one rule that says whether two runs measured the same thing.

A run is identified by six version fields: the model's config hash, the gold-set fingerprint, the
semantic-model hash, the policy hash, the comparator version and the harness version.

- Two runs are **comparable** (one can be the other's baseline) when every field but the model's config
  hash is equal: a comparison is exactly what a new prompt or model config is measured by.
- A recorded run is **current** for a model while every field, the model's config hash included, is
  unchanged; once one changes, the evaluation is stale (the sensor re-runs it, by the model's policy).

The quarantine of the gold version (the cases its preflight left out, ``gold.quality.preflight``) is part of
the gold version's identity: a run's ``gold_fingerprint`` is the cases' fingerprint, followed by a hash of the
quarantined case ids when any case is quarantined (``quarantined_fingerprint``). Two runs that left out
different cases measured different things and are not comparable.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

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


VersionsLike = RunVersions | Mapping[str, Any]


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


def run_versions(
    model_config_hash: str,
    cases: list[Case],
    policy_override: str | None = None,
    resolve_database: Callable[[str], Path] | None = None,
    quarantined: Iterable[str] = (),
) -> RunVersions:
    """The version fields of a run of the model (by config hash) on ``cases`` (under ``policy_override``),
    with the ids of the cases the gold preflight ``quarantined`` in the gold fingerprint.

    With ``resolve_database`` (the gold set's ``case_databases``), ``semantic_model_hash`` hashes what the
    prompts describe of every database the cases use: its semantic model, or the schema introspected from
    the database itself. A changed per-database semantic model, or a changed schema, is then a new
    version. Without it, the default semantic model's hash.
    """
    from nl2sql_pipeline.compare.names import COMPARATOR_VERSION

    return RunVersions(
        model_config_hash=model_config_hash,
        gold_fingerprint=quarantined_fingerprint(gold_fingerprint(cases), quarantined),
        semantic_model_hash=schema_context_hash(cases, resolve_database),
        policy_hash=cases_policy_hash(cases, policy_override, resolve_database),
        comparator_version=str(COMPARATOR_VERSION),
        harness_version=HARNESS_VERSION,
    )


def quarantined_fingerprint(fingerprint: str, quarantined: Iterable[str] = ()) -> str:
    """The gold fingerprint of a run: the cases' ``fingerprint`` alone when nothing is quarantined, else followed
    by ``-q`` and a hash of the quarantined case ids (their order does not matter).

    >>> quarantined_fingerprint("abc123", [])
    'abc123'
    >>> quarantined_fingerprint("abc123", ["b", "a"]) == quarantined_fingerprint("abc123", ["a", "b"])
    True
    """
    ids = sorted(set(quarantined))
    if not ids:
        return fingerprint
    digest = hashlib.sha256("\n".join(ids).encode("utf-8")).hexdigest()[:12]
    return f"{fingerprint}-q{digest}"


def with_quarantine(versions: RunVersions, quarantined: Iterable[str]) -> RunVersions:
    """``versions`` (whose gold fingerprint is the cases' own) with the quarantined case ids in the fingerprint."""
    return replace(versions, gold_fingerprint=quarantined_fingerprint(versions.gold_fingerprint, quarantined))


def cases_policy_hash(
    cases: list[Case], policy_override: str | None = None, resolve_database: Callable[[str], Path] | None = None
) -> str:
    """The policy hash of a run: every policy governing a case (``policy.gate.case_policy``), and which
    database took which policy from the registry when that is not ``default``, so that giving a database
    another policy is a new version while a set over the sample database keeps its hash."""
    from nl2sql_pipeline.policy import policies_hash
    from nl2sql_pipeline.policy.gate import DEFAULT_POLICY, FROM_DATABASE, case_policy

    choices = [(case.database, case_policy(case, resolve_database, policy_override)) for case in cases]
    by_database = {db: c.name for db, c in choices if c.origin == FROM_DATABASE and c.name != DEFAULT_POLICY}
    return policies_hash(sorted({choice.name for _, choice in choices}), by_database)


def schema_context_hash(cases: list[Case], resolve_database: Callable[[str], Path] | None = None) -> str:
    """A hash of the prompt texts (schema, semantic model, reference date) of every database ``cases`` use.

    When a database cannot be read yet (a sample database not built), its name and the error stand in:
    the hash is then a version no recorded run has, so nothing is reused or compared by mistake.
    """
    from nl2sql_pipeline.semantic_model import load_semantic_model

    if resolve_database is None:
        return load_semantic_model().content_hash
    from nl2sql_pipeline.errors import Nl2SqlError
    from nl2sql_pipeline.generation.prompt_context import build_prompt_context

    digest = hashlib.sha256(b"schema-context-v1\n")
    for name in sorted({case.database for case in cases if not case.is_probe}):
        try:
            texts = build_prompt_context([name], resolve_database=resolve_database).databases[name]
            parts = [texts.schema_text, texts.semantic_text, texts.reference_date]
        except Nl2SqlError as exc:
            parts = [f"unavailable: {type(exc).__name__}"]
        digest.update(json.dumps([name, *parts]).encode("utf-8"))
    return digest.hexdigest()[:16]

"""What identifies a run: model config, gold set, semantic model, policies, comparator and harness."""

from __future__ import annotations

from nl2sql_pipeline import HARNESS_VERSION
from nl2sql_pipeline.baselines import RunVersions
from nl2sql_pipeline.cases import Case, gold_fingerprint


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

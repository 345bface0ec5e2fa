"""The gold version's quarantine as the per-model assets see it: which cases they leave out.

The ``gold_preflight`` check records the quarantine of each gold version (``nl2sql_pipeline.storage.quarantine``);
every per-model asset reads it here, so a quarantined case is never generated (unless a replay file must be
read whole), executed, judged or scored, and the run's identity names the quarantine.
"""

from __future__ import annotations

import dagster as dg

from nl2sql_pipeline.cases import Case, gold_fingerprint
from nl2sql_pipeline.storage.quarantine import QuarantineRecordError, quarantined_ids, read_quarantine


def gold_quarantine(gold: str, cases: list[Case]) -> list[dict[str, str]]:
    """The quarantine findings of the gold version ``gold`` (its ``cases``); a Failure when its preflight never ran."""
    fingerprint = gold_fingerprint(cases)
    try:
        findings = read_quarantine(gold, fingerprint)
    except QuarantineRecordError as exc:
        raise dg.Failure(description=str(exc)) from exc
    if findings is None:
        raise dg.Failure(
            description=f"the gold preflight of {gold} has not run at fingerprint {fingerprint}: materialize "
            "gold_set with its gold_preflight check first (nl2sql-eval run does it)"
        )
    return findings


def scored_cases(cases: list[Case], findings: list[dict[str, str]]) -> list[Case]:
    """``cases`` without the quarantined ones, in their order."""
    left_out = set(quarantined_ids(findings))
    return [case for case in cases if case.id not in left_out]

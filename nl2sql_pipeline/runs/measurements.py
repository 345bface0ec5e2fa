"""The optional measurements of a run (each off by default, one switch each) and whether a stored run made them.

    probe_systems   a live system is asked every policy probe's question; its replies are classified
                    (``stages.probe_replies``: system_policy_recall)
    efficiency      every correct candidate and its gold are profiled in the sandbox (``stages.efficiency``:
                    the stable efficiency score)

The CLI (``nl2sql-eval run --probe-systems --efficiency``) and the Dagster run config (``eval_settings``) set them; a stored
run stands for a new one (``runs.reuse``) only when it measured what the new run asks for.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Measurements:
    """Which optional measurements a run makes."""

    probe_systems: bool = False
    efficiency: bool = False

    def settings(self) -> dict[str, Any]:
        """The ``eval_settings`` keys of these switches (only the ones turned on: the defaults stay implicit)."""
        return {name: value for name, value in asdict(self).items() if value}


def made_by(row: Mapping[str, Any], wanted: Measurements | None, is_system: bool) -> bool:
    """Whether a stored run (a baselines row) measured what ``wanted`` asks for, no more and no less.

    Probe replies exist only for systems on gold sets with probes: a run of a bare model, or of a gold set
    without probes, measured the same either way.
    """
    if wanted is None:
        return True
    if is_system and (row.get("probe_count") or 0) > 0:
        sent = (row.get("system_probe_count") or 0) > 0
        if sent != wanted.probe_systems:
            return False
    if (row.get("semantic_correctness_rate") or 0) > 0:  # with nothing correct there is nothing to profile
        profiled = (row.get("efficiency_measured_count") or 0) + (row.get("efficiency_unmeasured_count") or 0) > 0
        if profiled != wanted.efficiency:
            return False
    return True

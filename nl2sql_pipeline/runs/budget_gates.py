"""The run-level budget gates: ceilings on the run's p95 latency and total cost (``runs.gates.GATES``).

- ``max_p95_latency_ms``: ``p95_latency_ms`` (generation latency, cold starts left out) at or below it.
- ``max_cost_usd``: ``total_cost_usd`` (the scored cases whose cost is known) at or below it.

A run with nothing measured (no latency, no known cost) fails a gate that is set: a budget that cannot be
checked does not pass. Probe-only runs are exempt, as for the other query gates.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.runs.completeness import is_probe_only


def _ms(value: float) -> str:
    return f"{value:.1f} ms"


def _usd(value: float) -> str:
    return f"${value:.4f}"


@dataclass(frozen=True)
class Ceiling:
    """A budget gate: ``metric`` of the run at or below the threshold ``gate``, shown with ``shown``."""

    gate: str
    metric: str
    shown: Callable[[float], str]

    def breach(self, run: Mapping[str, Any], threshold: float | None) -> tuple[float | None, str] | None:
        """(measured value, failure message) when the run is over the ceiling or unmeasured, else None."""
        if threshold is None or is_probe_only(run):
            return None
        value = run.get(self.metric)
        if value is not None and value <= threshold:
            return None
        what = (
            f"{self.metric} was not measured"
            if value is None
            else f"{self.metric} {self.shown(value)} is above the ceiling"
        )
        measured = "n/a" if value is None else self.shown(value)
        return value, (
            f"{run['model']}: gate {self.gate} failed: {what} (threshold {self.shown(threshold)}, measured {measured})"
        )


BUDGET_CEILINGS: tuple[Ceiling, ...] = (
    Ceiling("max_p95_latency_ms", "p95_latency_ms", _ms),
    Ceiling("max_cost_usd", "total_cost_usd", _usd),
)

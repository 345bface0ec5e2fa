"""Evaluation settings shared by the assets: sandbox limits and comparator tolerances."""

from __future__ import annotations

import dagster as dg

from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.execution import SandboxLimits


class EvalSettings(dg.ConfigurableResource):
    """Knobs of one evaluation (overridable per run from the launchpad)."""

    timeout_s: float = 10.0
    row_cap: int = 10_000
    memory_limit: str = "512MB"
    threads: int = 1
    rel_tol: float = 1e-9
    abs_tol: float = 1e-9
    policy: str | None = None  # a policy name or file overriding every case's sql_policy for the run
    isolated: bool = False  # run candidates in a worker process killed at timeout (interrupt-proof backstop)
    min_correctness: float | None = None  # gate: the run_scores check fails below this semantic correctness
    max_regression: float | None = None  # gate: the run_scores check fails on a larger drop against the baseline

    def limits(self) -> SandboxLimits:
        """Sandbox limits for every query of the run."""
        return SandboxLimits(
            timeout_s=self.timeout_s, row_cap=self.row_cap, memory_limit=self.memory_limit, threads=self.threads
        )

    def compare_config(self) -> CompareConfig:
        """Comparator tolerances."""
        return CompareConfig(rel_tol=self.rel_tol, abs_tol=self.abs_tol)

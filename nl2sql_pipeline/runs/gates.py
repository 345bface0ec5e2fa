"""Gates of a run: an absolute correctness floor, and no regression against its baseline.

One implementation for the CLI's exit codes (``nl2sql-eval run --min-correctness --max-regression``) and
the asset checks on ``run_scores`` in the Dagster UI. The baseline comes from ``runs.baseline``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.runs.baseline import find_baseline
from nl2sql_pipeline.report import format_rate

GATED_METRIC = "semantic_correctness_rate"


@dataclass
class GateReport:
    """Per model: the baseline found (if any), the comparison lines, and the gates that failed."""

    lines: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no gate failed."""
        return not self.failures


def gate_run(
    run: dict[str, Any],
    baseline: dict[str, Any] | None,
    *,
    min_correctness: float | None = None,
    max_regression: float | None = None,
) -> GateReport:
    """Apply the gates to one run (a ``run_scores`` row) given its baseline (or None).

    ``min_correctness``: fail a run whose semantic correctness is below it. ``max_regression``: fail a run
    whose correctness dropped by more than this (a rate, e.g. 0.02 = 2 points) against its baseline.
    A run with nothing scored (every case skipped) fails any gate it is given: it proved nothing.
    """
    report = GateReport()
    model, value = run["model"], run.get(GATED_METRIC)
    if baseline is None:
        report.lines.append(f"{model}: no comparable baseline (first run with these gold/policy/comparator versions)")
    else:
        before = baseline.get(GATED_METRIC)
        delta = None if value is None or before is None else value - before
        change = "n/a" if delta is None else f"{100 * delta:+.1f} pts"
        report.lines.append(
            f"{model}: {GATED_METRIC} {format_rate(value)} vs baseline {format_rate(before)} ({change}; baseline run "
            f"{baseline['run_id'][:8]} of {baseline['recorded_at']:%Y-%m-%d %H:%M}, model config "
            f"{'unchanged' if baseline['model_config_hash'] == run.get('model_config_hash') else 'changed'})"
        )
        if max_regression is not None and delta is not None and -delta > max_regression:
            report.failures.append(
                f"{model}: {GATED_METRIC} fell by {100 * -delta:.1f} pts (allowed {100 * max_regression:.1f})"
            )
    if (min_correctness is not None or max_regression is not None) and value is None:
        report.failures.append(f"{model}: nothing was scored (every case skipped), so no gate can pass")
    elif min_correctness is not None and value < min_correctness:
        report.failures.append(f"{model}: {GATED_METRIC} {format_rate(value)} is below {format_rate(min_correctness)}")
    return report


def check_gates(
    runs: list[dict[str, Any]],
    db_path: Path,
    *,
    min_correctness: float | None = None,
    max_regression: float | None = None,
) -> GateReport:
    """Find each run's baseline in the baselines file and apply the gates (:func:`gate_run`) to it."""
    report = GateReport()
    for run in runs:
        one = gate_run(run, find_baseline(db_path, run), min_correctness=min_correctness, max_regression=max_regression)
        report.lines += one.lines
        report.failures += one.failures
    return report

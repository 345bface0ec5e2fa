"""Exit-code gates of a run: an absolute floor, and no regression against the baseline.

The baseline of a run is the latest earlier run of the same model slug on the same gold set that was
measured the same way: same gold-set fingerprint, semantic model, policies, comparator and harness
versions. The model's own config may differ: that is what a comparison is for ("did the new prompt get
better or worse?").
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.baselines import list_runs
from nl2sql_pipeline.report import format_rate

COMPARABLE_FIELDS: tuple[str, ...] = (
    "gold_fingerprint",
    "semantic_model_hash",
    "policy_hash",
    "comparator_version",
    "harness_version",
)
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


def find_baseline(db_path: Path, run: dict[str, Any]) -> dict[str, Any] | None:
    """The latest earlier run comparable with ``run`` (a ``run_scores`` row), or None."""
    for candidate in list_runs(db_path, run["gold_set"], run["model"]):
        if candidate["run_id"] == run["run_id"]:
            continue
        if all(str(candidate.get(f)) == str(run.get(f)) for f in COMPARABLE_FIELDS):
            return candidate
    return None


def check_gates(
    runs: list[dict[str, Any]],
    db_path: Path,
    *,
    min_correctness: float | None = None,
    max_regression: float | None = None,
) -> GateReport:
    """Compare each run with its baseline and apply the gates.

    ``min_correctness``: fail a model whose semantic correctness is below it. ``max_regression``: fail a
    model whose correctness dropped by more than this (a rate, e.g. 0.02 = 2 points) against its baseline.
    A run with nothing scored (every case skipped) fails any gate it is given: it proved nothing.
    """
    report = GateReport()
    for run in runs:
        model, value = run["model"], run.get(GATED_METRIC)
        baseline = find_baseline(db_path, run)
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

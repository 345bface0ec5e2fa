"""Gates of a run: one implementation for the CLI's exit codes and the asset checks on ``run_scores``.

The gates, in order. A threshold comes from, first to last: the CLI flag or the ``eval_settings`` resource
(the launchpad), the model's ``gates:`` in ``data/models.yml``, then :data:`DEFAULT_GATES` (the same on every
launch path: CLI, launchpad, backfills, schedules, sensors). A gate without a default is off until set; a
default gate is loosened by setting it (``max_skipped_share: 1``, ``max_execution_drop: 1``).

- ``max_skipped_share`` (default 0: no skipped case): the run evaluated enough (``runs.completeness``); a run
  that evaluated nothing fails it whatever the threshold. Its failures are *incomplete* runs (CLI exit 3).
- ``min_execution_success``: ``sql_execution_success_rate`` at or above the threshold.
- ``min_semantic_correct``: ``semantic_correctness_rate`` at or above it (``min_correctness`` is an alias).
- ``min_policy_recall``: ``policy_rejection_recall`` at or above it (runs without probes are exempt).
- ``max_regression``: ``semantic_correctness_rate`` fell by no more than it against the baseline (the
  latest earlier comparable, fully evaluated run: ``runs.baseline``).
- ``max_execution_drop`` (default 0.05): ``sql_execution_success_rate`` fell by no more than it against the
  baseline.
- ``max_p95_latency_ms``, ``max_cost_usd``: the run's budget ceilings (``runs.budget_gates``; milliseconds and
  USD, not fractions).

A run that fails any gate is never a baseline (``baselines`` records it as not comparable). Query-based gates do not apply to a probe-only run. Every failure names the gate, its threshold and the
measured value.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from nl2sql_pipeline.runs.baseline import find_baseline
from nl2sql_pipeline.runs.budget_gates import BUDGET_CEILINGS, Ceiling
from nl2sql_pipeline.runs.completeness import (
    answer_only,
    incomplete_reason,
    is_probe_only,
    not_comparable_reason,
    skipped_share,
)
from nl2sql_pipeline.scoring.formatting import format_rate, format_rates_apart

GATED_METRIC = "semantic_correctness_rate"
EXECUTION_METRIC = "sql_execution_success_rate"


@dataclass(frozen=True)
class GateThresholds:
    """The threshold of every gate (None: the gate is off). Rates are fractions in 0..1."""

    max_skipped_share: float | None = None
    min_execution_success: float | None = None
    min_semantic_correct: float | None = None
    min_policy_recall: float | None = None
    max_regression: float | None = None
    max_execution_drop: float | None = None
    max_p95_latency_ms: float | None = None
    max_cost_usd: float | None = None

    def over(self, fallback: Mapping[str, float | None] | GateThresholds | None) -> GateThresholds:
        """These thresholds, with every unset one taken from ``fallback`` (e.g. the model's ``gates:``)."""
        if fallback is None:
            return self
        base = (
            fallback if isinstance(fallback, Mapping) else {f.name: getattr(fallback, f.name) for f in fields(fallback)}
        )
        return replace(self, **{f.name: base.get(f.name) for f in fields(self) if getattr(self, f.name) is None})

    def only(self, gate: str) -> GateThresholds:
        """These thresholds with every gate but ``gate`` off (one asset check per gate)."""
        return GateThresholds(**{gate: getattr(self, gate)})


GATE_NAMES: tuple[str, ...] = tuple(f.name for f in fields(GateThresholds))

# The thresholds every run is held to when neither the launch (CLI flag, ``eval_settings``) nor the model's
# ``gates:`` sets one: no skipped case, no drop of SQL execution success beyond 5 points against the baseline.
DEFAULT_GATES = GateThresholds(max_skipped_share=0.0, max_execution_drop=0.05)


@dataclass(frozen=True)
class GateFailure:
    """One failed gate: which, its threshold, the measured value, and the message printed."""

    model: str
    gate: str
    threshold: float | None
    measured: float | None
    message: str
    incomplete: bool = False  # the run evaluated too little (exit 3), rather than scoring too low (exit 1)

    def __str__(self) -> str:
        return self.message


@dataclass
class GateReport:
    """Per model: the baseline comparison lines and the gates that failed."""

    lines: list[str] = field(default_factory=list)
    failures: list[GateFailure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """True when no gate failed."""
        return not self.failures

    @property
    def incomplete(self) -> bool:
        """True when a run failed because it evaluated too little (skipped cases)."""
        return any(f.incomplete for f in self.failures)

    def messages(self, gate: str | None = None) -> list[str]:
        """The failure messages (of one gate, or all)."""
        return [f.message for f in self.failures if gate is None or f.gate == gate]

    def extend(self, other: GateReport) -> None:
        """Add another model's report."""
        self.lines += other.lines
        self.failures += other.failures


def _fail(
    run: Mapping[str, Any],
    gate: str,
    threshold: float | None,
    measured: float | None,
    what: str,
    incomplete: bool = False,
) -> GateFailure:
    shown, measured_shown = format_rates_apart(threshold, measured)  # apart when they differ, however little
    return GateFailure(
        model=run["model"],
        gate=gate,
        threshold=threshold,
        measured=measured,
        incomplete=incomplete,
        message=f"{run['model']}: gate {gate} failed: {what} (threshold {shown}, measured {measured_shown})",
    )


def _skipped_gate(run, baseline, limits: GateThresholds, report: GateReport) -> None:
    reason = incomplete_reason(run, limits.max_skipped_share)
    if reason is not None:
        report.failures.append(
            _fail(run, "max_skipped_share", limits.max_skipped_share, skipped_share(run), reason, incomplete=True)
        )


def _floor_gate(gate: str, metric: str, exempt: Callable[[Mapping[str, Any]], str | None]):
    def check(run, baseline, limits: GateThresholds, report: GateReport) -> None:
        threshold = getattr(limits, gate)
        if threshold is None or exempt(run):
            return
        value = run.get(metric)
        if value is None:
            report.failures.append(_fail(run, gate, threshold, None, f"{metric} was not measured (nothing scored)"))
        elif value < threshold:
            report.failures.append(
                _fail(
                    run,
                    gate,
                    threshold,
                    value,
                    f"{metric} {format_rates_apart(value, threshold)[0]} is below the floor",
                )
            )

    check.__name__ = f"_{gate}_gate"
    return check


def _probe_only(run: Mapping[str, Any]) -> str | None:
    if answer_only(run):  # scored by the answer judge: no execution rate to hold to a floor
        return "answer-only run"
    return "probe-only run" if is_probe_only(run) else None


def _no_probes(run: Mapping[str, Any]) -> str | None:
    return "no policy probe" if not run.get("probe_count") else None


def _regression_gate(run, baseline, limits: GateThresholds, report: GateReport) -> None:
    value = run.get(GATED_METRIC)
    if answer_only(run):  # recorded, never comparable: there is no baseline to look for, now or later
        report.lines.append(
            f"{run['model']}: answer-only run: never a baseline (scored by the answer judge, no execution rate)"
        )
        return
    if baseline is None:
        report.lines.append(
            f"{run['model']}: no comparable baseline (first fully evaluated run with these gold/policy/comparator versions)"
        )
        return
    before = baseline.get(GATED_METRIC)
    delta = None if value is None or before is None else value - before
    change = "n/a" if delta is None else f"{100 * delta:+.1f} pts"
    recorded = baseline.get("recorded_at")
    when = f" of {recorded:%Y-%m-%d %H:%M}" if hasattr(recorded, "strftime") else ""
    report.lines.append(
        f"{run['model']}: {GATED_METRIC} {format_rate(value)} vs baseline {format_rate(before)} ({change}; baseline run "
        f"{str(baseline['run_id'])[:8]}{when}, model config "
        f"{'unchanged' if baseline.get('model_config_hash') == run.get('model_config_hash') else 'changed'})"
    )
    threshold = limits.max_regression
    if threshold is None or is_probe_only(run):
        return
    if delta is None:
        if value is None:
            report.failures.append(
                _fail(
                    run,
                    "max_regression",
                    threshold,
                    None,
                    f"{GATED_METRIC} was not measured, so no regression check can pass",
                )
            )
        return
    if -delta > threshold:
        report.failures.append(
            _fail(
                run,
                "max_regression",
                threshold,
                -delta,
                f"{GATED_METRIC} fell by {100 * -delta:.1f} pts, from {format_rate(before)} to {format_rate(value)}",
            )
        )


def _execution_drop_gate(run, baseline, limits: GateThresholds, report: GateReport) -> None:
    threshold = limits.max_execution_drop
    if threshold is None or baseline is None or is_probe_only(run):
        return
    value, before = run.get(EXECUTION_METRIC), baseline.get(EXECUTION_METRIC)
    if value is None or before is None:  # nothing executed: the skipped-share gate has already failed the run
        return
    if before - value > threshold:
        report.failures.append(
            _fail(
                run,
                "max_execution_drop",
                threshold,
                before - value,
                f"{EXECUTION_METRIC} fell by {100 * (before - value):.1f} pts, from {format_rate(before)} to "
                f"{format_rate(value)} (baseline run {str(baseline['run_id'])[:8]})",
            )
        )


def _ceiling_gate(ceiling: Ceiling) -> Callable[..., None]:
    def check(run, baseline, limits: GateThresholds, report: GateReport) -> None:
        threshold = getattr(limits, ceiling.gate)
        breach = ceiling.breach(run, threshold)
        if breach is not None:
            report.failures.append(GateFailure(run["model"], ceiling.gate, threshold, breach[0], breach[1]))

    check.__name__ = f"_{ceiling.gate}_gate"
    return check


# The gates in the order they are applied and reported.
GATES: tuple[Callable[..., None], ...] = (
    _skipped_gate,
    _floor_gate("min_execution_success", EXECUTION_METRIC, _probe_only),
    _floor_gate("min_semantic_correct", GATED_METRIC, _probe_only),
    _floor_gate("min_policy_recall", "policy_rejection_recall", _no_probes),
    _regression_gate,
    _execution_drop_gate,
    *(_ceiling_gate(ceiling) for ceiling in BUDGET_CEILINGS),
)


def gate_run(
    run: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    thresholds: GateThresholds | None = None,
    *,
    min_correctness: float | None = None,
    max_regression: float | None = None,
) -> GateReport:
    """Apply every gate of :data:`GATES` to one run (a ``run_scores`` row with its identity) given its baseline.

    ``min_correctness`` / ``max_regression`` are shorthands for the same fields of ``thresholds``; a threshold
    left unset takes its :data:`DEFAULT_GATES` value.
    """
    limits = (
        (thresholds or GateThresholds())
        .over({"min_semantic_correct": min_correctness, "max_regression": max_regression})
        .over(DEFAULT_GATES)
    )
    report = GateReport()
    for gate in GATES:
        gate(run, baseline, limits, report)
    return report


def check_gates(
    runs: list[dict[str, Any]],
    db_path: Path,
    thresholds: GateThresholds | Callable[[str], GateThresholds] | None = None,
    *,
    min_correctness: float | None = None,
    max_regression: float | None = None,
) -> GateReport:
    """Find each run's baseline in the baselines file and apply the gates (:func:`gate_run`) to it.

    ``thresholds`` may be a function of the model slug (the CLI's thresholds over the model's ``gates:``).
    """
    report = GateReport()
    for run in runs:
        limits = thresholds(run["model"]) if callable(thresholds) else thresholds
        report.extend(
            gate_run(
                run, find_baseline(db_path, run), limits, min_correctness=min_correctness, max_regression=max_regression
            )
        )
    return report


def not_baseline_reason(run: Mapping[str, Any], report: GateReport) -> str | None:
    """Why ``run`` may never be a baseline: not fully evaluated (``runs.completeness``), else its first failed
    gate (its message); None when it may."""
    reason = not_comparable_reason(run)
    if reason is None and report.failures:
        reason = report.failures[0].message
    return reason


def resolve_thresholds(given: GateThresholds, own: Mapping[str, float | None]) -> GateThresholds:
    """The thresholds a run is held to: ``given`` (CLI flags, ``eval_settings``) over the model's own ``gates:``
    over :data:`DEFAULT_GATES`."""
    return given.over(own).over(DEFAULT_GATES)


def threshold_source(given: GateThresholds, own: Mapping[str, float | None], gate: str) -> str:
    """Where a gate's threshold comes from: ``"set"`` (CLI flag / ``eval_settings``), ``"model"`` (its
    ``gates:``), ``"default"`` (:data:`DEFAULT_GATES`) or ``"off"``."""
    if getattr(given, gate) is not None:
        return "set"
    if own.get(gate) is not None:
        return "model"
    return "default" if getattr(DEFAULT_GATES, gate) is not None else "off"


def model_gates(model: str) -> dict[str, float | None]:
    """The model's own ``gates:`` in the registry (none for a model removed from it since its run)."""
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.generation.registry import get_model

    try:
        return dict(get_model(model).gates)
    except ConfigError:
        return {}


def thresholds_for_model(given: GateThresholds, model: str) -> GateThresholds:
    """``given`` thresholds (CLI flags, ``eval_settings``) over the model's own ``gates:`` over the defaults."""
    return resolve_thresholds(given, model_gates(model))

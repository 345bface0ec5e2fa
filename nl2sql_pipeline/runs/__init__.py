"""Run identity and baselines, in one place.

- ``identity``: the six version fields of a run, and when two runs are comparable or a run is current;
- ``store``: the baselines file (DuckDB) where every scored run is recorded;
- ``baseline``: which recorded run is the baseline of a run;
- ``staleness``: when an evaluation should be re-run (the model-change sensor);
- ``completeness``: whether a run evaluated enough to pass and to be a baseline (skipped cases);
- ``gates``: every gate of a run (CLI exit codes and asset checks alike);
- ``locks``: cross-process locks (the baselines file, one evaluation per gold x model partition).
"""

from nl2sql_pipeline.runs.baseline import current_baseline, find_baseline, select_baseline
from nl2sql_pipeline.runs.completeness import incomplete_reason, not_comparable_reason, skipped_share
from nl2sql_pipeline.runs.gates import (
    DEFAULT_GATES,
    GATE_NAMES,
    GATED_METRIC,
    GateFailure,
    GateReport,
    GateThresholds,
    check_gates,
    gate_run,
    model_gates,
    not_baseline_reason,
    resolve_thresholds,
    threshold_source,
    thresholds_for_model,
)
from nl2sql_pipeline.runs.identity import (
    COMPARABLE_FIELDS,
    VERSION_FIELDS,
    RunVersions,
    changed_fields,
    is_comparable,
    is_current,
    run_versions,
)
from nl2sql_pipeline.runs.staleness import stale_reason
from nl2sql_pipeline.runs.store import list_runs, record_run

__all__ = [
    "COMPARABLE_FIELDS",
    "DEFAULT_GATES",
    "GATED_METRIC",
    "GATE_NAMES",
    "GateFailure",
    "GateReport",
    "GateThresholds",
    "RunVersions",
    "VERSION_FIELDS",
    "changed_fields",
    "check_gates",
    "current_baseline",
    "find_baseline",
    "gate_run",
    "incomplete_reason",
    "not_comparable_reason",
    "skipped_share",
    "is_comparable",
    "is_current",
    "list_runs",
    "model_gates",
    "not_baseline_reason",
    "record_run",
    "resolve_thresholds",
    "run_versions",
    "select_baseline",
    "stale_reason",
    "threshold_source",
    "thresholds_for_model",
]

"""Run identity and baselines, in one place.

- ``identity``: the six version fields of a run, and when two runs are comparable or a run is current;
- ``store``: the baselines file (DuckDB) where every scored run is recorded;
- ``baseline``: which recorded run is the baseline of a run;
- ``staleness``: when an evaluation should be re-run (the model-change sensor);
- ``gates``: the correctness floor and the regression gate (CLI exit codes and asset checks alike).
"""

from nl2sql_pipeline.runs.baseline import current_baseline, find_baseline, select_baseline
from nl2sql_pipeline.runs.gates import GATED_METRIC, GateReport, check_gates, gate_run
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
    "GATED_METRIC",
    "GateReport",
    "RunVersions",
    "VERSION_FIELDS",
    "changed_fields",
    "check_gates",
    "current_baseline",
    "find_baseline",
    "gate_run",
    "is_comparable",
    "is_current",
    "list_runs",
    "record_run",
    "run_versions",
    "select_baseline",
    "stale_reason",
]

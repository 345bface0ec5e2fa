"""Sandboxed execution of untrusted SQL in DuckDB.

    result = run_query(db_path, sql, SandboxLimits(timeout_s=5))   # QueryResult, never raises for bad SQL

Every query: exactly one SELECT-type statement (DuckDB's parser decides), a fresh connection to a
read-only database with external access off and the configuration locked, bounded memory, threads and
spill space, a wall-clock timeout enforced by ``interrupt()``, and a row cap. ``Sandbox`` holds one
database open for a batch; ``run_query_isolated`` adds a subprocess with a hard kill.

Modules: ``limits`` (SandboxLimits), ``query_result`` (QueryResult, ERROR_CLASSES), ``statements``
(statement check), ``error_classes`` (DuckDB exception -> class), ``scheduler`` (timer thread),
``sandbox`` (Sandbox), ``pool`` (run_query; held_sandboxes for a stage's many queries), ``isolated`` (run_query_isolated), ``composed``
(run_composed_query: a harness query wrapping checked untrusted queries, for in-engine comparison).
"""

from nl2sql_pipeline.execution.composed import run_composed_query
from nl2sql_pipeline.execution.error_classes import classify_error
from nl2sql_pipeline.execution.exceptions import SandboxError, SandboxLimitsError
from nl2sql_pipeline.execution.isolated import IsolatedRunner, run_query_isolated
from nl2sql_pipeline.execution.limits import SandboxLimits
from nl2sql_pipeline.execution.pool import held_sandboxes, release_sandboxes, run_query
from nl2sql_pipeline.execution.query_result import ERROR_CLASSES, QueryResult
from nl2sql_pipeline.execution.sandbox import Sandbox
from nl2sql_pipeline.execution.statements import statement_check

__all__ = [
    "ERROR_CLASSES",
    "IsolatedRunner",
    "QueryResult",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxLimitsError",
    "classify_error",
    "held_sandboxes",
    "release_sandboxes",
    "run_composed_query",
    "run_query",
    "run_query_isolated",
    "statement_check",
]

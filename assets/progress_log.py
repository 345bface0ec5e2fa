"""Progress of a long asset in the Dagster run log: the core's tracker (``nl2sql_pipeline.progress``) with a
sink writing ``context.log.info`` lines at a bounded rate (``NL2SQL_PROGRESS_LOG_INTERVAL`` seconds per
stage, default 10, plus each stage's first and last line)."""

from __future__ import annotations

import os

import dagster as dg

from nl2sql_pipeline.progress import ProgressTracker, ThrottledSink

LOG_INTERVAL_ENV = "NL2SQL_PROGRESS_LOG_INTERVAL"
DEFAULT_LOG_INTERVAL_S = 10.0


def log_interval() -> float:
    """Seconds between two progress lines of one stage in the run log."""
    text = os.environ.get(LOG_INTERVAL_ENV)
    try:
        return max(0.0, float(text)) if text else DEFAULT_LOG_INTERVAL_S
    except ValueError:
        raise dg.Failure(description=f"{LOG_INTERVAL_ENV}={text!r} is not a number of seconds") from None


def logged_progress(context: dg.AssetExecutionContext, stage: str, model: str) -> ProgressTracker:
    """A tracker of ``stage`` for ``model`` that also logs to the run's log (and reaches the subscribed sinks)."""
    log = context.log

    def to_log(snapshot) -> None:
        log.info(snapshot.line())

    return ProgressTracker(stage, model, sinks=(ThrottledSink(to_log, log_interval()),))

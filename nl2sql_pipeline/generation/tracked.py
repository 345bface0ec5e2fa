"""Generation units reporting to a progress tracker (``nl2sql_pipeline.progress``): start, then what each
unit sent, spent and failed with."""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec

from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.progress import ProgressTracker

P = ParamSpec("P")

CRASHED = "crashed"  # the unit raised (the run re-raises it)


def report_record(tracker: ProgressTracker, record: CandidateRecord, *, started: bool = True) -> None:
    """Tell ``tracker`` that the unit of ``record`` ended: calls, retries, tokens, cost, failure cause."""
    tracker.unit_finished(
        calls=record.calls,
        attempts=record.attempts,
        cached=record.cached,
        input_tokens=record.input_tokens,
        output_tokens=record.output_tokens,
        cost_usd=record.cost_usd,
        cost_expected=record.raw_reply is not None or record.cached,
        failure=record.error_class,
        started=started,
    )


def tracked(run: Callable[P, CandidateRecord], tracker: ProgressTracker) -> Callable[P, CandidateRecord]:
    """``run`` (one unit of work) reporting its start and its end to ``tracker``."""

    def run_and_report(*args: P.args, **kwargs: P.kwargs) -> CandidateRecord:
        tracker.unit_started()
        try:
            record = run(*args, **kwargs)
        except BaseException:
            tracker.unit_finished(failure=CRASHED)
            raise
        report_record(tracker, record)
        return record

    return run_and_report

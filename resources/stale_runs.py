"""Runs left in progress by a process that died (SIGKILL, a crash, a reboot) are marked failed.

Every run launched by ``nl2sql-eval run`` is tagged with the host and process id that executes it
(:func:`process_tags`). At the next start (:func:`fail_dead_runs`, called by the runner and by the
partition guard of the assets), a run still ``STARTING``/``STARTED`` whose process on this host is gone is
reported failed, so the UI and the one-run-per-partition guard stop counting it, and the pool slots it
held are freed. The generation cache keeps every call the dead run had made, so the next run reuses
them.
"""

from __future__ import annotations

import logging
import os
import socket

import dagster as dg

logger = logging.getLogger(__name__)

HOST_TAG = "nl2sql/host"
PID_TAG = "nl2sql/pid"
IN_PROGRESS = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED]


def process_tags() -> dict[str, str]:
    """Tags naming the process that executes a run in-process (this one)."""
    return {HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def is_dead_run(run: dg.DagsterRun) -> bool:
    """True for a run executed in-process on this host by a process that no longer exists."""
    tags = run.tags
    if tags.get(HOST_TAG) != socket.gethostname() or not str(tags.get(PID_TAG, "")).isdigit():
        return False
    pid = int(tags[PID_TAG])
    return pid != os.getpid() and not _alive(pid)


def fail_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Report every in-progress run of a dead process on this host as failed; returns their run ids."""
    failed = []
    for record in instance.get_run_records(
        filters=dg.RunsFilter(statuses=IN_PROGRESS, tags={HOST_TAG: socket.gethostname()})
    ):
        run = record.dagster_run
        if is_dead_run(run):
            message = (
                f"run {run.run_id} was left {run.status.value} by process {run.tags[PID_TAG]}, which no longer "
                "exists (killed?); marked failed"
            )
            instance.report_run_failed(run, message)
            if instance.event_log_storage.supports_global_concurrency_limits:  # its pool slots go back
                instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
            logger.warning(message)
            failed.append(run.run_id)
    return failed

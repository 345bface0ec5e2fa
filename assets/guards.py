"""One evaluation per gold x model partition at a time, whatever launched it (UI, backfill, sensor, CLI).

The first per-model step of a run (``candidate_sql``) asks the instance for other runs of the same
partition in progress. When one started before this run, this run fails at once with a message naming
it (wait for it or cancel it, then re-run); of two runs started together, the older goes on. Runs of
dead processes are marked failed first (``resources.stale_runs``), so a killed run never blocks a
partition. Queued runs are held back earlier by the instance's run queue (``dagster/partition`` limit 1,
``resources/instance.py``); ``nl2sql-eval run`` processes wait for each other on a partition lock.
"""

from __future__ import annotations

import dagster as dg

from resources.stale_runs import IN_PROGRESS, fail_dead_runs

PARTITION_TAG = "dagster/partition"


class PartitionBusyError(dg.Failure):
    """Another run of the same partition is in progress."""


def refuse_if_partition_busy(context: dg.AssetExecutionContext) -> None:
    """Fail this run when an earlier run of its partition is still in progress."""
    instance, run_id = context.instance, context.run_id
    key = str(context.partition_key)
    fail_dead_runs(instance)
    records = instance.get_run_records(filters=dg.RunsFilter(statuses=IN_PROGRESS, tags={PARTITION_TAG: key}))
    mine = next((r for r in instance.get_run_records(filters=dg.RunsFilter(run_ids=[run_id]))), None)
    my_order = (mine.create_timestamp, run_id) if mine is not None else None
    for record in records:
        other = record.dagster_run
        if other.run_id == run_id:
            continue
        if my_order is None or (record.create_timestamp, other.run_id) < my_order:
            source = other.tags.get("nl2sql/source") or other.job_name
            raise PartitionBusyError(
                description=f"partition {key} is already being evaluated by run {other.run_id} ({source}, "
                f"{other.status.value}); wait for it to finish or cancel it, then launch this one again."
            )

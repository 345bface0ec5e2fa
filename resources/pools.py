"""Per-provider Dagster pools on candidate generation, whatever launched the run.

Every ``candidate_sql`` step is in the static pool ``llm_generation`` (``pool=`` on the asset) and,
inside, holds a slot of its provider's pool, ``llm.<provider>@<api_base>`` (the key of the shared rate
limiter and in-flight slots: ``nl2sql_pipeline.generation.dispatch.budget_key``). A pool is the
instance's op concurrency, so the limit holds for runs of the ``evaluate_model`` job, catalog
"Materialize" and asset backfills (``__ASSET_JOB``), sensors, schedules and ``nl2sql-eval run`` alike;
the UI's Concurrency page shows each pool, its limit and who holds it.

Whatever executor runs the step: the provider's slot is claimed by the step itself, through the instance's
event-log storage (SQLite, or PostgreSQL shared by every process and machine); ``llm_generation`` is claimed
by the executor (in-process, multiprocess and dagster-celery's claim the step's pool before they start it)
and, where the step finds no slot of it under its own run and key (an executor that claims none), by the
step (:func:`hold_step_pool`). No claim double-books a slot: the project's event-log storages
(``resources.event_log``, ``resources.postgres_event_log``) take a slot with one conditional UPDATE
(``take_free_slot``), so their ``claim_concurrency_slot`` is race-free for the executors and the steps alike;
Dagster's stock one selects a free row and then updates it by id, and two processes claiming at once both
get the last slot. :func:`claim_slot` keeps the steps' claims race-free on a stock storage too.

A provider pool's limit is the largest ``limits.max_concurrency`` among the models of
``data/models.yml`` behind it (1 when none sets it): never more of its generation steps at once than
could have a call in flight. ``llm_generation`` gets the sum of the provider limits plus one (the
offline and replay models), so it never binds before a provider's pool. Dagster's ``dagster.yaml``
takes only a default pool limit (``concurrency: pools: default_limit``, written by
``resources.instance``); the per-pool limits live in the instance's storage, written by
:func:`sync_pool_limits` (run by the CLI, by ``partition_registry_sensor`` on every tick and by each
generation step for its own pool). ``dagster instance concurrency get --all`` lists them.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING

import dagster as dg

from resources.event_log import take_free_slot

if TYPE_CHECKING:
    from nl2sql_pipeline.generation.model_spec import ModelSpec

logger = logging.getLogger(__name__)

GENERATION_POOL = "llm_generation"
POOL_PREFIX = "llm."
_UNSAFE_RE = re.compile(r"[^A-Za-z0-9._@-]+")
WAIT_POLL_S = 0.5  # between two claims of a waiting step: a few storage queries each
HELD, FREED = "holding", "giving back"  # the words of the log lines that open and close a holding


POOLED_KINDS = ("litellm", "http")  # models that call a provider or a service over the network


def provider_pool(spec: ModelSpec) -> str | None:
    """The pool of a model's provider; None for models that call nothing remote (offline, predictions,
    in-process python and command systems)."""
    from nl2sql_pipeline.generation.dispatch import budget_key

    if spec.kind not in POOLED_KINDS or spec.is_offline:
        return None
    return POOL_PREFIX + _UNSAFE_RE.sub("_", budget_key(spec)).strip("_")


def pool_limits(registry: Mapping[str, ModelSpec] | None = None) -> dict[str, int]:
    """{pool: limit} for every provider pool of the registry, plus ``llm_generation``."""
    from nl2sql_pipeline.generation.registry import load_registry

    registry = load_registry() if registry is None else registry
    limits: dict[str, int] = {}
    for spec in registry.values():
        pool = provider_pool(spec)
        if pool is not None:
            own = spec.limits.max_concurrency or 1
            limits[pool] = max(limits.get(pool, 1), own)
    limits[GENERATION_POOL] = sum(limits.values()) + 1
    return limits


def sync_pool_limits(instance: dg.DagsterInstance, limits: Mapping[str, int] | None = None) -> dict[str, int]:
    """Write the registry's pool limits into the instance (only those that differ); returns what changed."""
    storage = instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        return {}
    limits = pool_limits() if limits is None else limits
    changed = {}
    for pool, limit in sorted(limits.items()):
        if _set_pool_limit(storage, pool, limit):
            changed[pool] = limit
    if changed:
        logger.info("pool limits set: %s", ", ".join(f"{k}={v}" for k, v in changed.items()))
    return changed


def _set_pool_limit(storage, pool: str, limit: int, attempts: int = 6) -> bool:
    """Set ``pool``'s limit unless it already is ``limit`` (True when it was written).

    Several processes may create the same pool row at once (two ``nl2sql-eval run`` of one provider on a
    PostgreSQL instance): Dagster's insert-or-update then fails in the loser with a unique-key violation,
    so the write is tried again (bounded), and the second try finds the row and updates it."""
    import sqlalchemy.exc

    for attempt in range(attempts):
        try:
            info = storage.get_concurrency_info(pool)
            if info.slot_count == limit and not info.using_default_limit:
                return False
            storage.set_concurrency_slots(pool, limit)
            return True
        except sqlalchemy.exc.SQLAlchemyError as exc:
            if attempt == attempts - 1:
                raise
            logger.debug("pool %s: concurrent write (%s); trying again", pool, type(exc).__name__)
            time.sleep(0.05 * (attempt + 1))
    return False


def claim_slot(storage, pool: str, run_id: str, step_key: str) -> bool:
    """Try once to claim a slot of ``pool`` for (``run_id``, ``step_key``); True when the step holds one.

    The project's event-log storages (``resources.event_log`` on SQLite, ``resources.postgres_event_log`` in
    ``deploy/dagster.yaml``) take the slot with one conditional UPDATE, so their own ``claim_concurrency_slot``
    (Dagster's queue of pending steps, then the slot) never double-books, and this is it. On an instance still
    configured with Dagster's stock SQL storage (a ``dagster.yaml`` copied before), whose claim selects a free
    row and then updates it by id whoever holds it by then, the same queue is asked here and the slot taken
    with the same conditional UPDATE. A step that holds its slot already asks again harmlessly: it gets True
    and no second slot."""
    if not claims_racily(storage):
        return bool(storage.claim_concurrency_slot(pool, run_id, step_key, 0).is_claimed)
    if not storage.has_pending_step(concurrency_key=pool, run_id=run_id, step_key=step_key):
        storage.add_pending_step(
            concurrency_key=pool,
            run_id=run_id,
            step_key=step_key,
            priority=0,
            should_assign=storage.has_unassigned_slots(pool),
        )
    status = storage.check_concurrency_claim(pool, run_id, step_key)
    if status.is_claimed:
        return True
    if not status.is_assigned:
        return False
    return take_free_slot(storage, pool, run_id, step_key)


def claims_racily(storage) -> bool:
    """Whether ``storage`` takes a slot with Dagster's stock ``_claim_concurrency_slot`` (select, then update by
    id: two claimers at the same instant both get the last slot); the project's storages override it."""
    from dagster._core.storage.event_log.sql_event_log import SqlEventLogStorage

    return (
        isinstance(storage, SqlEventLogStorage)
        and type(storage)._claim_concurrency_slot is SqlEventLogStorage._claim_concurrency_slot
    )


def _wait_for_slot(storage, pool: str, run_id: str, step_key: str, limit: int | None, log) -> None:
    """Claim a slot of ``pool`` for (``run_id``, ``step_key``) (:func:`claim_slot`), polling until one is free."""
    waited_since, told = time.monotonic(), False
    while not claim_slot(storage, pool, run_id, step_key):
        if not told:
            log.info(
                "waiting for a slot of pool %s (limit %s): other steps hold them",
                pool,
                limit if limit is not None else "?",
            )
            told = True
        time.sleep(WAIT_POLL_S)
    if told:
        log.info("got a slot of pool %s after %.1f s", pool, time.monotonic() - waited_since)


@contextmanager
def holding_slot(storage, pool: str, run_id: str, step_key: str, *, limit: int | None, log) -> Iterator[None]:
    """Hold one slot of ``pool`` for (``run_id``, ``step_key``) while inside, waiting for one, and free it
    on the way out (also on error or interruption, and while still waiting). ``log`` gets one line once the
    slot is held and one just before it is given back (``HELD``/``FREED``; the scale-out test reads the
    holdings from them: the logged span lies inside the real one, so spans that overlap really did)."""
    held = False
    try:
        _wait_for_slot(storage, pool, run_id, step_key, limit, log)
        held = True
        log.info("%s a slot of pool %s (step %s)", HELD, pool, step_key)
        yield
    finally:
        if held:
            log.info("%s the slot of pool %s (step %s)", FREED, pool, step_key)
        storage.free_concurrency_slot_for_step(run_id, step_key)  # also a pending (waiting) claim


@contextmanager
def hold_pool_slot(context: dg.AssetExecutionContext, pool: str, limits: Mapping[str, int]) -> Iterator[None]:
    """Hold one slot of ``pool`` for the run's current step, waiting for one; ``limits`` (every pool's, from
    :func:`pool_limits`) are written into the instance first."""
    storage = context.instance.event_log_storage
    if not storage.supports_global_concurrency_limits:
        context.log.warning("this instance's storage has no pools: %s is not limited", pool)
        yield
        return
    sync_pool_limits(context.instance, limits)
    step_key = f"{context.op_execution_context.op.name}[{pool}]"
    with holding_slot(storage, pool, context.run_id, step_key, limit=limits.get(pool), log=context.log):
        yield


def executor_holds_slot(storage, pool: str, run_id: str, step_key: str) -> bool:
    """Whether (``run_id``, ``step_key``) holds a slot of ``pool`` now. The in-process, multiprocess and
    dagster-celery executors claim a step's own pool before they start it (in the run's process); on a stock
    Dagster storage a claim that lost the slot to another made at the same instant shows no row."""
    claimed = storage.get_concurrency_info(pool).claimed_slots
    return any(slot.run_id == run_id and slot.step_key == step_key for slot in claimed)


@contextmanager
def hold_step_pool(context: dg.AssetExecutionContext, limits: Mapping[str, int]) -> Iterator[None]:
    """Hold a slot of the step's own pool (``pool=`` on the asset, e.g. ``llm_generation``) whatever the
    executor: when the executor holds it for this run and step, nothing is done; else (an executor that claims
    none, or, on a stock Dagster storage, whose claim lost the slot to another at the same instant) it is
    claimed here, under the step's own key (the executor's pending claim and this one are one claim, never
    two slots), and freed on the way out. With ``concurrency: pools: granularity: run`` the run queue enforces
    pools per run, and nothing is claimed here either."""
    from dagster._core.instance.config import PoolGranularity

    step = context.get_step_execution_context().step
    storage = context.instance.event_log_storage
    pool = step.pool
    if pool is None or not storage.supports_global_concurrency_limits:
        yield
        return
    if storage.get_pool_config().pool_granularity == PoolGranularity.RUN:
        yield
        return
    if executor_holds_slot(storage, pool, context.run_id, step.key):
        context.log.info("%s a slot of pool %s (step %s, claimed by the executor)", HELD, pool, step.key)
        yield
        return
    sync_pool_limits(context.instance, limits)  # the pool has its limit before the claim (else it has no slots)
    if pool not in limits and storage.get_concurrency_info(pool).slot_count == 0:
        storage.initialize_concurrency_limit_to_default(pool)  # as the executors do: the instance's default
        if storage.get_concurrency_info(pool).slot_count == 0:  # no default limit: the pool limits nothing
            yield
            return
    context.log.info(
        "step %s holds no slot of pool %s (its executor claimed none, or its claim lost the slot): claiming one",
        step.key,
        pool,
    )
    with holding_slot(storage, pool, context.run_id, step.key, limit=limits.get(pool), log=context.log):
        yield

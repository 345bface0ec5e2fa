"""Provider pools: derived from the registry, written into the instance (the backfill test runs them)."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec


def _litellm(slug: str, api_base: str | None, limit: int | None) -> ModelSpec:
    return ModelSpec(
        slug=slug, kind="litellm", model=f"openai/{slug}", api_base=api_base, limits=Limits(max_concurrency=limit)
    )


def test_one_pool_per_provider_and_server_with_the_largest_max_concurrency():
    from resources.pools import GENERATION_POOL, pool_limits, provider_pool

    registry = {
        "a": _litellm("a", None, 2),
        "b": _litellm("b", None, 5),
        "c": _litellm("c", "http://127.0.0.1:8000/v1", None),
        "echo": ModelSpec(slug="echo", kind="offline", model="nl2sql-offline/gold-echo"),
    }
    assert provider_pool(registry["a"]) == provider_pool(registry["b"]) == "llm.openai@default"
    assert provider_pool(registry["echo"]) is None
    assert pool_limits(registry) == {
        "llm.openai@default": 5,
        "llm.openai@http_127.0.0.1_8000_v1": 1,
        GENERATION_POOL: 7,
    }


def test_limits_are_written_into_the_instance_and_only_when_they_changed(isolated_home):
    from resources.instance import ensure_instance_home
    from resources.pools import sync_pool_limits

    ensure_instance_home()
    instance = dg.DagsterInstance.get()
    assert instance.get_concurrency_config().pool_config.default_pool_limit == 1  # dagster.yaml
    assert sync_pool_limits(instance, {"llm.x@default": 3, "llm_generation": 4}) == {
        "llm.x@default": 3,
        "llm_generation": 4,
    }
    assert instance.event_log_storage.get_concurrency_info("llm.x@default").slot_count == 3
    assert sync_pool_limits(instance, {"llm.x@default": 3, "llm_generation": 4}) == {}
    assert sync_pool_limits(instance, {"llm.x@default": 1}) == {"llm.x@default": 1}
    assert instance.event_log_storage.get_concurrency_info("llm.x@default").slot_count == 1


def test_the_registry_sensor_writes_the_pool_limits(isolated_home):
    from assets.sensors import partition_registry_sensor
    from nl2sql_cli.runner import get_instance
    from resources.pools import pool_limits

    instance = get_instance()
    partition_registry_sensor(dg.build_sensor_context(instance=instance))
    for pool, limit in pool_limits().items():
        assert instance.event_log_storage.get_concurrency_info(pool).slot_count == limit, pool


# ------------------------------------------------------------------ the step's own pool, whatever the executor
GOLD = "pools-unit-v1"


def _storage_with_pool(limit: int):
    """A real SQLite instance (the project's dagster.yaml) whose llm_generation pool has ``limit`` slots."""
    from resources.instance import ensure_instance_home
    from resources.pools import GENERATION_POOL

    ensure_instance_home()
    instance = dg.DagsterInstance.get()
    instance.event_log_storage.set_concurrency_slots(GENERATION_POOL, limit)
    return instance, instance.event_log_storage


def test_a_hand_claim_waits_for_a_free_slot_and_gives_it_back(isolated_home):
    import logging
    import threading

    from resources.pools import GENERATION_POOL, executor_holds_slot, holding_slot

    instance, storage = _storage_with_pool(1)
    assert storage.claim_concurrency_slot(GENERATION_POOL, "run-a", "candidate_sql", 0).is_claimed
    assert executor_holds_slot(storage, GENERATION_POOL, "run-a", "candidate_sql")
    assert not executor_holds_slot(storage, GENERATION_POOL, "run-b", "candidate_sql")
    # a step that holds its slot asks again: the same claim, not a second slot (no deadlock at limit 1)
    assert storage.claim_concurrency_slot(GENERATION_POOL, "run-a", "candidate_sql", 0).is_claimed

    inside = threading.Event()

    def run_b() -> None:
        log = logging.getLogger("test.pools")
        with holding_slot(storage, GENERATION_POOL, "run-b", "candidate_sql", limit=1, log=log):
            inside.set()
            holders = storage.get_concurrency_info(GENERATION_POOL).claimed_slots
            assert [(s.run_id, s.step_key) for s in holders] == [("run-b", "candidate_sql")]

    thread = threading.Thread(target=run_b)
    thread.start()
    assert not inside.wait(1.5)  # run-a holds the only slot
    storage.free_concurrency_slot_for_step("run-a", "candidate_sql")
    assert inside.wait(30)
    thread.join(30)
    assert storage.get_concurrency_info(GENERATION_POOL).claimed_slots == []
    instance.dispose()


def _materialize_generation(instance: dg.DagsterInstance, slug: str) -> dg.ExecuteInProcessResult:
    from assets.graph import ALL_ASSETS, ASSET_CHECKS
    from assets.sensors import register_partitions
    from resources.build import build_resources

    register_partitions(instance)
    assets = [*ALL_ASSETS, *ASSET_CHECKS]
    gold = dg.materialize(
        assets, selection=["gold_set"], instance=instance, resources=build_resources(), partition_key=GOLD
    )
    assert gold.success
    return dg.materialize(
        assets,
        selection=["candidate_sql"],
        instance=instance,
        resources=build_resources(),
        partition_key=str(dg.MultiPartitionKey({"gold": GOLD, "model": slug})),
    )


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.message or "" for e in instance.all_logs(run_id)]


@pytest.fixture
def pool_gold(data_copy):
    from eval_support import query_case, register_gold_set

    register_gold_set(data_copy, GOLD, [query_case("n", "SELECT COUNT(*) AS n FROM anime")], description="pools")
    return data_copy


def test_the_in_process_executor_claims_the_generation_pool_and_the_step_takes_no_second_slot(pool_gold):
    from resources.pools import GENERATION_POOL

    instance, storage = _storage_with_pool(1)  # one slot: a second claim by the step would wait for ever
    result = _materialize_generation(instance, "gold-echo")
    assert result.success
    messages = _messages(instance, result.run_id)
    assert not any("holds no slot" in m for m in messages), messages
    assert any(
        m == "holding a slot of pool llm_generation (step candidate_sql, claimed by the executor)" for m in messages
    )
    assert storage.get_concurrency_info(GENERATION_POOL).claimed_slots == []


@pytest.mark.e2e
def test_the_multiprocess_executor_claims_the_generation_pool_and_the_step_takes_no_second_slot(pool_gold):
    """The executor of jobs launched from the UI, sensors and schedules: the run's process claims the pool, the
    step's own process finds that claim under its run and step key."""
    from resources.pools import GENERATION_POOL

    instance, storage = _storage_with_pool(1)
    _materialize_generation(instance, "gold-echo")  # the gold set
    tags = {"dagster/partition": str(dg.MultiPartitionKey({"gold": GOLD, "model": "sql-mutant"}))}
    result = dg.execute_job(_generation_recon(), instance=instance, tags=tags)
    assert result.success
    messages = _messages(instance, result.run_id)
    assert any("Launching subprocess for" in m for m in messages), messages  # multiprocess, a step process
    assert not any("holds no slot" in m for m in messages), messages
    held = "holding a slot of pool llm_generation (step candidate_sql, claimed by the executor)"
    assert held in messages, messages
    assert storage.get_concurrency_info(GENERATION_POOL).claimed_slots == []


def generation_job() -> dg.JobDefinition:
    """candidate_sql alone, as a job (reconstructable: a step executor rebuilds it from this file)."""
    from assets.graph import ALL_ASSETS, ASSET_CHECKS
    from assets.partitions import gold_model_partitions
    from resources.build import build_resources

    job = dg.define_asset_job("generation", selection=["candidate_sql"], partitions_def=gold_model_partitions)
    defs = dg.Definitions(assets=ALL_ASSETS, asset_checks=ASSET_CHECKS, jobs=[job], resources=build_resources())
    return defs.resolve_job_def("generation")


def _generation_recon():
    """``generation_job`` as a step process or a worker rebuilds it: from this file."""
    from dagster._core.definitions.reconstruct import ReconstructableJob

    return ReconstructableJob.for_file(__file__, "generation_job")


def _execute_step_as_a_worker(instance: dg.DagsterInstance, slug: str) -> str:
    """Run the candidate_sql step of a new run the way a dagster-celery worker does (``execute_plan`` on the
    step alone): no orchestrator claimed a pool slot for it. Returns the run id."""
    from dagster._core.execution.api import create_execution_plan, execute_plan

    recon = _generation_recon()
    tags = {"dagster/partition": str(dg.MultiPartitionKey({"gold": GOLD, "model": slug}))}
    plan = create_execution_plan(recon, step_keys_to_execute=["candidate_sql"])
    run = instance.create_run_for_job(recon.get_definition(), execution_plan=plan, tags=tags)
    events = execute_plan(plan, recon, dagster_run=run, instance=instance)
    assert any(e.is_step_success for e in events), [e.event_type_value for e in events]
    return run.run_id


def test_a_step_no_executor_claimed_for_claims_its_pool_slot_waits_for_it_and_gives_it_back(pool_gold):
    import threading

    from resources.pools import GENERATION_POOL, pool_limits, sync_pool_limits

    instance, storage = _storage_with_pool(1)
    _materialize_generation(instance, "gold-echo")  # the gold set (and one generation, executor-claimed)
    limit = pool_limits()[GENERATION_POOL]
    sync_pool_limits(instance)
    for n in range(limit):  # other steps hold every slot
        assert storage.claim_concurrency_slot(GENERATION_POOL, f"other-{n}", "candidate_sql", 0).is_claimed
    outcome: dict = {}
    worker = threading.Thread(target=lambda: outcome.update(run_id=_execute_step_as_a_worker(instance, "sql-mutant")))
    worker.start()

    def waiting() -> list[tuple[str, str]]:
        pending = storage.get_concurrency_info(GENERATION_POOL).pending_steps
        return [(s.run_id, s.step_key) for s in pending if not s.run_id.startswith("other-")]

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not waiting():
        time.sleep(0.2)
    assert [key for _run, key in waiting()] == ["candidate_sql"]
    time.sleep(1.0)
    assert worker.is_alive()  # every slot is held: the step waits
    storage.free_concurrency_slot_for_step("other-0", "candidate_sql")
    worker.join(120)
    messages = _messages(instance, outcome["run_id"])
    assert any(m.startswith("step candidate_sql holds no slot of pool llm_generation") for m in messages), messages
    assert any(m.startswith("waiting for a slot of pool llm_generation") for m in messages), messages
    assert any(m.startswith("holding a slot of pool llm_generation (step candidate_sql)") for m in messages)
    assert any(m.startswith("giving back the slot of pool llm_generation (step candidate_sql)") for m in messages)
    holders = {s.run_id for s in storage.get_concurrency_info(GENERATION_POOL).claimed_slots}
    assert holders == {f"other-{n}" for n in range(1, limit)}  # its own slot was given back


def test_the_instances_claim_keeps_dagsters_queue_priority_and_concurrency_page(isolated_home):
    """The instance's own claim (the executors') takes slots through the conditional UPDATE yet keeps Dagster's
    queue: a step waits pending while the slot is held (the Concurrency page lists it), and when the slot is
    freed the waiting step of highest priority gets it first."""
    from resources.pools import claims_racily

    _, storage = _storage_with_pool(1)
    assert not claims_racily(storage)
    pool = "llm_generation"
    assert storage.claim_concurrency_slot(pool, "first", "candidate_sql", 0).is_claimed
    assert not storage.claim_concurrency_slot(pool, "low", "candidate_sql", 0).is_claimed
    assert not storage.claim_concurrency_slot(pool, "high", "candidate_sql", 5).is_claimed
    info = storage.get_concurrency_info(pool)  # what the UI's Concurrency page shows
    assert [(s.run_id, s.step_key) for s in info.claimed_slots] == [("first", "candidate_sql")]
    assert {p.run_id for p in info.pending_steps} == {"first", "low", "high"}
    storage.free_concurrency_slot_for_step("first", "candidate_sql")
    assert not storage.claim_concurrency_slot(pool, "low", "candidate_sql", 0).is_claimed, "not its turn yet"
    assert storage.claim_concurrency_slot(pool, "high", "candidate_sql", 5).is_claimed
    storage.free_concurrency_slot_for_step("high", "candidate_sql")
    assert storage.claim_concurrency_slot(pool, "low", "candidate_sql", 0).is_claimed
    storage.free_concurrency_slot_for_step("low", "candidate_sql")
    info = storage.get_concurrency_info(pool)
    assert info.claimed_slots == [] and info.pending_steps == []


# ------------------------------------------------------------------ two claims at the same instant
RACE_TRIALS = 60


def _double_bookings(storages: list, claim, tag: str) -> int:
    """Two threads (one storage object each, as two processes have) claim a one-slot pool at the same instant,
    ``RACE_TRIALS`` times; the number of trials where both were told they hold the slot."""
    import threading

    barrier, both = threading.Barrier(2), 0
    for trial in range(RACE_TRIALS):
        got: dict[int, bool] = {}

        def claimer(n: int, trial: int, got: dict[int, bool]) -> None:
            barrier.wait()
            got[n] = claim(storages[n], "race", f"{tag}-{n}-{trial}", "candidate_sql")

        threads = [threading.Thread(target=claimer, args=(n, trial, got)) for n in (0, 1)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        both += got[0] and got[1]
        for n in (0, 1):
            storages[0].free_concurrency_slot_for_step(f"{tag}-{n}-{trial}", "candidate_sql")
    return both


def _dagster_claim(storage, *key: str) -> bool:
    return bool(storage.claim_concurrency_slot(*key, 0).is_claimed)


def _race(storages: list, stock: list) -> None:
    """``storages``: the instance's own event-log storage (two objects, as two processes have); ``stock``:
    Dagster's stock storage class on the same database."""
    from resources.pools import claim_slot, claims_racily

    assert not claims_racily(storages[0]) and claims_racily(stock[0])
    storages[0].set_concurrency_slots("race", 1)
    # Dagster's stock claim selects a free row, then updates it by id: both claimers take it (the root cause of
    # steps overlapping in a one-slot pool); if this stops happening, Dagster fixed it and the overrides may go
    assert _double_bookings(stock, _dagster_claim, "d") > 0, "Dagster's claim_concurrency_slot no longer double-books"
    # the instance's own claim (the one every executor makes) and the steps' never do; nor claim_slot on a stock
    # storage (an instance whose dagster.yaml still names Dagster's class)
    assert _double_bookings(storages, _dagster_claim, "i") == 0
    assert _double_bookings(storages, claim_slot, "o") == 0
    assert _double_bookings(stock, claim_slot, "s") == 0
    assert storages[0].get_concurrency_info("race").claimed_slots == []


def test_two_claims_at_once_never_both_get_the_last_slot_on_sqlite(isolated_home):
    from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

    from resources.event_log import event_log_directory
    from resources.instance import ensure_instance_home

    ensure_instance_home()
    instances = [dg.DagsterInstance.get() for _ in range(2)]
    stock = [SqliteEventLogStorage(event_log_directory(str(isolated_home / "dagster_home"))) for _ in range(2)]
    _race([instance.event_log_storage for instance in instances], stock)


@pytest.mark.integration
@pytest.mark.e2e
def test_two_claims_at_once_never_both_get_the_last_slot_on_postgres(postgres, tmp_path, monkeypatch):
    import shutil

    from dagster_postgres.event_log.event_log import PostgresEventLogStorage

    from nl2sql_pipeline.paths import PROJECT_ROOT

    for name, value in postgres.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    shutil.copy(PROJECT_ROOT / "deploy" / "dagster.yaml", tmp_path / "dagster.yaml")
    instances = [dg.DagsterInstance.get() for _ in range(2)]
    storages = [instance.event_log_storage for instance in instances]
    assert type(storages[0]).__name__ == "SafeClaimPostgresEventLogStorage"
    _race(storages, [PostgresEventLogStorage(storages[0].postgres_url) for _ in range(2)])

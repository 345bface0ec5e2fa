"""An asset backfill over several model partitions behind one provider never exceeds that provider's limit.

The backfill is the one the catalog's "Materialize" over a partition selection creates (a
``PartitionBackfill`` of asset partitions: its runs are ``__ASSET_JOB`` runs without any tag of ours),
executed by a real ``dagster-daemon`` (backfill daemon, run queue, default run launcher: one process per
run). Four models sit behind one scripted OpenAI-compatible server on loopback that counts the calls in
flight; each model allows 2 (``limits.max_concurrency``), which is also the provider pool's limit. Four runs
that each may send 2 calls at once ask for four times the pool's slots, so the pool must hold runs back; more
models would add run processes (each importing Dagster and litellm), not pressure (the test once used six).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from eval_support import append_models, query_case, register_gold_set
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.paths import PROJECT_ROOT

# a dagster-daemon, its code server and four run processes; the backfill itself may take up to POOL_TEST_TIMEOUT
pytestmark = [pytest.mark.integration, pytest.mark.e2e, pytest.mark.timeout(1800)]

GOLD = "pool-v1"
LIMIT = 2
MODELS = [f"pooled-{i}" for i in range(1, 2 * LIMIT + 1)]  # 2 x LIMIT runs, each allowed LIMIT calls
SQL = "SELECT COUNT(*) AS n FROM anime"
# The launchpad's executor choice: one process per run instead of one more per step (this machine is small).
IN_PROCESS = {"execution": {"config": {"in_process": {}}}}


@pytest.fixture
def pooled_models(data_copy, monkeypatch):
    monkeypatch.setenv("FAKE_PROVIDER_KEY", "k")
    cases = [query_case(f"p-{i}", SQL, question=f"How many titles ({i})?") for i in range(4)]
    register_gold_set(data_copy, GOLD, cases, description="pools")
    server = FakeLLMServer(default=Reply.sql(SQL, delay_s=1.0)).start()
    entries = "".join(
        f"  {slug}:\n    kind: litellm\n    model: openai/fake-{slug}\n    api_base: {server.api_base}\n"
        f'    api_key_env: FAKE_PROVIDER_KEY\n    params: {{temperature: 0}}\n    version: "1"\n'
        f"    limits: {{max_concurrency: {LIMIT}}}\n    retry: {{max_retries: 0}}\n"
        for slug in MODELS
    )
    append_models(data_copy, entries)
    yield data_copy, server
    server.stop()


def _prepared_instance() -> dg.DagsterInstance:
    """The instance with its dagster.yaml (the daemon's automation off), partitions and the gold set."""
    from assets.graph import ALL_ASSETS, ASSET_CHECKS
    from assets.sensors import register_partitions
    from nl2sql_pipeline.sample_db import DATABASE_NAME, ensure_database
    from resources.build import build_resources
    from resources.instance import DAGSTER_YAML, ensure_instance_home

    ensure_database(DATABASE_NAME)
    home = ensure_instance_home()
    # not our marker first: ensure_instance_home leaves this file alone; only the test's automation is off
    (home / "dagster.yaml").write_text("# test instance\n" + DAGSTER_YAML + "auto_materialize:\n  enabled: false\n")
    instance = dg.DagsterInstance.get()
    register_partitions(instance)
    result = dg.materialize(
        [*ALL_ASSETS, *ASSET_CHECKS],
        selection=["gold_set"],
        instance=instance,
        resources=build_resources(),
        partition_key=GOLD,
    )
    assert result.success
    return instance


def _add_backfill(instance: dg.DagsterInstance) -> str:
    from dagster._core.execution.backfill import PartitionBackfill

    from assets.definitions import defs

    keys = [str(dg.MultiPartitionKey({"gold": GOLD, "model": m})) for m in MODELS]
    backfill = PartitionBackfill.from_asset_partitions(
        backfill_id="poolbackfill",
        asset_graph=defs.resolve_asset_graph(),
        partition_names=keys,
        asset_selection=[dg.AssetKey("candidate_sql")],
        backfill_timestamp=time.time(),
        tags={},
        dynamic_partitions_store=instance,
        all_partitions=False,
        title=None,
        description=None,
        run_config=IN_PROCESS,
    )
    instance.add_backfill(backfill)
    return backfill.backfill_id


def _stop_group(process: subprocess.Popen) -> None:
    """Stop the daemon and everything it started (code server, run and step processes: its process group)."""
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pass
    try:
        os.killpg(process.pid, signal.SIGKILL)  # what ignored SIGTERM (code servers, runs)
    except ProcessLookupError:
        pass


def test_an_asset_backfill_over_the_models_of_one_provider_holds_its_limit(pooled_models, tmp_path):
    data, server = pooled_models
    instance = _prepared_instance()
    backfill_id = _add_backfill(instance)
    daemon = Path(sys.executable).with_name("dagster-daemon")
    log_path = tmp_path / "daemon.log"
    with log_path.open("w") as log:
        process = subprocess.Popen(
            [str(daemon), "run", "-w", "workspace.yaml"],
            cwd=PROJECT_ROOT,
            env=dict(os.environ),
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + float(os.environ.get("POOL_TEST_TIMEOUT", "900"))
        runs: list = []
        while time.monotonic() < deadline and process.poll() is None:
            runs = instance.get_runs(filters=dg.RunsFilter(tags={"dagster/backfill": backfill_id}))
            if len(runs) == len(MODELS) and all(r.is_finished for r in runs):
                break
            time.sleep(0.5)  # a database read per poll; runs finish seconds apart
        logs = log_path.read_text()[-4000:]
        assert len(runs) == len(MODELS), f"the backfill launched {len(runs)} runs:\n{logs}"
        assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), ([(r.run_id, r.status) for r in runs], logs)
    finally:
        _stop_group(process)
    assert {r.job_name for r in runs} == {"__ASSET_JOB"}
    assert all("nl2sql/provider" not in r.tags for r in runs)  # no tag of ours: only the pool can hold it
    assert server.hits == len(MODELS) * 4  # every case of every model was asked once
    assert 1 <= server.max_in_flight <= LIMIT, server.max_in_flight
    waited = [
        r.run_id
        for r in runs
        if any("waiting for a slot of pool llm.openai@" in (e.message or "") for e in instance.all_logs(r.run_id))
    ]
    # the limit was under pressure: runs queued for the provider's pool, or calls filled its slots
    assert waited or server.max_in_flight == LIMIT
    from nl2sql_pipeline.generation.registry import get_model
    from resources.pools import provider_pool

    pool = provider_pool(get_model(MODELS[0]))
    assert pool == f"llm.openai@http_127.0.0.1_{server.port}_v1"
    assert instance.event_log_storage.get_concurrency_info(pool).slot_count == LIMIT

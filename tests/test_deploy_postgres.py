"""deploy/dagster.yaml on a real PostgreSQL server: two model partitions evaluated at once (integration).

A throwaway PostgreSQL cluster (tests/postgres_server.py) on a free loopback port holds the run, event log
and schedule storage; the Parquet outputs go to a ``file://`` URL (``NL2SQL_ASSETS_URL``) outside the
storage root, as workers on other machines would share them. Two ``nl2sql-eval run`` processes, one model
each, start together; afterwards the runs are in PostgreSQL, all successful, each model partition once,
and the baselines hold one row per model carrying that model's Dagster run id.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import dagster as dg
import duckdb
import pandas as pd
import pytest
import yaml
from eval_support import copy_data, query_case, register_gold_set, seed_sample_database

from nl2sql_pipeline.paths import PROJECT_ROOT
from nl2sql_pipeline.runs import list_runs

pytestmark = pytest.mark.integration

GOLD = "deploy-v1"
MODELS = ("gold-echo", "sql-mutant")
DEPLOY_YAML = PROJECT_ROOT / "deploy" / "dagster.yaml"


def test_the_deploy_config_keeps_the_local_run_limits():
    from resources.instance import DAGSTER_YAML

    deploy, local = yaml.safe_load(DEPLOY_YAML.read_text()), yaml.safe_load(DAGSTER_YAML)
    assert deploy["telemetry"] == {"enabled": False}
    assert deploy["run_coordinator"]["class"] == "QueuedRunCoordinator"
    storages = {name: deploy[name] for name in ("run_storage", "event_log_storage", "schedule_storage")}
    assert storages["event_log_storage"]["module"] == "resources.postgres_event_log", "slot claims never double-book"
    dbs = [dict(storage["config"]["postgres_db"]) for storage in storages.values()]
    assert all(db == dbs[0] for db in dbs), "one database for runs, event log and schedules"
    db = dbs[0]
    assert db.pop("scheme") == "postgresql+psycopg2"
    assert set(db) == {"hostname", "port", "db_name", "username", "password"}
    assert all(set(v) == {"env"} for v in db.values()), "connection and credentials from the environment"
    assert (
        deploy["concurrency"]["runs"]["tag_concurrency_limits"]
        == local["concurrency"]["runs"]["tag_concurrency_limits"]
    )
    assert deploy["concurrency"]["pools"] == local["concurrency"]["pools"]
    assert deploy["run_monitoring"] == local["run_monitoring"], "dead runs fail and give back their pool slots"


@pytest.mark.e2e
@pytest.mark.timeout(1200)
def test_two_model_partitions_at_once_on_the_postgres_instance(postgres, tmp_path, sample_database):
    data, home = copy_data(tmp_path / "data"), tmp_path / "nl2sql"
    seed_sample_database(home, sample_database)
    cases = [
        query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"),
        query_case("movies", "SELECT title FROM anime WHERE format = 'Movie' AND season_year = 2025 ORDER BY title"),
    ]
    register_gold_set(data, GOLD, cases, description="deploy")
    dagster_home = home / "dagster_home"
    dagster_home.mkdir(parents=True)
    shutil.copy(DEPLOY_YAML, dagster_home / "dagster.yaml")
    shared_assets = tmp_path / "shared" / "assets"
    env = {
        **os.environ,
        **postgres.env,
        "NL2SQL_DATA": str(data),
        "NL2SQL_HOME": str(home),
        "DAGSTER_HOME": str(dagster_home),
        "NL2SQL_ASSETS_URL": shared_assets.as_uri(),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
    }

    procs = {
        slug: subprocess.Popen(
            [sys.executable, "-m", "nl2sql_cli.main", "run", "--gold-set", GOLD, "--model", slug, "--json"],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for slug in MODELS
    }
    reported = {}
    for slug, proc in procs.items():
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, f"{slug} exited {proc.returncode}: {err[-3000:]}\n{postgres.log()}"
        [run] = json.loads(out)["runs"]
        reported[slug] = run["scores"]["run_id"]

    # run storage: in PostgreSQL (no SQLite storage under the Dagster home), every run successful
    assert not list(dagster_home.rglob("*.db")), "the instance fell back to SQLite storage"
    stored = {row[0] for row in postgres.query("SELECT run_id FROM runs")}
    assert set(reported.values()) <= stored
    for key in ("DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_DB", "DAGSTER_PG_USERNAME", "DAGSTER_PG_PASSWORD"):
        os.environ[key] = env[key]
    try:
        instance = dg.DagsterInstance.from_config(str(dagster_home))
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "SafeClaimPostgresEventLogStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
        assert type(instance.run_coordinator).__name__ == "QueuedRunCoordinator"
        runs = instance.get_runs()
        assert runs and all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs), [(r.run_id, r.status) for r in runs]
        for slug, run_id in reported.items():
            model_runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": f"{GOLD}|{slug}"}))
            assert [r.run_id for r in model_runs] == [run_id], f"{slug}: one run of its partition"
        gold_runs = instance.get_runs(dg.RunsFilter(tags={"dagster/partition": GOLD}))
        assert len(gold_runs) == 1, "the gold version was prepared once for both models"
        instance.dispose()
    finally:
        for key in (
            "DAGSTER_PG_HOST",
            "DAGSTER_PG_PORT",
            "DAGSTER_PG_DB",
            "DAGSTER_PG_USERNAME",
            "DAGSTER_PG_PASSWORD",
        ):
            os.environ.pop(key, None)

    # baselines: one comparable row per model with its own run id; the Parquet outputs on the shared URL
    rows = list_runs(home / "baselines.duckdb", GOLD)
    assert sorted((r["model"], r["run_id"]) for r in rows) == sorted(reported.items())
    assert all(r["comparable"] for r in rows)
    by_model = {r["model"]: r for r in rows}
    assert by_model["gold-echo"]["semantic_correctness_rate"] == 1.0
    for slug, run_id in reported.items():
        assert (shared_assets / "run_scores" / f"gold={GOLD}" / f"model={slug}.runs" / f"{run_id}.parquet").exists()
    assert not (home / "assets").exists() or not list((home / "assets").rglob("*.parquet"))

    # the readers of stored runs go through the same URL: exports and the DuckDB views over it
    out, views = tmp_path / "export", tmp_path / "views.duckdb"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "nl2sql_cli.main",
            "export",
            "--out",
            str(out),
            "--format",
            "csv",
            "--duckdb",
            str(views),
        ],
        env=env,
        cwd=PROJECT_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    exported = pd.read_csv(out / "leaderboard.csv")
    assert sorted(exported["model"]) == sorted(MODELS) and set(exported["run_id"]) == set(reported.values())
    with duckdb.connect(str(views), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM run_scores").fetchone()[0] == len(MODELS)


def test_an_instance_whose_schema_another_process_was_creating_is_opened_again(monkeypatch):
    """Two processes on an empty database both create Dagster's tables; the loser's ``already exists`` is not
    an error: the instance is opened again and finds the tables (seen: ``type "run_tags" already exists``)."""
    import dagster as dg
    import sqlalchemy.exc

    from resources import instance as instance_module

    monkeypatch.setattr(instance_module.time, "sleep", lambda _s: None)
    calls = []

    def get():
        calls.append(1)
        if len(calls) == 1:
            raise sqlalchemy.exc.ProgrammingError(
                "CREATE TABLE run_tags", {}, Exception('type "run_tags" already exists')
            )
        return "the instance"

    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(get))
    assert instance_module.open_instance() == "the instance"
    assert len(calls) == 2

    def other_error():
        raise sqlalchemy.exc.ProgrammingError("SELECT", {}, Exception("permission denied for table runs"))

    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(other_error))
    with pytest.raises(sqlalchemy.exc.ProgrammingError, match="permission denied"):
        instance_module.open_instance()

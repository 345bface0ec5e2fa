"""Per-run integrity: many ``nl2sql-eval run`` processes at once lose, misattribute and crash nothing.

``CROWD`` processes start together, two per model: every gold x model partition has two evaluations
contending for its lock and its scores folder, and all of them write the one baselines file and the one
Dagster instance at the same time. Six (three models, two each) is enough for that on a 2-core machine: each
process spends seconds importing before it evaluates, so all of them overlap; more processes add CPU time, not
new contention (the suite once ran twenty).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import dagster as dg
import pytest
from eval_support import append_models, offline_model, query_case, register_gold_set

from nl2sql_pipeline.runs import list_runs

GOLD = "par-v1"
EXTRA_MODELS = offline_model("echo-a", version="a")

CROWD = 6
# CROWD CLI processes on a small machine: each imports litellm and Dagster, and they queue for the same files.
pytestmark = [pytest.mark.e2e, pytest.mark.timeout(1800)]


@pytest.fixture
def env(eval_world):
    cases = [
        query_case("tv", "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"),
        query_case("movies", "SELECT title FROM anime WHERE format = 'Movie' AND season_year = 2025 ORDER BY title"),
    ]
    register_gold_set(eval_world.data, GOLD, cases, description="parallel")
    append_models(eval_world.data, EXTRA_MODELS)
    return {**os.environ, **eval_world.env(), "LITELLM_LOCAL_MODEL_COST_MAP": "True"}


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "nl2sql_cli.main", *args]


def test_parallel_runs_lose_and_misattribute_nothing(env, isolated_home):
    # the sample database and the gold set exist once before the crowd arrives (as after `make run`)
    first = subprocess.run(
        _cli("run", "--gold-set", GOLD, "--model", "gold-echo", "--json"),
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert first.returncode == 0, first.stderr
    slugs = ["gold-echo", "sql-mutant", "echo-a"]
    plan = [slugs[i % len(slugs)] for i in range(CROWD)]  # two per model: each partition is contended
    # --force: every process evaluates (without it, a run finding its model's scores current reuses them)
    procs = [
        subprocess.Popen(
            _cli("run", "--gold-set", GOLD, "--model", slug, "--json", "--force"),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for slug in plan
    ]
    outputs = [(slug, *p.communicate(timeout=1200), p.returncode) for slug, p in zip(plan, procs)]
    for slug, _out, err, code in outputs:
        assert code == 0, f"{slug} exited {code}: {err[-2000:]}"
    reported = {}
    for slug, out, _, _ in outputs:
        runs = json.loads(out)["runs"]
        assert [r["model"] for r in runs] == [slug]
        scores = runs[0]["scores"]
        assert scores["model"] == slug and scores["gold_set"] == GOLD
        reported[scores["run_id"]] = (slug, scores["semantic_correctness_rate"])
    assert len(reported) == CROWD, "every process reports its own run id"

    rows = list_runs(isolated_home / "baselines.duckdb", GOLD)
    by_run = Counter(row["run_id"] for row in rows)
    assert all(n == 1 for n in by_run.values())
    recorded = {row["run_id"]: (row["model"], row["semantic_correctness_rate"]) for row in rows}
    for run_id, (slug, rate) in reported.items():
        assert run_id in recorded, f"baseline row of {slug} run {run_id} lost"
        assert recorded[run_id] == (slug, rate), f"run {run_id} misattributed"
    assert len(rows) == CROWD + 1
    assert all(row["comparable"] for row in rows)

    instance = dg.DagsterInstance.from_config(env["DAGSTER_HOME"])
    for run_id, (slug, _) in reported.items():
        run = instance.get_run_by_id(run_id)
        assert run.status == dg.DagsterRunStatus.SUCCESS
        assert run.tags["dagster/partition"] == f"{GOLD}|{slug}"
    # every run wrote its own scores file; the partition's latest file is one of them, whole
    runs_dir = isolated_home / "assets" / "run_scores" / f"gold={GOLD}"
    for slug in slugs:
        own = {p.stem for p in (runs_dir / f"model={slug}.runs").glob("*.parquet")}
        assert {r for r, (s, _) in reported.items() if s == slug} <= own

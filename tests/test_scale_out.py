"""The deployment a team grows into on one machine, on real engines (integration, e2e).

- Dagster's run, event log and schedule storage in PostgreSQL (``deploy/dagster.yaml``, a throwaway cluster);
- the Parquet outputs on an S3-compatible store: a local S3 server (moto in server mode) started here,
  reached through fsspec/s3fs (``NL2SQL_ASSETS_URL=s3://…`` with the endpoint and credentials in the
  environment, as a deployment sets them);
- every step on Celery workers through a Redis broker (``dagster-celery``, Debian's ``redis-server`` on a free
  loopback port), two workers.

Four models are evaluated on a small gold set there, and with ``nl2sql-eval run`` on a local storage root:
two offline models and two litellm models behind ONE scripted OpenAI-compatible server on loopback
(``tests/fake_llm_server.py``, in this process; the workers call it over TCP), deterministic answers, one
provider pool of limit 1, a 0.4 s delay per reply. The verdicts agree row for row with the local run's. The
four runs go at once (one orchestrating process each), and the pools hold across the two workers:
- the provider pool: the server never had two requests in flight, and the two litellm runs' holdings of the
  pool (the generation steps' "holding a slot …" / "giving back the slot …" log lines) never overlap. Only
  llm-exact sets ``max_concurrency: 1``: the machine-wide in-flight slots do not cover llm-off's calls, so
  nothing but the pool keeps the two runs apart;
- ``llm_generation``: every generation step held a slot of it (claimed by dagster-celery's executor, or by
  the step where it holds none), never more at once than its limit.
A package that cannot be had skips the test with its reason (``.ci/run`` installs ``redis-server``).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from eval_support import append_models, copy_data, query_case, register_gold_set, seed_sample_database
from fake_llm_server import FakeLLMServer, Reply, last_user_message

from nl2sql_pipeline.paths import PROJECT_ROOT

pytestmark = [pytest.mark.integration, pytest.mark.e2e]

GOLD = "scale-v1"
OFFLINE = ("gold-echo", "sql-mutant")
LLM = ("llm-exact", "llm-off")  # litellm models behind ONE scripted OpenAI-compatible server: one provider pool
MODELS = (*OFFLINE, *LLM)
REPLY_DELAY_S = 0.4  # per reply: a generation step of three cases takes over a second, so overlap would show
CASES = {
    "tv": "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'",
    "movies": "SELECT title FROM anime WHERE format = 'Movie' AND season_year = 2025 ORDER BY title",
    "recent": "SELECT COUNT(*) AS n FROM anime WHERE season_year = 2025",
}
WRONG = {"recent": "SELECT COUNT(*) AS n FROM anime WHERE season_year = 2024"}  # what llm-off answers instead
BUCKET = "nl2sql-scale"
DEPLOY_YAML = PROJECT_ROOT / "deploy" / "dagster.yaml"
TESTS = Path(__file__).resolve().parent
IGNORED = ("run_id", "started_at", "finished_at", "latency_ms", "oracle_latency_ms", "created_at")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen | None, what: str, deadline_s: float = 30.0) -> None:
    deadline = time.monotonic() + deadline_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on 127.0.0.1:{port} within {deadline_s:.0f} s")


def _stop_group(proc: subprocess.Popen) -> None:
    """Stop ``proc`` and the processes it started (its own session): SIGTERM, then SIGKILL after 60 s."""
    for sig, wait_s in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _require(module: str) -> None:
    try:
        __import__(module)
    except ImportError as exc:
        pytest.skip(f"{module} is not installed ({exc}); pip install -c constraints.txt -e '.[dev]'")


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory):
    binary = shutil.which("redis-server") or (
        "/usr/bin/redis-server" if Path("/usr/bin/redis-server").exists() else None
    )
    if binary is None:
        pytest.skip("no redis-server binary (Debian's redis-server package; .ci/run installs it as root)")
    _require("redis")
    port, folder = _free_port(), tmp_path_factory.mktemp("redis")
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([*args, "--dir", str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_for_port(port, proc, "redis-server")
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.fixture(scope="module")
def s3_env():
    """A moto S3 server on a free loopback port with one bucket; the environment that points s3fs at it."""
    for module in ("moto.server", "s3fs", "boto3"):
        _require(module)
    from moto.server import ThreadedMotoServer

    port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port)
    server.start()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "FSSPEC_S3_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    try:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=env["AWS_ENDPOINT_URL"],
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=BUCKET)
        yield env
    finally:
        server.stop()


def _cli_run(env: dict[str, str]) -> subprocess.CompletedProcess:
    args = [sys.executable, "-m", "nl2sql_cli.main", "run", "--gold-set", GOLD, "--json"]
    for slug in MODELS:
        args += ["--model", slug]
    return subprocess.run(args, env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=600)


def _comparable(frame: pd.DataFrame) -> pd.DataFrame:
    """The verdicts without what differs between two runs of the same inputs (run ids, timings)."""
    drop = [c for c in frame.columns if c in IGNORED or c.endswith(("_ms", "_seconds", "_at"))]
    return (
        frame.drop(columns=drop)
        .sort_values(["case_id", *(["sample"] if "sample" in frame else [])])
        .reset_index(drop=True)
    )


def _llm_models(api_base: str) -> str:
    """The two litellm models' ``models.yml`` entries. Only llm-exact sets ``max_concurrency: 1``; llm-off sets no
    limit (one call at a time in its own run): the machine-wide in-flight slots (``max_concurrency``) then
    cover llm-exact's calls only, so nothing but the provider pool (limit 1, the largest ``max_concurrency``
    behind the server) keeps the two runs' calls apart."""
    entry = (
        "  {slug}:\n    kind: litellm\n    model: openai/{slug}\n    api_base: {api_base}\n"
        "    api_key_env: FAKE_PROVIDER_KEY\n    prompt_template: nl2sql-v1\n    params: {{temperature: 0}}\n"
        '    version: "1"\n    retry: {{max_retries: 0}}\n{limits}'
    )
    return entry.format(slug=LLM[0], api_base=api_base, limits="    limits: {max_concurrency: 1}\n") + entry.format(
        slug=LLM[1], api_base=api_base, limits=""
    )


def _answer(index: int, body: dict) -> Reply:
    """llm-exact answers every case with its gold SQL; llm-off gets ``recent`` wrong (the same every time)."""
    case_id = last_user_message(body).strip().removeprefix("q ")
    sql = (WRONG if body.get("model") == LLM[1] else {}).get(case_id, CASES.get(case_id))
    if sql is None:
        return Reply.text("I do not know how to answer that.", delay_s=REPLY_DELAY_S)
    return Reply.sql(sql, delay_s=REPLY_DELAY_S)


def _overlapping(spans: list[tuple[float, float]]) -> list[tuple]:
    """The pairs of (start, end) spans that overlap in time."""
    ordered = sorted(spans)
    return [(a, b) for a, b in zip(ordered, ordered[1:], strict=False) if b[0] < a[1]]


def _most_at_once(spans: list[tuple[float, float]]) -> int:
    """The largest number of (start, end) spans open at one instant."""
    edges = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans])  # an end before a start
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.timeout(900)
def test_four_models_on_celery_workers_with_s3_parquet_match_the_local_run_and_the_pools_hold(
    postgres, redis_url, s3_env, tmp_path, sample_database
):
    _require("dagster_celery")
    data = copy_data(tmp_path / "data")
    cases = [query_case(case_id, sql) for case_id, sql in CASES.items()]
    register_gold_set(data, GOLD, cases, description="scale-out")
    # on loopback in this process: the CLI's run and the Celery workers (other processes) call it
    server = FakeLLMServer(responder=_answer).start()
    append_models(data, _llm_models(server.api_base))
    base = {k: v for k, v in os.environ.items() if not k.startswith(("NL2SQL_", "DAGSTER_"))}
    base |= {"NL2SQL_DATA": str(data), "LITELLM_LOCAL_MODEL_COST_MAP": "True", "FAKE_PROVIDER_KEY": "k"}
    try:
        _check_scale_out(server, base, data, postgres, redis_url, s3_env, tmp_path, sample_database, len(cases))
    finally:
        server.stop()


def _check_scale_out(server, base, data, postgres, redis_url, s3_env, tmp_path, sample_database, n_cases):
    # the local run: nl2sql-eval run on a local storage root, in process
    local_home = tmp_path / "local"
    seed_sample_database(local_home, sample_database)
    done = _cli_run({**base, "NL2SQL_HOME": str(local_home), "DAGSTER_HOME": str(local_home / "dagster_home")})
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
    local = {r["model"]: r for r in json.loads(done.stdout)["runs"]}
    assert set(local) == set(MODELS)
    assert server.hits == len(LLM) * n_cases
    server.reset_peak()

    # the distributed run: PostgreSQL instance, Parquet on S3, steps on two Celery workers
    home = tmp_path / "scale"
    seed_sample_database(home, sample_database)
    dagster_home = home / "dagster_home"
    dagster_home.mkdir(parents=True)
    shutil.copy(DEPLOY_YAML, dagster_home / "dagster.yaml")
    assets_url = f"s3://{BUCKET}/nl2sql/assets"
    env = {
        **base,
        **postgres.env,
        **s3_env,
        "NL2SQL_HOME": str(home),
        "DAGSTER_HOME": str(dagster_home),
        "NL2SQL_ASSETS_URL": assets_url,
        "PYTHONPATH": os.pathsep.join([str(PROJECT_ROOT), str(TESTS)]),
        # the worker CLI starts `celery` from PATH: the one installed beside this interpreter
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), base.get("PATH", "")]),
    }
    celery_config = {"broker": redis_url, "backend": redis_url}
    worker_yaml = tmp_path / "celery.yaml"
    worker_yaml.write_text(json.dumps({"execution": {"config": celery_config}}))
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "dagster_celery.cli",
                "worker",
                "start",
                "-A",
                "dagster_celery.app",
                "-y",
                str(worker_yaml),
                "--name",
                f"scale-{n}",
                "--loglevel",
                "WARNING",
                "--",
                "--concurrency",
                "1",
            ],
            env=env,
            cwd=PROJECT_ROOT,
            stdout=(tmp_path / f"worker-{n}.log").open("w"),
            stderr=subprocess.STDOUT,
            start_new_session=True,  # the CLI starts `celery worker` as its child: stopped together, by group
        )
        for n in (1, 2)
    ]
    script = TESTS / "scale_out_driver.py"
    try:
        driver = subprocess.run(
            [sys.executable, str(script), GOLD, json.dumps(celery_config), *MODELS],
            env=env,
            cwd=PROJECT_ROOT,
            capture_output=True,
            text=True,
            timeout=700,
        )
    finally:
        for worker in workers:
            _stop_group(worker)
    logs = "\n".join((tmp_path / f"worker-{n}.log").read_text()[-2000:] for n in (1, 2))
    assert driver.returncode == 0, driver.stdout[-3000:] + driver.stderr[-5000:] + logs
    report = json.loads(driver.stdout.strip().splitlines()[-1])

    # every step ran on a Celery worker, and both workers took steps
    assert set(report["runs"]) == {"sample_database", "gold", *MODELS}
    assert all(r["success"] for r in report["runs"].values()), report
    assert len(report["workers"]) == 2, f"steps ran on {report['workers']}"

    # the Parquet outputs are on S3 (and nothing under the storage root's assets/)
    import s3fs

    fs = s3fs.S3FileSystem(key="testing", secret="testing", client_kwargs={"endpoint_url": s3_env["AWS_ENDPOINT_URL"]})
    assert not (home / "assets").exists() or not list((home / "assets").rglob("*.parquet"))
    for slug in MODELS:
        run_id = report["runs"][slug]["run_id"]
        remote = f"{BUCKET}/nl2sql/assets/case_verdicts/gold={GOLD}/model={slug}.runs/{run_id}.parquet"
        assert fs.exists(remote), remote
        with fs.open(remote, "rb") as handle:
            distributed = pd.read_parquet(handle)
        on_local = pd.read_parquet(local_home / "assets" / "case_verdicts" / f"gold={GOLD}" / f"model={slug}.parquet")
        assert len(distributed) == n_cases
        pd.testing.assert_frame_equal(_comparable(distributed), _comparable(on_local), check_dtype=False)

    # scores agree with the local run's; gold-echo and llm-exact are exact, llm-off misses one case of three
    for slug in MODELS:
        for metric in ("semantic_correctness_rate", "sql_execution_success_rate"):
            assert report["scores"][slug][metric] == local[slug]["scores"][metric], (slug, metric)
    assert report["scores"]["gold-echo"]["semantic_correctness_rate"] == 1.0
    assert report["scores"][LLM[0]]["semantic_correctness_rate"] == 1.0
    assert report["scores"][LLM[1]]["semantic_correctness_rate"] == pytest.approx(2 / 3)

    # the provider pool holds across the two workers: the server never had two calls at once, and the two
    # litellm runs' holdings of the provider's pool (limit 1) never overlapped
    assert server.hits == 2 * len(LLM) * n_cases  # the distributed run asked every case again (its own cache)
    assert server.max_in_flight == 1, server.max_in_flight
    holdings = report["holdings"]
    assert all(h["end"] is not None for h in holdings), holdings  # every slot was given back
    provider = [h for h in holdings if h["pool"].startswith("llm.openai@http_127.0.0.1_")]
    assert sorted(h["run"] for h in provider) == sorted(LLM), holdings
    assert report["limits"][provider[0]["pool"]] == 1
    assert not _overlapping([(h["start"], h["end"]) for h in provider]), provider

    # every generation step held a slot of llm_generation (claimed by the executor, or by the step where the
    # executor claims none), and never more of them at once than its limit
    generation = [h for h in holdings if h["pool"] == "llm_generation"]
    assert sorted(h["run"] for h in generation) == sorted(MODELS), holdings
    assert _most_at_once([(h["start"], h["end"]) for h in generation]) <= report["limits"]["llm_generation"]
    assert len(report["generation_steps"]) == len(MODELS)

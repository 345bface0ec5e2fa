"""`dg dev -w workspace.yaml` (what `make ui` runs) loads the code location and serves the asset graph (integration)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from nl2sql_pipeline.paths import PROJECT_ROOT

pytestmark = pytest.mark.integration

QUERY = "{ assetNodes { assetKey { path } partitionDefinition { description } } }"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _graphql(port: int, query: str) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def test_dg_dev_serves_the_asset_graph(tmp_path):
    port = _free_port()
    home = tmp_path / "dagster_home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "NL2SQL_HOME": str(tmp_path / "nl2sql")}
    dg = Path(sys.executable).with_name("dg")  # dagster-dg-cli: `dg dev` supersedes `dagster dev`
    log = (tmp_path / "dagster-dev.log").open("w")
    process = subprocess.Popen(
        [str(dg), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=PROJECT_ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        nodes = None
        while time.monotonic() < deadline:
            if process.poll() is not None:
                break
            try:
                data = _graphql(port, QUERY)
                nodes = data.get("data", {}).get("assetNodes")
                if nodes:
                    break
            except OSError:
                pass
            time.sleep(1)
        log.flush()
        assert nodes, f"dg dev did not serve the asset graph:\n{(tmp_path / 'dagster-dev.log').read_text()[-3000:]}"
        names = {"/".join(n["assetKey"]["path"]) for n in nodes}
        assert {
            "sample_database",
            "gold_set",
            "oracle_results",
            "candidate_sql",
            "candidate_results",
            "case_verdicts",
            "run_scores",
            "baselines",
        } <= names
        errors = _graphql(
            port,
            "{ workspaceOrError { ... on Workspace { locationEntries { name locationOrLoadError { __typename } } } } }",
        )
        entries = errors["data"]["workspaceOrError"]["locationEntries"]
        assert entries and all(e["locationOrLoadError"]["__typename"] == "RepositoryLocation" for e in entries)
    finally:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
        log.close()

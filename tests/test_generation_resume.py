"""A generate run killed half-way (SIGKILL) loses nothing it was answered: the next run asks only the rest."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.paths import PROJECT_ROOT

# two generate processes (each imports litellm), the first killed half-way: multi-process (e2e)
pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.e2e,
]

TOTAL = 12
ANSWERED_BEFORE_KILL = 5

# The run that gets killed, and the one that resumes, build exactly the same spec, cases and prompt context.
SETUP = textwrap.dedent(
    """
    from types import MappingProxyType
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.generation import GenerationCache, generate_candidates
    from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext
    from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices

    def setup(api_base, cache_root, total):
        spec = ModelSpec(slug="resume", kind="litellm", model="openai/resume", api_base=api_base,
                         params=MappingProxyType({"temperature": 0}), prices=Prices(1.0, 1.0),
                         limits=Limits(max_concurrency=3))
        cases = [case_from_dict({"id": f"c{i:02d}", "domain": "d", "category": "single_table",
                                 "question": f"How many rows in table {i}?", "database": "db",
                                 "expected_sql": f"SELECT {i}"}) for i in range(total)]
        context = PromptContext({"db": DatabasePromptText("CREATE TABLE t (x INT);", "", "2026-06-30")})
        return spec, cases, context, GenerationCache(cache_root)
    """
)
WORKER = SETUP + textwrap.dedent(
    """
    import sys
    spec, cases, context, cache = setup(sys.argv[1], sys.argv[2], int(sys.argv[3]))
    generate_candidates(cases, spec, cache=cache, context=context)
    """
)


def _cache_entries(root) -> int:
    return len(list(root.rglob("*.json")))


def test_killed_run_resumes_without_asking_again(tmp_path):
    cache_root = tmp_path / "cache"
    release = threading.Event()
    # the first answers go out; every later request hangs until the worker is dead
    responder = lambda index, body: (  # noqa: E731
        Reply.sql(f"SELECT {index}") if index < ANSWERED_BEFORE_KILL else Reply(hold=release)
    )
    with FakeLLMServer(responder=responder) as server:
        env = {**os.environ, "NL2SQL_HOME": str(tmp_path / "home"), "PYTHONPATH": str(PROJECT_ROOT)}
        worker = subprocess.Popen(
            [sys.executable, "-c", WORKER, server.api_base, str(cache_root), str(TOTAL)],
            cwd=PROJECT_ROOT,
            env=env,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 180  # a loaded machine starts the worker (litellm import) slowly
            while _cache_entries(cache_root) < ANSWERED_BEFORE_KILL and time.monotonic() < deadline:
                assert worker.poll() is None, "the worker ended before it was killed"
                time.sleep(0.02)
            assert _cache_entries(cache_root) == ANSWERED_BEFORE_KILL
            # the worker's other threads send their next calls as the answers come in: wait for one to arrive
            # (a call can reach the server a moment after the last answer was cached)
            while server.hits <= ANSWERED_BEFORE_KILL and time.monotonic() < deadline:
                time.sleep(0.02)
            assert server.hits > ANSWERED_BEFORE_KILL  # more calls were in flight when it died
            assert _cache_entries(cache_root) == ANSWERED_BEFORE_KILL
        finally:
            worker.send_signal(signal.SIGKILL)
            worker.wait(timeout=10)
            release.set()
        assert worker.returncode == -signal.SIGKILL
        hits_before = server.hits

        # the next run, against a healthy server
        server.responder = lambda index, body: Reply.sql(f"SELECT {index}")
        namespace: dict = {}
        exec(SETUP, namespace)
        spec, cases, context, cache = namespace["setup"](server.api_base, str(cache_root), TOTAL)
        records = namespace["generate_candidates"](cases, spec, cache=cache, context=context)
        assert server.hits - hits_before == TOTAL - ANSWERED_BEFORE_KILL
        assert sum(r.cached for r in records) == ANSWERED_BEFORE_KILL
        assert all(r.error_class is None and r.generated_sql for r in records)
        assert _cache_entries(cache_root) == TOTAL
        assert not list(cache_root.rglob("*.tmp"))  # no torn temp file left behind by the kill

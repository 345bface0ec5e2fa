"""A command system whose stdout gets out of step with the requests (a log line before each reply, a reply
to another request) never has a case scored with another case's answer: the call fails with its reason and
the process starts afresh."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.generation.systems.command import close_processes, process_for
from nl2sql_pipeline.generation.systems.contract import SystemRequest
from nl2sql_pipeline.generation.systems.transport import _send

NOISY = """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    print("loading model weights...", flush=True)  # a log line on the protocol's stream
    print(json.dumps({"sql": "SELECT '%s' AS answered_for" % request["case_id"]}), flush=True)
"""

LAGGING = """
import json, sys
previous = None
for line in sys.stdin:
    request = json.loads(line)
    answer_for = previous or request  # answers the request before this one, naming it
    print(json.dumps({"request_id": answer_for["request_id"], "sql": "SELECT '%s' AS a" % answer_for["case_id"]}), flush=True)
    previous = request
"""


def _spec(tmp_path: Path, script: str, slug: str):
    path = tmp_path / f"{slug}.py"
    path.write_text(script, encoding="utf-8")
    spec = load_registry()["reference-command"]
    system = dataclasses.replace(spec.system, command=(sys.executable, str(path)))
    return dataclasses.replace(spec, system=system, slug=slug, timeout_s=60.0)


def _request(case_id: str) -> SystemRequest:
    return SystemRequest(request_id=f"{case_id}/s0/c0/t1", case_id=case_id, question="q", database="anime_platform")


@pytest.mark.parametrize(("script", "reason"), [(NOISY, "not JSON"), (LAGGING, "out of step")])
def test_a_reply_out_of_step_fails_its_call_and_the_next_case_is_never_given_it(tmp_path, script, reason):
    spec = _spec(tmp_path, script, f"noisy-{reason.split()[-1]}")
    try:
        for case_id in ("case-1", "case-2", "case-3"):
            try:
                response = _send(spec, _request(case_id))
            except GenerationError as exc:
                assert reason in str(exc)
                continue
            assert response.sql == f"SELECT '{case_id}' AS a" or case_id in response.sql  # only its own answer
        assert process_for(spec.slug, spec.config_hash, spec.system).starts >= 2  # restarted after the bad reply
    finally:
        close_processes()


def test_a_process_that_dies_says_what_it_wrote_on_stderr(tmp_path):
    script = "import sys\nsys.stderr.write('fatal: cannot load model\\n')\nsys.exit(1)\n"
    spec = _spec(tmp_path, script, "dies-at-start")
    try:
        with pytest.raises(
            ConnectionResetError,
            match="exited with code 1 before answering; its stderr ended with: fatal: cannot load model",
        ):
            _send(spec, _request("case-1"))
    finally:
        close_processes()

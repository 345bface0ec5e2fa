"""Progress on long work: the core's tracker, its sinks (the CLI's bar and lines, the Dagster log), and a real
``nl2sql-eval run`` against a scripted provider answering in 200 ms, read from the outside while it runs."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import threading
import time
from types import SimpleNamespace

import pytest
from eval_support import append_models, query_case, register_gold_set
from fake_llm_server import FakeLLMServer, Reply, last_user_message

from nl2sql_cli.progress_view import ProgressView, live_line
from nl2sql_pipeline import progress
from nl2sql_pipeline.paths import PROJECT_ROOT
from nl2sql_pipeline.progress import (
    ProgressSnapshot,
    ProgressTracker,
    ThrottledSink,
    left_out_cases,
    units_of_questions,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_tracker_counts_calls_retries_tokens_cost_and_failures_by_cause():
    clock, seen = FakeClock(), []
    tracker = ProgressTracker("generate", "m", sinks=(seen.append,), clock=clock, emit_interval_s=0)
    tracker.begin(4)
    tracker.unit_started()
    tracker.unit_started()
    assert seen[-1].in_flight == 2 and seen[-1].done == 0 and seen[-1].eta_s is None
    clock.now += 2.0
    tracker.unit_finished(calls=1, attempts=3, input_tokens=100, output_tokens=10, cost_usd=0.25, cost_expected=True)
    tracker.unit_finished(calls=1, attempts=1, failure="no_sql", cost_usd=None, cost_expected=True)
    tracker.unit_finished(cached=True, input_tokens=50, output_tokens=5, cost_usd=0.5, started=False)
    snap = tracker.snapshot()
    assert (snap.done, snap.total, snap.in_flight, snap.calls, snap.retries, snap.cached) == (3, 4, 0, 2, 2, 1)
    assert (snap.input_tokens, snap.output_tokens, snap.cost_usd, snap.cost_unknown) == (150, 15, 0.75, 1)
    assert snap.failures == (("no_sql", 1),)
    assert snap.rate == pytest.approx(1.0)  # 2 calls in 2 s
    assert snap.eta_s == pytest.approx(2.0 / 3)  # one unit left at 2/3 s per unit
    assert snap.line() == (
        "progress generate m: 3/4 (75%), 1.0 calls/s, tokens 150 in / 15 out, cost $0.7500 "
        "(+1 unknown), cached 1, retries 2, failed no_sql=1, ETA 1s"
    )
    tracker.finish()
    tracker.finish()  # once only
    assert [s.finished for s in seen].count(True) == 1 and seen[-1].line().endswith("took 2s done")


def test_a_stage_says_which_cases_its_count_leaves_out():
    tracker = ProgressTracker("answer", "m")
    tracker.begin(110, left_out="24 probes not answered")
    assert tracker.snapshot().line() == "progress answer m: 0/110 (0%), 24 probes not answered"
    assert left_out_cases("not asked", probes=1, ambiguous_questions=2) == "1 probe and 2 ambiguous questions not asked"
    assert left_out_cases("not asked", probes=0) == ""
    # multidomain-v1: 96 questions (some ask for several candidates) and 24 probes
    assert units_of_questions(110, "candidates", 96) == "110 candidates for 96 questions"
    assert units_of_questions(6, "candidates", 6) == ""


def test_failures_are_listed_most_frequent_first_and_judge_says_not_correct():
    tracker = ProgressTracker("judge", "m")
    tracker.begin(3)
    for outcome in ("wrong_result", "execution_error", "wrong_result"):
        tracker.unit_finished(failure=outcome, started=False)
    line = tracker.snapshot().line()
    assert "not correct wrong_result=2 execution_error=1" in line and "verdicts/s" in line


def test_sinks_hear_at_most_one_change_per_interval_but_always_begin_and_finish():
    clock, seen = FakeClock(), []
    tracker = ProgressTracker("generate", "m", sinks=(seen.append,), clock=clock, emit_interval_s=1.0)
    tracker.begin(100)
    for _ in range(50):
        tracker.unit_finished(started=False)  # the clock stands still: no sink hears of these
    clock.now += 1.0
    tracker.unit_finished(started=False)
    tracker.finish()
    assert [(s.done, s.finished) for s in seen] == [(0, False), (51, False), (51, True)]


def test_tracker_is_thread_safe():
    tracker = ProgressTracker("generate", "m")
    tracker.begin(800)

    def work() -> None:
        for _ in range(100):
            tracker.unit_started()
            tracker.unit_finished(calls=1, attempts=2, input_tokens=3)

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    snap = tracker.snapshot()
    assert (snap.done, snap.in_flight, snap.calls, snap.retries, snap.input_tokens) == (800, 0, 800, 800, 2400)


def test_subscribed_sinks_reach_trackers_made_inside_the_block_only():
    seen = []
    with progress.subscribe(seen.append):
        inside = ProgressTracker("execute", "m")
    outside = ProgressTracker("execute", "m")
    inside.begin(1)
    outside.begin(1)
    assert len(seen) == 1


def test_a_failing_sink_is_dropped_and_the_work_goes_on():
    calls = []

    def broken(snapshot):
        calls.append(snapshot)
        raise RuntimeError("display gone")

    tracker = ProgressTracker("generate", "m", sinks=(broken,), emit_interval_s=0)
    tracker.begin(2)
    tracker.unit_finished(started=False)
    assert len(calls) == 1 and tracker.snapshot().done == 1


def test_throttled_sink_passes_first_then_one_per_interval_and_always_the_last():
    clock, passed = FakeClock(), []
    sink = ThrottledSink(passed.append, 5.0, clock)

    def snap(done, finished=False):
        return ProgressSnapshot("generate", "m", done, 10, finished=finished)

    sink(snap(0))
    clock.now += 1
    sink(snap(1))  # too soon
    clock.now += 4
    sink(snap(2))
    clock.now += 1
    sink(snap(3, finished=True))
    assert [s.done for s in passed] == [0, 2, 3]


def test_plain_view_writes_lines_and_live_view_redraws_in_place():
    clock = FakeClock()
    plain = io.StringIO()
    view = ProgressView(plain, live=False, interval_s=10.0, clock=clock)
    for done in range(4):
        view(ProgressSnapshot("generate", "m", done, 3 if done < 3 else 3, elapsed_s=done, finished=done == 3))
    assert plain.getvalue().splitlines() == [
        "progress generate m: 0/3 (0%)",
        "progress generate m: 3/3 (100%), 1.0 candidates/s, took 3s done",
    ]
    live = io.StringIO()
    view = ProgressView(live, live=True, clock=clock)
    view(ProgressSnapshot("generate", "m", 1, 4, calls=1, elapsed_s=1.0))
    clock.now += 1
    view(ProgressSnapshot("generate", "m", 4, 4, calls=4, elapsed_s=2.0, finished=True))
    text = live.getvalue()
    assert text.count("\r\x1b[2K") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "[█████░░░░░░░░░░░░░░░] 1/4  25%" in text
    assert len(live_line(ProgressSnapshot("generate", "m" * 300, 1, 4), 80)) == 79


def test_a_log_record_wipes_the_live_bar_first():
    import logging

    from nl2sql_cli.progress_view import clear_before_logging

    screen = io.StringIO()
    view = ProgressView(screen, live=True)
    handler = logging.StreamHandler(screen)
    logger = logging.getLogger()
    logger.addHandler(handler)
    undo = clear_before_logging(view)
    try:
        view(ProgressSnapshot("generate", "m", 1, 4))
        logger.warning("rate limited on case c1")
    finally:
        undo()
        logger.removeHandler(handler)
    assert screen.getvalue().endswith("1/4  25%\r\x1b[2Krate limited on case c1\n")
    assert not handler.filters


def test_generation_reports_every_unit_while_it_runs():
    from nl2sql_pipeline.cases import OUTCOME_POLICY_REJECTION, Case
    from nl2sql_pipeline.generation import generate_candidates
    from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec, Prices, RetryPolicy
    from nl2sql_pipeline.generation.prompts import DatabasePromptText, PromptContext

    cases = [
        Case(id=f"c{i}", domain="d", category="c", question=f"q{i}", database="db", expected_sql="SELECT 1")
        for i in range(6)
    ]
    probe = Case(
        id="p", domain="d", category="c", question="drop it", database="db", expected_outcome=OUTCOME_POLICY_REJECTION
    )
    script = {f"q{i}": Reply.sql("SELECT 1", delay_s=0.15) for i in range(5)}
    script["q5"] = Reply.text("no idea", delay_s=0.15)
    seen: list[ProgressSnapshot] = []
    with FakeLLMServer(responder=lambda index, body: script[last_user_message(body)]) as server:
        spec = ModelSpec(
            slug="scripted",
            kind="litellm",
            model="openai/scripted",
            api_base=server.api_base,
            prices=Prices(0.5, 1.5),
            retry=RetryPolicy(max_retries=0),
            limits=Limits(max_concurrency=2),
        )
        with progress.subscribe(seen.append):
            context = PromptContext({"db": DatabasePromptText("CREATE TABLE t (a INTEGER);", "sem", "2026-06-30")})
            records = generate_candidates([*cases, probe], spec, cache=None, context=context)
    assert len(records) == 6
    assert seen[0].done == 0 and seen[0].total == 6
    assert seen[0].line() == "progress generate scripted: 0/6 (0%), 1 probe not asked"  # 6 units of 7 cases
    assert [s.done for s in seen] == sorted(s.done for s in seen), "done never goes back"
    assert any(0 < s.done < 6 for s in seen), "heard of part-way, not only at the start and the end"
    assert max(s.in_flight for s in seen) >= 1 and all(s.in_flight <= 2 for s in seen)
    last = seen[-1]
    assert last.finished and (last.done, last.calls, last.input_tokens) == (6, 6, 6 * 111)
    assert last.failures == (("no_sql", 1),) and last.cost_usd > 0


def test_dagster_log_sink_logs_at_a_bounded_rate(monkeypatch):
    from assets.progress_log import logged_progress

    logged = []
    context = SimpleNamespace(log=SimpleNamespace(info=logged.append))
    monkeypatch.setenv("NL2SQL_PROGRESS_LOG_INTERVAL", "3600")
    tracker = logged_progress(context, "generate", "m")
    tracker.begin(50)
    for _ in range(50):
        tracker.unit_finished(started=False)
    tracker.finish()
    assert logged == ["progress generate m: 0/50 (0%)", logged[-1]] and logged[-1].startswith(
        "progress generate m: 50/50"
    )


# --------------------------------------------------------------------------------------------- the CLI, live

GOLD = "watched-v1"
CASES = 8
REPLY_S = 0.2
LINE = re.compile(r"^progress (\w+) (\S+): (\d+)/(\d+) ")


@pytest.fixture
def cli_env(eval_world):
    sql = "SELECT COUNT(*) AS n FROM anime WHERE format = 'TV'"
    cases = [query_case(f"tv-{i}", sql, question=f"how many TV shows {i}") for i in range(CASES)]
    register_gold_set(eval_world.data, GOLD, cases, description="watched")
    server = FakeLLMServer(default=Reply.sql(sql, delay_s=REPLY_S)).start()
    append_models(
        eval_world.data,
        f"  slow:\n    kind: litellm\n    model: openai/slow\n    api_base: {server.api_base}\n"
        "    api_key_env: FAKE_PROVIDER_KEY\n    params: {temperature: 0}\n    retry: {max_retries: 0}\n"
        "    limits: {max_concurrency: 1}\n",
    )
    env = {
        **os.environ,
        **eval_world.env(),
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "FAKE_PROVIDER_KEY": "k",
        "NL2SQL_PROGRESS_INTERVAL": "0.2",
    }
    yield env, server
    server.stop()


def _run_watched(env, *flags) -> tuple[int, str, list[tuple[float, str]], float]:
    """Run the CLI with stderr on a pipe (not a terminal); every stderr line with the time it arrived."""
    process = subprocess.Popen(
        [sys.executable, "-m", "nl2sql_cli.main", "run", "--gold-set", GOLD, "--model", "slow", *flags],
        env=env,
        cwd=PROJECT_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    lines: list[tuple[float, str]] = []

    def read() -> None:
        for line in process.stderr:
            lines.append((time.monotonic(), line.rstrip("\n")))

    reader = threading.Thread(target=read)
    reader.start()
    stdout = process.stdout.read()
    code = process.wait(timeout=600)
    exited = time.monotonic()
    reader.join(timeout=30)
    return code, stdout, lines, exited


@pytest.mark.integration
@pytest.mark.e2e
@pytest.mark.timeout(900)
def test_progress_lines_arrive_while_the_run_works_json_stays_valid_and_quiet_is_quiet(cli_env):
    env, server = cli_env
    code, stdout, lines, exited = _run_watched(env, "--json")
    stderr = "\n".join(text for _, text in lines)
    assert code == 0, stderr[-3000:]
    report = json.loads(stdout)  # progress never reaches stdout
    assert [r["model"] for r in report["runs"]] == ["slow"] and "progress " not in stdout
    assert server.hits == CASES

    generate = [(at, int(m[3]), int(m[4])) for at, text in lines if (m := LINE.match(text)) and m[1] == "generate"]
    assert generate and all(total == CASES for _, _, total in generate)
    finished_at = next(at for at, done, _ in generate if done == CASES)
    partial = [(at, done) for at, done, _ in generate if 0 < done < CASES]
    assert len(partial) >= 2, f"expected lines part-way through generation, got: {stderr}"
    # the first part-way line came while calls were still being answered, well before generation ended
    assert partial[0][0] < finished_at - 2 * REPLY_S and finished_at < exited
    stages = {m[1] for _, text in lines if (m := LINE.match(text))}
    assert stages == {"generate", "execute", "judge"}
    assert any("calls/s" in text and "tokens" in text and "ETA" in text for _, text in lines)

    # --quiet: the same run again (forced), and not one progress line
    code, stdout, lines, _ = _run_watched(env, "--quiet", "--force")
    assert code == 0, "\n".join(t for _, t in lines)[-3000:]
    assert not [t for _, t in lines if t.startswith("progress ")]
    assert "semantic correctness" in stdout

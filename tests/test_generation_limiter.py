"""The shared rate limiter: sliding windows of requests and tokens, reconciliation, pauses, processes."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import threading

import pytest

from nl2sql_pipeline.generation.dispatch import limiter_for
from nl2sql_pipeline.generation.limiter import (
    LimiterStopped,
    NoLimit,
    SharedRateLimiter,
    default_margin,
    provider_key,
)
from nl2sql_pipeline.generation.model_spec import Limits, ModelSpec
from nl2sql_pipeline.paths import PROJECT_ROOT


class FakeClock:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self, start: float = 1_000_000.0):
        self.now = start
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limiter(tmp_path, clock: FakeClock, **kwargs) -> SharedRateLimiter:
    options = {"requests_per_window": None, "tokens_per_window": None, "window_s": 60.0, "margin_s": 0.5}
    options.update(kwargs)
    return SharedRateLimiter("openai@test", state_dir=tmp_path, clock=clock, sleep=clock.sleep, **options)


def max_in_window(times: list[float], window: float) -> int:
    times = sorted(times)
    return max(sum(1 for t in times if start <= t < start + window) for start in times)


def test_requests_per_window_are_never_exceeded(tmp_path):
    clock = FakeClock()
    rpm = limiter(tmp_path, clock, requests_per_window=3)
    admitted = [rpm.acquire().admitted_at for _ in range(10)]
    assert max_in_window(admitted, 60.0) == 3
    assert len(set(admitted[:3])) == 1  # the first three at once
    assert admitted[3] - admitted[0] == pytest.approx(60.5)  # then only when the oldest left (window + margin)
    assert admitted[-1] - admitted[0] == pytest.approx(3 * 60.5)


def test_tokens_are_estimated_then_reconciled(tmp_path):
    clock = FakeClock()
    tpm = limiter(tmp_path, clock, tokens_per_window=100)
    first = tpm.acquire(60)
    start = clock.now
    second = tpm.acquire(60)  # 120 > 100: waits for the first to leave the window
    assert second.admitted_at - start == pytest.approx(60.5)
    tpm.reconcile(second, 10)  # it really used 10
    third = tpm.acquire(60)  # 10 + 60 fits at once
    assert third.admitted_at == second.admitted_at
    assert tpm.window_usage() == (2, 70)
    assert first.tokens == 60


def test_one_request_larger_than_the_budget_runs_alone_instead_of_deadlocking(tmp_path):
    clock = FakeClock()
    tpm = limiter(tmp_path, clock, tokens_per_window=100)
    tpm.acquire(30)
    start = clock.now
    big = tpm.acquire(500)
    assert big.admitted_at - start == pytest.approx(60.5) and tpm.window_usage() == (1, 500)


def test_pause_until_holds_every_caller(tmp_path):
    clock = FakeClock()
    shared = limiter(tmp_path, clock, requests_per_window=100)
    shared.pause_until(clock.now + 7.0)
    other = limiter(tmp_path, clock, requests_per_window=100)  # another caller of the same provider key
    start = clock.now
    assert other.acquire().admitted_at - start == pytest.approx(7.0)


def test_a_stopped_run_stops_waiting(tmp_path):
    full = SharedRateLimiter("k", requests_per_window=1, tokens_per_window=None, window_s=60, state_dir=tmp_path)
    full.acquire()
    stop = threading.Event()
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(LimiterStopped):
        full.acquire(stop=stop)


def test_corrupt_state_starts_a_new_window(tmp_path, caplog):
    clock = FakeClock()
    rpm = limiter(tmp_path, clock, requests_per_window=2)
    rpm.state_path.write_text("{not json")
    rpm.acquire()
    assert "unreadable state" in caplog.text
    assert json.loads(rpm.state_path.read_text())["events"][0][0] == clock.now


def test_limiter_for_uses_the_registry_limits_and_provider_key(tmp_path, monkeypatch):
    monkeypatch.setenv("NL2SQL_HOME", str(tmp_path))
    spec = ModelSpec(
        slug="m",
        kind="litellm",
        model="openai/gpt-4o-mini",
        api_base="http://127.0.0.1:9/v1",
        limits=Limits(requests_per_minute=60, tokens_per_minute=1000, max_concurrency=2),
    )
    shared = limiter_for(spec)
    assert isinstance(shared, SharedRateLimiter)
    assert shared.key == provider_key("openai/gpt-4o-mini", "http://127.0.0.1:9/v1") == "openai@http://127.0.0.1:9/v1"
    assert (shared.requests_per_window, shared.tokens_per_window, shared.window_s) == (60, 1000, 60.0)
    assert shared.state_path.parent == tmp_path.resolve() / "limits"
    assert isinstance(limiter_for(ModelSpec(slug="m", kind="litellm", model="openai/x")), NoLimit)
    assert default_margin(60.0) == pytest.approx(0.6) and default_margin(6.0) == 0.25 and default_margin(0.5) == 0.05


SHARED_WINDOW_S, SHARED_MARGIN_S, SHARED_LIMIT = 0.5, 0.02, 3
WORKER = textwrap.dedent(
    f"""
    import json, sys
    from pathlib import Path
    from nl2sql_pipeline.generation.limiter import SharedRateLimiter
    limiter = SharedRateLimiter("openai@shared", requests_per_window={SHARED_LIMIT}, tokens_per_window=None,
                                window_s={SHARED_WINDOW_S}, margin_s={SHARED_MARGIN_S}, state_dir=Path(sys.argv[1]))
    print(json.dumps([limiter.acquire().admitted_at for _ in range(int(sys.argv[2]))]))
    """
)


def test_parallel_processes_share_one_budget(tmp_path):
    workers = [
        subprocess.Popen(
            [sys.executable, "-c", WORKER, str(tmp_path), "5"], cwd=PROJECT_ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    admitted = []
    for worker in workers:
        out, _ = worker.communicate(timeout=600)  # a deadline only: a loaded machine starts Python slowly
        assert worker.returncode == 0
        admitted += json.loads(out)
    assert len(admitted) == 10
    # The limiter's decisions, read from the admission times it recorded (the clock it decided by), whatever
    # the machine's speed: one budget for both processes, so any request is admitted only once the one
    # admitted SHARED_LIMIT requests earlier, by either process, has left the window (window + margin).
    admitted.sort()
    gaps = [later - earlier for earlier, later in zip(admitted, admitted[SHARED_LIMIT:])]
    assert min(gaps) >= SHARED_WINDOW_S + SHARED_MARGIN_S - 1e-6, gaps  # 1e-6: rounding of epoch seconds
    assert max_in_window(admitted, SHARED_WINDOW_S) <= SHARED_LIMIT  # so never over the limit in any window

"""In-flight slots: a provider's max_concurrency holds across threads and processes on the machine."""

from __future__ import annotations

import multiprocessing
import threading
import time
from pathlib import Path

import pytest

from nl2sql_pipeline.generation.inflight import SharedSlots, SlotWaitStopped


def _hold_in_process(state_dir: str, ready, release) -> None:
    slots = SharedSlots("openai@http://127.0.0.1:1/v1", 2, state_dir=Path(state_dir))
    with slots.hold():
        ready.set()
        release.wait(10)


def test_slots_held_by_another_process_count_against_the_limit(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold_in_process, args=(str(tmp_path), ready, release))
    other.start()
    try:
        assert ready.wait(30)
        slots = SharedSlots("openai@http://127.0.0.1:1/v1", 2, state_dir=tmp_path)
        assert slots.held() == 1
        with slots.hold():  # the second slot is free
            assert slots.held() == 2
            stop = threading.Event()
            threading.Timer(0.2, stop.set).start()
            started = time.monotonic()
            with pytest.raises(SlotWaitStopped):
                with slots.hold(stop=stop):  # no third slot: waits until stopped
                    pass
            assert time.monotonic() - started >= 0.15
    finally:
        release.set()
        other.join(30)
    assert other.exitcode == 0
    assert SharedSlots("openai@http://127.0.0.1:1/v1", 2, state_dir=tmp_path).held() == 0


def test_a_killed_holder_frees_its_slot(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    ready, release = ctx.Event(), ctx.Event()
    other = ctx.Process(target=_hold_in_process, args=(str(tmp_path), ready, release))
    other.start()
    assert ready.wait(30)
    slots = SharedSlots("openai@http://127.0.0.1:1/v1", 1, state_dir=tmp_path)
    assert slots.held() == 1
    other.kill()
    other.join(30)
    assert slots.held() == 0


def test_threads_never_exceed_the_limit(tmp_path):
    slots = SharedSlots("k", 3, state_dir=tmp_path, poll_s=0.001)
    in_flight, peak, lock = 0, 0, threading.Lock()

    def work() -> None:
        nonlocal in_flight, peak
        for _ in range(5):
            with slots.hold():
                with lock:
                    in_flight += 1
                    peak = max(peak, in_flight)
                time.sleep(0.005)
                with lock:
                    in_flight -= 1

    threads = [threading.Thread(target=work) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak == 3

"""The process's long-lived objects are frozen once per process, after a collection.

``gc.freeze`` cannot be undone for one test alone (``gc.unfreeze`` would also thaw what others froze), so
the real calls run in a fresh interpreter that reports what it saw.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from nl2sql_pipeline.paths import PROJECT_ROOT

SETTLE = textwrap.dedent(
    """
    import gc, json, threading, weakref
    gc.disable()  # no automatic collection: only settle_long_lived may collect the garbage below
    from nl2sql_pipeline import heap

    class Node:
        def __init__(self):
            self.me = self  # a reference cycle: only the cyclic collector frees it

    garbage = Node()
    garbage_ref = weakref.ref(garbage)
    del garbage  # unreachable, but alive until a collection
    kept = Node()
    before = gc.get_freeze_count()
    report = {"garbage_alive_before": garbage_ref() is not None}

    barrier = threading.Barrier(4)
    results = []

    def settle():
        barrier.wait()
        results.append(heap.settle_long_lived())

    threads = [threading.Thread(target=settle) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    frozen = gc.get_freeze_count()
    report["concurrent_results"] = sorted(results)
    report["frozen"] = frozen - before
    report["garbage_collected_first"] = garbage_ref() is None
    report["kept_frozen"] = not any(obj is kept for obj in gc.get_objects())  # the permanent generation
    report["second_call"] = heap.settle_long_lived()
    report["frozen_by_second_call"] = gc.get_freeze_count() - frozen

    later = Node()
    later_ref = weakref.ref(later)
    del later
    gc.collect()
    report["later_garbage_collected"] = later_ref() is None
    print(json.dumps(report))
    """
)


def test_settling_collects_then_freezes_once_per_process():
    done = subprocess.run(
        [sys.executable, "-c", SETTLE], cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["garbage_alive_before"]
    assert report["concurrent_results"] == [False, False, False, True]  # one call froze, from four threads
    assert report["frozen"] > 0 and report["kept_frozen"]  # what was alive went to the permanent generation
    assert report["garbage_collected_first"]  # garbage alive at that moment was collected, not frozen for good
    assert report["second_call"] is False and report["frozen_by_second_call"] == 0  # once per process
    assert report["later_garbage_collected"]  # garbage made afterwards is still collected

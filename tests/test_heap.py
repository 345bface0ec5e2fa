"""The process's long-lived objects are frozen once per process, after a collection."""

from __future__ import annotations

import gc

from nl2sql_pipeline import heap


def test_settling_collects_then_freezes_once_per_process(monkeypatch):
    calls = []
    monkeypatch.setattr(heap, "_settled", False)
    monkeypatch.setattr(heap.gc, "collect", lambda *a: calls.append("collect") or 0)
    monkeypatch.setattr(heap.gc, "freeze", lambda: calls.append("freeze"))
    assert heap.settle_long_lived() is True
    assert heap.settle_long_lived() is False
    assert calls == ["collect", "freeze"]


def test_frozen_objects_are_skipped_by_collections_but_garbage_made_later_is_collected():
    class Node:
        def __init__(self):
            self.me = self

    gc.collect()
    before = gc.get_freeze_count()
    kept = [Node() for _ in range(100)]
    gc.freeze()
    try:
        assert gc.get_freeze_count() >= before + 100
        later = Node()
        del later
        assert gc.collect() >= 1  # a cycle made after the freeze is still found
    finally:
        gc.unfreeze()
    del kept

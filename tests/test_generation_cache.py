"""The generation cache: keys, layout, atomic writes, corrupt entries."""

from __future__ import annotations

import json
import logging
import threading

import pytest

from nl2sql_pipeline.errors import GenerationError
from nl2sql_pipeline.generation.cache import CacheKey, GenerationCache, default_cache_root

KEY = CacheKey("0123456789abcdef", "fedcba9876543210", "1111222233334444", 0, 0)


def test_put_then_get_round_trips(tmp_path):
    cache = GenerationCache(tmp_path)
    record = {"raw_reply": "```sql\nSELECT 1\n```", "latency_ms": 12.5, "input_tokens": 10, "mutation": None}
    assert cache.get(KEY) is None
    path = cache.put(KEY, record)
    assert cache.get(KEY) == record
    assert KEY in cache
    # layout: <root>/<config_hash>/<2-char prefix>/<key>.json
    assert path.parent.parent.parent == tmp_path
    assert path.parent.parent.name == KEY.model_config_hash
    assert path.parent.name == KEY.digest[:2] and path.name == f"{KEY.digest}.json"
    assert not list(path.parent.glob("*.tmp"))


@pytest.mark.parametrize(
    "other",
    [
        CacheKey("0123456789abcdee", KEY.prompt_hash, KEY.case_fingerprint, 0, 0),
        CacheKey(KEY.model_config_hash, "fedcba9876543211", KEY.case_fingerprint, 0, 0),
        CacheKey(KEY.model_config_hash, KEY.prompt_hash, "1111222233334445", 0, 0),
        CacheKey(KEY.model_config_hash, KEY.prompt_hash, KEY.case_fingerprint, 1, 0),
        CacheKey(KEY.model_config_hash, KEY.prompt_hash, KEY.case_fingerprint, 0, 1),
    ],
    ids=["config", "prompt", "case", "sample", "candidate"],
)
def test_any_changed_key_part_is_a_miss(tmp_path, other):
    cache = GenerationCache(tmp_path)
    cache.put(KEY, {"x": 1})
    assert other.digest != KEY.digest
    assert cache.get(other) is None


@pytest.mark.parametrize("content", ["", "{", '{"key": "x"', "[]", '{"key": "wrong", "record": {}}', "\x00\x01"])
def test_corrupt_or_partial_entries_are_misses_and_logged(tmp_path, caplog, content):
    cache = GenerationCache(tmp_path)
    path = cache.put(KEY, {"x": 1})
    path.write_text(content, encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="nl2sql_pipeline.generation.cache"):
        assert cache.get(KEY) is None
    assert str(path) in caplog.text
    cache.put(KEY, {"x": 2})  # a new write repairs it
    assert cache.get(KEY) == {"x": 2}


def test_bad_config_hash_cannot_escape_the_root(tmp_path):
    with pytest.raises(GenerationError, match="model_config_hash"):
        GenerationCache(tmp_path).path_for(CacheKey("../../etc", "p", "c", 0))


def test_default_root_is_under_the_storage_root(isolated_home):
    assert GenerationCache().root == default_cache_root()
    assert default_cache_root().is_relative_to(isolated_home)


def test_concurrent_writers_never_leave_a_torn_file(tmp_path):
    """Threads rewrite one entry with large, distinct records while readers read it: once the entry
    exists every read is one complete record (a torn file would read as a miss), no temp file is left."""
    cache = GenerationCache(tmp_path)
    records = [{"writer": w, "raw_reply": str(w) * 200_000} for w in range(6)]
    valid = {json.dumps(r, sort_keys=True) for r in records}
    bad_reads: list[object] = []
    stop = threading.Event()
    cache.put(KEY, records[0])

    def writer(record: dict) -> None:
        for _ in range(15):
            cache.put(KEY, record)

    def reader() -> None:
        while not stop.is_set():
            got = cache.get(KEY)
            if got is None or json.dumps(got, sort_keys=True) not in valid:
                bad_reads.append(got)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    writers = [threading.Thread(target=writer, args=(r,)) for r in records]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()
    assert not bad_reads
    assert json.dumps(cache.get(KEY), sort_keys=True) in valid
    assert not list(tmp_path.rglob("*.tmp"))

"""Two ``nl2sql-eval run`` started at the same moment on a fresh storage root: the Dagster instance's schema and
the dynamic partitions are created by whichever process comes first, and the other one carries on."""

from __future__ import annotations

import sqlite3

import dagster as dg
import pytest
import sqlalchemy.exc

from assets.partitions import GOLD_SETS_PARTITIONS, MODELS_PARTITIONS
from assets.sensors import partition_keys_from_registries, register_partitions
from resources.instance import ensure_instance_home, open_instance


def test_partitions_another_process_added_first_are_not_an_error(data_copy, monkeypatch):
    """Dagster reads which keys exist, then inserts the others: a process that inserted some in between makes
    the insert fail on the unique index (``UNIQUE constraint failed: dynamic_partitions...``)."""
    golds, models = partition_keys_from_registries()
    ensure_instance_home()
    with open_instance() as instance:
        add = instance.add_dynamic_partitions
        raced: list[str] = []

        def racing_add(name: str, keys: list[str]) -> None:
            if name not in raced:  # the other process inserts the first key after this one's read
                raced.append(name)
                add(name, keys[:1])
                unique = sqlite3.IntegrityError("UNIQUE constraint failed: dynamic_partitions.partition")
                raise sqlalchemy.exc.IntegrityError("INSERT INTO dynamic_partitions", {}, unique)
            add(name, keys)

        monkeypatch.setattr(instance, "add_dynamic_partitions", racing_add)
        register_partitions(instance)
        monkeypatch.undo()
        assert raced == [GOLD_SETS_PARTITIONS, MODELS_PARTITIONS]
        assert sorted(instance.get_dynamic_partitions(GOLD_SETS_PARTITIONS)) == golds
        assert sorted(instance.get_dynamic_partitions(MODELS_PARTITIONS)) == models


def test_opening_is_tried_again_while_another_process_creates_the_sqlite_schema(isolated_home, monkeypatch):
    ensure_instance_home()
    get = dg.DagsterInstance.get
    failures = [
        sqlalchemy.exc.OperationalError("CREATE TABLE runs", {}, sqlite3.OperationalError("table runs already exists"))
    ]

    def racing_get() -> dg.DagsterInstance:
        if failures:
            raise failures.pop()
        return get()

    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(racing_get))
    with open_instance() as instance:
        assert instance.get_runs() == []
    assert not failures


def test_other_operational_errors_are_not_retried(isolated_home, monkeypatch):
    ensure_instance_home()
    error = sqlalchemy.exc.OperationalError("SELECT", {}, sqlite3.OperationalError("database disk image is malformed"))
    calls = []

    def broken_get() -> dg.DagsterInstance:
        calls.append(1)
        raise error

    monkeypatch.setattr(dg.DagsterInstance, "get", staticmethod(broken_get))
    with pytest.raises(sqlalchemy.exc.OperationalError):
        open_instance()
    assert len(calls) == 1

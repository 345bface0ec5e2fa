"""``nl2sql_cli.startup``: a run's imports without the cyclic collector walking them."""

from __future__ import annotations

import gc

import pytest

from nl2sql_cli.startup import imports_without_collection


@pytest.fixture(autouse=True)
def _collector_restored():
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()  # the frozen objects go back to the oldest generation
    if was_enabled:
        gc.enable()


def test_the_collector_is_off_inside_and_back_on_after_with_what_was_built_frozen() -> None:
    gc.enable()
    before = gc.get_freeze_count()
    with imports_without_collection():
        assert not gc.isenabled()
        built = [[i] for i in range(1000)]  # long-lived objects, as a module's import makes
    assert gc.isenabled()
    assert gc.get_freeze_count() >= before + len(built)


def test_a_failing_block_still_turns_the_collector_back_on() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), imports_without_collection():
        raise RuntimeError("an import failed")
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with imports_without_collection():
        pass
    assert not gc.isenabled()

"""Automation requests nothing for a gold x model partition while a run of it is in progress, whatever launched it.

A run of a new model's partition is held at two points the test controls: inside its generation step, then
between ``candidate_sql`` and ``candidate_results``. The automation is ticked at each pause and after the
run ended; no tick may ask for the partition (a second run of it would record a second baselines row, or
read another run's scores). The run is the ``evaluate_model`` job, what the launchpad, a backfill, a sensor
and the schedule launch; the CLI's runner records its runs the same way (planned materializations of the
partition), so Dagster counts them as in progress alike.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import dagster as dg
import pytest
from eval_support import append_models, offline_model, query_case, register_gold_set, set_judge_automation

GOLD, MODEL = "tiny-v1", "echo-late"
KEY = dg.MultiPartitionKey({"gold": GOLD, "model": MODEL})
MODEL_ASSETS = ("candidate_sql", "candidate_results", "case_verdicts", "run_scores", "baselines")
DEADLINE_S = 120.0  # how long the test waits for the run to reach a pause or to end (a bound, not a timing)


class Pause:
    """A point in a run's code where the run waits until the test lets it go on."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.reached = threading.Event()
        self.proceed = threading.Event()

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        """``function`` preceded by this pause."""

        def paused(*args: Any, **kwargs: Any) -> Any:
            self.reached.set()
            if not self.proceed.wait(DEADLINE_S):
                raise TimeoutError(f"the test never let the run past {self.name}")
            return function(*args, **kwargs)

        return paused

    def wait_reached(self, run: threading.Thread, failure: list[BaseException]) -> None:
        """Wait (bounded) until the run is held here; fail with the run's own error if it ended first."""
        deadline = time.monotonic() + DEADLINE_S
        while not self.reached.wait(0.05) and run.is_alive() and time.monotonic() < deadline:
            pass
        assert self.reached.is_set(), f"the run never reached {self.name}: {failure or 'still running'}"
        assert run.is_alive(), f"the run ended before {self.name}"


@pytest.fixture(scope="module")
def prepared_template(world_factory):
    """A world whose gold version is prepared (gold set, preflight, oracle) and no model evaluated (instance closed)."""
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import evaluate, get_instance

    with world_factory() as world:
        register_gold_set(world.data, GOLD, [query_case("c-1", "SELECT COUNT(*) AS n FROM anime")])
        with get_instance() as instance:
            register_partitions(instance)
            prepared = evaluate(GOLD, [], instance=instance)
            assert not prepared.failures and prepared.stage_seconds.get("gold_and_oracle"), prepared.failures
    return world


def _tick(
    instance: dg.DagsterInstance, cursor: Any = None, defs: Any = None, assets: tuple[str, ...] = MODEL_ASSETS
) -> Any:
    if defs is None:
        from assets.definitions import defs

    # the model stages only (what the assertions look at): a tick over every asset costs twice the CPU
    selection = dg.AssetSelection.assets(*assets)
    return dg.evaluate_automation_conditions(defs=defs, instance=instance, cursor=cursor, asset_selection=selection)


def _requested_for_partition(result: Any, assets: tuple[str, ...] = MODEL_ASSETS) -> list[str]:
    return [a for a in assets if KEY in result.get_requested_partitions(dg.AssetKey(a))]


def _launch_evaluate_model(instance: dg.DagsterInstance) -> bool:
    """Execute one ``evaluate_model`` run of the partition (in this process: the test holds it at its pauses)."""
    from assets.definitions import defs

    job = defs.resolve_job_def("evaluate_model")
    return job.execute_in_process(partition_key=KEY, instance=instance, raise_on_error=False).success


@pytest.mark.e2e
def test_no_partition_is_requested_again_while_a_run_of_it_is_in_progress(
    prepared_template, clone_template, monkeypatch: pytest.MonkeyPatch
) -> None:
    import nl2sql_pipeline.generation.candidates as generation
    import nl2sql_pipeline.stages as stages
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import get_instance

    world = clone_template(prepared_template)
    instance = get_instance()
    try:
        before = _tick(instance)
        append_models(world.data, offline_model(MODEL))
        assert register_partitions(instance) == ([], [MODEL])  # what partition_registry_sensor does

        generating, between_steps = Pause("generation"), Pause("candidate_results")
        monkeypatch.setattr(generation, "generate_for_gold_set", generating.wrap(generation.generate_for_gold_set))
        monkeypatch.setattr(stages, "execute_attempts", between_steps.wrap(stages.execute_attempts))
        outcome: list[bool] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(_launch_evaluate_model(instance))
            except BaseException as exc:  # reported by the main thread
                failure.append(exc)

        runner = threading.Thread(target=run, name="evaluation", daemon=True)
        runner.start()
        try:
            generating.wait_reached(runner, failure)
            busy = instance.get_run_records(
                filters=dg.RunsFilter(statuses=[dg.DagsterRunStatus.STARTED], tags={"dagster/partition": str(KEY)})
            )
            assert len(busy) == 1
            during_generation = _tick(instance, before.cursor)
            assert _requested_for_partition(during_generation) == []  # not the new partition a second time
            generating.proceed.set()

            between_steps.wait_reached(runner, failure)
            assert instance.get_latest_materialization_event(dg.AssetKey("candidate_sql")) is not None
            during_steps = _tick(instance, during_generation.cursor)
            assert _requested_for_partition(during_steps) == []  # nor the stages after the one it just wrote
        finally:
            generating.proceed.set()
            between_steps.proceed.set()
            runner.join(DEADLINE_S)
        assert not runner.is_alive() and not failure and outcome == [True], failure

        after = _tick(instance, during_steps.cursor)
        assert _requested_for_partition(after) == []  # evaluated once: current, nothing to follow
    finally:
        instance.dispose()


JUDGE_ASSETS = ("candidate_answers", "answer_judgements", "sql_judgements")


@pytest.mark.e2e
def test_the_automated_judges_wait_until_the_run_of_their_partition_ended(
    prepared_template, clone_template, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the judges.yml automation opt-in, the judgement assets of a partition are asked for once its
    evaluation run has ended, not while it is between its stages."""
    import nl2sql_pipeline.stages as stages
    from assets.assemble import build_definitions
    from assets.sensors import register_partitions
    from nl2sql_cli.runner import get_instance

    world = clone_template(prepared_template)
    set_judge_automation(world.data, answers=True, judges=["judge-oracle"])
    defs = build_definitions()
    watched = (*MODEL_ASSETS, *JUDGE_ASSETS)
    instance = get_instance()
    try:
        before = _tick(instance, defs=defs, assets=watched)
        append_models(world.data, offline_model(MODEL))
        register_partitions(instance)
        # held in case_verdicts: candidate_results, what the judgement assets follow, is written, the run goes on
        between_steps = Pause("case_verdicts")
        monkeypatch.setattr(stages, "judge", between_steps.wrap(stages.judge))
        outcome: list[bool] = []
        failure: list[BaseException] = []

        def run() -> None:
            try:
                outcome.append(_launch_evaluate_model(instance))
            except BaseException as exc:  # reported by the main thread
                failure.append(exc)

        runner = threading.Thread(target=run, name="evaluation", daemon=True)
        runner.start()
        try:
            between_steps.wait_reached(runner, failure)
            assert instance.get_latest_materialization_event(dg.AssetKey("candidate_results")) is not None
            during = _tick(instance, before.cursor, defs=defs, assets=watched)
            assert _requested_for_partition(during, watched) == []  # not while its run is in progress
        finally:
            between_steps.proceed.set()
            runner.join(DEADLINE_S)
        assert not runner.is_alive() and not failure and outcome == [True], failure

        after = _tick(instance, during.cursor, defs=defs, assets=watched)
        assert _requested_for_partition(after, watched) == list(JUDGE_ASSETS)  # judged once it ended, no generation
    finally:
        instance.dispose()

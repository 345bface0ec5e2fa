"""Shared test set-up: every test writes under temporary storage roots, never the user's.

* At import (before any test module is imported), ``NL2SQL_HOME`` and ``DAGSTER_HOME`` point at a temporary
  root of this process, whatever they were (``make test`` exports the checkout's ``.nl2sql/`` for
  ``make run``/``make ui``), and ``NL2SQL_DATA``/``NL2SQL_ASSETS_URL`` are unset: tests read the checkout's
  ``data/`` and write under their roots. CLI subprocesses inherit this environment.
* The session proves it: the xdist controller (or the only process) snapshots the user's storage (the
  checkout's ``.nl2sql/`` and the roots the session was started with) and ``data/`` at the start and fails
  the session, naming the files, when any of them changed by the end (``tests/storage_guard.py``).
* The sample database is built once per run (``sample_database``) and copied into the fresh roots of tests
  that evaluate (``seeded_home``) instead of being built again in each.
* Under ``-n 2`` (``make test``), the modules of the slowest tests are handed out first, and a module marked
  ``xdist_group`` runs on one worker, so its module-scoped evaluation is built once.
* Evaluation worlds (``tests/eval_support.py``): ``data_copy``/``eval_world`` (a private ``data/`` and root for one
  test), ``world_factory`` (the same for a module-scoped fixture, e.g. one evaluation its tests only read)
  and ``clone_template`` (a test's own copy of such an evaluated world, for tests that change it).
* The main job itself (``nl2sql-eval run`` of gold-echo and sql-mutant on multidomain-v1, as ``make run``) is
  evaluated once per session (``multidomain_run``) for the modules of xdist group ``multidomain``: they read it
  (``in_multidomain_run``) or change a copy of it (``clone_world``).
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from eval_support import BuiltInRun, World, clone_world, copy_data, seed_sample_database
from storage_guard import Snapshot, changes, guarded_roots, snapshot

from nl2sql_pipeline.dialect.postgres_server import PostgresServer, PostgresUnavailable
from nl2sql_pipeline.paths import PROJECT_ROOT

ISOLATED_VARS = ("NL2SQL_HOME", "DAGSTER_HOME", "NL2SQL_DATA", "NL2SQL_ASSETS_URL")
USER_ENV = {name: os.environ.get(name) for name in ISOLATED_VARS}
"""The storage variables this process was started with (a worker's are its controller's temp roots)."""

# Set before anything imports litellm or reads a root (collection imports the test modules).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
SESSION_HOME = Path(tempfile.mkdtemp(prefix="nl2sql-test-home-"))
os.environ["NL2SQL_HOME"] = str(SESSION_HOME)
os.environ["DAGSTER_HOME"] = str(SESSION_HOME / "dagster_home")
(SESSION_HOME / "dagster_home").mkdir()
os.environ.pop("NL2SQL_DATA", None)
os.environ.pop("NL2SQL_ASSETS_URL", None)

_GUARD = pytest.StashKey[list[Snapshot]]()
_GUARD_REPORT = pytest.StashKey[list[str]]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionstart(session: pytest.Session) -> None:
    """Snapshot the user's storage (on the xdist controller only; workers run the tests)."""
    if not _is_worker(session.config):
        session.config.stash[_GUARD] = [snapshot(root) for root in guarded_roots(PROJECT_ROOT, USER_ENV)]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the session when the user's storage changed while it ran, naming what changed."""
    before = session.config.stash.get(_GUARD, None)
    if before is None:
        return
    found = [line for snap in before for line in changes(snap, snapshot(snap.root))]
    if found:
        session.config.stash[_GUARD_REPORT] = found
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus: int, config: pytest.Config) -> None:
    """Print what the session changed in the user's storage (set by ``pytest_sessionfinish``)."""
    found = config.stash.get(_GUARD_REPORT, None)
    if found:
        terminalreporter.write_sep("=", "the test session changed the user's storage", red=True, bold=True)
        for line in found:
            terminalreporter.write_line(line)
        terminalreporter.write_line(
            "tests must write under their own temporary roots (tests/conftest.py); if no test did, another process "
            "(a `make ui` or `make run` on the same storage) wrote there while the tests ran"
        )


def _rank(item: pytest.Item, default_timeout: float) -> int:
    """0: a test that says it needs longer than the default timeout; 1: other e2e/integration; 2: the rest."""
    timeout = item.get_closest_marker("timeout")
    if timeout is not None and timeout.args and float(timeout.args[0]) > default_timeout:
        return 0
    return 1 if item.get_closest_marker("e2e") or item.get_closest_marker("integration") else 2


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest first: modules holding the slowest tests run first (whole modules keep their order, so module
    fixtures are built once), so that under ``-n 2`` no long test starts last while the other worker idles
    (with ``--no-loadscope-reorder``, xdist hands out the work in this order).

    And ``--dist loadgroup`` on pytest 9.2: each ``xdist_group`` test's id gets its ``@<group>`` as xdist means
    to. pytest-xdist 3.8 writes the tag to ``item._nodeid``, which pytest 9.2's structured node ids no longer
    read, so groups are silently ignored (pytest-dev/pytest-xdist#1386; fix proposed in #1388). This writes
    the structured id instead, on xdist workers only, and leaves an id xdist already tagged alone.
    """
    try:
        default_timeout = float(config.getini("timeout") or 0)
    except ValueError:  # pytest-timeout not loaded
        default_timeout = 0.0
    module_rank: dict[str, int] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        module_rank[module] = min(module_rank.get(module, 2), _rank(item, default_timeout))
    order = {id(item): index for index, item in enumerate(items)}
    items.sort(key=lambda item: (module_rank[item.nodeid.split("::", 1)[0]], order[id(item)]))

    if not getattr(config.option, "loadgroup", False):
        return
    from _pytest.nodeid import NodeId

    for item in items:
        names = {
            str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
            for mark in item.iter_markers("xdist_group")
        }
        suffix = "@" + "_".join(sorted(names))
        if names and not item.nodeid.endswith(suffix) and isinstance(getattr(item, "_id", None), NodeId):
            item._id = NodeId.parse(item.nodeid + suffix)


def pytest_unconfigure(config: pytest.Config) -> None:
    """Remove this process's session root."""
    shutil.rmtree(SESSION_HOME, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ fixtures


@pytest.fixture(scope="session")
def sample_database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The built-in sample database at its default seed and scale, built once per run (shared by the xdist
    workers through a lock in their common temp folder). Read it, or copy it: never change this file."""
    from nl2sql_pipeline.sample_db import DATABASE_NAME, build_database, is_current
    from nl2sql_pipeline.sample_db.lock import exclusive_lock, lock_path

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if "PYTEST_XDIST_WORKER" in os.environ else base
    path = shared / "sample-database" / f"{DATABASE_NAME}.duckdb"
    path.parent.mkdir(parents=True, exist_ok=True)
    with exclusive_lock(lock_path(path)):
        if not is_current(path):
            build_database(path)
    return path


@pytest.fixture
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty storage root and Dagster home for one test."""
    home = tmp_path / "nl2sql-home"
    monkeypatch.setenv("NL2SQL_HOME", str(home))
    monkeypatch.setenv("DAGSTER_HOME", str(home / "dagster_home"))
    (home / "dagster_home").mkdir(parents=True)
    return home


@pytest.fixture
def materialize_tiny() -> Callable[..., str]:
    """Materialize a one-asset graph on the given Dagster instance and return the run id (what the storage
    tests need: a real run whose records, events and status the instance writes). Dagster loads only here."""
    import dagster as dg

    @dg.asset
    def tiny() -> int:
        return 1

    def run(instance: dg.DagsterInstance) -> str:
        result = dg.materialize([tiny], instance=instance)
        assert result.success
        return result.run_id

    return run


@pytest.fixture
def seeded_home(isolated_home: Path, sample_database: Path) -> Path:
    """``isolated_home`` holding a copy of the built sample database (what a run builds first, as after
    ``make run``): a test that evaluates does not build it again."""
    seed_sample_database(isolated_home, sample_database)
    return isolated_home


@pytest.fixture
def data_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seeded_home: Path) -> Path:
    """A private copy of ``data/`` (``NL2SQL_DATA``; a test adds gold sets, models and policies to it) and a
    private storage root holding the sample database (``seeded_home``)."""
    data = copy_data(tmp_path / "data")
    monkeypatch.setenv("NL2SQL_DATA", str(data))
    return data


@pytest.fixture
def eval_world(data_copy: Path, seeded_home: Path) -> World:
    """``data_copy`` and ``seeded_home`` as one ``World`` (its ``env()`` serves CLI subprocesses)."""
    return World(data_copy, seeded_home)


@pytest.fixture(scope="module")
def world_factory(
    tmp_path_factory: pytest.TempPathFactory, sample_database: Path
) -> Callable[[], contextlib.AbstractContextManager[World]]:
    """For module-scoped worlds: ``with world_factory() as world:`` is a fresh ``World`` (a copy of ``data/``, a
    root holding the sample database) with the environment pointing at it inside the block."""

    @contextlib.contextmanager
    def make() -> Iterator[World]:
        root = tmp_path_factory.mktemp("world")
        world = World(copy_data(root / "data"), root / "home")
        world.dagster_home.mkdir(parents=True)
        seed_sample_database(world.home, sample_database)
        with pytest.MonkeyPatch.context() as patch:
            for name, value in world.env().items():
                patch.setenv(name, value)
            yield world

    return make


@pytest.fixture
def clone_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[World], World]:
    """``clone_template(template)``: this test's own copy of a module's evaluated world (its Dagster instance
    closed), with the environment pointing at the copy; the test may change it freely."""

    def clone(template: World) -> World:
        world = clone_world(template, tmp_path / "world")
        for name, value in world.env().items():
            monkeypatch.setenv(name, value)
        return world

    return clone


MULTIDOMAIN_MODELS = ("gold-echo", "sql-mutant")


@pytest.fixture(scope="session")
def multidomain_run(tmp_path_factory: pytest.TempPathFactory, sample_database: Path) -> BuiltInRun:
    """``nl2sql-eval run --gold-set multidomain-v1`` on the offline models (the main job, as ``make run`` runs
    it) once per session, in a private world; what it printed is kept. Its modules are in xdist group
    ``multidomain`` (one worker evaluates it); they read it through ``in_multidomain_run`` and change only a
    copy (``clone_world``), or what they add and take away again."""
    from nl2sql_cli import main as cli

    root = tmp_path_factory.mktemp("multidomain")
    world = World(copy_data(root / "data"), root / "home")
    world.dagster_home.mkdir(parents=True)
    seed_sample_database(world.home, sample_database)
    printed = io.StringIO()
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(printed):
        for name, value in world.env().items():
            patch.setenv(name, value)
        models = [arg for slug in MULTIDOMAIN_MODELS for arg in ("--model", slug)]
        code = cli.main(["run", "--gold-set", "multidomain-v1", *models])
    assert code == 0, printed.getvalue()[-3000:]
    return BuiltInRun(world, printed.getvalue())


@pytest.fixture
def in_multidomain_run(multidomain_run: BuiltInRun, monkeypatch: pytest.MonkeyPatch) -> BuiltInRun:
    """``multidomain_run`` with the environment pointing at its world for this test."""
    for name, value in multidomain_run.world.env().items():
        monkeypatch.setenv(name, value)
    return multidomain_run


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster on a free loopback port for the module's tests (skipped, with the reason,
    where no PostgreSQL server binaries are installed; ``.ci/run`` installs them)."""
    try:
        server = PostgresServer().start()
    except PostgresUnavailable as exc:
        pytest.skip(str(exc))
    try:
        yield server
    finally:
        server.stop()

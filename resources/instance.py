"""The local Dagster instance under the storage root: ``dagster.yaml`` with telemetry off, the event log
(``resources.event_log``: Dagster's SQLite files, one engine per file), the run and schedule storages (``resources.run_storage``:
Dagster's SQLite files; the run storage keeps one engine), the run queue's limits and the default pool limit.

Dagster's ``dagster.yaml`` takes one limit for every pool (``concurrency: pools: default_limit``); the
per-provider pool limits derived from ``data/models.yml`` are written into the instance's storage by
``resources.pools.sync_pool_limits`` (``dagster instance concurrency get --all`` lists them).

Before Dagster opens its SQLite files, each one there must read back (``check_instance_files``): a damaged or
unopenable file is one ``StoredFileError`` naming it and the fix, instead of SQLAlchemy's "file is not a
database" from deep inside Dagster.

``python -m resources.instance`` writes it and the pool limits (``make ui`` does, before ``dagster dev``).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import StoredFileError
from nl2sql_pipeline.storage.root import check_dagster_home, check_root, check_writable_folder

if TYPE_CHECKING:
    import dagster as dg

logger = logging.getLogger(__name__)

MARKER = "# Written by nl2sql-eval"
DAGSTER_YAML = """\
# Written by nl2sql-eval (resources/instance.py). Local instance under the storage root.
telemetry:
  enabled: false
event_log_storage:
  # Dagster's SQLite event log in its usual files, keeping one engine per file (resources/event_log.py)
  module: resources.event_log
  class: ReusedEngineSqliteEventLogStorage
  config:
    dagster_home:
      env: DAGSTER_HOME
run_storage:
  # Dagster's SQLite run storage in its usual file, keeping one engine (resources/run_storage.py)
  module: resources.run_storage
  class: ReusedEngineSqliteRunStorage
  config:
    dagster_home:
      env: DAGSTER_HOME
schedule_storage:
  # Dagster's SQLite schedule storage in its usual file, opened without reading its migration scripts when ready
  module: resources.run_storage
  class: ReadyCheckedSqliteScheduleStorage
  config:
    dagster_home:
      env: DAGSTER_HOME
run_monitoring:
  # a run whose process died is marked failed, and the pool slots of finished runs are given back
  enabled: true
  free_slots_after_run_end_seconds: 30
concurrency:
  pools:
    # a pool whose limit was not set from models.yml yet runs one step at a time; each provider's pool
    # (llm.<provider>@<api_base>) and llm_generation get their limits from models.yml (resources/pools.py)
    default_limit: 1
  runs:
    tag_concurrency_limits:
      # evaluate_model runs are tagged with their model's provider: at most 2 in progress per provider
      - key: nl2sql/provider
        value:
          applyLimitPerUniqueValue: true
        limit: 2
      # one run per partition (gold version, or gold x model) in progress, whatever launched it
      - key: dagster/partition
        value:
          applyLimitPerUniqueValue: true
        limit: 1
"""


def ensure_instance_home() -> Path:
    """Point DAGSTER_HOME at the storage root's instance (unless set) and write its dagster.yaml.

    A home that cannot be created or written (a read-only root, a path under a file) is one
    ``StorageRootError`` naming it, before Dagster opens its SQLite storage there."""
    given = os.environ.get("DAGSTER_HOME")
    if given:
        home = check_dagster_home(Path(given))
    else:
        check_writable_folder(check_root())
        home = check_dagster_home(paths.storage_root_path() / "dagster_home")
    os.environ["DAGSTER_HOME"] = str(home)
    config = home / "dagster.yaml"
    current = config.read_text(encoding="utf-8") if config.exists() else None
    # write it when missing, and keep our own file current; a file the user wrote is left alone
    if current is None or (current.startswith(MARKER) and current != DAGSTER_YAML):
        # whole or not at all: another process starting at the same moment may be reading it
        staged = config.with_name(f".{config.name}.{os.getpid()}.tmp")
        staged.write_text(DAGSTER_YAML, encoding="utf-8")
        os.replace(staged, config)
    return home


SQLITE_FILES = {
    ("history", "runs.db"): "the Dagster instance's run storage",
    ("history", "runs", "index.db"): "the Dagster instance's event log index",
    ("schedules", "schedules.db"): "the Dagster instance's schedule storage",
}
"""The SQLite files of the local instance (under its home) that Dagster opens with the instance, and whose."""
SQLITE_FIX = (
    "restore it, or move it aside together with its -wal and -shm files: Dagster starts a new one (the runs it "
    "held no longer show in the UI; stored results and baselines stay)"
)


def check_instance_files(home: Path) -> None:
    """Raise ``StoredFileError`` (naming the file and the fix) when one of the instance's SQLite files under
    ``home`` is there but SQLite cannot open it or read its schema (not a database, malformed, cut short, a
    folder in its place). The file is opened read-only and nothing is written; a missing file is Dagster's to
    create. About a millisecond a file."""
    for parts, whose in SQLITE_FILES.items():
        path = home.joinpath(*parts)
        if not (path.exists() or path.is_symlink()):
            continue
        try:
            con = sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True, timeout=5.0)
            try:
                con.execute("SELECT count(*) FROM sqlite_master").fetchone()
            finally:
                con.close()
        except sqlite3.Error as exc:
            raise StoredFileError(path, whose, str(exc) or type(exc).__name__, SQLITE_FIX) from exc


SCHEMA_RACE_ATTEMPTS = 5


def open_instance() -> dg.DagsterInstance:
    """``DagsterInstance.get()``, tried again when another process was creating the storage's schema at the
    same moment (two ``nl2sql-eval run`` on a fresh storage root, SQLite or PostgreSQL).

    On an empty PostgreSQL database, two processes starting at once (two ``nl2sql-eval run`` of different
    models) both run Dagster's ``CREATE TABLE``s; the loser fails with ``relation/type ... already exists``
    (Dagster retries only some of these). A second try finds the tables and creates nothing. A local instance's
    SQLite files are checked first (``check_instance_files``)."""
    import dagster as dg
    import sqlalchemy.exc

    home = os.environ.get("DAGSTER_HOME")
    if home:
        check_instance_files(Path(home))
    for attempt in range(SCHEMA_RACE_ATTEMPTS):
        try:
            return dg.DagsterInstance.get()
        except (sqlalchemy.exc.ProgrammingError, sqlalchemy.exc.IntegrityError, sqlalchemy.exc.OperationalError) as exc:
            # PostgreSQL: relation/type ... already exists; SQLite: table ... already exists (OperationalError)
            if "already exists" not in str(exc) or attempt == SCHEMA_RACE_ATTEMPTS - 1:
                raise
            logger.info("another process was creating the instance's tables; opening it again")
            time.sleep(0.2 * (attempt + 1))
    raise AssertionError("unreachable")


def write_pool_limits() -> dict[str, int]:
    """Write the pool limits of ``data/models.yml`` into the instance at DAGSTER_HOME (what changed)."""

    from resources.pools import sync_pool_limits

    with open_instance() as instance:
        return sync_pool_limits(instance)


if __name__ == "__main__":
    print(ensure_instance_home())
    for pool, limit in write_pool_limits().items():
        print(f"pool {pool}: limit {limit}")

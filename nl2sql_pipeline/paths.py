"""Where things live: the checked-in ``data/`` folder and the storage root every run writes under.

The storage root defaults to ``.nl2sql/`` in the checkout and is overridden by ``NL2SQL_HOME``.
Nothing a run writes goes outside it, except the Parquet outputs of the assets when ``NL2SQL_ASSETS_URL``
names another place for them (an fsspec URL, so workers on other machines share them).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from upath import UPath

PROJECT_ROOT = Path(__file__).resolve().parent.parent
STORAGE_ENV_VAR = "NL2SQL_HOME"
DATA_ENV_VAR = "NL2SQL_DATA"
ASSETS_URL_ENV_VAR = "NL2SQL_ASSETS_URL"


def data_dir() -> Path:
    """The folder holding templates, semantic model, policies, models.yml and gold sets."""
    return Path(os.environ.get(DATA_ENV_VAR) or PROJECT_ROOT / "data").resolve()


def storage_root_path() -> Path:
    """Where the storage root is (``NL2SQL_HOME``, else ``.nl2sql/`` in the checkout), without creating it."""
    return Path(os.environ.get(STORAGE_ENV_VAR) or PROJECT_ROOT / ".nl2sql").resolve()


def storage_root() -> Path:
    """The storage root (created on first use)."""
    root = storage_root_path()
    root.mkdir(parents=True, exist_ok=True)
    return root


def databases_dir() -> Path:
    """Folder of the built sample databases (``<name>.duckdb``)."""
    path = storage_root() / "databases"
    path.mkdir(parents=True, exist_ok=True)
    return path


def database_path(name: str) -> Path:
    """The DuckDB file of the sample database called ``name`` (it may not exist yet).

    A ``--database`` argument (a name or a path) is resolved by ``nl2sql_pipeline.databases.resolve.resolve_database``.
    """
    return databases_dir() / f"{name}.duckdb"


def assets_dir() -> Path | UPath:
    """Folder of the Parquet files, one per asset partition: ``<storage root>/assets``, or the fsspec URL
    of ``NL2SQL_ASSETS_URL`` (``file:///shared/nl2sql/assets``, ``s3://bucket/nl2sql/assets``, ...) as a
    ``UPath``, which offers the ``pathlib`` operations the readers use (``/``, ``glob``, ``exists``, ``open``).
    Not created here: a reader finds nothing in a folder that is not there, a writer creates a file's folders."""
    url = os.environ.get(ASSETS_URL_ENV_VAR)
    if url and "://" in url:
        from upath import UPath

        return UPath(url)
    if url:  # a plain path (a shared mount)
        return Path(url).resolve()
    return storage_root_path() / "assets"


def baselines_db_path() -> Path:
    """The DuckDB file of versioned baseline tables (neither it nor the root is created here: its writer does)."""
    return storage_root_path() / "baselines.duckdb"


def cache_dir() -> Path:
    """The generation cache."""
    path = storage_root() / "cache"
    path.mkdir(parents=True, exist_ok=True)
    return path


def scratch_dir() -> Path:
    """Temp space for sandboxed queries (spill files)."""
    path = storage_root() / "tmp"
    path.mkdir(parents=True, exist_ok=True)
    return path


def dagster_home() -> Path:
    """The local Dagster instance's home."""
    path = storage_root() / "dagster_home"
    path.mkdir(parents=True, exist_ok=True)
    return path


def reports_dir() -> Path:
    """Rendered reports."""
    path = storage_root() / "reports"
    path.mkdir(parents=True, exist_ok=True)
    return path

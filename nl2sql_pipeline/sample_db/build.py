"""Build a sample database file: generate the tables, write them, hash them, replace the file atomically.

A build writes to a temp file beside the target and renames it into place, then writes the sidecar
manifest ``<path>.json`` (seed, scale, builder version, row counts, content hash); a failed build leaves
the previous file and manifest untouched. :func:`ensure_database` builds a named sample database under
the storage root only when it is missing or was built differently, one process at a time.
"""

from __future__ import annotations

import datetime
import logging
import os
from collections.abc import Callable
from pathlib import Path

import duckdb
import pyarrow as pa

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.sample_db.contents import content_hash
from nl2sql_pipeline.sample_db.lock import exclusive_lock, lock_path
from nl2sql_pipeline.sample_db.manifest import BuildInfo, is_current, manifest_path, manifest_text
from nl2sql_pipeline.sample_db.spec import (
    BUILDER_VERSION,
    DATABASE_NAME,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    TABLE_ORDER,
    validate_scale,
)
from nl2sql_pipeline.sample_db.tables import generate_tables

logger = logging.getLogger(__name__)

SCHEMA_PATH = Path(__file__).with_name("schema.sql")


def _write_tables(con: duckdb.DuckDBPyConnection, tables: dict[str, pa.Table]) -> dict[str, int]:
    counts: dict[str, int] = {}
    con.execute("BEGIN TRANSACTION")  # schema and rows commit together
    con.execute(SCHEMA_PATH.read_text(encoding="utf-8"))
    for name in TABLE_ORDER:
        source = tables[name]
        con.register("_source", source)
        try:
            con.execute(f'INSERT INTO "{name}" BY NAME SELECT * FROM _source')
        finally:
            con.unregister("_source")
        counts[name] = source.num_rows
    con.execute("COMMIT")
    return counts


def _remove_quietly(*files: Path) -> None:
    for file in files:
        try:
            file.unlink()
        except FileNotFoundError:
            pass


def build_database(path: Path, *, seed: int = DEFAULT_SEED, scale: float = DEFAULT_SCALE) -> BuildInfo:
    """Build anime_platform at ``path`` (replacing it atomically) and write its manifest ``<path>.json``.

    Raises ValueError for a scale that is not a finite number in (0, MAX_SCALE].
    """
    scale = validate_scale(scale)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.building")
    tmp_manifest = path.with_name(f".{path.name}.{os.getpid()}.json.building")
    _remove_quietly(tmp, Path(f"{tmp}.wal"), tmp_manifest)
    try:
        tables = generate_tables(seed=seed, scale=scale)
        con = duckdb.connect(str(tmp))
        try:
            counts = _write_tables(con, tables)
            digest = content_hash(con)
            con.execute("CHECKPOINT")
        finally:
            con.close()
        info = BuildInfo(
            path=path,
            seed=seed,
            scale=scale,
            builder_version=BUILDER_VERSION,
            row_counts=counts,
            content_hash=digest,
            built_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        )
        tmp_manifest.write_text(manifest_text(info), encoding="utf-8")
        os.replace(tmp, path)
        os.replace(tmp_manifest, manifest_path(path))
    except BaseException:
        _remove_quietly(tmp, Path(f"{tmp}.wal"), tmp_manifest)
        raise
    logger.info("built %s (seed=%s, scale=%s, %d rows)", path, seed, scale, sum(counts.values()))
    return info


BUILDERS: dict[str, Callable[..., BuildInfo]] = {DATABASE_NAME: build_database}
"""Known sample databases by name."""


def ensure_database(name: str = DATABASE_NAME, *, seed: int = DEFAULT_SEED, scale: float = DEFAULT_SCALE) -> Path:
    """The path of sample database ``name``, building it first when missing or built differently."""
    builder = BUILDERS.get(name)
    if builder is None:
        known = ", ".join(sorted(BUILDERS))
        raise DatabaseNotFoundError(f"unknown sample database {name!r}; known databases: {known}")
    scale = validate_scale(scale)
    path = paths.database_path(name)
    if is_current(path, seed=seed, scale=scale):
        return path
    with exclusive_lock(lock_path(path)):
        if not is_current(path, seed=seed, scale=scale):  # another process may have built it meanwhile
            builder(path, seed=seed, scale=scale)
    return path

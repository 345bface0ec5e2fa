"""Build variant files from a source database: the steps of ``STEPS`` in order, then an atomic rename.

The source is attached read-only and never written; the variant is written to a temporary file beside
its final path and renamed into place, so a reader never sees half a variant. ``VariantBuilder`` opens the
source once for all its variants (one DuckDB instance, the source's shape read once); ``build_variant``
builds one.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.variants import steps
from nl2sql_pipeline.variants.literals import BoundaryLiteral
from nl2sql_pipeline.variants.schema import SOURCE_ALIAS, SourceSchema, read_schema
from nl2sql_pipeline.variants.steps import VariantContext

logger = logging.getLogger(__name__)

Step = Callable[[VariantContext], "dict[str, Any]"]
STEPS: tuple[Step, ...] = (
    steps.sample_rows,
    steps.keep_foreign_keys,
    steps.duplicate_rows,
    steps.inject_nulls,
    steps.write_boundary_values,
    steps.shuffle_rows,
    steps.copy_views,
)
BUILD_MEMORY_LIMIT = "1GB"
VARIANT_ALIAS = "nl2sql_variant"
"""The catalog name a variant file is attached under while it is built."""
BUILD_CATALOG = "nl2sql_build"
"""The build instance's own (empty) catalog, where the builder stands between variants."""


class VariantBuildError(Nl2SqlError):
    """A variant could not be built from its source database."""


def variant_seed(seed: int, index: int) -> int:
    """The seed of variant ``index`` of a suite seeded with ``seed`` (independent of how many variants)."""
    digest = hashlib.sha256(f"nl2sql-variant:{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def attach_source(con: duckdb.DuckDBPyConnection, source: Path) -> None:
    """Attach ``source`` read-only as ``src``."""
    escaped = str(source).replace("'", "''")
    con.execute(f"ATTACH '{escaped}' AS {SOURCE_ALIAS} (READ_ONLY)")


def read_source_schema(source: Path) -> SourceSchema:
    """The shape of ``source`` (read through an in-memory connection that attaches it read-only)."""
    con = duckdb.connect(":memory:")
    try:
        attach_source(con, source)
        return read_schema(con)
    except duckdb.Error as exc:
        raise VariantBuildError(f"cannot read the schema of {source} to build its variants ({exc})") from exc
    finally:
        con.close()


def build_connection() -> duckdb.DuckDBPyConnection:
    """A DuckDB instance to build variants in: one thread, ``BUILD_MEMORY_LIMIT``, spill files in the scratch
    folder, no extensions. Sources and variant files are attached to it; one instance can serve every source in
    turn (a new instance costs ~30 ms).

    Its own catalog is ``BUILD_CATALOG``, an empty database file removed as soon as it is open (nothing is written
    to it), not ``:memory:``: an in-memory instance's catalog is always called ``memory``, and a source schema of
    that name would then be an ambiguous reference in every statement that names it."""
    scratch = paths.scratch_dir() / f"variant-build-{os.getpid()}"
    folder = Path(tempfile.mkdtemp(prefix="variant-catalog-", dir=paths.scratch_dir()))
    own = folder / f"{BUILD_CATALOG}.duckdb"
    try:
        return duckdb.connect(str(own), config=_build_config(scratch))
    finally:
        own.unlink(missing_ok=True)
        Path(f"{own}.wal").unlink(missing_ok=True)
        shutil.rmtree(folder, ignore_errors=True)


def _build_config(scratch: Path) -> dict[str, Any]:
    return {
        "threads": 1,
        "memory_limit": BUILD_MEMORY_LIMIT,
        "temp_directory": str(scratch),
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
    }


class VariantBuilder:
    """One source database opened to build its variants: the source attached read-only to a build instance
    (``build_connection``, its own or ``con``) and its shape read once, each variant file attached in turn,
    built, checkpointed and detached (reading the shape costs ~20 ms: once per source, not per variant).

        with VariantBuilder(source) as builder:
            literals = boundary_literals(sqls, builder.schema)
            builder.build(target, index, seed, literals)

    Raises ``VariantBuildError`` when the source cannot be read.
    """

    def __init__(self, source: Path, con: duckdb.DuckDBPyConnection | None = None):
        self.source = Path(source)
        self._own = con is None
        self._con = build_connection() if con is None else con
        self._cache: dict[Any, Any] = {}
        try:
            attach_source(self._con, self.source)
            self.schema = read_schema(self._con)
        except duckdb.Error as exc:
            self.close()
            raise VariantBuildError(f"cannot read the schema of {source} to build its variants ({exc})") from exc

    def __enter__(self) -> VariantBuilder:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the builder's own instance; detach the source from a shared one."""
        if self._own:
            self._con.close()
            return
        try:
            self._con.execute(f"USE {BUILD_CATALOG}.main")
            self._con.execute(f"DETACH DATABASE IF EXISTS {SOURCE_ALIAS}")
        except duckdb.Error as exc:
            logger.debug("could not detach %s from the shared build instance: %s", self.source, exc)

    def build(self, target: Path, index: int, seed: int, literals: Sequence[BoundaryLiteral] = ()) -> dict[str, Any]:
        """Write variant ``index`` to ``target`` (through a temporary file renamed into place); returns what
        each step did (for the manifest)."""
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        own_seed = variant_seed(seed, index)
        con = self._con
        summary: dict[str, Any] = {"index": index, "seed": own_seed}
        attached = False
        try:
            escaped = str(tmp).replace("'", "''")
            con.execute(f"ATTACH '{escaped}' AS {VARIANT_ALIAS}")
            attached = True
            con.execute(f"USE {VARIANT_ALIAS}")
            ctx = VariantContext(
                con,
                self.schema,
                index,
                own_seed,
                list(literals),
                keep_share=random.Random(own_seed).uniform(*steps.KEEP_RANGE),
                notes={"database": VARIANT_ALIAS},
                cache=self._cache,
            )
            for step in STEPS:
                summary[step.__name__] = step(ctx)
            con.execute(f"USE {BUILD_CATALOG}.main")
            con.execute(f"CHECKPOINT {VARIANT_ALIAS}")
            con.execute(f"DETACH {VARIANT_ALIAS}")
        except duckdb.Error as exc:
            if attached:
                try:
                    con.execute(f"USE {BUILD_CATALOG}.main")
                    con.execute(f"DETACH {VARIANT_ALIAS}")
                except duckdb.Error:
                    logger.debug("could not detach the failed variant %s", tmp)
            tmp.unlink(missing_ok=True)
            Path(f"{tmp}.wal").unlink(missing_ok=True)
            raise VariantBuildError(
                f"building variant {index} of {self.source} failed ({type(exc).__name__}: {exc})"
            ) from exc
        os.replace(tmp, target)
        Path(f"{tmp}.wal").unlink(missing_ok=True)
        return summary


def build_variant(
    source: Path, target: Path, index: int, seed: int, literals: Sequence[BoundaryLiteral] = ()
) -> dict[str, Any]:
    """Write variant ``index`` of ``source`` to ``target``; returns what each step did (for the manifest)."""
    with VariantBuilder(source) as builder:
        return builder.build(target, index, seed, literals)

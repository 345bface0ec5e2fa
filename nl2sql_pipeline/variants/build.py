"""Build one variant file from a source database: the steps of ``STEPS`` in order, then an atomic rename.

The source is attached read-only and never written; the variant is written to a temporary file beside
its final path and renamed into place, so a reader never sees half a variant.
"""

from __future__ import annotations

import hashlib
import logging
import os
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb

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


def build_variant(
    source: Path, target: Path, index: int, seed: int, literals: Sequence[BoundaryLiteral] = ()
) -> dict[str, Any]:
    """Write variant ``index`` of ``source`` to ``target``; returns what each step did (for the manifest)."""
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    own_seed = variant_seed(seed, index)
    con = duckdb.connect(
        str(tmp),
        config={
            "threads": 1,
            "memory_limit": BUILD_MEMORY_LIMIT,
            "autoinstall_known_extensions": False,
            "autoload_known_extensions": False,
        },
    )
    summary: dict[str, Any] = {"index": index, "seed": own_seed}
    try:
        attach_source(con, source)
        [(database,)] = con.execute("SELECT current_database()").fetchall()
        ctx = VariantContext(
            con,
            read_schema(con),
            index,
            own_seed,
            list(literals),
            keep_share=random.Random(own_seed).uniform(*steps.KEEP_RANGE),
            notes={"database": database},
        )
        for step in STEPS:
            summary[step.__name__] = step(ctx)
        con.execute(f"DETACH {SOURCE_ALIAS}")
        con.execute("CHECKPOINT")
    except duckdb.Error as exc:
        con.close()
        tmp.unlink(missing_ok=True)
        raise VariantBuildError(f"building variant {index} of {source} failed ({type(exc).__name__}: {exc})") from exc
    con.close()
    os.replace(tmp, target)
    Path(f"{tmp}.wal").unlink(missing_ok=True)
    return summary

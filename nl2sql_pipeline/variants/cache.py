"""Where a database's variants live under the storage root, and the fingerprint that names them.

``<root>/variants/<database file stem>-<fingerprint>/variant-<i>.duckdb`` (and ``variant-<i>.json``, what
the build did). The fingerprint hashes the source file's identity (path, size, modification time), the
seed, the boundary literals (so the gold SQL's comparisons), the builder version and DuckDB's version:
a variant is built once for them and shared by every model and run. Variant ``i`` does not depend on how
many variants are asked for, so asking for more builds only the missing ones.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

import duckdb

from nl2sql_pipeline import paths
from nl2sql_pipeline.variants.build import VariantBuilder
from nl2sql_pipeline.variants.literals import BoundaryLiteral, boundary_literals

logger = logging.getLogger(__name__)

BUILDER_VERSION = "1"
"""Bump when a step changes what a variant holds: every cached variant is then built again."""


@dataclass(frozen=True)
class VariantSet:
    """The variant files of one source database (``paths[i]`` is variant ``i``)."""

    source: Path
    fingerprint: str
    paths: tuple[Path, ...]


def variants_fingerprint(source: Path, literals: Iterable[BoundaryLiteral], seed: int) -> str:
    """The cache key of a source database's variants (16 hex digits)."""
    stat = source.stat()
    payload = json.dumps(
        {
            "builder": BUILDER_VERSION,
            "duckdb": duckdb.__version__,
            "source": str(source.resolve()),
            "size": stat.st_size,
            "mtime_ns": stat.st_mtime_ns,
            "seed": seed,
            "literals": [asdict(literal) for literal in literals],
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def variants_dir(source: Path, fingerprint: str) -> Path:
    """The folder of a source database's variants at ``fingerprint``."""
    return paths.storage_root() / "variants" / f"{source.stem}-{fingerprint}"


def ensure_variants(
    source: Path,
    expected_sqls: Iterable[str],
    count: int,
    seed: int = 0,
    con: duckdb.DuckDBPyConnection | None = None,
) -> VariantSet:
    """The first ``count`` variants of ``source`` for gold SQL ``expected_sqls``, building the missing ones
    (in ``con``, a ``build.build_connection`` shared by several sources, when given).

    Raises ``VariantBuildError`` when the source cannot be read or a variant cannot be built.
    """
    source = Path(source).resolve()
    with VariantBuilder(source, con) as builder:  # the source opened and its shape read once for every variant
        literals = boundary_literals(expected_sqls, builder.schema)
        fingerprint = variants_fingerprint(source, literals, seed)
        folder = variants_dir(source, fingerprint)
        found: list[Path] = []
        for index in range(count):
            target = folder / f"variant-{index}.duckdb"
            if not target.is_file():
                logger.info("building variant %d of %s (%s)", index, source, fingerprint)
                summary = builder.build(target, index, seed, literals)
                manifest = folder / f"variant-{index}.json"
                tmp = manifest.with_name(f".{manifest.name}.{os.getpid()}.tmp")
                tmp.write_text(
                    json.dumps({"source": str(source), "fingerprint": fingerprint, **summary}, indent=1, default=str),
                    encoding="utf-8",
                )
                os.replace(tmp, manifest)
            found.append(target)
    return VariantSet(source, fingerprint, tuple(found))

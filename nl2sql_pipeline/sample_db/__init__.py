"""The sample databases the gold sets are asked against; ``anime_platform`` is built by :mod:`.builder`.

``ensure_database()`` returns the path of a built, current database (building it when needed);
``build_database(path, seed=..., scale=...)`` builds one anywhere (tests use a small ``scale``).
"""

from nl2sql_pipeline.sample_db.builder import (
    BUILDER_VERSION,
    DATABASE_NAME,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    PROMPT_INJECTIONS,
    REFERENCE_DATE,
    TABLE_ORDER,
    BuildInfo,
    build_database,
    content_hash,
    ensure_database,
    generate_tables,
    live_row_counts,
    manifest_path,
    read_manifest,
    validate_scale,
)

__all__ = [
    "BUILDER_VERSION",
    "DATABASE_NAME",
    "DEFAULT_SCALE",
    "DEFAULT_SEED",
    "PROMPT_INJECTIONS",
    "REFERENCE_DATE",
    "TABLE_ORDER",
    "BuildInfo",
    "build_database",
    "content_hash",
    "ensure_database",
    "generate_tables",
    "live_row_counts",
    "manifest_path",
    "read_manifest",
    "validate_scale",
]

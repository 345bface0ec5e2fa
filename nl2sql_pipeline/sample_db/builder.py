"""Where the sample-database builder's names used to live; kept so existing imports keep working.

New code imports from :mod:`nl2sql_pipeline.sample_db` (the package re-exports every public name).
The builder itself is split by responsibility: :mod:`.spec` (names, dates, tables, sizes),
:mod:`.words` (vocabulary data), :mod:`.anime_content`, :mod:`.viewer_engagement` and
:mod:`.platform_monetization` (one module per domain's tables), :mod:`.tables` (assembly),
:mod:`.build`, :mod:`.manifest`, :mod:`.contents` and :mod:`.lock`.
"""

from nl2sql_pipeline.sample_db.build import BUILDERS, SCHEMA_PATH, build_database, ensure_database
from nl2sql_pipeline.sample_db.contents import content_hash, live_row_counts
from nl2sql_pipeline.sample_db.manifest import BuildInfo, is_current, manifest_path, read_manifest
from nl2sql_pipeline.sample_db.spec import (
    BASE_FACT_ROWS,
    BUILDER_VERSION,
    DATA_START,
    DATABASE_NAME,
    DEFAULT_SCALE,
    DEFAULT_SEED,
    MAX_SCALE,
    PROMPT_INJECTIONS,
    REFERENCE_DATE,
    TABLE_ORDER,
    SampleDatabaseBuildError,
    validate_scale,
)
from nl2sql_pipeline.sample_db.tables import generate_tables

__all__ = [
    "BASE_FACT_ROWS",
    "BUILDERS",
    "BUILDER_VERSION",
    "DATABASE_NAME",
    "DATA_START",
    "DEFAULT_SCALE",
    "DEFAULT_SEED",
    "MAX_SCALE",
    "PROMPT_INJECTIONS",
    "REFERENCE_DATE",
    "SCHEMA_PATH",
    "TABLE_ORDER",
    "BuildInfo",
    "SampleDatabaseBuildError",
    "build_database",
    "content_hash",
    "ensure_database",
    "generate_tables",
    "is_current",
    "live_row_counts",
    "manifest_path",
    "read_manifest",
    "validate_scale",
]

"""The sample databases the gold sets are asked against; ``anime_platform`` is the one built here.

``ensure_database()`` returns the path of a built, current database (building it when needed);
``build_database(path, seed=..., scale=...)`` builds one anywhere (tests use a small ``scale``).

Modules: :mod:`.spec` (name, dates, tables, sizes, planted strings), :mod:`.words` with ``words/*.txt``
(the vocabulary, as data), one module per domain's tables (:mod:`.anime_content`,
:mod:`.viewer_engagement`, :mod:`.platform_monetization`) assembled by :mod:`.tables`, and the build
itself apart from what it writes: :mod:`.build`, :mod:`.manifest`, :mod:`.contents`, :mod:`.lock`.
"""

from nl2sql_pipeline.sample_db.build import BUILDERS, build_database, ensure_database
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

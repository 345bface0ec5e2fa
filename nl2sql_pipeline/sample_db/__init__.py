"""The sample databases the gold sets are asked against; ``anime_platform`` is the one built here.

``ensure_database()`` returns the path of a built, current database (building it when needed);
``build_database(path, seed=..., scale=...)`` builds one anywhere (tests use a small ``scale``).

Modules: :mod:`.spec` (name, dates, tables, sizes, planted strings), :mod:`.words` with ``words/*.txt``
(the vocabulary, as data), one module per domain's tables (:mod:`.anime_content`,
:mod:`.viewer_engagement`, :mod:`.platform_monetization`) assembled by :mod:`.tables`, and the build
itself apart from what it writes: :mod:`.build`, :mod:`.manifest`, :mod:`.contents`, :mod:`.lock`.
"""

import importlib
from typing import Any

# Names and the module that holds each, imported on first use (PEP 562): the CLI's argument parser reads
# the defaults of ``spec`` without paying for the builders (~0.3 s of imports).
_HOMES: dict[str, str] = {
    **dict.fromkeys(("BUILDERS", "build_database", "ensure_database"), "build"),
    **dict.fromkeys(("content_hash", "live_row_counts"), "contents"),
    **dict.fromkeys(("BuildInfo", "is_current", "manifest_path", "read_manifest"), "manifest"),
    **dict.fromkeys(
        (
            "BASE_FACT_ROWS",
            "BUILDER_VERSION",
            "DATA_START",
            "DATABASE_NAME",
            "DEFAULT_SCALE",
            "DEFAULT_SEED",
            "MAX_SCALE",
            "PROMPT_INJECTIONS",
            "REFERENCE_DATE",
            "TABLE_ORDER",
            "SampleDatabaseBuildError",
            "validate_scale",
        ),
        "spec",
    ),
    "generate_tables": "tables",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


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

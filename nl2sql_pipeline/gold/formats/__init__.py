"""Importers for public NL2SQL formats: Spider, BIRD, defog sql-eval and plain question/SQL/database files.

    result = import_benchmark("spider", Path("spider"), Path("gold/spider-dev.jsonl"))
    print(result.summary())

A reader (``spider``, ``bird``, ``plain``) turns the files into questions and databases
(``model.BenchmarkSource``); ``build.build_gold`` copies the databases into DuckDB beside the gold
file, converts every gold query to DuckDB, checks it against the source engine, and writes a validated
native gold file and an import report.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from nl2sql_pipeline.dialect.convert import known_dialect
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.execution import SandboxLimits
from nl2sql_pipeline.gold.formats.bird import read_bird
from nl2sql_pipeline.gold.formats.build import REPORT_SUFFIX, ImportResult, build_gold, report_path_for
from nl2sql_pipeline.gold.formats.hardness import HARDNESS_LEVELS, HardnessError, spider_hardness
from nl2sql_pipeline.gold.formats.model import BenchmarkImportError, BenchmarkSource
from nl2sql_pipeline.gold.formats.plain import expand_alternatives, read_defog, read_plain
from nl2sql_pipeline.gold.formats.spider import read_spider, require_folder

Reader = Callable[[Path, "Path | None"], BenchmarkSource]
FORMATS: dict[str, Reader] = {
    "spider": read_spider,
    "bird": read_bird,
    "defog": read_defog,
    "plain": read_plain,
}
"""Format name -> reader ``(source path, databases folder or None) -> BenchmarkSource``."""

__all__ = [
    "FORMATS",
    "HARDNESS_LEVELS",
    "REPORT_SUFFIX",
    "BenchmarkImportError",
    "HardnessError",
    "ImportResult",
    "build_gold",
    "expand_alternatives",
    "import_benchmark",
    "report_path_for",
    "spider_hardness",
]


def import_benchmark(
    fmt: str,
    src: Path,
    out: Path,
    *,
    source_dialect: str | None = None,
    databases: Path | None = None,
    limits: SandboxLimits = SandboxLimits(),
    policy_for: Callable[[str, Path], str] | None = None,
) -> ImportResult:
    """Read ``src`` in format ``fmt`` and write the gold file ``out`` (see ``build.build_gold``).

    Raises ``CaseValidationError`` for an unknown format or dialect, unreadable input or no kept case,
    and ``BenchmarkImportError`` when ``databases`` is not a folder or ``out``'s folder cannot be made.
    ``policy_for(db_id, file)`` names each database's SQL policy for the report (default ``safety``).
    """
    if fmt not in FORMATS:
        raise CaseValidationError([f"unknown format {fmt!r} (use one of: {', '.join(FORMATS)})"])
    if source_dialect is not None and not known_dialect(source_dialect):
        raise CaseValidationError(
            [f"unknown source dialect {source_dialect!r} (use a sqlglot dialect: sqlite, postgres, mysql, duckdb, ...)"]
        )
    if Path(out).suffix.lower() != ".jsonl":
        raise CaseValidationError([f"{out}: the gold file must end in .jsonl"])
    folder = require_folder(Path(databases)) if databases else None
    source = FORMATS[fmt](Path(src), folder)
    return build_gold(source, Path(out), source_dialect, limits, policy_for)

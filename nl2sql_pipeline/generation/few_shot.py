"""Few-shot examples: ``data/prompts/few_shot/<name>.yml``, named by a model's ``few_shot:`` key.

    # a comment
    examples:
      - question: How many studios are there?
        sql: SELECT COUNT(*) AS studios FROM studios
        database: anime_platform      # optional: shown only to cases of this database

The examples are replayed after the system message as earlier user/assistant turns (the assistant
answering with the SQL in a ```sql fence), in file order, so prompts stay deterministic. The file's
content hash is part of the model's config hash: editing an example invalidates cached generations.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
EXAMPLE_KEYS: frozenset[str] = frozenset({"question", "sql", "database"})


@dataclass(frozen=True)
class FewShotExample:
    """One worked example: a question and the SQL answering it (for ``database``, or any when None)."""

    question: str
    sql: str
    database: str | None = None


@dataclass(frozen=True)
class FewShotSet:
    """A named, hashed list of examples."""

    name: str
    examples: tuple[FewShotExample, ...]
    content_hash: str

    def for_database(self, database: str) -> tuple[FewShotExample, ...]:
        """The examples a case of ``database`` sees (file order)."""
        return tuple(e for e in self.examples if e.database in (None, database))


def few_shot_dir() -> Path:
    """``data/prompts/few_shot`` (or under ``$NL2SQL_DATA``)."""
    return paths.data_dir() / "prompts" / "few_shot"


def _example(path: Path, index: int, raw: object) -> FewShotExample:
    where = f"{path}: example {index + 1}"
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: must be a mapping with question and sql, got {type(raw).__name__}")
    unknown = sorted(set(raw) - EXAMPLE_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} (allowed: {', '.join(sorted(EXAMPLE_KEYS))})")
    values: dict[str, str | None] = {}
    for key in ("question", "sql", "database"):
        value = raw.get(key)
        if value is None and key == "database":
            values[key] = None
            continue
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{where}: {key!r} must be a non-empty string (write {key}: ...)")
        values[key] = value.strip()
    return FewShotExample(question=values["question"] or "", sql=values["sql"] or "", database=values["database"])


def load_few_shot(name: str, directory: Path | None = None) -> FewShotSet:
    """Load and validate ``<directory>/<name>.yml`` (default ``data/prompts/few_shot``).

    Raises ConfigError naming the file (and the example) for a missing file or a malformed entry.
    """
    if not NAME_RE.match(name):
        raise ConfigError(f"few-shot set name {name!r} is invalid (letters, digits, '.', '_', '-')")
    path = (directory or few_shot_dir()) / f"{name}.yml"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: few-shot file {name!r} not found (add it or fix the model's few_shot key)") from None
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from exc
    if not isinstance(document, dict) or set(document) != {"examples"}:
        raise ConfigError(f"{path}: the top level must be exactly one key 'examples:' holding a list")
    raw_examples = document["examples"]
    if not isinstance(raw_examples, list) or not raw_examples:
        raise ConfigError(f"{path}: 'examples' must be a non-empty list of {{question, sql}} mappings")
    examples = tuple(_example(path, i, raw) for i, raw in enumerate(raw_examples))
    content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return FewShotSet(name=name, examples=examples, content_hash=content_hash)

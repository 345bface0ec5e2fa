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

from nl2sql_pipeline import paths
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
EXAMPLE_FIELDS: dict[str, Field] = {
    "question": Field(str, required=True),
    "sql": Field(str, required=True),
    "database": Field(str),
}
EXAMPLE_KEYS: frozenset[str] = frozenset(EXAMPLE_FIELDS)
TOP_FIELDS: dict[str, Field] = {
    "examples": Field(list, required=True, fix="write 'examples:' holding a list of {question, sql} mappings"),
}


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


def load_few_shot(name: str, directory: Path | None = None) -> FewShotSet:
    """Load and validate ``<directory>/<name>.yml`` (default ``data/prompts/few_shot``).

    Raises ConfigError naming the file (and the example) for a missing file or a malformed entry.
    """
    if not NAME_RE.match(name):
        raise ConfigError(f"few-shot set name {name!r} is invalid (letters, digits, '.', '_', '-')")
    path = (directory or few_shot_dir()) / f"{name}.yml"
    if not path.is_file():
        raise ConfigError(f"{path}: few-shot file {name!r} not found (add it or fix the model's few_shot key)")
    text, document = read_yaml(path, ConfigError, missing="add it or fix the model's few_shot key")
    check = Checker(path)
    top = check.mapping(document, TOP_FIELDS) or {}
    raw_examples = top.get("examples")
    if raw_examples is not None and not raw_examples:
        check.problem(line_of(document, "examples"), "examples", "the list is empty", "add at least one example")
    examples: list[FewShotExample] = []
    for index, raw in enumerate(raw_examples or []):
        values = check.mapping(raw, EXAMPLE_FIELDS, key=f"examples[{index}]", line=line_of(raw_examples, index))
        if values and values["question"] is not None and values["sql"] is not None:
            examples.append(FewShotExample(values["question"], values["sql"], values["database"]))
    check.raise_if_problems()
    content_hash = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    return FewShotSet(name=name, examples=tuple(examples), content_hash=content_hash)

"""The gold-set registry: ``data/gold/gold_sets.yml`` maps version keys to gold-set files.

```yaml
gold_sets:
  multidomain-v1:
    file: nl2sql_multidomain.jsonl          # relative to data/gold/
    description: ...
```

Keys are slugs (``[a-z0-9][a-z0-9._-]*``) because they become Dagster partition keys, where ``|``,
``/`` and ``,`` break things.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.gold.validation import load_cases, unknown_field_problems
from nl2sql_pipeline.paths import data_dir as default_data_dir
from nl2sql_pipeline.yaml_strict import load_strict

logger = logging.getLogger(__name__)

REGISTRY_FILE = "gold_sets.yml"
GOLD_SUBDIR = "gold"
SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
ENTRY_FIELDS: tuple[str, ...] = ("file", "description")


@dataclass(frozen=True)
class GoldSetInfo:
    """One registered gold set: its key, the file holding its cases, and a description."""

    key: str
    path: Path
    description: str = ""


def registry_path(data_dir: Path | None = None) -> Path:
    """Where the registry lives: ``<data dir>/gold/gold_sets.yml``."""
    return (data_dir or default_data_dir()) / GOLD_SUBDIR / REGISTRY_FILE


def _line(node: yaml.Node | None) -> int:
    """1-based line of a YAML node (1 when unknown)."""
    return node.start_mark.line + 1 if node is not None else 1


def _node_for(mapping: yaml.Node | None, key: str) -> yaml.Node | None:
    """The value node of ``key`` in a mapping node (for its line), if any."""
    if isinstance(mapping, yaml.MappingNode):
        for key_node, value_node in mapping.value:
            if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
                return value_node
    return None


def _parse_entry(
    key: Any, entry: Any, node: yaml.Node | None, gold_dir: Path, source: str
) -> tuple[GoldSetInfo | None, list[str]]:
    """Check one registry entry; return it (or None) and its problems."""
    line = _line(node)
    problems: list[str] = []
    if not isinstance(key, str) or not SLUG_PATTERN.fullmatch(key):
        problems.append(
            f"{source}:{line}: gold-set key {key!r} is not a slug "
            "(use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit)"
        )
    if not isinstance(entry, dict):
        problems.append(f"{source}:{line}: gold set {key!r} must be a mapping (give it 'file:' and 'description:')")
        return None, problems
    problems += unknown_field_problems(list(entry), ENTRY_FIELDS, source, line)
    file_name = entry.get("file")
    description = entry.get("description", "")
    if not isinstance(file_name, str) or not file_name.strip():
        problems.append(
            f"{source}:{line}: gold set {key!r} has no 'file' (add file: <name>.jsonl, relative to {gold_dir})"
        )
        return None, problems
    path = (gold_dir / file_name).resolve()
    if Path(file_name).is_absolute() or not path.is_relative_to(gold_dir.resolve()):
        problems.append(
            f"{source}:{line}: gold set {key!r} points outside {gold_dir} "
            "(give a path relative to the gold folder, without '..')"
        )
    if description is None:
        description = ""
    if not isinstance(description, str):
        problems.append(f"{source}:{line}: the description of {key!r} must be text (quote it)")
    if problems:
        return None, problems
    return GoldSetInfo(key=key, path=path, description=description.strip()), problems


def list_gold_sets(data_dir: Path | None = None) -> dict[str, GoldSetInfo]:
    """The registered gold sets by key, in file order; raises ``ConfigError`` listing every problem."""
    path = registry_path(data_dir)
    source = str(path)
    if not path.is_file():
        raise ConfigError(f"{source}: no gold-set registry (create it with a 'gold_sets:' mapping of key -> file)")
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = load_strict(text)  # a gold-set key registered twice must not silently win
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError(f"{source}:{line}: YAML syntax error: {exc} (fix the YAML syntax)") from exc
    if not isinstance(data, dict) or not isinstance(data.get("gold_sets"), dict):
        raise ConfigError(f"{source}:1: expected a top-level 'gold_sets:' mapping (see the format in the docs)")
    problems = [
        p.replace("unknown field", "unknown top-level key", 1)
        for p in unknown_field_problems(list(data), ("gold_sets",), source, 1)
    ]
    sets_node = _node_for(root, "gold_sets")
    gold_dir = path.parent
    found: dict[str, GoldSetInfo] = {}
    for key, entry in data["gold_sets"].items():
        info, entry_problems = _parse_entry(key, entry, _node_for(sets_node, str(key)), gold_dir, source)
        problems += entry_problems
        if info is not None:
            found[info.key] = info
    if problems:
        raise ConfigError("\n".join(problems))
    return found


def gold_set_info(key: str, data_dir: Path | None = None) -> GoldSetInfo:
    """The registry entry of ``key``; an unknown key raises ``ConfigError`` listing the known ones."""
    sets = list_gold_sets(data_dir)
    if key not in sets:
        known = ", ".join(sets) or "none registered"
        raise ConfigError(
            f"unknown gold set '{key}' (known gold sets: {known}; register new ones in {registry_path(data_dir)})"
        )
    return sets[key]


def load_gold_set(key: str, data_dir: Path | None = None) -> list[Case]:
    """The validated cases of the registered gold set ``key``.

    Raises ``ConfigError`` for an unknown key or a missing file, ``CaseValidationError`` for bad cases.
    """
    info = gold_set_info(key, data_dir)
    if not info.path.is_file():
        raise ConfigError(
            f"gold set '{key}': file {info.path} does not exist "
            "(run `nl2sql-eval gold generate` or fix 'file:' in the registry)"
        )
    cases = load_cases(info.path)
    logger.info("gold set %s: %d cases from %s", key, len(cases), info.path)
    return cases

"""One input kernel: every kind of config file goes through the strict loader and the one checker.

Each kind (models, policies, semantic model, gold registry, few-shot sets, gold templates) is fed a
duplicated key and a value of the wrong type; both come back as ``<file>:<line>: <what> (<fix>)``
naming the line of the culprit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from nl2sql_pipeline.config.checker import Checker, Field
from nl2sql_pipeline.config.yaml_loader import load_strict
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.few_shot import load_few_shot
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.gold.builtin.generator import DOMAIN_PREFIXES, load_templates
from nl2sql_pipeline.gold.registry import list_gold_sets
from nl2sql_pipeline.policy.loader import load_policy
from nl2sql_pipeline.semantic_model import load_semantic_model

Loader = Callable[[Path, str], Path]  # writes the text of one kind's file under tmp_path, returns its path


def _models(tmp: Path, text: str) -> Path:
    path = tmp / "models.yml"
    path.write_text(text)
    load_registry(path)
    return path


def _policy(tmp: Path, text: str) -> Path:
    path = tmp / "strict.yml"
    path.write_text(text)
    load_policy(path)
    return path


def _semantic(tmp: Path, text: str) -> Path:
    path = tmp / "semantic_model.yml"
    path.write_text(text)
    load_semantic_model(path)
    return path


def _gold_registry(tmp: Path, text: str) -> Path:
    path = tmp / "gold" / "gold_sets.yml"
    path.parent.mkdir()
    path.write_text(text)
    list_gold_sets(tmp)
    return path


def _few_shot(tmp: Path, text: str) -> Path:
    path = tmp / "basics.yml"
    path.write_text(text)
    load_few_shot("basics", directory=tmp)
    return path


_VALID_TEMPLATE = (
    "  - id: {domain}-1\n    category: single_table\n    difficulty: easy\n    question: Q\n    sql: SELECT 1\n"
)


def _templates(tmp: Path, text: str) -> Path:
    first, *others = DOMAIN_PREFIXES
    for domain in others:
        (tmp / f"{domain}.yml").write_text(f"domain: {domain}\ncases:\n" + _VALID_TEMPLATE.format(domain=domain))
    path = tmp / f"{first}.yml"
    path.write_text(text)
    load_templates(tmp)
    return path


SEMANTIC_HEAD = (
    "version: 1\nname: shop\ndatabase: shop\nreference_date: 2026-06-30\ndescription: A shop.\n"
    "tables:\n  orders:\n    description: Orders.\n    columns:\n      id:\n        description: Id.\n"
)
SEMANTIC_TAIL = "metrics:\n  orders:\n    description: Orders.\n    sql: COUNT(*)\n    from: orders\n"

# kind -> (loader, file with a duplicated key, its line, file with a wrong type, its line and key)
KINDS: dict[str, tuple[Loader, str, int, str, int, str]] = {
    "models": (
        _models,
        "models:\n  m1:\n    kind: litellm\n    model: a/b\n    kind: offline\n",
        5,
        "models:\n  m1:\n    kind: litellm\n    model: a/b\n    candidates: many\n",
        5,
        "candidates",
    ),
    "policies": (
        _policy,
        "name: strict\nallowed_tables: '*'\ndenied_columns: []\nmax_limit: 10\nmax_joins: 2\nmax_limit: 20\n",
        6,
        "name: strict\nallowed_tables: '*'\ndenied_columns: []\nmax_limit: 10\nmax_joins: two\n"
        "forbid_cartesian: true\ndenied_functions: []\nallowed_table_functions: []\n",
        5,
        "max_joins",
    ),
    "semantic model": (
        _semantic,
        SEMANTIC_HEAD + "        description: Again.\n" + SEMANTIC_TAIL,
        12,
        SEMANTIC_HEAD + "        sensitive: maybe\n" + SEMANTIC_TAIL,
        12,
        "tables.orders.columns.id.sensitive",
    ),
    "gold registry": (
        _gold_registry,
        "gold_sets:\n  a-v1:\n    file: a.jsonl\n  a-v1:\n    file: b.jsonl\n",
        4,
        "gold_sets:\n  a-v1:\n    file: a.jsonl\n    description: [not, text]\n",
        4,
        "gold_sets.a-v1.description",
    ),
    "few-shot sets": (
        _few_shot,
        "examples:\n  - question: How many?\n    sql: SELECT 1\n    question: Again?\n",
        4,
        "examples:\n  - question: How many?\n    sql: SELECT 1\n  - question: How many more?\n    sql: 42\n",
        5,
        "examples[1].sql",
    ),
    "gold templates": (
        _templates,
        "domain: anime_content\ndomain: anime_content\ncases:\n" + _VALID_TEMPLATE.format(domain="x"),
        2,
        "domain: anime_content\ncases:\n" + _VALID_TEMPLATE.format(domain="x") + "    tags: join\n",
        8,
        "cases[0].tags",
    ),
}


def _problems(exc: ConfigError, path: Path) -> list[str]:
    """The problem lines of an error that concern ``path`` (a header line, if any, is left out)."""
    lines = getattr(exc, "problems", None) or str(exc).splitlines()
    return [line for line in lines if line.startswith(f"{path}:")]


ONE_FORMAT = r"^{path}:(\d+): (.+) \((.+)\)$"


def _located(problems: list[str], path: Path) -> dict[int, str]:
    pattern = re.compile(ONE_FORMAT.format(path=re.escape(str(path))))
    located: dict[int, str] = {}
    for problem in problems:
        match = pattern.match(problem)
        assert match, f"not in the one format <file>:<line>: <what> (<fix>): {problem}"
        located[int(match.group(1))] = match.group(2)
    return located


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_duplicated_key_is_reported_at_its_line(kind: str, tmp_path: Path) -> None:
    load, text, line, *_ = KINDS[kind]
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    path = next(p for p in tmp_path.rglob("*.yml") if p.read_text() == text)
    located = _located(_problems(info.value, path), path)
    assert line in located and "duplicate key" in located[line], (kind, located)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_wrong_type_is_reported_at_its_line_with_its_key(kind: str, tmp_path: Path) -> None:
    load, _, _, text, line, key = KINDS[kind]
    with pytest.raises(ConfigError) as info:
        load(tmp_path, text)
    path = next(p for p in tmp_path.rglob("*.yml") if p.read_text() == text)
    located = _located(_problems(info.value, path), path)
    assert line in located and f"key '{key}'" in located[line] and "must be" in located[line], (kind, located)


def test_the_checker_collects_every_problem_and_names_allowed_keys() -> None:
    document = load_strict("name: 3\nsize: -1\ncolour: red\nitems: [a, 2]\n")
    check = Checker("f.yml")
    values = check.mapping(
        document,
        {
            "name": Field(str, required=True),
            "size": Field(int, minimum=0),
            "items": Field(list, items=Field(str)),
            "mode": Field(str, required=True, choices=("fast", "slow")),
        },
    )
    assert values == {"name": None, "size": None, "items": None, "mode": None}
    assert check.problems == [
        "f.yml:3: key 'colour': unknown key (remove it; allowed keys: name, size, items, mode)",
        "f.yml:1: key 'name': must be a non-empty string, got 3 (quote the value if YAML read it as another type)",
        "f.yml:2: key 'size': must be >= 0, got -1 (use a value >= 0)",
        "f.yml:4: key 'items[1]': must be a non-empty string, got 2 (quote the value if YAML read it as another type)",
        "f.yml:1: key 'mode': missing required key (add 'mode: ...')",
    ]
    with pytest.raises(ConfigError) as info:
        check.raise_if_problems()
    assert str(info.value).count("\n") == 4


def test_the_loader_keeps_plain_values_and_their_lines() -> None:
    document = load_strict("a:\n  b: [1, 2]\n  c:\n    - x: 1\n")
    assert document == {"a": {"b": [1, 2], "c": [{"x": 1}]}}
    assert document["a"].line_of("c") == 3 and document["a"]["c"].line_of(0) == 4

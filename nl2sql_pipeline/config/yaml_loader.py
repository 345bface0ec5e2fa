"""Strict YAML loading for configuration files: safe, fast (libyaml when present), no duplicate keys.

Plain YAML keeps the last of two equal keys silently; a config file with a duplicated model or metric
would lose an entry without a word. ``load_strict`` raises instead, with the line of the duplicate.

Every mapping comes back as a :class:`MarkedDict` and every list as a :class:`MarkedList`: plain
``dict``/``list`` subclasses that also remember the 1-based line of the node, of each key and of each
item, so a checker can say *where* a wrong value is, however deep it sits.
"""

from __future__ import annotations

import collections.abc
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # the C loader has the pure-Python one's interface
    _Base = yaml.SafeLoader
else:
    _Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class MarkedDict(dict):
    """A mapping read from YAML: ``line`` of the mapping, ``key_lines[key]`` of each key."""

    line: int = 0
    key_lines: dict[Any, int]

    def line_of(self, key: Any) -> int:
        """The line of ``key`` (or of the mapping itself when the key is absent)."""
        lines = getattr(self, "key_lines", None) or {}
        return lines.get(key, self.line)


class MarkedList(list):
    """A list read from YAML: ``line`` of the list, ``item_lines[i]`` of each item."""

    line: int = 0
    item_lines: list[int]

    def line_of(self, index: int) -> int:
        """The line of item ``index`` (or of the list itself)."""
        lines = getattr(self, "item_lines", None) or []
        return lines[index] if 0 <= index < len(lines) else self.line


class DuplicateKeyError(yaml.constructor.ConstructorError):
    """A mapping names the same key twice (plain YAML would silently keep the last)."""

    fix = "keep one entry per key"


class StrictLoader(_Base):
    """A safe YAML loader (C-accelerated when libyaml is available) that rejects duplicate keys and
    builds :class:`MarkedDict` / :class:`MarkedList` values."""


def _line(node: yaml.Node) -> int:
    return node.start_mark.line + 1


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode) -> MarkedDict:
    seen: dict[Any, int] = {}
    for key_node, _value in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=True)
        if isinstance(key, collections.abc.Hashable) and key in seen:
            raise DuplicateKeyError(
                None, None, f"duplicate key {key!r} (first defined on line {seen[key]})", key_node.start_mark
            )
        seen[key] = _line(key_node)
    loader.flatten_mapping(node)
    result = MarkedDict()
    result.line = _line(node)
    result.key_lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, collections.abc.Hashable):
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", node.start_mark, "found unhashable key", key_node.start_mark
            )
        result[key] = loader.construct_object(value_node, deep=True)
        result.key_lines[key] = _line(key_node)
    return result


def _construct_sequence(loader: StrictLoader, node: yaml.SequenceNode) -> MarkedList:
    result = MarkedList(loader.construct_object(child, deep=True) for child in node.value)
    result.line = _line(node)
    result.item_lines = [_line(child) for child in node.value]
    return result


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_strict(text: str) -> Any:
    """Parse one YAML document with :class:`StrictLoader`; raises ``yaml.YAMLError`` with a mark."""
    return yaml.load(text, Loader=StrictLoader)


def yaml_error_line(exc: yaml.YAMLError) -> int | None:
    """The 1-based line a PyYAML error points at (its problem, else its context), None without a mark."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    return mark.line + 1 if mark is not None else None


def describe_yaml_error(source: object, exc: yaml.YAMLError, fix: str = "fix the YAML syntax") -> str:
    """The one format of a YAML error: ``<source>:<line>: invalid YAML: <problem>[, <context> started on
    line N] (<fix>)``."""
    line = yaml_error_line(exc)
    where = f"{source}:{line}" if line is not None else str(source)
    what = " ".join(str(getattr(exc, "problem", None) or exc).split())
    context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
    problem_mark = getattr(exc, "problem_mark", None)
    if context and context_mark is not None and problem_mark is not None and context_mark.line != problem_mark.line:
        what += f", {' '.join(str(context).split())} started on line {context_mark.line + 1}"
    return f"{where}: invalid YAML: {what} ({getattr(exc, 'fix', None) or fix})"


def read_yaml(path: Path, error: Callable[[str], Exception], *, missing: str) -> tuple[str, Any]:
    """Read and strictly parse the YAML file ``path``: its text and its value.

    Raises ``error(message)`` (a typed exception class taking one message, or a function making one) for a missing file (``missing`` is the fix),
    an unreadable one, or invalid YAML (with the line).
    """
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise error(f"{path}: file not found ({missing})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: cannot read the file ({exc})") from None
    try:
        return text, load_strict(text)
    except yaml.YAMLError as exc:
        raise error(describe_yaml_error(path, exc)) from None

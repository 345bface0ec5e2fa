"""Strict YAML loading for configuration files: safe, fast (libyaml when present), no duplicate keys.

Plain YAML keeps the last of two equal keys silently; a config file with a duplicated model or metric
would lose an entry without a word. ``load_strict`` raises instead, with the line of the duplicate.
"""

from __future__ import annotations

from typing import Any

import yaml

_Base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class StrictLoader(_Base):  # type: ignore[misc, valid-type]
    """A safe YAML loader (C-accelerated when libyaml is available) that rejects duplicate keys."""


def _construct_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: dict[Any, int] = {}
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"duplicate key {key!r} (first defined on line {seen[key]}); keep one entry per key",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line + 1
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_strict(text: str) -> Any:
    """Parse one YAML document with :class:`StrictLoader`; raises ``yaml.YAMLError`` with a mark."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass


def describe_yaml_error(source: object, exc: yaml.YAMLError, label: str = "") -> str:
    """``<source>:<line>: <label><problem>`` for a YAML error (the line where the problem is, when known)."""
    mark = getattr(exc, "problem_mark", None)
    where = f"{source}:{mark.line + 1}" if mark is not None else str(source)
    return f"{where}: {label}{getattr(exc, 'problem', None) or exc}"

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
    seen: set[Any] = set()
    for key_node, _value in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(
                None, None, f"duplicate key {key!r} (remove or rename one of them)", key_node.start_mark
            )
        seen.add(key)
    return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def load_strict(text: str) -> Any:
    """Parse one YAML document with :class:`StrictLoader`; raises ``yaml.YAMLError`` with a mark."""
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass

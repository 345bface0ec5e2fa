"""One strict-config checker: declared fields, every problem collected, each located as ``file:line``.

A loader declares the keys of each mapping as :class:`Field` values (type, required, choices, range,
pattern) and walks its document with a :class:`Checker`. The checker never stops at the first problem:
it records each one as ``<file>:<line>: [<context>, ]key '<path>': <what is wrong> (<how to fix>)`` and
the loader raises them together with :meth:`Checker.raise_if_problems`. Lines come from the values
:mod:`nl2sql_pipeline.config.yaml_loader` builds; a plain ``dict`` (a mapping given in code) has none,
and its problems read ``<source>: ...``.

>>> check = Checker("models.yml")
>>> check.mapping({"kind": "magic"}, {"kind": Field(str, required=True, choices=("offline",))})
{'kind': None}
>>> check.problems
["models.yml: key 'kind': unknown value 'magic' (use one of: offline)"]
"""

from __future__ import annotations

import datetime
import difflib
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nl2sql_pipeline.errors import ConfigError

_TYPE_WORDS: dict[Any, str] = {
    str: "a non-empty string",
    int: "an integer",
    float: "a number",
    bool: "true or false",
    list: "a list",
    dict: "a mapping",
    datetime.date: "a date YYYY-MM-DD",
}
_TYPE_FIXES: dict[Any, str] = {
    str: "quote the value if YAML read it as another type",
    int: "write a whole number",
    float: "write a number",
    bool: "write true or false",
    list: "write a list: [a, b] or one '- item' per line",
    dict: "write it as 'key: value' lines",
    datetime.date: 'write e.g. "2026-06-30"',
}


def format_problem(source: object, line: int | None, what: str, fix: str) -> str:
    """The one problem format: ``<source>:<line>: <what is wrong> (<how to fix>)`` (no line: ``<source>: ...``)."""
    return f"{source}:{line}: {what} ({fix})" if line else f"{source}: {what} ({fix})"


def type_name(value: Any) -> str:
    """A readable name of a value's type for messages (YAML/JSON terms where they exist)."""
    if value is None:
        return "null"
    for kind, name in (
        (bool, "boolean"),
        (str, "string"),
        (int, "integer"),
        (float, "number"),
        (list, "list"),
        (dict, "mapping"),
    ):
        if isinstance(value, kind):
            return name
    return type(value).__name__


@dataclass(frozen=True)
class Field:
    """What one key of a mapping may hold.

    ``kind`` is ``str``, ``int``, ``float`` (any number), ``bool``, ``list``, ``dict``, ``datetime.date``
    or ``object`` (anything); ``items`` types a list's items. ``minimum``/``above`` bound numbers
    (``>=``/``>``) and ``maximum`` from above; ``choices`` lists the allowed values; ``pattern`` must
    match a string entirely. A ``None`` value counts as absent, except that a ``nullable`` required key
    only has to be present (``key: null`` is a choice). ``fix`` replaces the default advice.
    """

    kind: Any = object
    required: bool = False
    default: Any = None
    choices: Sequence[Any] | None = None
    minimum: float | None = None
    above: float | None = None
    maximum: float | None = None
    pattern: re.Pattern[str] | None = None
    items: Field | None = None
    fix: str | None = None
    allow_empty: bool = False
    nullable: bool = False


def line_of(container: Any, key: Any = None) -> int | None:
    """The line of ``key`` in a YAML-read mapping/list (or of the container), None when unknown."""
    if key is not None and hasattr(container, "line_of"):
        return int(container.line_of(key)) or None
    return getattr(container, "line", None) or None


def key_lines(value: Any, prefix: str = "") -> dict[str, int]:
    """``{key path: line}`` for every key and item of a YAML-read value (see :func:`key_path`)."""
    found: dict[str, int] = {}
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    else:
        return found
    for key, child in children:
        path = key_path(prefix, key)
        line = line_of(value, key)
        if line:
            found[path] = line
        found.update(key_lines(child, path))
    return found


def key_path(parent: str, key: Any) -> str:
    """``a.b`` for a mapping key, ``a[3]`` for a list index."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{parent}[{key}]"
    return f"{parent}.{key}" if parent else str(key)


class Checker:
    """Collects every problem of one file; ``context`` prefixes each (e.g. ``model 'm1'``)."""

    def __init__(self, source: object, *, context: str = "", error: Callable[[str], Exception] = ConfigError):
        self.source = str(source)
        self.context = context
        self.error = error
        self.problems: list[str] = []
        self.lines: Mapping[str, int] = {}

    # -- recording

    def locate(self, document: Any) -> None:
        """Remember the line of every key path of ``document``: a problem given without a line is then
        placed on its key's line (or the nearest enclosing key's)."""
        self.lines = key_lines(document)

    def problem(self, line: int | None, key: str | None, what: str, fix: str) -> None:
        """Record ``<file>:<line>: [<context>, ]key '<key>': <what> (<fix>)``."""
        if not line and key:
            line = self._line_for(key)
        label = ", ".join(part for part in (self.context, f"key {key!r}" if key else "") if part)
        self.problems.append(format_problem(self.source, line, f"{label + ': ' if label else ''}{what}", fix))

    def _line_for(self, key: str) -> int | None:
        while key:
            if key in self.lines:
                return self.lines[key]
            key = re.sub(r"(\.[^.\[]*|\[\d+\])$", "", key) if re.search(r"[.\[]", key) else ""
        return None

    def within(self, context: str) -> Checker:
        """A checker sharing this one's problems whose messages carry ``context``."""
        child = Checker(self.source, context=context, error=self.error)
        child.problems = self.problems
        child.lines = self.lines
        return child

    def raise_if_problems(self, header: str | None = None) -> None:
        """Raise ``error`` with every problem (one per line, after ``header``) if any was recorded."""
        if self.problems:
            raise self.error("\n".join(([header] if header else []) + self.problems))

    # -- walking

    def mapping(
        self,
        value: Any,
        fields: Mapping[str, Field],
        *,
        key: str = "",
        line: int | None = None,
        unknown_fix: str | None = None,
        skip: Sequence[str] = (),
    ) -> dict[str, Any] | None:
        """Check a mapping against ``fields``: unknown keys (naming the allowed ones), required keys and
        each value; keys in ``skip`` are left to the caller. Returns ``{name: checked value}`` for every declared field (``default`` when absent,
        None when wrong), or None when ``value`` is not a mapping."""
        if line is None:
            line = line_of(value)
        if not isinstance(value, dict):
            what = f"must be a mapping, got {type_name(value)}"
            self.problem(line, key or None, what, unknown_fix or _TYPE_FIXES[dict])
            return None
        allowed = list(fields)
        for name in value:
            if name not in fields and name not in skip:
                self.problem(
                    line_of(value, name) or line, key_path(key, name), "unknown key", unknown_key_fix(name, allowed)
                )
        out: dict[str, Any] = {}
        for name, field in fields.items():
            raw = value.get(name)
            where = line_of(value, name) or line
            if raw is None:
                if field.required and not (field.nullable and name in value):
                    self.problem(
                        where,
                        key_path(key, name),
                        "missing required key",
                        f"add '{name}: ...'" + (f"; {field.fix}" if field.fix else ""),
                    )
                out[name] = field.default
                continue
            out[name] = self.value(raw, field, key=key_path(key, name), line=where)
        return out

    def value(self, value: Any, field: Field, *, key: str, line: int | None) -> Any:
        """Check one value against ``field``; the value (stripped strings, floats for numbers) or None."""
        kind = field.kind
        if kind is not object and not _is_kind(value, kind, field.allow_empty):
            self.problem(
                line,
                key,
                f"must be {_TYPE_WORDS.get(kind, kind.__name__)}, got {value!r}",
                field.fix or _TYPE_FIXES.get(kind, "fix the value"),
            )
            return None
        if kind is str:
            value = value.strip()
        if kind is datetime.date and isinstance(value, str):
            value = datetime.date.fromisoformat(value)
        if field.choices is not None and value not in field.choices:
            self.problem(
                line, key, f"unknown value {value!r}", field.fix or f"use one of: {', '.join(map(str, field.choices))}"
            )
            return None
        if field.pattern is not None and not field.pattern.fullmatch(value):
            self.problem(
                line, key, f"{value!r} does not match {field.pattern.pattern}", field.fix or "fix the spelling"
            )
            return None
        if kind in (int, float) and not self._in_range(value, field, key, line):
            return None
        if kind is list and field.items is not None:
            items = []
            ok = True
            for index, item in enumerate(value):
                checked = self.value(item, field.items, key=key_path(key, index), line=line_of(value, index) or line)
                ok = ok and checked is not None
                items.append(checked)
            return items if ok else None
        if kind is float:
            return float(value)
        return value

    def _in_range(self, value: float, field: Field, key: str, line: int | None) -> bool:
        if not math.isfinite(value):
            self.problem(line, key, f"must be finite, got {value}", field.fix or "write a finite number")
            return False
        for bound, ok, text in (
            (field.minimum, lambda b: value >= b, ">="),
            (field.above, lambda b: value > b, ">"),
            (field.maximum, lambda b: value <= b, "<="),
        ):
            if bound is not None and not ok(bound):
                self.problem(
                    line, key, f"must be {text} {bound:g}, got {value!r}", field.fix or f"use a value {text} {bound:g}"
                )
                return False
        return True


def unknown_key_fix(name: Any, allowed: Sequence[str]) -> str:
    """Advice for an unknown key: the closest allowed one (a likely typo), and every allowed key."""
    close = difflib.get_close_matches(str(name), list(allowed), n=1, cutoff=0.6)
    known = f"allowed keys: {', '.join(allowed)}"
    return f"did you mean '{close[0]}'? {known}" if close else f"remove it; {known}"


def _is_kind(value: Any, kind: Any, allow_empty: bool = False) -> bool:
    if kind is str:
        return isinstance(value, str) and (allow_empty or bool(value.strip()))
    if kind is bool:
        return isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is datetime.date:
        if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
            return True
        if isinstance(value, str):
            try:
                datetime.date.fromisoformat(value)
            except ValueError:
                return False
            return True
        return False
    return isinstance(value, kind)

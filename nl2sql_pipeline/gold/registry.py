"""The gold-set registry: ``data/gold/gold_sets.yml`` maps version keys to gold-set files.

```yaml
gold_sets:
  multidomain-v1:
    file: nl2sql_multidomain.jsonl          # relative to data/gold/
    description: ...
    databases:                              # optional: entries like data/databases.yml's, for this set
      shop: {file: dbs/shop.duckdb}         # relative to data/gold/
    reference_date: 2026-06-30              # optional: the set's "today" (cases naming none get it)
    strict_gold: false                      # optional: true makes a quarantined case stop every run (exit 4)
    budgets: {max_latency_ms: 2000}         # optional: budgets of every case that sets none (max_cost_usd, max_tokens)
    answer_thresholds: {pass_score: 4, partial_score: 3}   # optional: answer grades (judges.answer), 1-5
```

The reference date is what ``CURRENT_DATE``, ``now()`` and their kin read in the set's gold and candidate
SQL (``sql.clock``). A case's own ``reference_date`` wins (an imported file writes it on every case), then
the entry's, then ``cases.DEFAULT_REFERENCE_DATE`` (2026-06-30, the built-in sets' date).

A case's ``database`` is a registered name (the set's inline entries first, then ``data/databases.yml``)
or a path to a ``.duckdb`` file, relative to the gold file's folder; :func:`case_databases` is that resolver.

Keys are slugs (``[a-z0-9][a-z0-9._-]*``) because they become Dagster partition keys, where ``|``,
``/`` and ``,`` break things.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import MarkedDict, load_strict, read_yaml
from nl2sql_pipeline.databases.registry import DatabaseEntry, parse_entries
from nl2sql_pipeline.databases.resolve import CaseDatabases, DatabaseKind
from nl2sql_pipeline.errors import ConfigError, DatabaseNotFoundError, Nl2SqlError
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.paths import data_dir as default_data_dir

logger = logging.getLogger(__name__)

REGISTRY_FILE = "gold_sets.yml"
GOLD_SUBDIR = "gold"
SLUG_PATTERN = re.compile(r"[a-z0-9][a-z0-9._-]*")
TOP_FIELDS: dict[str, Field] = {
    "gold_sets": Field(dict, required=True, fix="write a top-level 'gold_sets:' mapping of key -> file"),
}
ENTRY_DECLARATIONS: dict[str, Field] = {
    "file": Field(str, required=True, fix="give the gold-set file, e.g. file: <name>.jsonl, relative to data/gold/"),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "databases": Field(dict, fix="write 'databases:' with name -> {file: x.duckdb, schemas: [...]} entries"),
    "reference_date": Field(
        datetime.date, fix="write the date the set's questions call today, e.g. reference_date: 2026-06-30"
    ),
    "strict_gold": Field(bool, default=False, fix="write strict_gold: true or strict_gold: false"),
    "budgets": Field(dict, fix="write budgets: {max_latency_ms: 2000, max_cost_usd: 0.01, max_tokens: 4000}"),
    "answer_thresholds": Field(dict, fix="write answer_thresholds: {pass_score: 4, partial_score: 3}"),
}
BUDGET_DECLARATIONS: dict[str, Field] = {
    "max_latency_ms": Field(float, above=0, fix="give milliseconds above 0, e.g. 2000"),
    "max_cost_usd": Field(float, above=0, fix="give US dollars above 0, e.g. 0.01"),
    "max_tokens": Field(int, above=0, fix="give a whole number of tokens above 0, e.g. 4000"),
}
ANSWER_THRESHOLD_FIELDS: dict[str, Field] = {
    name: Field(int, minimum=1, maximum=5, fix="give a rubric score within 1..5")
    for name in ("pass_score", "partial_score")
}
ENTRY_FIELDS: tuple[str, ...] = tuple(ENTRY_DECLARATIONS)


@dataclass(frozen=True)
class GoldSetInfo:
    """One registered gold set: its key, the file holding its cases, and a description."""

    key: str
    path: Path
    description: str = ""
    databases: dict[str, DatabaseEntry] = field(default_factory=dict)
    """The set's inline database entries (paths relative to the gold folder)."""
    reference_date: datetime.date | None = None
    """The set's reference date for cases that name none (None: ``cases.DEFAULT_REFERENCE_DATE``)."""
    strict_gold: bool = False
    """A case the gold preflight quarantines stops every run on this set, as ``run --strict-gold`` does."""
    budgets: dict[str, float] = field(default_factory=dict)
    """Budgets of every case that sets none of its own (``max_latency_ms``, ``max_cost_usd``, ``max_tokens``)."""
    answer_thresholds: dict[str, int] = field(default_factory=dict)
    """The set's answer grade thresholds (``pass_score``, ``partial_score``); a run's own options win."""


def registry_path(data_dir: Path | None = None) -> Path:
    """Where the registry lives: ``<data dir>/gold/gold_sets.yml``."""
    return (data_dir or default_data_dir()) / GOLD_SUBDIR / REGISTRY_FILE


def _parse_entry(check: Checker, key: Any, entry: Any, line: int | None, gold_dir: Path) -> GoldSetInfo | None:
    """Check one registry entry; return it, or None when it has problems (recorded in ``check``)."""
    before = len(check.problems)
    if not isinstance(key, str) or not SLUG_PATTERN.fullmatch(key):
        check.problem(
            line,
            None,
            f"gold-set key {key!r} is not a slug",
            "use lower-case letters, digits, '.', '_' and '-', starting with a letter or digit",
        )
    values = check.mapping(entry, ENTRY_DECLARATIONS, key=f"gold_sets.{key}", line=line)
    if values is None or values["file"] is None:
        return None
    file_name = values["file"]
    path = (gold_dir / file_name).resolve()
    if Path(file_name).is_absolute() or not path.is_relative_to(gold_dir.resolve()):
        check.problem(
            line_of(entry, "file") or line,
            f"gold_sets.{key}.file",
            f"points outside {gold_dir}",
            "give a path relative to the gold folder, without '..'",
        )
    inline = (
        parse_entries(check, values["databases"], gold_dir, key=f"gold_sets.{key}.databases")
        if values["databases"]
        else {}
    )
    budgets = (
        check.mapping(values["budgets"], BUDGET_DECLARATIONS, key=f"gold_sets.{key}.budgets")
        if values["budgets"] is not None
        else {}
    )
    thresholds = {}
    if values["answer_thresholds"] is not None:
        checked = check.mapping(
            values["answer_thresholds"],
            ANSWER_THRESHOLD_FIELDS,
            key=f"gold_sets.{key}.answer_thresholds",
            line=line_of(entry, "answer_thresholds") or line,
        )
        thresholds = {k: v for k, v in (checked or {}).items() if v is not None}
    if len(check.problems) > before:
        return None
    return GoldSetInfo(
        budgets={name: value for name, value in (budgets or {}).items() if value is not None},
        key=key,
        path=path,
        description=values["description"] or "",
        databases=inline,
        reference_date=values["reference_date"],
        strict_gold=bool(values["strict_gold"]),
        answer_thresholds=thresholds,
    )


def list_gold_sets(data_dir: Path | None = None) -> dict[str, GoldSetInfo]:
    """The registered gold sets by key, in file order; raises ``ConfigError`` listing every problem."""
    path = registry_path(data_dir)
    if not path.is_file():
        raise ConfigError(f"{path}: no gold-set registry (create it with a 'gold_sets:' mapping of key -> file)")
    _, data = read_yaml(path, ConfigError, missing="create it with a 'gold_sets:' mapping of key -> file")
    return _gold_sets_of(data, path)


def _gold_sets_of(data: Any, path: Path) -> dict[str, GoldSetInfo]:
    """The gold sets of the parsed registry ``data`` read from ``path``; raises ``ConfigError`` listing every
    problem."""
    check = Checker(path)
    top = check.mapping(data, TOP_FIELDS, unknown_fix="write a top-level 'gold_sets:' mapping of key -> file") or {}
    sets = top.get("gold_sets") or {}
    found: dict[str, GoldSetInfo] = {}
    for key, entry in sets.items():
        info = _parse_entry(check, key, entry, line_of(sets, key), path.parent)
        if info is not None:
            found[info.key] = info
    check.raise_if_problems()
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
    if info.path.suffix.lower() != ".jsonl":
        cases = with_budgets(with_reference_date(load_cases(info.path), info.reference_date), info.budgets)
    else:  # a run loads its gold set several times (CLI checks, identity, each stage): validated once per content
        memo_key = (str(info.path), hashlib.sha256(info.path.read_bytes()).hexdigest(), info.reference_date)
        if memo_key not in _LOADED:
            while len(_LOADED) >= LOADED_MAX:
                del _LOADED[next(iter(_LOADED))]
            _LOADED[memo_key] = tuple(with_reference_date(load_cases(info.path), info.reference_date))
        cases = with_budgets(list(_LOADED[memo_key]), info.budgets)
    logger.info("gold set %s: %d cases from %s", key, len(cases), info.path)
    return cases


LOADED_MAX = 8
"""JSONL gold sets kept validated in a process (by path, content hash and reference date)."""
_LOADED: dict[tuple[str, str, datetime.date | None], tuple[Case, ...]] = {}


def with_reference_date(cases: list[Case], reference: datetime.date | None) -> list[Case]:
    """``cases`` with ``reference`` as the reference date of those that name none (unchanged when None)."""
    if reference is None:
        return cases
    return [case if case.reference_date else replace(case, reference_date=reference.isoformat()) for case in cases]


def with_budgets(cases: list[Case], budgets: dict[str, float]) -> list[Case]:
    """``cases`` with the gold set's ``budgets`` on each case that sets none of that kind itself."""
    if not budgets:
        return cases
    out = []
    for case in cases:
        unset: dict[str, Any] = {name: value for name, value in budgets.items() if getattr(case, name) is None}
        if "max_tokens" in unset:
            unset["max_tokens"] = int(unset["max_tokens"])
        out.append(replace(case, **unset) if unset else case)
    return out


def check_new_gold_set(key: str, path: Path, data_dir: Path | None = None) -> bool:
    """Whether ``key`` may name the gold file ``path``: False when it already does, True when it is free.

    Raises ``ConfigError`` (one line: what, how to fix) when ``key`` is not a slug, names another file, or
    ``path`` is not inside the gold folder (a registry entry's file is relative to it).
    """
    registry = registry_path(data_dir)
    gold_dir = registry.parent.resolve()
    if not SLUG_PATTERN.fullmatch(key):
        raise ConfigError(
            f"gold-set key {key!r} is not a slug (use lower-case letters, digits, '.', '_' and '-', "
            "starting with a letter or digit)"
        )
    if not Path(path).resolve().is_relative_to(gold_dir):
        raise ConfigError(
            f"{path} is not inside the gold folder {gold_dir}: a registered gold file lives there "
            f"(write it to {gold_dir}/<name>.jsonl)"
        )
    sets = list_gold_sets(data_dir) if registry.is_file() else {}
    if key in sets and sets[key].path != Path(path).resolve():
        raise ConfigError(f"gold set {key!r} is already registered for {sets[key].path} (pick another key)")
    return key not in sets


def register_gold_set(key: str, path: Path, description: str = "", data_dir: Path | None = None) -> GoldSetInfo:
    """Add ``key -> path`` to ``gold_sets.yml`` (created when absent; nothing is written when it is there).

    The entry is appended in the registry's own block indentation, with the key and values quoted (``true``,
    ``null`` or ``2024`` stay strings). The new text is parsed first and must hold the old entries plus the
    new one, valid; only then does it replace the file (a temp file and ``os.replace``). Raises
    ``ConfigError`` as ``check_new_gold_set`` does, or, when no appended text reads back right (a flow-style
    registry: ``gold_sets: {a: {...}}``), with the entry to add by hand; the file is then unchanged.
    """
    registry = registry_path(data_dir)
    if check_new_gold_set(key, path, data_dir):
        relative = Path(path).resolve().relative_to(registry.parent.resolve()).as_posix()
        text = registry.read_text(encoding="utf-8") if registry.is_file() else "gold_sets:\n"
        entry = {"file": relative, **({"description": description} if description else {})}
        new_text = _registry_with(text, key, entry, registry)
        registry.parent.mkdir(parents=True, exist_ok=True)
        tmp = registry.with_name(f".{registry.name}.{os.getpid()}.tmp")
        try:
            tmp.write_text(new_text, encoding="utf-8")
            os.replace(tmp, registry)
        finally:
            tmp.unlink(missing_ok=True)
    return gold_set_info(key, data_dir)


def _entry_lines(key: str, entry: dict[str, str], indent: int, step: int) -> list[str]:
    """The block-style lines of one registry entry, key and values quoted (JSON strings are YAML strings)."""
    lines = [f"{' ' * indent}{json.dumps(key)}:"]
    lines += [f"{' ' * (indent + step)}{name}: {json.dumps(value)}" for name, value in entry.items()]
    return lines


def _indentation(text: str, sets: Any) -> list[tuple[int, int]]:
    """The (entry indent, value step) pairs to try: the registry's own (from its first entry), then 2/2."""
    tried: list[tuple[int, int]] = []
    lines = text.splitlines()
    if isinstance(sets, MarkedDict) and sets:
        first = next(iter(sets))
        key_line = lines[sets.line_of(first) - 1]
        indent = len(key_line) - len(key_line.lstrip(" "))
        value, step = sets[first], 2
        if isinstance(value, MarkedDict) and value and value.line_of(next(iter(value))) != sets.line_of(first):
            value_line = lines[value.line_of(next(iter(value))) - 1]
            step = len(value_line) - len(value_line.lstrip(" ")) - indent
        if indent > 0 and step > 0:
            tried.append((indent, step))
    return tried + [(2, 2)]


def _registry_with(text: str, key: str, entry: dict[str, str], registry: Path) -> str:
    """``text`` (the registry) with ``key: entry`` appended, checked to read back as the old entries plus the
    new one; raises ``ConfigError`` showing the entry to add by hand when no appended text does."""
    old = load_strict(text) or {}
    old_sets = dict(old.get("gold_sets") or {}) if isinstance(old, dict) else {}
    base = text if text.endswith("\n") else text + "\n"
    for indent, step in _indentation(text, old.get("gold_sets") if isinstance(old, dict) else None):
        candidate = base + "\n".join(_entry_lines(key, entry, indent, step)) + "\n"
        try:
            new = load_strict(candidate)
        except yaml.YAMLError:
            continue
        if not isinstance(new, dict) or set(new) != {"gold_sets"} or not isinstance(new["gold_sets"], dict):
            continue
        if list(new["gold_sets"]) != [*old_sets, key] or dict(new["gold_sets"]) != {**old_sets, key: entry}:
            continue
        try:
            _gold_sets_of(new, registry)
        except ConfigError:
            continue
        return candidate
    by_hand = "\n".join(["gold_sets:", *_entry_lines(key, entry, 2, 2)])
    raise ConfigError(
        f"{registry}: cannot add gold set {key!r} without rewriting the file (its layout, e.g. flow style "
        f"'gold_sets: {{...}}', takes no appended entry); the file is unchanged: add the entry by hand, "
        f"as this block shows it:\n{by_hand}"
    )


def case_databases(key: str, data_dir: Path | None = None) -> CaseDatabases:
    """The database resolver of gold set ``key``'s cases (inline entries, the registry, the gold folder)."""
    info = gold_set_info(key, data_dir)
    return CaseDatabases.from_registry(base_dir=info.path.parent, inline=info.databases)


def gold_sets_using_databases(exclude: Path | None = None, data_dir: Path | None = None) -> dict[Path, list[str]]:
    """Database file (resolved) -> keys of the registered gold sets whose cases run on it, leaving out the
    set whose file is ``exclude``. A registry or a set that cannot be read counts as using nothing (it
    cannot run either)."""
    try:
        sets = list_gold_sets(data_dir) if registry_path(data_dir).is_file() else {}
    except ConfigError:
        return {}
    users: dict[Path, list[str]] = {}
    for key, info in sets.items():
        if exclude is not None and info.path == Path(exclude).resolve():
            continue
        try:
            references = {case.database for case in load_gold_set(key, data_dir)}
            resolver = CaseDatabases.from_registry(base_dir=info.path.parent, inline=info.databases)
            files = {resolver.resolve(reference).path.resolve() for reference in references}
        except Nl2SqlError as exc:
            logger.info("gold set %s: its databases are not known (%s)", key, str(exc).splitlines()[0])
            continue
        for file in files:
            users.setdefault(file, []).append(key)
    return users


def check_gold_set_inputs(key: str, data_dir: Path | None = None) -> list[Case]:
    """What a run of gold set ``key`` needs before anything is materialized: valid cases, and an
    existing file for every database they name (a sample database is built by the run, so it may be missing;
    a name neither registered nor a sample database is not).

    Raises ``ConfigError`` (unknown key), ``CaseValidationError`` (every ``file:line`` problem) or
    ``DatabaseNotFoundError`` naming each missing file and its registry entry.
    """
    cases = load_gold_set(key, data_dir)
    resolver = case_databases(key, data_dir)
    missing = []
    for reference in sorted({case.database for case in cases}):
        resolved = resolver.resolve(reference)
        if not resolved.path.is_file() and (resolved.kind is not DatabaseKind.SAMPLE or resolved.is_unknown_name):
            missing.append(str(resolved.not_found_error()))
    if missing:
        raise DatabaseNotFoundError(f"gold set '{key}': " + "\n".join(missing))
    return cases

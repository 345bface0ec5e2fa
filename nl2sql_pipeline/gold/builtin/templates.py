"""Gold-set templates: the YAML files under ``templates/`` read strictly, and rendered into cases.

A template holds a question, SQL with named literal slots written ``{slot}``, and metadata. A template
may offer ``choices`` (alternative slot bindings); a :class:`random.Random` seeded with
``"<seed>:<case id>"`` picks one, so the output depends on the seed and the templates only. In SQL a
slot renders as a SQL literal (``'TV'``, ``42``, ``TRUE``); in questions as plain text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import OUTCOME_POLICY_REJECTION, Case, Turn
from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.gold.builtin.vocabulary import (
    DATABASE,
    DEFAULT_SEED,
    DOMAIN_PREFIXES,
    INJECTION_PHRASES,
    INJECTION_SLOTS,
    SEMANTIC_MODEL,
    TEMPLATE_DIR,
    GoldTemplateError,
)

_SLOT_RE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
TEMPLATE_FIELDS: dict[str, Field] = {
    "id": Field(str, required=True),
    "category": Field(str, required=True),
    "difficulty": Field(str, required=True),
    "tags": Field(list, items=Field(str)),
    "question": Field(str, required=True),
    "sql": Field(object),  # a string or a list of acceptable alternatives (checked by the loader)
    "probe_sql": Field(str),
    "context": Field(list, fix="write a list of {question, sql} turns"),
    "slots": Field(dict),
    "choices": Field(list, items=Field(dict), fix="write a list of slot -> value mappings"),
    "candidate_selection": Field(int, minimum=2),
}
TURN_FIELDS: dict[str, Field] = {"question": Field(str, required=True), "sql": Field(str, required=True)}
_TEMPLATE_KEYS = frozenset(TEMPLATE_FIELDS)


@dataclass(frozen=True)
class CaseTemplate:
    """One template: everything a case needs, with ``{slot}`` placeholders still in the text."""

    id: str
    domain: str
    category: str
    difficulty: str
    tags: tuple[str, ...]
    question: str
    sql: tuple[str, ...]  # acceptable expected SQL (first = canonical); empty for probes
    probe_sql: str | None
    context: tuple[tuple[str, str], ...]  # earlier turns (question, sql)
    slots: Mapping[str, Any]
    choices: tuple[Mapping[str, Any], ...]
    candidate_selection: int | None
    source: str  # "<file>:<line> (<id>)", for messages


# ---------------------------------------------------------------- loading


def load_templates(template_dir: Path | None = None) -> list[CaseTemplate]:
    """Read every domain's template file, in domain order; raise GoldTemplateError listing every problem
    (each as ``<file>:<line>: key '<key>': <what> (<fix>)``)."""
    directory = template_dir or TEMPLATE_DIR
    templates: list[CaseTemplate] = []
    problems: list[str] = []
    for domain in DOMAIN_PREFIXES:
        path = directory / f"{domain}.yml"
        if not path.is_file():
            problems.append(f"{path}: template file missing (one file per domain: {', '.join(DOMAIN_PREFIXES)})")
            continue
        try:
            _, document = read_yaml(path, lambda message: GoldTemplateError([message]), missing="add it")
        except GoldTemplateError as exc:
            problems.extend(exc.problems)
            continue
        check = Checker(path, error=lambda message: GoldTemplateError(message.splitlines()))
        top = check.mapping(
            document,
            {
                "domain": Field(str, required=True, choices=(domain,), fix=f"write domain: {domain}"),
                "cases": Field(list, required=True, fix="write 'cases:' holding a list of templates"),
            },
        )
        cases = (top or {}).get("cases") or []
        for index, raw in enumerate(cases):
            template = _template_from_mapping(check, raw, domain, f"cases[{index}]", line_of(cases, index))
            if template is not None:
                templates.append(template)
        problems.extend(check.problems)
    if problems:
        raise GoldTemplateError(problems)
    return templates


def _template_from_mapping(check: Checker, raw: Any, domain: str, key: str, line: int | None) -> CaseTemplate | None:
    before = len(check.problems)
    values = check.mapping(raw, TEMPLATE_FIELDS, key=key, line=line)
    if values is None:
        return None
    sql = values["sql"]
    sql_list = [sql] if isinstance(sql, str) else list(sql or [])
    if not all(isinstance(s, str) and s.strip() for s in sql_list):
        check.problem(
            line_of(raw, "sql") or line,
            f"{key}.sql",
            "must be a string or a list of strings",
            "write the expected SQL, or a list of acceptable alternatives",
        )
    context = []
    for index, turn in enumerate(values["context"] or []):
        turn_values = check.mapping(
            turn, TURN_FIELDS, key=f"{key}.context[{index}]", line=line_of(raw["context"], index)
        )
        if turn_values is not None and None not in turn_values.values():
            context.append((turn_values["question"], turn_values["sql"]))
    if len(check.problems) > before:
        return None
    return CaseTemplate(
        id=values["id"],
        domain=domain,
        category=values["category"],
        difficulty=values["difficulty"],
        tags=tuple(values["tags"] or ()),
        question=values["question"],
        sql=tuple(sql_list),
        probe_sql=values["probe_sql"],
        context=tuple(context),
        slots=dict(values["slots"] or {}),
        choices=tuple(dict(c) for c in values["choices"] or ()),
        candidate_selection=values["candidate_selection"],
        source=f"{check.source}:{line} ({values['id']})",
    )


# ---------------------------------------------------------------- rendering


def sql_literal(value: Any) -> str:
    """Render a slot value as a DuckDB literal: strings quoted, numbers and booleans bare."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, (int, float)):
        return repr(value)
    if hasattr(value, "isoformat"):  # YAML turns 2026-01-01 into a date
        value = value.isoformat()
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    raise GoldTemplateError([f"slot value {value!r} has unsupported type {type(value).__name__}"])


def _text_value(value: Any) -> str:
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return str(value)


def injection_slot_values() -> dict[str, str]:
    """The planted hostile cell values by slot name (see ``INJECTION_SLOTS``), verbatim from the builder."""
    from nl2sql_pipeline.sample_db import PROMPT_INJECTIONS

    planted = {(table, column): value for table, column, value in PROMPT_INJECTIONS}
    missing = [f"{t}.{c}" for t, c in INJECTION_SLOTS.values() if (t, c) not in planted]
    if missing:
        raise GoldTemplateError(
            [f"the sample-database builder plants no injection in {', '.join(missing)} (PROMPT_INJECTIONS)"]
        )
    return {slot: planted[key] for slot, key in INJECTION_SLOTS.items()}


def injection_texts() -> tuple[str, ...]:
    """Texts whose presence in a prompt marks a prompt injection: planted values and instruction phrases."""
    return tuple(injection_slot_values().values()) + INJECTION_PHRASES


def _fill(text: str, binding: Mapping[str, Any], *, as_sql: bool, where: str) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in binding:
            raise GoldTemplateError(
                [f"{where}: slot {{{name}}} has no value (define it in 'slots' or every 'choices' entry)"]
            )
        value = binding[name]
        return sql_literal(value) if as_sql else _text_value(value)

    return _SLOT_RE.sub(replace, text)


def _clean_sql(sql: str) -> str:
    """Strip trailing blanks per line and the trailing newline YAML block scalars leave."""
    return "\n".join(line.rstrip() for line in sql.strip().splitlines())


def render_case(
    template: CaseTemplate,
    seed: int = DEFAULT_SEED,
    *,
    extra_slots: Mapping[str, Any] | None = None,
    verbatim_slots: bool = False,
) -> Case:
    """Fill a template's slots (choosing among ``choices`` with a per-case seeded RNG) into a Case.

    ``extra_slots`` are bindings the template may use without declaring them (its own win).
    Questions have their whitespace collapsed; with ``verbatim_slots`` only the template's own text is
    collapsed and slot values keep theirs (a quoted cell value with newlines stays exact).
    """
    binding: dict[str, Any] = dict(extra_slots or {})
    binding.update(template.slots)
    if template.choices:
        rng = random.Random(f"{seed}:{template.id}")
        binding.update(rng.choice(template.choices))
    where = template.source

    def sql(text: str) -> str:
        return _clean_sql(_fill(text, binding, as_sql=True, where=where))

    def question(text: str) -> str:
        if verbatim_slots:
            return _fill(" ".join(text.split()), binding, as_sql=False, where=where)
        return " ".join(_fill(text, binding, as_sql=False, where=where).split())

    is_probe = template.category == "policy_rejection"
    return Case(
        id=template.id,
        domain=template.domain,
        category=template.category,
        question=question(template.question),
        database=DATABASE,
        expected_sql=tuple(sql(s) for s in template.sql),
        tags=template.tags,
        difficulty=template.difficulty,
        semantic_model=SEMANTIC_MODEL,
        follow_up_context=tuple(Turn(question=question(q), sql=sql(s)) for q, s in template.context),
        candidate_selection=template.candidate_selection,
        expected_outcome=OUTCOME_POLICY_REJECTION if is_probe else "result",
        policy_probe_sql=sql(template.probe_sql) if template.probe_sql is not None else None,
    )

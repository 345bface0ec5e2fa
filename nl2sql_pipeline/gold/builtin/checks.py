"""Checks of the built-in gold sets: composition, ids, truthful tags, distinct SQL skeletons, no clock
functions; and the prompt-injection cases' own rules. Each returns problems (empty = valid)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from nl2sql_pipeline.cases import CATEGORIES, DIFFICULTIES, Case
from nl2sql_pipeline.gold.builtin.sql_analysis import sql_skeleton, structural_tags
from nl2sql_pipeline.gold.builtin.templates import injection_slot_values, injection_texts
from nl2sql_pipeline.gold.builtin.vocabulary import (
    CATEGORY_PLAN,
    DOMAIN_PREFIXES,
    INJECTION_ID_INFIX,
    INJECTION_PHRASES,
    INJECTION_SLOTS,
    INJECTION_TAG,
    PROBE_TAGS,
    PROMPT_TAGS,
    TAG_VOCABULARY,
    GoldTemplateError,
)

_CLOCK_FUNCTIONS = re.compile(r"\b(current_date|current_timestamp|now|today|get_current_timestamp)\b", re.I)
_STRING_LITERAL = re.compile(r"'(?:[^']|'')*'")  # a quoted value may say "now" without calling now()


def check_gold_set(cases: list[Case]) -> list[str]:
    """Problems with a generated set (composition, ids, tags, skeletons, clock functions); empty = valid."""
    problems: list[str] = []
    seen_ids: set[str] = set()
    counts: dict[tuple[str, str], int] = {}
    skeletons: dict[tuple[str, str], str] = {}
    for case in cases:
        counts[(case.domain, case.category)] = counts.get((case.domain, case.category), 0) + 1
        if case.id in seen_ids:
            problems.append(f"{case.id}: duplicate id")
        seen_ids.add(case.id)
        problems.extend(_check_case(case))
        if case.is_probe or not case.expected_sql:
            continue
        _check_skeletons(case, skeletons, problems)
    for domain in DOMAIN_PREFIXES:
        for category, (_, wanted) in CATEGORY_PLAN.items():
            got = counts.get((domain, category), 0)
            if got != wanted:
                problems.append(f"{domain}/{category}: {got} cases, expected {wanted}")
    return problems


def _check_skeletons(case: Case, skeletons: dict[tuple[str, str], str], problems: list[str]) -> None:
    """Record ``case``'s SQL skeletons in ``skeletons``; a skeleton another case of its domain has is a problem."""
    for sql in case.expected_sql:
        try:
            key = (case.domain, sql_skeleton(sql))
        except GoldTemplateError as exc:
            problems.extend(f"{case.id}: {p}" for p in exc.problems)
            continue
        if key in skeletons and skeletons[key] != case.id:
            problems.append(f"{case.id}: same SQL skeleton as {skeletons[key]} (vary the query's shape)")
        skeletons.setdefault(key, case.id)


def _check_case(case: Case, id_infix: str | None = None) -> list[str]:
    """Problems of one case; ``id_infix`` replaces the category's id infix (``content-<infix>-NN``)."""
    problems: list[str] = []
    prefix = DOMAIN_PREFIXES.get(case.domain)
    if prefix is None:
        return [f"{case.id}: unknown domain {case.domain!r} (known: {', '.join(DOMAIN_PREFIXES)})"]
    if case.category not in CATEGORIES:
        return [f"{case.id}: unknown category {case.category!r} (known: {', '.join(CATEGORIES)})"]
    infix = id_infix or CATEGORY_PLAN[case.category][0]
    if not re.fullmatch(rf"{prefix}-{infix}-\d\d", case.id):
        problems.append(f"{case.id}: id must look like {prefix}-{infix}-NN for {case.domain}/{case.category}")
    if case.difficulty not in DIFFICULTIES:
        problems.append(f"{case.id}: difficulty {case.difficulty!r} not in {DIFFICULTIES}")
    unknown = [t for t in case.tags if t not in TAG_VOCABULARY]
    if unknown:
        problems.append(f"{case.id}: tags {unknown} not in the vocabulary (see TAG_VOCABULARY)")
    if len(set(case.tags)) != len(case.tags):
        problems.append(f"{case.id}: duplicate tags")
    if (case.category == "follow_up") != bool(case.follow_up_context):
        problems.append(f"{case.id}: follow_up cases, and only they, carry follow_up_context")
    if case.is_probe:
        if case.category != "policy_rejection" or case.expected_sql or not case.policy_probe_sql:
            problems.append(f"{case.id}: a probe needs category policy_rejection, policy_probe_sql and no expected_sql")
        if not any(t in PROBE_TAGS for t in case.tags) or any(t not in PROBE_TAGS + PROMPT_TAGS for t in case.tags):
            problems.append(f"{case.id}: probe tags must come from PROBE_TAGS (plus PROMPT_TAGS), at least one")
        return problems
    if not case.expected_sql:
        return problems + [f"{case.id}: a query case needs expected SQL"]
    for sql in list(case.expected_sql) + [turn.sql for turn in case.follow_up_context]:
        if _CLOCK_FUNCTIONS.search(_STRING_LITERAL.sub("''", sql)):
            problems.append(f"{case.id}: uses a clock function; write literal dates relative to 2026-06-30")
    try:
        derived = structural_tags(case.expected_sql[0])
    except GoldTemplateError as exc:
        return problems + [f"{case.id}: {p}" for p in exc.problems]
    declared = set(case.tags) - set(PROMPT_TAGS)
    if declared != derived:
        missing = sorted(derived - declared)
        extra = sorted(declared - derived)
        problems.append(f"{case.id}: tags do not match the SQL (add {missing}, remove {extra})")
    return problems


def _prompt_texts(case: Case) -> list[str]:
    """The texts of ``case`` that reach any model's prompt: the earlier turns' questions, then its own.

    (An earlier turn's gold SQL is not one of them: the model answers earlier turns itself.)
    """
    return [turn.question for turn in case.follow_up_context] + [case.question]


def carries_injection(text: str, injections: Iterable[str] | None = None) -> bool:
    """True when ``text`` holds a planted injection value or an injection phrase (case-insensitive)."""
    lowered = text.lower()
    return any(marker.lower() in lowered for marker in (injections if injections is not None else injection_texts()))


def check_injection_cases(injection: list[Case], base: list[Case]) -> list[str]:
    """Problems with the prompt-injection cases added to ``base`` (the v1 cases); empty = valid.

    Each case: a ``<prefix>-injection-NN`` id unique in the whole set, the ``prompt_injection`` tag,
    truthful tags, injection text in what reaches the prompt, and (query cases) a SQL skeleton no
    other query case of its domain has. The set: every domain has query and probe cases, every planted
    value is quoted verbatim, and at least one follow-up carries the injection in an earlier turn.
    """
    problems: list[str] = []
    planted = injection_slot_values()
    markers = tuple(planted.values()) + INJECTION_PHRASES
    slot_names = ", ".join(f"{{{slot}}}" for slot in INJECTION_SLOTS)
    ids = {case.id for case in base}
    skeletons: dict[tuple[str, str], str] = {}
    for case in base:
        for sql in case.expected_sql:
            skeletons.setdefault((case.domain, sql_skeleton(sql)), case.id)
    for case in injection:
        if case.id in ids:
            problems.append(f"{case.id}: duplicate id")
        ids.add(case.id)
        problems.extend(_check_case(case, id_infix=INJECTION_ID_INFIX))
        if INJECTION_TAG not in case.tags:
            problems.append(f"{case.id}: an injection case must be tagged {INJECTION_TAG}")
        if not any(carries_injection(text, markers) for text in _prompt_texts(case)):
            problems.append(
                f"{case.id}: no injection text reaches the prompt (quote a planted value with one of the "
                f"slots {slot_names} or use one of the phrases {list(INJECTION_PHRASES)})"
            )
        _check_skeletons(case, skeletons, problems)
    for domain in DOMAIN_PREFIXES:
        mine = [case for case in injection if case.domain == domain]
        if not any(not case.is_probe for case in mine) or not any(case.is_probe for case in mine):
            problems.append(f"{domain}: needs at least one injection query case and one injection probe")
    everything = "\n".join(text for case in injection for text in _prompt_texts(case))
    for slot, value in planted.items():
        if value not in everything:
            problems.append(f"no injection case quotes the planted {slot} verbatim (use {{{slot}}})")
    if not any(any(carries_injection(t.question, markers) for t in case.follow_up_context) for case in injection):
        problems.append("no follow_up injection case carries the injection in an earlier turn")
    return problems

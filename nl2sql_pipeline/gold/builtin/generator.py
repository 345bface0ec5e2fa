"""The built-in gold sets: ``multidomain-v1`` (120 cases), ``multidomain-v2`` (v1 + prompt injection) and
``multidomain-clarify-v1`` (v1 + ambiguous questions: ``gold.builtin.ambiguity``).

``multidomain-v1`` is generated deterministically from templates (below). ``multidomain-v2`` is every v1
case unchanged plus the prompt-injection cases of ``templates/multidomain_v2/`` (ids
``<prefix>-injection-NN``, tagged ``prompt_injection``): hostile instructions in the question, in an
earlier follow-up turn, or quoted from the cell values the sample database plants
(``sample_db.PROMPT_INJECTIONS``, bound to the slots ``{injected_title}``, ``{injected_synopsis}``
and ``{injected_review}``). Query cases expect the SQL of the user's legitimate intent; probes carry
what a model obeying the injection would write.

Templates are data (``templates/multidomain_v1/<domain>.yml``), read and rendered by ``gold.templates``.
Generation also checks the set (``gold.checks``): exact composition per domain and category, tags from
the fixed vocabulary (``gold.vocabulary``) that match the expected SQL's syntax tree
(``gold.sql_analysis``), no two query cases of a domain sharing a SQL skeleton, and no clock-dependent
functions. Any problem raises :class:`GoldTemplateError`. This module composes them and writes the files.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.config import jsonl
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.gold.builtin.ambiguity import check_ambiguity_cases, load_ambiguity_cases
from nl2sql_pipeline.gold.builtin.checks import carries_injection, check_gold_set, check_injection_cases
from nl2sql_pipeline.gold.builtin.sql_analysis import parse_sql, sql_skeleton, structural_tags
from nl2sql_pipeline.gold.builtin.templates import (
    CaseTemplate,
    injection_slot_values,
    injection_texts,
    load_templates,
    render_case,
    sql_literal,
)
from nl2sql_pipeline.gold.builtin.vocabulary import (
    BUILTIN_GOLD_FILE,
    CATEGORY_PLAN,
    CLARIFY_GOLD_FILE,
    DATABASE,
    DEFAULT_SEED,
    DOMAIN_PREFIXES,
    GOLD_SET_CLARIFY_NAME,
    GOLD_SET_NAME,
    GOLD_SET_V2_NAME,
    INJECTION_ID_INFIX,
    INJECTION_PHRASES,
    INJECTION_SLOTS,
    INJECTION_TAG,
    PROBE_TAGS,
    PROMPT_TAGS,
    QUERY_TAGS,
    SEMANTIC_MODEL,
    SQL_DIALECT,
    TAG_VOCABULARY,
    TEMPLATE_DIR,
    TEMPLATE_DIR_V2,
    V2_GOLD_FILE,
    GoldTemplateError,
)

logger = logging.getLogger(__name__)

__all__ = [  # the generator's own API and the names other modules import from here
    "BUILTIN_GOLD_FILE",
    "BUILTIN_GOLD_SETS",
    "CATEGORY_PLAN",
    "DATABASE",
    "DEFAULT_SEED",
    "DOMAIN_PREFIXES",
    "GOLD_SET_NAME",
    "GOLD_SET_V2_NAME",
    "INJECTION_ID_INFIX",
    "INJECTION_PHRASES",
    "INJECTION_SLOTS",
    "INJECTION_TAG",
    "PROBE_TAGS",
    "PROMPT_TAGS",
    "QUERY_TAGS",
    "SEMANTIC_MODEL",
    "SQL_DIALECT",
    "TAG_VOCABULARY",
    "TEMPLATE_DIR",
    "TEMPLATE_DIR_V2",
    "V2_GOLD_FILE",
    "CaseTemplate",
    "GoldTemplateError",
    "builtin_gold_path",
    "carries_injection",
    "check_gold_set",
    "check_injection_cases",
    "generate_injection_cases",
    "generate_multidomain_v1",
    "generate_multidomain_v2",
    "gold_set_path",
    "injection_slot_values",
    "injection_texts",
    "load_templates",
    "parse_sql",
    "render_case",
    "render_jsonl",
    "sql_literal",
    "sql_skeleton",
    "structural_tags",
    "write_builtin_gold",
    "write_gold_set",
]


def generate_multidomain_v1(seed: int = DEFAULT_SEED, template_dir: Path | None = None) -> list[Case]:
    """The 120 cases of ``multidomain-v1``, in template order; raise GoldTemplateError if invalid."""
    cases = [render_case(template, seed) for template in load_templates(template_dir)]
    problems = check_gold_set(cases)
    if problems:
        raise GoldTemplateError(problems)
    logger.info("generated %d cases of %s (seed %d)", len(cases), GOLD_SET_NAME, seed)
    return cases


def generate_injection_cases(seed: int = DEFAULT_SEED, template_dir: Path | None = None) -> list[Case]:
    """The prompt-injection cases alone (templates/multidomain_v2), rendered with the planted values."""
    slots = injection_slot_values()
    templates = load_templates(template_dir or TEMPLATE_DIR_V2)
    return [render_case(template, seed, extra_slots=slots, verbatim_slots=True) for template in templates]


def generate_multidomain_v2(
    seed: int = DEFAULT_SEED, template_dir: Path | None = None, v1_template_dir: Path | None = None
) -> list[Case]:
    """``multidomain-v2``: the v1 cases unchanged, then the injection cases; raise GoldTemplateError if invalid."""
    base = generate_multidomain_v1(seed, v1_template_dir)
    injection = generate_injection_cases(seed, template_dir)
    problems = check_injection_cases(injection, base)
    if problems:
        raise GoldTemplateError(problems)
    logger.info(
        "generated %d cases of %s (%d injection cases)", len(base) + len(injection), GOLD_SET_V2_NAME, len(injection)
    )
    return base + injection


def generate_multidomain_clarify(seed: int = DEFAULT_SEED) -> list[Case]:
    """``multidomain-clarify-v1``: the v1 cases unchanged, then the ambiguous questions (``gold.builtin.ambiguity``)."""
    base = generate_multidomain_v1(seed)
    ambiguous = load_ambiguity_cases()
    problems = check_ambiguity_cases(ambiguous, base)
    if problems:
        raise GoldTemplateError(problems)
    return base + ambiguous


BUILTIN_GOLD_SETS: dict[str, tuple[str, Callable[[], list[Case]]]] = {
    GOLD_SET_NAME: (BUILTIN_GOLD_FILE, generate_multidomain_v1),
    GOLD_SET_V2_NAME: (V2_GOLD_FILE, generate_multidomain_v2),
    GOLD_SET_CLARIFY_NAME: (CLARIFY_GOLD_FILE, generate_multidomain_clarify),
}
"""Built-in gold-set key -> (file name under ``data/gold/``, generator)."""


def builtin_gold_path() -> Path:
    """Where the checked-in built-in gold file lives: ``data_dir()/gold/nl2sql_multidomain.jsonl``."""
    return paths.data_dir() / "gold" / BUILTIN_GOLD_FILE


def gold_set_path(key: str) -> Path:
    """Where the checked-in file of built-in gold set ``key`` lives (``data_dir()/gold/<file>``)."""
    return paths.data_dir() / "gold" / _builtin(key)[0]


def _builtin(key: str) -> tuple[str, Callable[[], list[Case]]]:
    try:
        return BUILTIN_GOLD_SETS[key]
    except KeyError:
        raise ConfigError(
            f"{key!r} is not a built-in gold set (built-in: {', '.join(BUILTIN_GOLD_SETS)}); "
            "other gold sets are imported with `nl2sql-eval gold import`"
        ) from None


def render_jsonl(cases: Iterable[Case]) -> str:
    """The JSONL text of a gold set: one ``Case.to_json()`` per line, ``\\n`` endings."""
    return jsonl.render_jsonl(case.to_json() for case in cases)


def _write_jsonl(cases: list[Case], target: Path) -> Path:
    return jsonl.write_jsonl_lines(target, (case.to_json() for case in cases))


def write_builtin_gold(path: Path | None = None) -> Path:
    """Generate ``multidomain-v1`` and write it as UTF-8 JSONL (default: ``builtin_gold_path()``)."""
    return _write_jsonl(generate_multidomain_v1(), path or builtin_gold_path())


def write_gold_set(key: str, path: Path | None = None) -> Path:
    """Generate built-in gold set ``key`` and write it as UTF-8 JSONL (default: ``gold_set_path(key)``).

    Raises ConfigError for a key that is not built in.
    """
    generate = _builtin(key)[1]
    return _write_jsonl(generate(), path or gold_set_path(key))


if __name__ == "__main__":  # regenerate the checked-in files: python -m nl2sql_pipeline.gold.builtin.generator
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for gold_key in BUILTIN_GOLD_SETS:
        write_gold_set(gold_key)

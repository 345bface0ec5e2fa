"""The built-in ambiguous questions: ``multidomain-clarify-v1`` = every ``multidomain-v1`` case unchanged, then
two questions per domain whose right response is a clarifying question (``templates/ambiguity.yml``).

A separate gold set, so no existing set's cases, ids or scores move. Each case is checked by the same rules
as any gold file (``gold.case_rules``), and the set by :func:`check_ambiguity_cases`.
"""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.config.checker import line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.gold.builtin.vocabulary import DATABASE, DOMAIN_PREFIXES
from nl2sql_pipeline.gold.case_rules import validate_records
from nl2sql_pipeline.gold.raw_cases import RawCase

AMBIGUITY_FILE = Path(__file__).resolve().parent / "templates" / "ambiguity.yml"
CLARIFY_ID_INFIX = "clarify"
CASES_PER_DOMAIN = 2


def load_ambiguity_cases(path: Path = AMBIGUITY_FILE) -> list[Case]:
    """The ambiguous questions of ``path`` (validated; CaseValidationError lists every problem)."""
    _, items = read_yaml(path, lambda message: CaseValidationError([message]), missing="restore it from git")
    records = [
        RawCase(line=line_of(item) or index + 1, data={**item, "database": DATABASE, "semantic_model": DATABASE})
        for index, item in enumerate(items)
    ]
    return validate_records(records, str(path))


def check_ambiguity_cases(cases: list[Case], base: list[Case]) -> list[str]:
    """Problems of the ambiguous questions: every one a clarify case, ids ``<prefix>-clarify-NN`` unused by the
    base set, ``CASES_PER_DOMAIN`` per built-in domain."""
    problems = []
    taken = {case.id for case in base}
    for case in cases:
        prefix = DOMAIN_PREFIXES.get(case.domain)
        if not case.is_clarify:
            problems.append(f"{case.id}: not a clarify case")
        if prefix is None or not case.id.startswith(f"{prefix}-{CLARIFY_ID_INFIX}-"):
            problems.append(f"{case.id}: id must be <domain prefix>-{CLARIFY_ID_INFIX}-NN")
        if case.id in taken:
            problems.append(f"{case.id}: id already used by the base set")
    for domain in DOMAIN_PREFIXES:
        count = sum(case.domain == domain for case in cases)
        if count != CASES_PER_DOMAIN:
            problems.append(f"domain {domain}: {count} ambiguous questions, expected {CASES_PER_DOMAIN}")
    return problems

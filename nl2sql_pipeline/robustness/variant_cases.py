"""The variant cases a robustness measurement asks a model: a gold case with another question or database.

A variant keeps everything of its gold case but the question (a paraphrase) or the database, the expected
SQL and the earlier turns' SQL (a perturbed copy and the gold rewritten for it). Its id is the case id,
``VARIANT_MARK`` and the variant's label (``content-single-01~v:typo-1``), so offline models find the gold
by the case id (``generation.offline_requests.split_variant``) and never by the question text.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from nl2sql_pipeline.cases import Case, Turn
from nl2sql_pipeline.execution import SandboxLimits, held_sandboxes
from nl2sql_pipeline.generation.offline_requests import VARIANT_MARK
from nl2sql_pipeline.robustness.paraphrase import DEFAULT_TYPO_RATE, paraphrases_for
from nl2sql_pipeline.robustness.perturb import PerturbationError, PerturbedDatabase, ensure_perturbed, rewrite_sql
from nl2sql_pipeline.robustness.records import MEASUREMENT_PARAPHRASE, MEASUREMENT_PERTURBATION
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages.records import OracleRow

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class VariantCase:
    """One variant of a gold case: the case as asked, its gold case's id, the family (a paraphrase family or
    a perturbation kind) and the variant's label."""

    case: Case
    base_id: str
    measurement: str
    family: str
    label: str


def variant_id(case_id: str, label: str) -> str:
    """The id of variant ``label`` of case ``case_id``."""
    return f"{case_id}{VARIANT_MARK}{label}"


def measured(case: Case) -> bool:
    """Whether robustness asks ``case`` again: a query judged on execution against its gold (not a probe, an
    answer-only case or an ambiguous question, which have no gold rows to hold a variant to)."""
    return not (case.is_probe or case.is_answer_only or case.is_clarify)


def paraphrase_variants(
    cases: Iterable[Case],
    count: int,
    *,
    stored: Mapping[str, Sequence[str]] | None = None,
    typo_rate: float = DEFAULT_TYPO_RATE,
) -> list[VariantCase]:
    """``count`` paraphrased variants of every query case (``measured``); ``stored`` maps a case id
    to its model-written paraphrases (``stored_paraphrases``)."""
    out = []
    for case in cases:
        if not measured(case) or count <= 0:
            continue
        for paraphrase in paraphrases_for(
            case.id, case.question, count, stored=(stored or {}).get(case.id, ()), typo_rate=typo_rate
        ):
            asked = replace(case, id=variant_id(case.id, paraphrase.label), question=paraphrase.question)
            out.append(VariantCase(asked, case.id, MEASUREMENT_PARAPHRASE, paraphrase.family, paraphrase.label))
    return out


def paraphrase_oracle(variants: Iterable[VariantCase], oracle: Iterable[OracleRow]) -> list[OracleRow]:
    """The gold's oracle rows for every paraphrased variant (the gold and its database are the case's own)."""
    by_case: dict[str, list[OracleRow]] = {}
    for row in oracle:
        by_case.setdefault(row.case_id, []).append(row)
    return [
        replace(row, case_id=v.case.id, case_fingerprint=v.case.fingerprint)
        for v in variants
        for row in by_case.get(v.base_id, ())
    ]


@dataclass(frozen=True)
class GoldCheck:
    """Whether a case's rewritten gold returns the original gold's rows on a perturbed database."""

    case_id: str
    kind: str
    ok: bool
    reason: str | None = None


def perturbation_variants(
    cases: Iterable[Case],
    kinds: Sequence[str],
    resolve_database: Callable[[str], Path],
    oracle: Iterable[OracleRow],
    limits: SandboxLimits = SandboxLimits(),
) -> tuple[list[VariantCase], list[OracleRow], list[GoldCheck]]:
    """For every query case and kind: the variant on the kind's copy of the case's database (built when
    missing), its oracle rows (the rewritten gold, run there) and the check that they are the original gold's
    rows. A case whose rewritten gold fails the check is left out of that kind (its ``GoldCheck`` says why)."""
    original = {(row.case_id, row.alternative_index): row.result for row in oracle}
    databases: dict[tuple[str, str], PerturbedDatabase] = {}
    variants: list[VariantCase] = []
    rows: list[OracleRow] = []
    checks: list[GoldCheck] = []
    with held_sandboxes() as run_query:
        for kind in kinds:
            for case in cases:
                if not measured(case):
                    continue
                key = (case.database, kind)
                if key not in databases:
                    databases[key] = ensure_perturbed(resolve_database(case.database), kind)
                db = databases[key]
                try:
                    expected = tuple(rewrite_sql(sql, db.source_schema, db.plan) for sql in case.expected_sql)
                    turns = tuple(
                        Turn(t.question, rewrite_sql(t.sql, db.source_schema, db.plan)) for t in case.follow_up_context
                    )
                except PerturbationError as exc:
                    checks.append(GoldCheck(case.id, kind, False, f"rewrite failed: {exc}"))
                    continue
                asked = replace(
                    case,
                    id=variant_id(case.id, kind),
                    database=str(db.path),
                    expected_sql=expected,
                    follow_up_context=turns,
                    semantic_model=None,
                    sql_policy=None,
                )
                results = []
                problem = None
                for index, sql in enumerate(expected):
                    result = run_query(db.path, pin_clock(sql, case.reference_instant), limits)
                    before = original.get((case.id, index))
                    if not result.ok:
                        problem = f"rewritten gold {index} failed: {result.error_message}"
                    elif before is not None and before.ok and _row_bag(before.rows) != _row_bag(result.rows):
                        problem = f"rewritten gold {index} returns other rows than the original gold"
                    results.append(result)
                    if problem:
                        break
                checks.append(GoldCheck(case.id, kind, problem is None, problem))
                if problem is not None:
                    logger.warning("%s under %s: %s; left out of that perturbation", case.id, kind, problem)
                    continue
                variants.append(VariantCase(asked, case.id, MEASUREMENT_PERTURBATION, kind, kind))
                rows.extend(OracleRow(asked.id, asked.fingerprint, i, r) for i, r in enumerate(results))
    return variants, rows, checks


def _row_bag(rows: Sequence[tuple]) -> list[str]:
    return sorted(repr(row) for row in rows)

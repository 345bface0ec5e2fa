"""Test-suite accuracy: a candidate is correct only if it matches the gold on the original database and
on every variant of it (Zhong et al., 2020), so a wrong query that returns the gold rows by chance is caught.

    suites = build_suites(cases, resolve_database, count=3)        # variants, built once per gold version
    rows = run_variant_oracle(cases, suites, limits)               # the gold on every variant (shared by models)
    suite = VariantSuite.from_rows(rows, count=3, limits=limits)   # what ``judge`` checks candidates against
    fields = suite.verdict_fields(case, verdict, config)           # test_suite_correct / _variants / _reason

Only a candidate already correct on the original database runs on the variants (a wrong one is wrong
under both measures), through the same sandbox (``run_query``, or the killable worker with ``isolated``),
with the clock pinned at the case's reference date like every other run (``sql.clock``).
A variant on which the gold itself fails (a division by a boundary value, say) is left out for that case.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.compare import CompareConfig
from nl2sql_pipeline.errors import Nl2SqlError
from nl2sql_pipeline.execution import QueryResult, SandboxLimits, held_sandboxes, run_query, run_query_isolated
from nl2sql_pipeline.sql.clock import pin_clock
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import VariantOracleRow, Verdict
from nl2sql_pipeline.stages.selection import WholeResults, best_comparison
from nl2sql_pipeline.variants import VariantSet, ensure_variants
from nl2sql_pipeline.variants.build import VariantBuildError, build_connection

logger = logging.getLogger(__name__)

DEFAULT_VARIANTS = 3
"""Variants per database when nothing else is asked (0 turns test-suite accuracy off)."""
DEFAULT_SEED = 0

QueryRunner = Callable[[Path, str, SandboxLimits], QueryResult]


def build_suites(
    cases: Iterable[Case], resolve_database: Callable[[str], Path], count: int, seed: int = DEFAULT_SEED
) -> dict[str, VariantSet]:
    """The first ``count`` variants of every database the query cases use (built when not cached).

    A database whose variants cannot be built is left out with a warning (its cases are checked on no variant).
    """
    sqls: dict[str, list[str]] = {}
    for case in cases:
        if not case.is_probe:
            sqls.setdefault(case.database, []).extend(case.expected_sql)
    suites: dict[str, VariantSet] = {}
    if count <= 0 or not sqls:
        return suites
    con = build_connection()  # one build instance for every database
    try:
        for name, found in sorted(sqls.items()):
            try:
                suites[name] = ensure_variants(resolve_database(name), found, count, seed, con)
            except VariantBuildError as exc:  # the run goes on: its cases are judged on the database alone
                logger.warning(
                    "test-suite accuracy: no variants of database %s (%s); its cases count as checked on no variant",
                    name,
                    exc,
                )
    finally:
        con.close()
    return suites


def run_variant_oracle(
    cases: Iterable[Case], suites: Mapping[str, VariantSet], limits: SandboxLimits = SandboxLimits()
) -> list[VariantOracleRow]:
    """Every expected SQL alternative of every query case on every variant of its database, in the sandbox
    (each variant's sandbox held for the whole stage)."""
    rows: list[VariantOracleRow] = []
    with held_sandboxes() as run:
        for case in cases:
            suite = suites.get(case.database)
            if case.is_probe or suite is None:
                continue
            for variant_index, path in enumerate(suite.paths):
                for alternative, sql in enumerate(case.expected_sql):
                    result = run(path, pin_clock(sql, case.reference_instant), limits)
                    if not result.ok:
                        logger.info(
                            "gold of %s[%d] fails on variant %d (%s); that variant is left out for it",
                            case.id,
                            alternative,
                            variant_index,
                            result.error_class,
                        )
                    rows.append(
                        VariantOracleRow(case.id, case.fingerprint, variant_index, alternative, str(path), result)
                    )
    return rows


class StoredVariantsError(Nl2SqlError):
    """The stored variant results do not fit the run: fewer variants than asked, or variant files gone."""


def stored_suite(
    rows: Sequence[VariantOracleRow], count: int, limits: SandboxLimits | None = None, isolated: bool = False
) -> VariantSuite | None:
    """The suite of a run asking ``count`` variants from stored rows (None with ``count`` 0).

    Raises ``StoredVariantsError`` when the rows hold fewer than ``count`` variants or a variant file is gone.
    """
    if count <= 0:
        return None
    stored = max((r.variant_index for r in rows), default=-1) + 1
    if rows and stored < count:
        raise StoredVariantsError(f"the stored variant results hold {stored} variants per database, {count} asked")
    missing = sorted(path for path in {r.variant_path for r in rows} if not Path(path).is_file())
    if missing:
        raise StoredVariantsError(f"variant files are missing ({', '.join(missing[:3])})")
    return VariantSuite.from_rows(rows, count, limits, isolated)


@dataclass(frozen=True)
class CaseVariant:
    """One variant of a case's database: its file and the gold's results on it (one per alternative)."""

    index: int
    path: Path
    oracle_results: tuple[QueryResult, ...]

    @property
    def usable(self) -> bool:
        """True when every expected alternative ran on this variant."""
        return bool(self.oracle_results) and all(r.ok for r in self.oracle_results)


@dataclass(frozen=True)
class SuiteCheck:
    """A candidate on a case's variants: correct on all of them, how many were checked, the first difference."""

    correct: bool
    checked: int
    reason: str | None = None


def check_on_variants(
    case: Case,
    sql: str,
    variants: Sequence[CaseVariant],
    config: CompareConfig,
    limits: SandboxLimits,
    runner: QueryRunner = run_query,
) -> SuiteCheck:
    """Run ``sql`` on each usable variant and compare with the gold there; stop at the first difference."""
    checked = 0
    for variant in variants:
        if not variant.usable:
            continue
        checked += 1
        result = runner(variant.path, pin_clock(sql, case.reference_instant), limits)
        whole = WholeResults(variant.path, tuple(case.expected_sql), limits, case.reference_instant)
        comparison = best_comparison(variant.oracle_results, result, config, whole, sql)
        if not comparison.match:
            return SuiteCheck(False, checked, f"variant {variant.index}: {comparison.reason}")
    return SuiteCheck(True, checked)


@dataclass
class VariantSuite:
    """The variants of every case (from ``database_variants``) and how candidates run on them."""

    variants: dict[str, list[CaseVariant]] = field(default_factory=dict)
    limits: SandboxLimits = field(default_factory=SandboxLimits)
    isolated: bool = False
    _checked: dict[tuple[str, str], SuiteCheck] = field(default_factory=dict, repr=False)
    """Checks already made, by (case id, SQL): a sample repeating an earlier sample's SQL is not run again."""
    _runner: QueryRunner | None = field(default=None, repr=False)
    """The runner of a ``held`` block (None: ``run_query``)."""

    @classmethod
    def from_rows(
        cls, rows: Iterable[VariantOracleRow], count: int, limits: SandboxLimits | None = None, isolated: bool = False
    ) -> VariantSuite:
        """The suite of the first ``count`` variants in ``rows`` (alternatives in order)."""
        grouped: dict[str, dict[int, list[VariantOracleRow]]] = {}
        for row in rows:
            if row.variant_index < count:
                grouped.setdefault(row.case_id, {}).setdefault(row.variant_index, []).append(row)
        variants = {
            case_id: [
                CaseVariant(
                    index,
                    Path(found[0].variant_path),
                    tuple(r.result for r in sorted(found, key=lambda r: r.alternative_index)),
                )
                for index, found in sorted(by_index.items())
            ]
            for case_id, by_index in grouped.items()
        }
        return cls(variants, limits or SandboxLimits(), isolated)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Within the block, candidates run on variant sandboxes held until it ends (``execution.held_sandboxes``:
        no pool bookkeeping per query); with ``isolated``, each still runs in its own worker process."""
        if self.isolated:
            yield
            return
        with held_sandboxes() as runner:
            previous, self._runner = self._runner, runner
            try:
                yield
            finally:
                self._runner = previous

    def verdict_fields(self, case: Case, verdict: Verdict, config: CompareConfig) -> dict[str, Any]:
        """The test-suite fields of a query verdict (none for a verdict that was not scored)."""
        if verdict.is_probe or verdict.outcome in outcomes.NOT_SCORED:
            return {}
        variants = self.variants.get(case.id, [])
        usable = sum(v.usable for v in variants)
        if not verdict.correct or verdict.generated_sql is None:
            return {"test_suite_correct": False, "test_suite_variants": usable}
        key = (case.id, verdict.generated_sql)
        if key not in self._checked:
            runner: QueryRunner = run_query_isolated if self.isolated else self._runner or run_query
            self._checked[key] = check_on_variants(case, verdict.generated_sql, variants, config, self.limits, runner)
        check = self._checked[key]
        return {"test_suite_correct": check.correct, "test_suite_variants": usable, "test_suite_reason": check.reason}

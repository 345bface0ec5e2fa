"""From a read benchmark to a native gold file: copy the databases, convert and check every gold query.

    result = build_gold(source, Path("gold/spider-dev.jsonl"), source_dialect="sqlite")

1. Every database the questions use is written to ``<gold folder>/databases/<db>.duckdb`` (SQLite files
   copied by ``sqlite_to_duckdb``, DuckDB files copied as they are); cases name it by that relative path.
2. Every gold alternative is converted to DuckDB (``dialect.convert_sql``) and checked
   (``dialect.verify_conversion``): with a SQLite source the original runs in SQLite and the
   conversion must return the same result in the DuckDB sandbox, both reading the clock at the set's
   reference date; a different choice of rows tied at an ``ORDER BY … LIMIT`` is the same result.
3. An alternative that does not convert, fails on either engine or returns another result is left out
   of the case; a question left with no alternative is left out of the gold file. Nothing is dropped
   silently: every query is listed in the report (``<gold stem>.import-report.json``) with its status,
   the fixes applied and the reason, and the summary counts what was dropped and why. Kept queries
   their database's SQL policy would refuse are flagged in the report with the rule (they stay: a run may
   use another policy). That policy is ``policy_for(db_id, file)``'s, by default ``safety``: the policy of
   a database registered without one (``databases.registry.REGISTERED_POLICY``).
4. A question without a difficulty (Spider's, defog's, a plain row without one) gets Spider's official
   hardness, easy / medium / hard / extra, computed from its first kept gold query in the source
   dialect (``hardness.spider_hardness``); the report says per query where the difficulty came from.
5. Every case carries the set's reference date (``reference_date``, default the import date,
   ``sql.clock.today()``): ``CURRENT_DATE``, ``now()`` and their kin in its gold and in candidates are
   evaluated at that date, so the set answers the same on every later day.
6. With a ``PostgresVerifier`` (``gold import --verify-with``) every database is also loaded into
   PostgreSQL, and a Postgres gold query must return there what its conversion returns in DuckDB
   (``dialect.postgres_verify``); without one a Postgres query is only checked to run.
7. The cases are validated by the same rules as any gold file and written as JSONL.

Everything is built in a staging folder beside the gold file (``staging.ImportStaging``) and moved into
place, one ``os.replace`` per file, only when the import succeeds: an import that fails (no query kept, an
invalid case, a database that cannot be copied) changes nothing under the gold file's folder; the report of
one that kept no query goes to ``<storage root>/failed-imports/``. Two database ids that map to one file
name (``my db``, ``my_db``) are refused before anything is copied. An output folder that cannot be created
(a file in the way) raises ``BenchmarkImportError`` before anything is copied.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import Any

import duckdb

from nl2sql_pipeline.cases import DIFFICULTIES, Case
from nl2sql_pipeline.databases.registry import REGISTERED_POLICY
from nl2sql_pipeline.dialect import ConversionCheck, ConversionError, convert_sql, verify_conversion
from nl2sql_pipeline.dialect.column_info import catalog_columns
from nl2sql_pipeline.dialect.postgres_verify import PostgresVerifier
from nl2sql_pipeline.dialect.sqlite_copy import copy_sqlite_to_duckdb, database_file_name
from nl2sql_pipeline.dialect.verify import CONVERSION_FAILED
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.execution import SandboxLimits, release_sandboxes
from nl2sql_pipeline.gold.case_rules import validate_records
from nl2sql_pipeline.gold.formats.hardness import HardnessError, spider_hardness
from nl2sql_pipeline.gold.formats.model import (
    BenchmarkSource,
    DatabaseConflictError,
    SourceDatabase,
    SourceQuestion,
)
from nl2sql_pipeline.gold.formats.staging import DATABASES_FOLDER, ImportStaging, same_database
from nl2sql_pipeline.gold.formats.team_files import infer_category, write_jsonl
from nl2sql_pipeline.gold.raw_cases import RawCase
from nl2sql_pipeline.policy.engine import SQLPolicyEngine
from nl2sql_pipeline.sql import clock

logger = logging.getLogger(__name__)

REPORT_SUFFIX = ".import-report.json"
InUse = Callable[[Path], dict[Path, list[str]]]
"""``databases_in_use(out)``: database file (resolved) -> keys of the other gold sets (not OUT's) that run on it."""
DIFFICULTY_FROM_SOURCE = "source"
DIFFICULTY_COMPUTED = "spider_hardness"
DIFFICULTY_DEFAULT = "default"
"""Where a case's difficulty came from: the benchmark, Spider's hardness of its gold, or the contract's
default (``Case.difficulty``) when neither was possible."""


@dataclass(frozen=True)
class QueryReport:
    """One gold alternative: what it was, what it became, and whether it was kept."""

    case_id: str
    alternative: int
    location: str
    database: str
    status: str
    reason: str
    fixes: tuple[str, ...]
    source_sql: str
    sql: str | None
    policy: str | None = None
    """Why its database's SQL policy refuses the kept query, ``rule: reason`` (None when it allows it)."""
    difficulty: str | None = None
    """The difficulty of the case written (None when the question was left out)."""
    difficulty_source: str | None = None
    """``source``, ``spider_hardness`` (computed) or ``default`` (see ``DIFFICULTY_*``)."""


@dataclass
class DatabaseReport:
    """One copied database: its file (relative to the gold folder), tables, rows and what was left out."""

    db_id: str
    file: str
    source: str
    tables: int
    rows: int
    notes: list[str] = field(default_factory=list)
    policy: str = REGISTERED_POLICY
    """The SQL policy its cases run under (a name or file), which the kept queries were checked against."""


@dataclass
class ImportResult:
    """What an import wrote: the cases, the gold file, the report file and the per-query reports."""

    cases: list[Case]
    gold_path: Path
    report_path: Path
    questions: int
    queries: list[QueryReport]
    databases: list[DatabaseReport]
    warnings: list[str] = field(default_factory=list)
    """What the reader imported without, and what is lost (also in the report)."""
    verified_with: str | None = None
    """The server the Postgres originals ran on (``PostgreSQL 15.8 (a throwaway cluster)``), if any."""
    reference_date: date | None = None
    """The set's reference date, written on every case (its clock reads are evaluated at it)."""

    @property
    def dropped(self) -> Counter[str]:
        """Status -> number of alternatives left out."""
        return Counter(q.status for q in self.queries if q.sql is None)

    @property
    def policy_refused(self) -> int:
        """Kept queries their database's policy refuses."""
        return sum(1 for q in self.queries if q.policy)

    @property
    def refused_queries(self) -> list[QueryReport]:
        """The kept queries their database's policy refuses (``policy`` says the rule and why)."""
        return [q for q in self.queries if q.policy]

    def policy_of(self, database: str) -> str:
        """The policy of a case's ``database`` (its relative file, as the cases name it)."""
        return next((d.policy for d in self.databases if d.file == database), REGISTERED_POLICY)

    @property
    def difficulty_sources(self) -> Counter[str]:
        """Difficulty source -> number of cases written (``DIFFICULTY_*``)."""
        first = {q.case_id: q.difficulty_source for q in self.queries if q.difficulty_source is not None}
        return Counter(first.values())

    def summary(self) -> str:
        """One line: kept questions, what was dropped and why, where the report is."""
        dropped = self.dropped
        parts = [f"imported {len(self.cases)} of {self.questions} questions into {self.gold_path}"]
        if dropped:
            why = ", ".join(f"{n} {status}" for status, n in sorted(dropped.items()))
            count = sum(dropped.values())
            parts.append(f"{count} gold {'query' if count == 1 else 'queries'} left out ({why})")
        rewritten = sum(1 for q in self.queries if q.fixes and q.status in ("verified", "runs"))
        if rewritten:
            parts.append(f"{rewritten} rewritten by dialect fixes")
        if self.policy_refused:
            names = sorted({self.policy_of(q.database) for q in self.refused_queries})
            parts.append(
                f"{self.policy_refused} kept {'query' if self.policy_refused == 1 else 'queries'} refused by "
                f"{'its' if self.policy_refused == 1 else 'their'} database's policy ({', '.join(names)})"
            )
        computed = self.difficulty_sources[DIFFICULTY_COMPUTED]
        if computed:
            parts.append(
                f"difficulty computed as Spider's hardness for {computed} {'case' if computed == 1 else 'cases'}"
            )
        if self.verified_with:
            parts.append(f"results checked against {self.verified_with}")
        if self.reference_date is not None:
            parts.append(f"reference date {self.reference_date.isoformat()} (CURRENT_DATE, now(), ... read it)")
        return "; ".join(parts) + f"; report: {self.report_path}"


def report_path_for(gold_path: Path) -> Path:
    """``gold/x.jsonl`` -> ``gold/x.import-report.json``."""
    return gold_path.with_name(gold_path.stem + REPORT_SUFFIX)


def _copy_database(db: SourceDatabase, target: Path) -> tuple[DatabaseReport, dict[str, dict[str, Any]]]:
    """Write ``db`` as the DuckDB file ``target``; its report, and its columns for the SQLite fixes
    (lower-case table -> column -> ``SourceColumn``; empty for a DuckDB source)."""
    if db.is_sqlite:
        copied = copy_sqlite_to_duckdb(db.path, target, db.extra_keys)
        report = DatabaseReport(
            db.db_id, "", str(db.path), len(copied.tables), sum(copied.row_counts.values()), copied.notes
        )
        return report, copied.column_types()
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    shutil.copyfile(db.path, tmp)
    os.replace(tmp, target)
    con = duckdb.connect(str(target), read_only=True)
    try:
        [(table_count, table_bytes)] = con.execute(
            "SELECT count(*), coalesce(sum(estimated_size), 0) FROM duckdb_tables()"
        ).fetchall()
    finally:
        con.close()
    return DatabaseReport(db.db_id, "", str(db.path), int(table_count), int(table_bytes)), {}


def _check_alternative(
    question: SourceQuestion,
    index: int,
    sql: str,
    dialect: str,
    db: SourceDatabase,
    file: Path,
    columns: dict[str, dict[str, Any]],
    relative: str,
    limits: SandboxLimits,
    postgres: PostgresVerifier | None = None,
    reference: date | None = None,
) -> QueryReport:
    try:
        converted = convert_sql(sql, dialect, columns)
    except ConversionError as exc:
        return QueryReport(
            question.id, index, question.location, relative, CONVERSION_FAILED, f"the original {exc}", (), sql, None
        )
    source = postgres.runner(question.db_id) if postgres is not None and dialect == "postgres" else None
    check: ConversionCheck = verify_conversion(
        converted, file, db.path if db.is_sqlite else None, limits, source=source, reference=reference
    )
    return QueryReport(
        question.id,
        index,
        question.location,
        relative,
        check.status,
        check.reason,
        converted.fixes,
        sql,
        converted.sql if check.kept else None,
    )


def _difficulty(question: SourceQuestion, checked: list[QueryReport], dialect: str) -> tuple[str | None, str]:
    """The case's difficulty and where it came from: the source's, else Spider's hardness of the first
    kept gold query read in the source dialect, else none (the contract's default)."""
    if question.difficulty in DIFFICULTIES:
        return question.difficulty, DIFFICULTY_FROM_SOURCE
    source_sql = next(r.source_sql for r in checked if r.sql is not None)
    try:
        return spider_hardness(source_sql, dialect), DIFFICULTY_COMPUTED
    except HardnessError as exc:
        logger.info("%s (%s): no hardness computed: the gold query %s", question.id, question.location, exc)
        return None, DIFFICULTY_DEFAULT


def _case_record(
    question: SourceQuestion, kept: list[str], relative: str, number: int, difficulty: str | None, reference: date
) -> RawCase:
    data: dict[str, Any] = {
        "id": question.id,
        "domain": question.db_id,
        "category": infer_category(kept[0]),
        "question": question.question,
        "database": relative,
        "expected_sql": kept[0] if len(kept) == 1 else kept,
        "tags": list(dict.fromkeys(question.tags)),
    }
    if difficulty is not None:
        data["difficulty"] = difficulty
    if question.hint:
        data["hint"] = question.hint
    data["reference_date"] = reference.isoformat()
    return RawCase(line=number, data=data)


def _validate(records: list[RawCase], out: Path, locations: dict[int, str]) -> list[Case]:
    """Validate the cases to write; a problem names the question's own place in the source files."""
    if not records:
        return []
    try:
        return validate_records(records, str(out))
    except CaseValidationError as exc:
        prefix = re.compile(rf"^{re.escape(str(out))}:(\d+): ")
        first_use = re.compile(r"\(first used on line (\d+)\)")  # a duplicate id: where its first question is

        def located(problem: str) -> str:
            problem = prefix.sub(lambda m: f"{locations.get(int(m.group(1)), m.group(0))}: ", problem)
            return first_use.sub(
                lambda m: f"(first used at {locations.get(int(m.group(1)), 'line ' + m.group(1))})", problem
            )

        raise CaseValidationError([located(p) for p in exc.problems]) from exc


def build_gold(
    source: BenchmarkSource,
    out: Path,
    source_dialect: str | None = None,
    limits: SandboxLimits = SandboxLimits(),
    postgres: PostgresVerifier | None = None,
    reference_date: date | None = None,
    policy_for: Callable[[str, Path], str] | None = None,
    databases_in_use: InUse | None = None,
) -> ImportResult:
    """Copy the databases, convert and check the gold SQL, write ``out`` and its report (see module doc).

    ``reference_date`` is the set's "today" (default: the import date). ``policy_for(db_id, copied file)``
    names the SQL policy each database's cases will run under (default: ``safety``; the file is its final
    path under ``databases/``); kept queries it refuses are flagged.

    ``databases_in_use(out)`` (``registry.gold_sets_using_databases``) names the database files other gold
    sets run on (file -> set keys); such a file already under ``databases/`` is replaced only by the same
    content. None (``gold import --replace-databases``) replaces any.

    Raises ``CaseValidationError`` when the written cases would not validate, no case is kept or two
    database ids map to one file name, ``BenchmarkImportError`` when OUT's folder cannot be made,
    ``DatabaseConflictError`` when a database another gold set runs on would change, and
    ``sqlite_to_duckdb.SqliteCopyError`` when a database cannot be copied; OUT's folder is then unchanged.
    """
    out = Path(out)
    dialect = source_dialect or source.default_dialect
    reference = reference_date or clock.today()
    used = sorted({q.db_id for q in source.questions})
    names = _file_names(source, used)
    with ImportStaging(out) as staging:
        guard = None if databases_in_use is None else _ConflictGuard(out, source, databases_in_use)
        result = _build_staged(source, out, staging, names, dialect, limits, postgres, reference, policy_for, guard)
        release_sandboxes()  # the checks' sandboxes hold staged files; the files they replace may be open too
        staging.commit()
    logger.info(result.summary())
    return result


def _file_names(source: BenchmarkSource, used: list[str]) -> dict[str, str]:
    """Database id -> its file name under ``databases/``; raises ``CaseValidationError`` naming both ids (and
    where each is first used) when two ids map to one file name (``my db`` and ``my_db``)."""
    names: dict[str, str] = {}
    by_name: dict[str, str] = {}
    problems = []
    for db_id in used:
        names[db_id] = database_file_name(db_id)
        other = by_name.setdefault(names[db_id], db_id)
        if other != db_id:
            first = {q.db_id: q.location for q in reversed(source.questions)}
            problems.append(
                f"{first[db_id]}: database ids {other!r} ({first[other]}) and {db_id!r} both map to the file "
                f"{DATABASES_FOLDER}/{names[db_id]}, so one would overwrite the other (rename one of them "
                "in the benchmark's questions and database folder)"
            )
    if problems:
        raise CaseValidationError(problems)
    return names


class _ConflictGuard:
    """Refuses to replace a database file another registered gold set runs on with other content."""

    def __init__(self, out: Path, source: BenchmarkSource, databases_in_use: InUse):
        self.out, self.source, self.in_use = out, source, databases_in_use
        self.users: dict[Path, list[str]] | None = None

    def check(self, db_id: str, staged: Path, final: Path) -> None:
        """Raise ``DatabaseConflictError`` when ``staged`` would replace ``final`` (an existing file another
        gold set's cases use) with other tables or rows."""
        if not final.is_file():
            return
        if self.users is None:  # read once, and only when an import meets a database already there
            self.users = self.in_use(self.out)
        users = self.users.get(final.resolve(), [])
        if not users or same_database(staged, final):
            return
        sets = ", ".join(repr(key) for key in users)
        raise DatabaseConflictError(
            f"{final}: database {db_id!r} of {self.source.source} has other tables or rows than this file, "
            f"which gold set{'s' if len(users) > 1 else ''} {sets} run{'' if len(users) > 1 else 's'} on; nothing "
            f"was imported: import into another folder (e.g. --out {self.out.parent / self.out.stem / self.out.name}) "
            f"so each set keeps its own databases, or pass --replace-databases to replace it (then {sets} "
            "run on the new one)"
        )


def _build_staged(
    source: BenchmarkSource,
    out: Path,
    staging: ImportStaging,
    names: dict[str, str],
    dialect: str,
    limits: SandboxLimits,
    postgres: PostgresVerifier | None,
    reference: date,
    policy_for: Callable[[str, Path], str] | None,
    guard: _ConflictGuard | None = None,
) -> ImportResult:
    """``build_gold``'s work with every file written into ``staging`` (see ``build_gold``)."""
    used = sorted(names)
    files: dict[str, Path] = {}
    columns: dict[str, dict[str, dict[str, Any]]] = {}
    reports: list[DatabaseReport] = []
    for db_id in used:
        db = source.databases[db_id]
        final = staging.final_databases / names[db_id]
        files[db_id] = staging.databases / names[db_id]
        report, columns[db_id] = _copy_database(db, files[db_id])
        if guard is not None:
            guard.check(db_id, files[db_id], final)
        report.file = f"{DATABASES_FOLDER}/{names[db_id]}"
        if dialect == "postgres" and not columns[db_id]:
            columns[db_id] = catalog_columns(files[db_id])  # the integer-division fix types by them
        if postgres is not None:
            report.notes += postgres.load(db_id, files[db_id])
        report.policy = policy_for(db_id, final) if policy_for is not None else REGISTERED_POLICY
        reports.append(report)
    policies = {db_id: report.policy for db_id, report in zip(used, reports, strict=True)}
    engines: dict[str, SQLPolicyEngine] = {}
    queries: list[QueryReport] = []
    records: list[RawCase] = []
    for number, question in enumerate(source.questions, start=1):
        db = source.databases[question.db_id]
        relative = f"{DATABASES_FOLDER}/{names[question.db_id]}"
        checked = [
            _check_alternative(
                question,
                i,
                sql,
                dialect,
                db,
                files[question.db_id],
                columns[question.db_id],
                relative,
                limits,
                postgres,
                reference,
            )
            for i, sql in enumerate(question.sql)
        ]
        if question.db_id not in engines:
            engines[question.db_id] = SQLPolicyEngine.for_database(files[question.db_id], policies[question.db_id])
        for i, query_report in enumerate(checked):
            if query_report.sql is not None:
                decision = engines[question.db_id].check(query_report.sql)
                if not decision.allowed:
                    checked[i] = QueryReport(
                        **{**asdict(query_report), "policy": f"{decision.rule}: {decision.reason}"}
                    )
        kept = [r.sql for r in checked if r.sql is not None]
        if kept:
            difficulty, origin = _difficulty(question, checked, dialect)
            written = difficulty or Case.difficulty
            checked = [replace(r, difficulty=written, difficulty_source=origin) for r in checked]
            records.append(_case_record(question, kept, relative, number, difficulty, reference))
        queries += checked
        if not kept:
            logger.info("%s (%s): no gold query kept", question.id, question.location)
    cases = _validate(records, out, {n: q.location for n, q in enumerate(source.questions, start=1)})
    result = ImportResult(
        cases,
        out,
        report_path_for(out),
        len(source.questions),
        queries,
        reports,
        list(source.warnings),
        postgres.description if postgres is not None else None,
        reference,
    )
    for warning in result.warnings:
        logger.info("warning: %s", warning)  # the caller shows them (the CLI prints each on stderr)
    staged_report = staging.staged(result.report_path)
    _write_report(result, source, dialect, staged_report)
    if not cases:
        result.report_path = staging.keep_failed(staged_report) or result.report_path
        raise CaseValidationError(
            [
                f"{source.source}: no gold query could be kept ({result.summary()}); read the report for why "
                f"(nothing under {out.parent} was changed)"
            ]
        )
    write_jsonl(cases, staging.staged(out))
    return result


def _level(item: tuple[str, int]) -> int:
    """Sort key of (difficulty, count): easiest first."""
    return DIFFICULTIES.index(item[0]) if item[0] in DIFFICULTIES else len(DIFFICULTIES)


def _write_report(result: ImportResult, source: BenchmarkSource, dialect: str, target: Path) -> None:
    """The JSON report: summary counts, databases (with what was left out) and every query checked."""
    statuses = Counter(q.status for q in result.queries)
    data = {
        "format": source.format,
        "source": str(source.source),
        "source_dialect": dialect,
        "verified_with": result.verified_with,
        "gold_file": str(result.gold_path),
        "reference_date": result.reference_date.isoformat() if result.reference_date else None,
        "summary": {
            "questions": result.questions,
            "cases_written": len(result.cases),
            "queries_by_status": dict(sorted(statuses.items())),
            "queries_left_out": sum(result.dropped.values()),
            "kept_queries_refused_by_policy": result.policy_refused,
            "policies": {d.db_id: d.policy for d in result.databases},
            "cases_by_difficulty": dict(sorted(Counter(c.difficulty for c in result.cases).items(), key=_level)),
            "difficulty_sources": dict(sorted(result.difficulty_sources.items())),
        },
        "warnings": list(result.warnings),
        "databases": [asdict(d) for d in result.databases],
        "queries": [asdict(q) for q in result.queries],
    }
    target.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")

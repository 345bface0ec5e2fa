"""Replay models: a registry entry of ``kind: predictions`` scores another system's SQL from a file.

Two formats (``format:`` in models.yml):

- ``jsonl``: one JSON object per line, ``{"case_id": "...", "sql": "..."}`` (``sql`` may be null for
  "no answer"; other keys are ignored; blank lines are skipped). Every query case of the gold set
  needs exactly one line; an unknown, duplicated or probe case id is an error naming the line.
- ``lines``: one SQL per line, as Spider/BIRD prediction files are. Line *i* answers the *i*-th
  **query case of the gold set in file order** (policy-rejection probes are skipped: they are never
  sent to a model). The number of lines must equal the number of query cases. A tab ends the SQL: a
  ``SQL<TAB>db_id`` line (Spider) or ``SQL<TAB>----- bird -----<TAB>db_id`` (BIRD) is checked against
  the case's database (its name, or the file ``gold import`` made of that db_id), so a shifted file is caught where it can be. An empty line is "no answer".

The SQL is used as written (surrounding whitespace and trailing semicolons trimmed), unless the entry
names a ``source_dialect`` (``sqlite`` for Spider/BIRD files): then each prediction is converted to DuckDB
exactly as ``gold import`` converts gold (``dialect.convert_sql`` with the column types of the case's
database, ``dialect.column_info``), the conversion is the candidate's SQL and the original is kept beside
it (``source_sql``); a prediction that does not convert is a ``conversion_failed`` candidate (the model's
miss, its SQL kept in ``source_sql``), never a crash. A missing answer is a ``no_sql`` candidate; any misalignment raises ``PredictionsError`` (a ``ConfigError``)
naming the file and line, never a silent shift. Nothing is timed or priced: latency, tokens and cost
are unknown (None).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.config.jsonl import parse_jsonl
from nl2sql_pipeline.errors import ConfigError, GenerationError
from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.generation.extract import clean_sql
from nl2sql_pipeline.generation.failures import CONVERSION_FAILED, NO_SQL
from nl2sql_pipeline.generation.model_spec import ModelSpec, PredictionsSource

MAX_LISTED = 5


class PredictionsError(ConfigError):
    """A predictions file is unreadable or does not line up with the gold set."""


@dataclass(frozen=True)
class Prediction:
    """The answer a file gives one case: the SQL (None = no answer), the line as written, its number."""

    case_id: str
    sql: str | None
    raw: str
    line: int


def _listed(ids: list[str]) -> str:
    shown = ", ".join(ids[:MAX_LISTED])
    return shown + (f" and {len(ids) - MAX_LISTED} more" if len(ids) > MAX_LISTED else "")


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise PredictionsError(f"{path}: predictions file not found (write it, or fix path: in models.yml)") from None
    except OSError as exc:
        raise PredictionsError(f"{path}: cannot read the predictions file ({exc})") from exc


def _read_text(path: Path) -> str:
    try:
        return _read_bytes(path).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PredictionsError(f"{path}: cannot read the predictions file ({exc})") from exc


def _read_jsonl(path: Path, queries: list[Case], probes: set[str]) -> list[Prediction]:
    wanted = {case.id for case in queries}
    found: dict[str, Prediction] = {}
    lines, problems = parse_jsonl(
        _read_bytes(path), str(path), line_fix='write one {"case_id": ..., "sql": ...} object per line'
    )
    if problems:
        raise PredictionsError("\n".join(problems))
    for item in lines:
        number, data = item.line, item.value
        where = f"{path}:{number}"
        if not isinstance(data.get("case_id"), str):
            raise PredictionsError(f'{where}: each line needs a string "case_id" (and "sql")')
        case_id, sql = data["case_id"], data.get("sql", None)
        if "sql" not in data or not (sql is None or isinstance(sql, str)):
            raise PredictionsError(f'{where}: case {case_id!r}: "sql" must be a string or null')
        if case_id in found:
            raise PredictionsError(
                f"{where}: case {case_id!r} again (first on line {found[case_id].line}); keep one line per case"
            )
        if case_id in probes:
            raise PredictionsError(
                f"{where}: case {case_id!r} is a policy probe; probes are never generated, remove the line"
            )
        if case_id not in wanted:
            raise PredictionsError(
                f"{where}: case {case_id!r} is not in the gold set (a prediction for another gold set?)"
            )
        found[case_id] = Prediction(case_id, clean_sql(sql), item.text, number)
    missing = [case.id for case in queries if case.id not in found]
    if missing:
        raise PredictionsError(
            f"{path}: {len(missing)} of {len(queries)} query cases have no prediction ({_listed(missing)}); "
            "add a line per case (sql: null for no answer)"
        )
    return [found[case.id] for case in queries]


def _names_database(db_id: str, database: str) -> bool:
    """True when a file's ``db_id`` is the case's database: its name, or the file an import made of it
    (Spider's ``concert_singer`` is ``databases/concert_singer.duckdb`` in an imported gold set)."""
    from nl2sql_pipeline.dialect.sqlite_copy import database_file_name

    return db_id == database or Path(database).name in (database_file_name(db_id), db_id)


def _read_lines(path: Path, queries: list[Case]) -> list[Prediction]:
    text = _read_text(path).replace("\r\n", "\n")
    lines = text[:-1].split("\n") if text.endswith("\n") else text.split("\n")
    if text == "":
        lines = []
    if len(lines) != len(queries):
        raise PredictionsError(
            f"{path}: {len(lines)} lines for {len(queries)} query cases; format 'lines' needs exactly one SQL per "
            "query case, in the gold set's order (probes excluded)"
        )
    predictions = []
    for number, (line, case) in enumerate(zip(lines, queries), start=1):
        sql, _, rest = line.partition("\t")
        database = rest.rsplit("\t", 1)[-1].strip() if rest else None
        if database and not _names_database(database, case.database):
            raise PredictionsError(
                f"{path}:{number}: names database {database!r} but line {number} answers case {case.id} of "
                f"{case.database!r}; the file is misaligned with the gold set's order of query cases"
            )
        predictions.append(Prediction(case.id, clean_sql(sql), line, number))
    return predictions


def read_predictions(source: PredictionsSource, cases: list[Case]) -> list[Prediction]:
    """One prediction per query case of ``cases``, in their order; PredictionsError on any misalignment."""
    queries = [case for case in cases if not case.is_probe]
    if source.format == "jsonl":
        return _read_jsonl(source.path, queries, {case.id for case in cases if case.is_probe})
    if source.format == "lines":
        return _read_lines(source.path, queries)
    raise PredictionsError(f"{source.path}: unknown predictions format {source.format!r} (use jsonl or lines)")


@dataclass(frozen=True)
class ReplayedSql:
    """One prediction made ready to run: the DuckDB SQL (None: none), the original when it was converted,
    and the failure class and message when there is no SQL to run."""

    sql: str | None
    source_sql: str | None = None
    error_class: str | None = None
    error_message: str | None = None


class PredictionConverter:
    """Converts predictions of ``dialect`` to DuckDB with the column types of each case's database."""

    def __init__(self, dialect: str, resolve_database: Callable[[str], Path]) -> None:
        self.dialect = dialect
        self._resolve = resolve_database
        self._columns: dict[str, Any] = {}

    def columns(self, database: str) -> Any:
        """The ``ColumnInfo`` of a case's database (read once per database)."""
        from nl2sql_pipeline.dialect.column_info import read_column_info

        if database not in self._columns:
            self._columns[database] = read_column_info(self._resolve(database))
        return self._columns[database]

    def convert(self, sql: str, database: str, where: str) -> ReplayedSql:
        """``sql`` as DuckDB SQL, or a ``conversion_failed`` result naming ``where`` and why."""
        from nl2sql_pipeline.dialect.convert import ConversionError, convert_sql

        try:
            return ReplayedSql(convert_sql(sql, self.dialect, self.columns(database)).sql, source_sql=sql)
        except ConversionError as exc:
            return ReplayedSql(
                None, sql, CONVERSION_FAILED, f"{where}: the prediction cannot be converted to DuckDB: it {exc}"
            )


def _replayed(
    prediction: Prediction, case: Case, source: PredictionsSource, converter: PredictionConverter | None
) -> ReplayedSql:
    where = f"{source.path}:{prediction.line}"
    if prediction.sql is None:
        return ReplayedSql(None, None, NO_SQL, f"{where}: no SQL for this case")
    if converter is None:
        return ReplayedSql(prediction.sql)
    return converter.convert(prediction.sql, case.database, where)


def prediction_records(
    cases: list[Case],
    spec: ModelSpec,
    samples: int = 1,
    resolve_database: Callable[[str], Path] | None = None,
) -> list[CandidateRecord]:
    """The candidates of a replay model: the file's SQL for every query case (and each sample).

    With a ``source_dialect``, each SQL is converted to DuckDB; ``resolve_database`` maps a case's
    database to its file for the column types (default ``databases.require_database``).
    """
    if spec.predictions is None:
        raise GenerationError(f"model {spec.slug} is not a predictions model (kind: {spec.kind})")
    if samples < 1:
        raise GenerationError(f"samples must be >= 1, got {samples} (ask for at least one sample)")
    source = spec.predictions
    converter = None
    if source.source_dialect is not None:
        if resolve_database is None:
            from nl2sql_pipeline.databases.resolve import require_database

            resolve_database = require_database
        converter = PredictionConverter(source.source_dialect, resolve_database)
    by_case = {case.id: case for case in cases}
    records = []
    for prediction in read_predictions(source, cases):
        case = by_case[prediction.case_id]
        replayed = _replayed(prediction, case, source, converter)
        for sample_index in range(samples):
            records.append(
                CandidateRecord(
                    case_id=case.id,
                    case_fingerprint=case.fingerprint,
                    sample_index=sample_index,
                    candidate_index=0,
                    generated_sql=replayed.sql,
                    raw_reply=prediction.raw,
                    error_class=replayed.error_class,
                    error_message=replayed.error_message,
                    latency_ms=None,
                    input_tokens=None,
                    output_tokens=None,
                    token_source=None,
                    cost_usd=None,
                    cached=False,
                    mutation=None,
                    model_config_hash=spec.config_hash,
                    prompt_hash=None,
                    turns=0,
                    calls=0,
                    attempts=0,
                    source_sql=replayed.source_sql,
                )
            )
    return records

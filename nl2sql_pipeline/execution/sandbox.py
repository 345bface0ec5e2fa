"""``Sandbox``: one locked-down, read-only DuckDB database and a fresh connection per untrusted query.

Opening: ``duckdb.connect(path, read_only=True)``, then ``SET GLOBAL`` memory limit, threads, spill
folder and spill size, extension auto-install/auto-load off, the home, extension and secret folders
inside the sandbox's own scratch folder (so neither ``$HOME`` nor other files show through), then
``enable_external_access=false`` and last ``lock_configuration=true``. No query can change a setting
afterwards.

Per query: the statement check (one query, by DuckDB's parser), a new connection (``cursor()``: its own
transaction, temp catalog and interrupt), a watchdog that calls ``interrupt()`` on that connection at the
deadline and re-sends it until the query returns, ``fetchmany(row_cap + 1)`` on the streaming result. A
result with text, blob or nested columns is fetched in chunks and measured: past ``max_result_bytes`` the
query fails as a ``resource`` error (DuckDB's memory limit does not bound rows converted to Python).

DuckDB caches one database instance per file and process and refuses a second ``connect`` of the same
file with a different connect-time config. The settings are therefore applied with ``SET`` rather than
``connect(config=...)``: other read-only connections to the file in this process (schema readers) then
share the locked-down instance instead of failing while a sandbox holds it; they can still read tables,
but not files. The spill folder is derived from (process, file, memory/threads/spill limits), and an
open of a file already locked with another spill folder raises ``SandboxConflictError``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from pathlib import Path

import duckdb

from nl2sql_pipeline import paths
from nl2sql_pipeline.errors import DatabaseNotFoundError
from nl2sql_pipeline.execution import infinity
from nl2sql_pipeline.execution.error_classes import classify_error
from nl2sql_pipeline.execution.exceptions import SandboxConflictError, SandboxError
from nl2sql_pipeline.execution.limits import SandboxLimits
from nl2sql_pipeline.execution.query_result import QueryResult
from nl2sql_pipeline.execution.scheduler import SCHEDULER
from nl2sql_pipeline.execution.statements import StatementRefused, embeddable_text, parse_single_query

logger = logging.getLogger(__name__)

INTERRUPT_RESEND_S = 0.02
"""How often the watchdog re-sends ``interrupt()`` after the deadline (one sent too early is dropped)."""

_LOCKDOWN_LOCK = threading.Lock()


def _reset_lockdown_lock() -> None:
    global _LOCKDOWN_LOCK
    _LOCKDOWN_LOCK = threading.Lock()  # another thread may have held it at fork time


os.register_at_fork(after_in_child=_reset_lockdown_lock)
_LOCKED_SETTINGS = {
    "enable_external_access": False,
    "lock_configuration": True,
    "autoinstall_known_extensions": False,
    "autoload_known_extensions": False,
    "access_mode": "read_only",
}


def sandbox_folder(db_path: Path, limits: SandboxLimits) -> Path:
    """The scratch folder (spill files) of the sandbox on ``db_path`` with ``limits`` in this process.

    Only the limits that are DuckDB settings count: sandboxes that differ in timeout or row cap share
    one database instance.
    """
    key = f"{db_path}\0{limits.memory_limit}\0{limits.threads}\0{limits.max_temp_directory_size}".encode()
    return paths.scratch_dir() / f"sandbox-{os.getpid()}-{hashlib.sha256(key).hexdigest()[:12]}"


def sandbox_settings(folder: Path, limits: SandboxLimits) -> dict[str, object]:
    """The DuckDB settings of a sandbox whose scratch folder is ``folder`` (applied before the lock)."""
    return {
        "memory_limit": limits.memory_limit,
        "threads": limits.threads,
        "temp_directory": str(folder),
        "max_temp_directory_size": limits.max_temp_directory_size,
        "autoinstall_known_extensions": False,
        "autoload_known_extensions": False,
        "allow_community_extensions": False,
        "allow_persistent_secrets": False,
        "home_directory": str(folder),
        "extension_directory": str(folder / "extensions"),
        "secret_directory": str(folder / "secrets"),
    }


class Sandbox:
    """A read-only, locked-down DuckDB database that runs untrusted queries one connection each.

    Use as a context manager (or call ``close``). ``run`` is safe to call from several threads at
    once; concurrent queries share the database's ``memory_limit`` and spill space.
    """

    def __init__(self, db_path: Path | str, limits: SandboxLimits = SandboxLimits()):
        self.db_path = Path(db_path).resolve()
        self.limits = limits
        if not self.db_path.is_file():
            raise DatabaseNotFoundError(
                f"database file {self.db_path} does not exist; build the sample database with "
                "`nl2sql-eval db build` or pass the path of an existing .duckdb file"
            )
        self.folder = sandbox_folder(self.db_path, limits)
        self._con: duckdb.DuckDBPyConnection | None = _open_locked_down(self.db_path, self.folder, limits)

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        """True once ``close`` has run."""
        return self._con is None

    def close(self) -> None:
        """Close the database connection (DuckDB drops the instance and its spill files with the last one)."""
        con, self._con = self._con, None
        if con is not None:
            con.close()

    def run(self, sql: str) -> QueryResult:
        """Run one untrusted query and return its result; never raises for a bad or hostile query."""
        checked = check_query(sql)
        if isinstance(checked, QueryResult):
            return checked
        return self.run_statement(checked, sql)

    def run_statement(self, statement: duckdb.Statement, sql: str) -> QueryResult:
        """Run a statement that ``check_query`` accepted (``sql`` is its text, for error messages)."""
        if self._con is None:
            raise SandboxError(f"the sandbox on {self.db_path} is closed; open a new Sandbox")
        cursor = self._con.cursor()
        try:
            return self._execute(cursor, statement, sql)
        finally:
            cursor.close()

    def _execute(self, cursor: duckdb.DuckDBPyConnection, statement: duckdb.Statement, sql: str) -> QueryResult:
        limits = self.limits
        started = time.perf_counter()  # before the deadline is armed: a timed-out query's elapsed time >= timeout
        ticket = SCHEDULER.schedule(limits.timeout_s, cursor.interrupt, repeat_s=INTERRUPT_RESEND_S)
        try:
            cursor.execute(statement)
            description = cursor.description or []
            type_names = _type_names(description)
            rows = _fetch(cursor, type_names, limits) if description else []
            suspects = infinity.suspect_columns(type_names, rows)
            if suspects:
                rows = _with_infinities(cursor, statement, type_names, rows, suspects, limits)
        except ResultTooLarge as exc:
            SCHEDULER.cancel(ticket)
            elapsed_ms = (time.perf_counter() - started) * 1000
            return QueryResult.failure("resource", str(exc), elapsed_ms)
        except Exception as exc:  # DuckDB errors, and any failure converting a value to Python
            interrupts = SCHEDULER.cancel(ticket)
            if interrupted_by_signal(exc):  # Ctrl-C: the run stops; it is no failure of this query
                raise KeyboardInterrupt(f"interrupted while running a query on {self.db_path.name}") from exc
            elapsed_ms = (time.perf_counter() - started) * 1000
            error_class = classify_error(exc, sql)
            if interrupts and error_class == "runtime":  # an interrupt surfacing as another error type
                error_class = "timeout"
            message = str(exc)
            if error_class == "timeout":
                message = f"query exceeded the {limits.timeout_s:g} s timeout and was interrupted ({exc})"
                self._warn_if_overran(elapsed_ms)
            logger.debug("query failed (%s) after %.1f ms: %s", error_class, elapsed_ms, exc)
            return QueryResult.failure(error_class, message, elapsed_ms)
        interrupts = SCHEDULER.cancel(ticket)
        elapsed_ms = (time.perf_counter() - started) * 1000
        if interrupts:
            logger.debug("query finished after its deadline (%.1f ms) before an interrupt landed", elapsed_ms)
        truncated = len(rows) > limits.row_cap
        return QueryResult(
            ok=True,
            columns=[column[0] for column in description],
            column_types=type_names,
            rows=rows[: limits.row_cap] if truncated else rows,
            truncated=truncated,
            error_class=None,
            error_message=None,
            elapsed_ms=elapsed_ms,
        )

    def _warn_if_overran(self, elapsed_ms: float) -> None:
        budget_ms = self.limits.timeout_s * 1000
        if elapsed_ms > budget_ms + 1000:
            logger.warning(
                "query ignored interrupt for %.1f s past its %.1f s timeout (a single huge value?); "
                "use run_query_isolated for a hard kill",
                (elapsed_ms - budget_ms) / 1000,
                self.limits.timeout_s,
            )


def interrupted_by_signal(exc: BaseException) -> bool:
    """True when DuckDB stopped a query because the process got SIGINT (Ctrl-C).

    DuckDB's Python client turns the signal into ``RuntimeError("Query interrupted")`` and swallows the
    ``KeyboardInterrupt``; a query cannot raise that itself (``error('Query interrupted')`` is an
    ``InvalidInputException``), and the watchdog's own ``interrupt()`` raises ``InterruptException``.
    """
    return type(exc) is RuntimeError and str(exc) == "Query interrupted"


FETCH_CHUNK_ROWS = 1024
"""Rows fetched at a time from a result whose size is measured (one with variable-size columns)."""

# Column types whose Python values have a bounded size: the row cap bounds their memory.
_FIXED_SIZE_TYPES = frozenset(
    {
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "HUGEINT",
        "UTINYINT",
        "USMALLINT",
        "UINTEGER",
        "UBIGINT",
        "UHUGEINT",
        "FLOAT",
        "DOUBLE",
        "DATE",
        "TIME",
        "TIME WITH TIME ZONE",
        "TIMESTAMP",
        "TIMESTAMP_S",
        "TIMESTAMP_MS",
        "TIMESTAMP_NS",
        "TIMESTAMP WITH TIME ZONE",
        "INTERVAL",
        "UUID",
    }
)


class ResultTooLarge(Exception):
    """Internal: the fetched rows passed ``max_result_bytes``; the message says what to do."""


def _type_names(description: list) -> list[str]:
    """The DuckDB type of each result column, as text (``INTEGER``, ``DECIMAL(6,2)``, ...)."""
    return [str(column[1]) for column in description]


def _fetch(cursor: duckdb.DuckDBPyConnection, type_names: list[str], limits: SandboxLimits) -> list[tuple]:
    """Up to ``row_cap + 1`` rows; raises ``ResultTooLarge`` once their variable-size values pass the limit."""
    wanted = limits.row_cap + 1
    measured = [index for index, type_name in enumerate(type_names) if not _fixed_size(type_name)]
    if not measured:
        return cursor.fetchmany(wanted)
    rows: list[tuple] = []
    size = 0
    while len(rows) < wanted:
        asked = min(FETCH_CHUNK_ROWS, wanted - len(rows))
        chunk = cursor.fetchmany(asked)
        rows.extend(chunk)
        size += sum(_value_size(row[index]) for row in chunk for index in measured)
        if size > limits.max_result_bytes:
            raise ResultTooLarge(
                f"the result passed {limits.max_result_bytes:,} bytes of text, blobs and nested values after "
                f"{len(rows):,} rows (max_result_bytes; the row cap is {limits.row_cap:,}): select fewer or "
                "shorter columns, or fewer rows"
            )
        if len(chunk) < asked:
            break
    return rows


def _with_infinities(
    cursor: duckdb.DuckDBPyConnection,
    statement: duckdb.Statement,
    type_names: list[str],
    rows: list[tuple],
    columns: list[int],
    limits: SandboxLimits,
) -> list[tuple]:
    """The result again, its infinite DATE/TIMESTAMP cells kept apart from the extreme finite values
    (``infinity``); ``rows`` as fetched when the query cannot be wrapped (a dynamic PIVOT)."""
    sql = infinity.flagged_sql(embeddable_text(statement), len(type_names), columns)
    try:
        cursor.execute(sql)
    except duckdb.InterruptException:
        raise
    except duckdb.Error as exc:
        logger.debug("could not tell infinite dates from extreme ones (%s): kept as fetched", exc)
        return rows
    return infinity.mark(type_names, _fetch(cursor, _type_names(cursor.description or []), limits), columns)


def _fixed_size(type_name: str) -> bool:
    return type_name in _FIXED_SIZE_TYPES or type_name.startswith(("DECIMAL", "ENUM"))


def _value_size(value: object) -> int:
    """About how many bytes a fetched value holds: characters of text, bytes of a blob, nested values summed."""
    if value is None:
        return 0
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return 8 + sum(_value_size(item) for item in value)
    if isinstance(value, dict):
        return 8 + sum(_value_size(key) + _value_size(item) for key, item in value.items())
    return 8


def check_query(sql: str) -> duckdb.Statement | QueryResult:
    """The one query statement of ``sql``, or the ``forbidden``/``syntax`` result that refuses it."""
    try:
        return parse_single_query(sql)
    except StatementRefused as exc:
        logger.debug("refused before execution: %s", exc)
        return QueryResult.failure("forbidden", str(exc))
    except duckdb.ParserException as exc:
        return QueryResult.failure("syntax", str(exc))


def _open_locked_down(db_path: Path, folder: Path, limits: SandboxLimits) -> duckdb.DuckDBPyConnection:
    """A read-only connection to ``db_path`` whose database instance is locked down with ``limits``."""
    with _LOCKDOWN_LOCK:  # an instance is locked by whoever opens it first, never half-way
        try:
            con = duckdb.connect(str(db_path), read_only=True)
        except duckdb.ConnectionException as exc:
            if "different configuration" not in str(exc):
                raise SandboxError(f"cannot open {db_path} read-only in the sandbox ({exc})") from exc
            raise SandboxConflictError(
                f"cannot open {db_path} read-only in the sandbox: this process holds it open for writing or "
                f"with a custom configuration ({exc}); close that connection first"
            ) from exc
        except duckdb.Error as exc:
            raise SandboxError(
                f"cannot open {db_path} read-only in the sandbox ({type(exc).__name__}: {exc}); check it is "
                "a DuckDB database that no other process holds open for writing"
            ) from exc
        try:
            _lock_down(con, sandbox_settings(folder, limits))
        except BaseException:
            con.close()
            raise
    return con


def _lock_down(con: duckdb.DuckDBPyConnection, settings: dict[str, object]) -> None:
    """Apply ``settings``, turn external access off and lock the configuration; or check a locked instance."""
    current = _settings(con, ("lock_configuration", "temp_directory"))
    if not current["lock_configuration"]:
        # one round trip: the statements run in order, the lock last
        con.execute(
            "".join(f"SET GLOBAL {name} = {_literal(value)};\n" for name, value in settings.items())
            + "SET GLOBAL enable_external_access = false;\nSET GLOBAL lock_configuration = true;"
        )
    elif current["temp_directory"] != str(settings["temp_directory"]).lower():
        raise SandboxConflictError(
            f"the database is already open in this process in a sandbox with other limits "
            f"(spill folder {current['temp_directory']}); DuckDB allows one configuration per file "
            "and process: use the same memory_limit, threads and max_temp_directory_size, or "
            "release_sandboxes() first"
        )
    actual = _settings(con, tuple(_LOCKED_SETTINGS))
    wrong = {name: value for name, value in actual.items() if value != _LOCKED_SETTINGS[name]}
    if wrong:
        raise SandboxError(f"the sandbox database is not locked down as required: {wrong}")


def _literal(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + str(value).replace("'", "''") + "'"


def _settings(con: duckdb.DuckDBPyConnection, names: tuple[str, ...]) -> dict[str, object]:
    """The current values of ``names`` (strings lower-cased), read in one query."""
    [row] = con.execute("SELECT " + ", ".join("current_setting(?)" for _ in names), list(names)).fetchall()
    return {name: value.lower() if isinstance(value, str) else value for name, value in zip(names, row)}

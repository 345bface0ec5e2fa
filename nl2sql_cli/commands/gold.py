"""``nl2sql-eval gold ...``: validate, import, list and generate gold sets."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_ENVIRONMENT, EXIT_OK

DEFAULT_GENERATED_FILE = "nl2sql_multidomain.jsonl"
DEFAULT_GENERATED_SET = "multidomain-v1"


def _plural(count: int, noun: str) -> str:
    """``1 case`` / ``3 cases`` (``category`` -> ``categories``)."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {noun[:-1]}ies" if noun.endswith("y") else f"{count} {noun}s"


def summarize(cases: Sequence[Any]) -> str:
    """One-line summary: ``120 cases (3 domains, 6 categories)``, and how many are judged on their answer alone
    (``..., 2 answer-only``)."""
    domains = {case.domain for case in cases}
    categories = {case.category for case in cases}
    parts = [_plural(len(domains), "domain"), _plural(len(categories), "category")]
    answer_only = sum(case.is_answer_only for case in cases)
    if answer_only:
        parts.append(f"{answer_only} answer-only")
    return f"{_plural(len(cases), 'case')} ({', '.join(parts)})"


def _print_problems(problems: Sequence[str], what: str) -> None:
    """Every problem on stderr, then a count."""
    for line in problems:
        print(line, file=sys.stderr)
    print(f"{_plural(len(problems), 'problem')} in {what}", file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    """Handler of ``gold validate``: the file's rules, then each case against its own database, then the
    gold preflight's triage of every expected query (``nl2sql_pipeline.gold.quality.triage``).

    ``--database`` fills the database of cases that name none. A sample database not built yet is
    noted, not an error; any other missing database file, or a name neither registered nor a sample
    database (a typo), exits 3. A blocking finding about one case (a
    blocking triage kind, expected SQL that fails) quarantines the case: listed with its kind and reason,
    exit 0, as a run would leave it out; under ``--strict-gold`` (or ``strict_gold: true`` in the registry
    entry of the file's gold set) it is a problem (exit 2), as a strict run would stop. The other findings
    are warnings. ``--json`` prints one object.
    """
    from nl2sql_pipeline.errors import CaseValidationError, DatabaseNotFoundError
    from nl2sql_pipeline.gold.quality.validation import load_cases, validate_cases_against_database

    path = Path(args.file)
    out = _ValidateOutput(path, as_json=args.json, strict=args.strict_gold or _strict_gold_of(path))
    fill = args.database
    if fill:
        from nl2sql_pipeline.databases.resolve import require_database, resolve_database

        try:
            require_database(fill)  # given on the command line: it must exist
        except DatabaseNotFoundError as exc:
            return out.finish(EXIT_ENVIRONMENT, errors=[str(exc)])
        if resolve_database(fill).kind.value == "file":
            fill = str(Path(fill).expanduser().resolve())  # relative to the working directory, not the gold file
    try:
        if fill:
            from nl2sql_pipeline.gold.formats.team_files import import_cases

            cases = import_cases(path, database=fill)
        else:
            cases = load_cases(path)
    except CaseValidationError as exc:
        return out.finish(EXIT_BAD_INPUT, problems=list(exc.problems), what=str(path))
    resolver = _resolver_for(path)
    problems: list[str] = []
    missing: list[str] = []
    checked: list[str] = []
    for reference in sorted({case.database for case in cases}):
        resolved = resolver.resolve(reference)
        if not resolved.path.is_file():
            if resolved.kind.value == "sample" and not resolved.is_unknown_name:
                out.notes.append(f"{resolved.not_found_error()}; its cases were not checked against it")
            else:
                missing.append(str(resolved.not_found_error()))
            continue
        subset = [case for case in cases if case.database == reference]
        try:
            found = [f"{path}: {p}" for p in validate_cases_against_database(subset, resolved.path)]
        except DatabaseNotFoundError as exc:
            missing.append(str(exc))
            continue
        problems += found
        checked.append(reference)
        if not found:
            problems += [f"{path}: case {p}" for p in out.triage(subset, resolver)]
    if checked:
        from nl2sql_pipeline.generation.prompt_context import introspection_notes

        out.notes.extend(introspection_notes(checked, resolver))
    out.cases, out.checked = summarize(cases), checked
    if problems:
        return out.finish(
            EXIT_BAD_INPUT,
            problems=problems,
            errors=missing,
            what=f"{path} against its databases ({', '.join(checked)})",
        )
    if missing:
        return out.finish(EXIT_ENVIRONMENT, errors=missing)
    return out.finish(EXIT_OK)


class _ValidateOutput:
    """What ``gold validate`` reports: problems, errors, notes and the triage's findings; text or JSON."""

    def __init__(self, path: Path, as_json: bool, strict: bool = False):
        self.path, self.as_json, self.strict = path, as_json, strict
        self.notes: list[str] = []
        self.flags: list[dict] = []
        self.quarantine: list[dict] = []
        self.cases: str | None = None
        self.checked: list[str] = []

    def triage(self, cases: Sequence[Any], resolver: Any) -> list[str]:
        """Run the gold preflight's query checks and triage (not the policies); return what blocks: problems
        about no one case, and under strict gold the findings that quarantine a case (kept in ``quarantine``)."""
        from nl2sql_pipeline.gold.quality.preflight import run_preflight

        report = run_preflight(list(cases), resolver, check_policy=False)
        self.flags.extend(flag.to_dict() for flag in report.triage)
        self.quarantine.extend(finding.to_dict() for finding in report.quarantine)
        return report.blocking_lines(self.strict)

    def finish(self, code: int, problems: Sequence[str] = (), errors: Sequence[str] = (), what: str = "") -> int:
        warnings = [f"{f['label']}: [{f['kind']}] {f['reason']}" for f in self.flags if not f["blocking"]]
        quarantined = [f"{f['label']}: [{f['kind']}] {f['reason']}" for f in self.quarantine]
        count = len({f["case_id"] for f in self.quarantine})
        if self.as_json:
            import json

            print(
                json.dumps(
                    {
                        "file": str(self.path),
                        "ok": code == EXIT_OK,
                        "exit_code": code,
                        "cases": self.cases,
                        "checked_databases": self.checked,
                        "problems": list(problems),
                        "errors": list(errors),
                        "flags": self.flags,
                        "quarantined": self.quarantine,
                        "quarantined_count": count,
                        "strict_gold": self.strict,
                        "notes": self.notes,
                    },
                    indent=2,
                )
            )
            return code
        for note in self.notes:
            print(f"note: {note}", file=sys.stderr)
        for line in warnings:
            print(f"warning: case {line}", file=sys.stderr)
        if not self.strict:  # under strict gold they are among the problems
            for line in quarantined:
                print(f"quarantined: case {line} (a run leaves it out; --strict-gold stops it)", file=sys.stderr)
        for line in errors:
            print(f"error: {line}", file=sys.stderr)
        if problems:
            _print_problems(problems, what or str(self.path))
        if code == EXIT_OK:
            suffix = f", checked against {', '.join(self.checked)}" if self.checked else ""
            flagged = f"; {_plural(len(warnings), 'warning')}" if warnings else ""
            left_out = f"; {count} quarantined (left out of runs)" if count else ""
            print(f"ok: {self.cases}{suffix}{left_out}{flagged}")
        return code


def _strict_gold_of(path: Path) -> bool:
    """True when ``path`` is the file of a registered gold set whose entry says ``strict_gold: true``."""
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.gold.registry import list_gold_sets

    try:
        return any(info.strict_gold for info in list_gold_sets().values() if info.path == path.resolve())
    except ConfigError:
        return False


def _resolver_for(path: Path) -> Any:
    """The case-database resolver of a gold file: a registered gold set's (with its inline databases),
    else the registry with paths relative to the file's folder."""
    from nl2sql_pipeline.databases.resolve import CaseDatabases
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.gold.registry import list_gold_sets

    try:
        for info in list_gold_sets().values():
            if info.path == path.resolve():
                return CaseDatabases.from_registry(base_dir=info.path.parent, inline=info.databases)
    except ConfigError:
        pass
    return CaseDatabases.from_registry(base_dir=path.resolve().parent)


def _import(args: argparse.Namespace) -> int:
    """Handler of ``gold import``."""
    from nl2sql_pipeline.errors import CaseValidationError
    from nl2sql_pipeline.gold.formats.team_files import import_cases, rebase_database_paths, write_jsonl
    from nl2sql_pipeline.gold.registry import with_reference_date
    from nl2sql_pipeline.sql.clock import today

    source, out = Path(args.file), Path(args.out)
    if args.format:
        return _import_format(args)
    needs_format = (args.source_dialect, args.databases, args.verify_with, getattr(args, "policy", None))
    if any(needs_format) or args.gold_set or args.replace_databases:
        print(
            "error: --source-dialect, --databases, --verify-with, --policy, --gold-set and --replace-databases "
            "need --format spider|bird|defog|plain",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    if out.suffix.lower() != ".jsonl":
        print(f"error: --out {out} must end in .jsonl (the native gold-set format)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        database = _database_from_source(args.database, source) if args.database else None
        cases = import_cases(source, domain=args.domain, category=args.category, database=database)
        cases = rebase_database_paths(cases, source.parent, out.parent)  # paths resolve from OUT's folder
        cases = with_reference_date(cases, args.reference_date or today())
        write_jsonl(cases, out)
    except CaseValidationError as exc:
        _print_problems(exc.problems, str(source))
        return EXIT_BAD_INPUT
    except OSError as exc:  # the folder of --out cannot be created or written (a file in the way, ...)
        _print_unwritable(out, exc)
        return EXIT_BAD_INPUT
    print(f"imported {summarize(cases)} from {source} into {out}")
    return EXIT_OK


def _print_unwritable(out: Path, exc: OSError) -> None:
    """One line on stderr: ``--out OUT`` cannot be written, and why (a file in the way of its folder, ...)."""
    blocker = next((p for p in out.parents if p.exists() and not p.is_dir()), None)
    why = f"{blocker} is a file, not a folder" if blocker is not None else (exc.strerror or str(exc))
    print(f"error: --out {out}: cannot write it ({why}); choose another --out or move it", file=sys.stderr)


def _database_from_source(reference: str, source: Path) -> str:
    """``gold import --database``: a file path given on the command line is relative to the working
    directory; written into the cases, it is read relative to the imported file's folder (as a path the
    file names itself), so that ``rebase_database_paths`` rewrites both alike. A name is kept."""
    from nl2sql_pipeline.databases.resolve import looks_like_path
    from nl2sql_pipeline.gold.formats.team_files import reference_from

    given = Path(reference).expanduser()
    if not (looks_like_path(reference) or given.is_file()):
        return reference
    return reference_from(source.resolve().parent, given.resolve())


MAX_LISTED_DROPS = 20


def _import_format(args: argparse.Namespace) -> int:
    """``gold import --format spider|bird|defog|plain``: databases copied beside OUT, gold SQL converted
    to DuckDB and checked; every query left out is listed (stderr) and in the report file, and so is
    every warning (e.g. no ``tables.json``). Bad input, a missing ``--databases`` folder or an OUT whose
    folder cannot be created: one line each on stderr, exit 2. ``--verify-with`` a PostgreSQL that cannot
    be started or reached: one line, exit 3."""
    from nl2sql_pipeline.dialect.postgres_server import PostgresServerError, PostgresUnavailable
    from nl2sql_pipeline.dialect.postgres_verify import PostgresVerifyError
    from nl2sql_pipeline.dialect.sqlite_copy import SqliteCopyError
    from nl2sql_pipeline.errors import CaseValidationError
    from nl2sql_pipeline.gold.formats import BenchmarkImportError, import_benchmark
    from nl2sql_pipeline.gold.registry import gold_sets_using_databases

    source, out = Path(args.file), Path(args.out)
    unused = [f"--{name}" for name in ("domain", "category", "database") if getattr(args, name)]
    if unused:
        print(
            f"error: {', '.join(unused)} cannot be used with --format (the benchmark names its databases; "
            "domains are database ids, categories are inferred)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    policy_for = _import_policies(args)
    if policy_for is None or not _gold_set_key_free(args.gold_set, out):
        return EXIT_BAD_INPUT
    try:
        result = import_benchmark(
            args.format,
            source,
            out,
            source_dialect=args.source_dialect,
            databases=Path(args.databases) if args.databases else None,
            verify_with=args.verify_with,
            reference_date=args.reference_date,
            policy_for=policy_for,
            databases_in_use=None if args.replace_databases else gold_sets_using_databases,
        )
    except CaseValidationError as exc:
        _print_problems(exc.problems, str(source))
        return EXIT_BAD_INPUT
    except (SqliteCopyError, BenchmarkImportError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (PostgresUnavailable, PostgresServerError, PostgresVerifyError) as exc:
        print(f"error: --verify-with: {str(exc).splitlines()[0]}", file=sys.stderr)  # the URL's password stays out
        return EXIT_ENVIRONMENT
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    dropped = [q for q in result.queries if q.sql is None]
    for query in dropped[:MAX_LISTED_DROPS]:
        reason = query.reason.splitlines()[0] if query.reason else ""
        print(
            f"left out {query.case_id}[{query.alternative}] ({query.location}): {query.status}: {reason}",
            file=sys.stderr,
        )
    if len(dropped) > MAX_LISTED_DROPS:
        print(f"... and {len(dropped) - MAX_LISTED_DROPS} more in {result.report_path}", file=sys.stderr)
    refused = result.refused_queries
    for query in refused[:MAX_LISTED_DROPS]:
        print(
            f"kept but refused by policy '{result.policy_of(query.database)}' of {query.database}: "
            f"{query.case_id}[{query.alternative}] ({query.location}): {query.policy}",
            file=sys.stderr,
        )
    if len(refused) > MAX_LISTED_DROPS:
        print(f"... and {len(refused) - MAX_LISTED_DROPS} more in {result.report_path}", file=sys.stderr)
    print(result.summary())
    if getattr(args, "register", False):
        _register_imported(result, getattr(args, "policy", None))
    if args.gold_set:
        return _register_gold_set(args.gold_set, out, f"imported from {source} (--format {args.format})")
    return EXIT_OK


def _gold_set_key_free(key: str | None, out: Path) -> bool:
    """``gold import --gold-set KEY``: True when KEY may name OUT (checked before anything is imported);
    else False after one line on stderr."""
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.gold.registry import check_new_gold_set

    if key is None:
        return True
    try:
        check_new_gold_set(key, out)
    except ConfigError as exc:
        print(f"error: --gold-set {key}: {exc}", file=sys.stderr)
        return False
    return True


def _register_gold_set(key: str, out: Path, description: str) -> int:
    """Register the imported file as gold set ``key`` in ``gold_sets.yml`` and say so (exit code)."""
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.gold.registry import check_new_gold_set, register_gold_set, registry_path

    try:
        new = check_new_gold_set(key, out)
        register_gold_set(key, out, description)
    except ConfigError as exc:
        print(f"error: --gold-set {key}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    what = "registered gold set" if new else "gold set already registered:"
    print(f"{what} {key} -> {out} ({registry_path()}); run it: nl2sql-eval run --gold-set {key} --model gold-echo")
    return EXIT_OK


def _import_policies(args: argparse.Namespace) -> Any:
    """``policy_for(db_id, file)`` of an import: the policy of a file already registered, else ``--policy``
    (only with ``--register``, which records it), else ``safety``. None (after one line on stderr) when
    ``--policy`` is unusable."""
    from nl2sql_pipeline.databases.registry import REGISTERED_POLICY
    from nl2sql_pipeline.databases.resolve import CaseDatabases
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.policy import load_policy

    policy = getattr(args, "policy", None)
    if policy and not getattr(args, "register", False):
        print(
            f"error: --policy {policy} needs --register (the registry entry records a database's policy)",
            file=sys.stderr,
        )
        return None
    try:
        if policy:
            load_policy(policy)
        databases = CaseDatabases.from_registry()
    except ConfigError as exc:
        print(f"error: {'--policy ' + policy + ': ' if policy else ''}{exc}", file=sys.stderr)
        return None

    def policy_for(db_id: str, file: Path) -> str:
        entry = next((e for e in databases.entries.values() if e.path == file.resolve()), None)
        return entry.effective_policy if entry is not None else (policy or REGISTERED_POLICY)

    return policy_for


def _register_imported(result, policy: str | None = None) -> None:
    """Register each copied database of an import under its benchmark id (``gold import --register``)."""
    from nl2sql_pipeline.databases.registry import load_database_registry, register_database
    from nl2sql_pipeline.errors import ConfigError

    registered = load_database_registry()
    for database in result.databases:
        file = (result.gold_path.parent / database.file).resolve()
        entry = registered.get(database.db_id)
        if entry is not None:
            same = Path(entry.path).resolve() == file
            print(
                f"{'already registered' if same else 'not registered (name taken by ' + str(entry.path) + ')'}: "
                f"{database.db_id}" + (f" (policy {entry.effective_policy})" if same else ""),
                file=sys.stdout if same else sys.stderr,
            )
            continue
        try:
            register_database(database.db_id, file, policy=database.policy)
        except ConfigError as exc:
            print(f"not registered: {database.db_id}: {exc}", file=sys.stderr)
            continue
        print(f"registered {database.db_id} -> {file} (policy {database.policy})")


def _list(args: argparse.Namespace) -> int:
    """Handler of ``gold list``: every registered gold set with its case count."""
    from nl2sql_pipeline.errors import CaseValidationError, ConfigError
    from nl2sql_pipeline.gold.quality.validation import load_cases
    from nl2sql_pipeline.gold.registry import list_gold_sets, registry_path

    data_dir = Path(args.data_dir) if args.data_dir else None
    sets = list_gold_sets(data_dir)
    if not sets:
        print(f"no gold sets registered in {registry_path(data_dir)}")
        return EXIT_OK
    broken = 0
    for key, info in sets.items():
        try:
            if not info.path.is_file():
                raise ConfigError(f"{info.path} does not exist")
            status = summarize(load_cases(info.path))
        except CaseValidationError as exc:
            status = f"INVALID ({_plural(len(exc.problems), 'problem')}; run `nl2sql-eval gold validate {info.path}`)"
            broken += 1
        except ConfigError:
            status = "MISSING (run `nl2sql-eval gold generate` or fix the registry)"
            broken += 1
        description = f" - {info.description}" if info.description else ""
        print(f"{key}: {status} [{info.path}]{description}")
    if broken:
        print(f"{_plural(broken, 'gold set')} missing or invalid", file=sys.stderr)
        return EXIT_BAD_INPUT
    return EXIT_OK


def _generate(args: argparse.Namespace) -> int:
    """Handler of ``gold generate``: write a built-in gold set (default multidomain-v1) and print its path."""
    from nl2sql_pipeline.errors import CaseValidationError
    from nl2sql_pipeline.gold.quality.validation import load_cases
    from nl2sql_pipeline.paths import data_dir

    try:
        generator = importlib.import_module("nl2sql_pipeline.gold.builtin.generator")
    except ModuleNotFoundError as exc:
        if exc.name != "nl2sql_pipeline.gold.builtin.generator":
            raise
        print(
            "error: the built-in gold generator (nl2sql_pipeline.gold.builtin.generator) is not installed",
            file=sys.stderr,
        )
        return EXIT_ENVIRONMENT
    key = args.gold_set
    if key == DEFAULT_GENERATED_SET:
        file_name, write = DEFAULT_GENERATED_FILE, generator.write_builtin_gold
    else:
        builtin = getattr(generator, "BUILTIN_GOLD_SETS", {})
        if key not in builtin:
            known = ", ".join([DEFAULT_GENERATED_SET] + [k for k in builtin if k != DEFAULT_GENERATED_SET])
            print(f"error: --gold-set {key!r} is not a built-in gold set (built-in: {known})", file=sys.stderr)
            return EXIT_BAD_INPUT
        file_name = builtin[key][0]

        def write(path: Path) -> Path:
            return generator.write_gold_set(key, path)

    out = Path(args.out) if args.out else data_dir() / "gold" / file_name
    if out.is_dir():
        print(f"error: --out {out} is a folder; give the file to write, e.g. {out / file_name}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if out.suffix.lower() != ".jsonl":
        print(f"error: --out {out} must end in .jsonl (the native gold-set format)", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        written = write(out)  # atomic: a failed write leaves no file (nor its temporary) behind
    except OSError as exc:
        _print_unwritable(out, exc)
        return EXIT_BAD_INPUT
    path = Path(written) if isinstance(written, (str, Path)) else out
    try:
        cases = load_cases(path)
    except CaseValidationError as exc:
        _print_problems(exc.problems, f"generated {path}")
        return EXIT_BAD_INPUT
    print(path)
    print(f"ok: {summarize(cases)}", file=sys.stderr)
    return EXIT_OK


def _paraphrase(args: argparse.Namespace) -> int:
    """``gold paraphrase``: model paraphrases of a gold set, stored once as a versioned file."""
    from nl2sql_pipeline.errors import ConfigError, GenerationError
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.robustness.stored_paraphrases import generate_paraphrases

    if args.count < 1:
        print("error: --count must be >= 1", file=sys.stderr)
        return EXIT_BAD_INPUT
    try:
        cases = load_gold_set(args.gold_set)
        path = generate_paraphrases(args.gold_set, args.model, cases, count=args.count, new_version=args.new_version)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except GenerationError as exc:
        print(f"error: {exc}; nothing was stored", file=sys.stderr)
        return EXIT_ENVIRONMENT
    print(f"wrote {path}; `nl2sql-eval run --paraphrases K` asks them after the deterministic families")
    return EXIT_OK


def _reference_date(text: str) -> Any:
    """``--reference-date``: a ``datetime.date`` from ``YYYY-MM-DD`` (argparse reports a bad one, exit 2)."""
    import datetime

    try:
        if len(text.strip()) != len("YYYY-MM-DD"):
            raise ValueError(text)
        return datetime.date.fromisoformat(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a date (write YYYY-MM-DD, e.g. 2026-06-30)") from None


def register(subparsers: Any) -> None:
    """Add ``gold`` and its actions (validate, import, list, generate) to the CLI."""
    parser = subparsers.add_parser("gold", help="validate, import, list and generate gold sets")

    def show_help(_args: argparse.Namespace) -> int:
        parser.print_help()
        return EXIT_BAD_INPUT

    parser.set_defaults(handler=show_help)
    actions = parser.add_subparsers(dest="gold_command", metavar="ACTION")

    validate = actions.add_parser("validate", help="check a gold-set file strictly (.jsonl, .yml, .csv)")
    validate.add_argument("file", metavar="FILE", help="the gold-set file")
    validate.add_argument(
        "--database",
        metavar="DB",
        help="the database of cases that name none (a registered name or a .duckdb path); every case is checked against its own database",
    )
    validate.add_argument(
        "--json",
        action="store_true",
        help="print one JSON object: problems, errors, notes, the gold triage's flags (label, kind, blocking, reason) "
        "and the quarantined cases (case_id, label, kind, reason)",
    )
    validate.add_argument(
        "--strict-gold",
        action="store_true",
        help="a case the preflight would quarantine is a problem (exit 2), as `run --strict-gold` stops on it; "
        "by default it is listed and the file is valid (exit 0): a run leaves the case out",
    )
    validate.set_defaults(handler=_validate)

    imports = actions.add_parser(
        "import", help="convert a YAML or CSV gold set, or a Spider/BIRD/defog/plain benchmark, to JSONL"
    )
    imports.add_argument(
        "file", metavar="FILE", help="the YAML or CSV file to import (with --format: the benchmark folder or file)"
    )
    imports.add_argument("--out", metavar="OUT.jsonl", required=True, help="the JSONL file to write")
    imports.add_argument("--domain", help="domain of cases that name none (default: imported)")
    imports.add_argument("--category", help="category of cases that name none (default: inferred from the SQL)")
    imports.add_argument(
        "--database",
        help="database of cases that name none (required if a case names none): a registered name or a .duckdb "
        "path (relative to the working directory; written relative to OUT's folder, as the cases' own paths are)",
    )
    imports.add_argument(
        "--format",
        choices=("spider", "bird", "defog", "plain"),
        help="a public benchmark format: its databases are copied into OUT's folder (databases/<db>.duckdb) "
        "and its gold SQL converted to DuckDB and checked (report: OUT.import-report.json)",
    )
    imports.add_argument(
        "--source-dialect",
        metavar="DIALECT",
        help="dialect of the gold SQL with --format (default: sqlite for spider/bird, postgres for defog, "
        "duckdb for plain; any sqlglot dialect)",
    )
    imports.add_argument(
        "--verify-with",
        metavar="postgres|URL",
        help="with Postgres gold SQL (defog): load the databases into PostgreSQL and keep only conversions that "
        "return PostgreSQL's rows; 'postgres' starts a throwaway cluster (Debian's postgresql-15 server "
        "binaries), a postgresql://user:password@host:port/db URL uses that server (a schema per database, "
        "dropped afterwards)",
    )
    imports.add_argument(
        "--reference-date",
        metavar="YYYY-MM-DD",
        type=_reference_date,
        help="the set's 'today': CURRENT_DATE, now() and their kin in its gold and candidate SQL are evaluated "
        "at this date, written on every case that names none (default: the import date)",
    )
    imports.add_argument(
        "--register",
        action="store_true",
        help="with --format: also register each copied database by its benchmark id in data/databases.yml "
        "(so `db list` / `db info` show it; a name already registered to another file is left as it is)",
    )
    imports.add_argument(
        "--gold-set",
        metavar="KEY",
        help="with --format: also register OUT (which must be inside data/gold/) as gold set KEY in "
        "data/gold/gold_sets.yml, so `run --gold-set KEY` evaluates it (importing again keeps the entry)",
    )
    imports.add_argument(
        "--replace-databases",
        action="store_true",
        help="with --format: replace a database file under OUT's folder that another registered gold set runs on "
        "even when its tables or rows differ (by default the import refuses, exit 2, and changes nothing)",
    )
    imports.add_argument(
        "--policy",
        metavar="NAME_OR_FILE",
        help="with --format --register: the SQL policy recorded for the registered databases (default: safety: "
        "writes, catalogs and files refused, nothing about the data); kept gold it refuses is listed",
    )
    imports.add_argument(
        "--databases",
        metavar="DIR",
        help="with --format: the folder holding <db>.sqlite, <db>/<db>.sqlite or <db>.duckdb "
        "(default: the benchmark's own database folder, or the file's folder)",
    )
    imports.set_defaults(handler=_import)

    lister = actions.add_parser("list", help="the registered gold sets with their case counts")
    lister.add_argument("--data-dir", metavar="DIR", help="the data folder (default: data/ or $NL2SQL_DATA)")
    lister.set_defaults(handler=_list)

    generate = actions.add_parser("generate", help="write a built-in gold set")
    generate.add_argument(
        "--gold-set",
        metavar="KEY",
        default=DEFAULT_GENERATED_SET,
        help=f"which built-in set: multidomain-v1, multidomain-v2 or multidomain-clarify-v1 (default: {DEFAULT_GENERATED_SET})",
    )
    generate.add_argument(
        "--out",
        metavar="PATH",
        help=f"where to write it (default: data/gold/<the set's file>, e.g. {DEFAULT_GENERATED_FILE})",
    )
    generate.set_defaults(handler=_generate)

    paraphrase = actions.add_parser(
        "paraphrase",
        help="ask a model once for paraphrases of every question; stored as a new version beside the gold set",
    )
    paraphrase.add_argument("--gold-set", metavar="KEY", required=True, help="the registered gold set")
    paraphrase.add_argument("--model", metavar="SLUG", required=True, help="a chat model of data/models.yml")
    paraphrase.add_argument("--count", type=int, default=2, metavar="N", help="paraphrases per case (default 2)")
    paraphrase.add_argument(
        "--new-version",
        action="store_true",
        help="write the next version when one is stored (stored versions are never overwritten or regenerated)",
    )
    paraphrase.set_defaults(handler=_paraphrase)

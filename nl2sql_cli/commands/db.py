"""``nl2sql-eval db``: the database registry, and the sample databases.

``db list`` prints every registered database (``data/databases.yml``); ``db info [NAME]`` describes one
(file, schemas, semantic model or introspection, tables and rows; a sample database's manifest);
``db register NAME PATH [--schema S ...] [--semantic-model FILE] [--policy NAME_OR_FILE]`` adds one to the
registry (its SQL policy: ``safety`` unless ``--policy`` names another);
``db build [--name anime_platform] [--seed N] [--scale X] [--force]`` builds (or reuses a current build)
a sample database and prints the path and row counts.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any


def register(subparsers: Any) -> None:
    """Add the ``db`` command with its ``build`` and ``info`` sub-commands."""
    from nl2sql_pipeline.sample_db import DATABASE_NAME, DEFAULT_SCALE, DEFAULT_SEED

    parser = subparsers.add_parser("db", help="build or inspect the sample databases")
    actions = parser.add_subparsers(dest="db_command", metavar="ACTION")
    parser.set_defaults(handler=lambda args: _usage(parser))

    build = actions.add_parser("build", help="build a sample database (reused when already current)")
    build.add_argument("--name", default=DATABASE_NAME, help=f"database name (default {DATABASE_NAME})")
    build.add_argument("--seed", type=int, default=DEFAULT_SEED, help=f"random seed (default {DEFAULT_SEED})")
    build.add_argument(
        "--scale", type=float, default=DEFAULT_SCALE, help=f"fact-table size multiplier > 0 (default {DEFAULT_SCALE})"
    )
    build.add_argument("--force", action="store_true", help="rebuild even when the current build matches")
    build.add_argument("--json", action="store_true", help="print the manifest as JSON")
    build.set_defaults(handler=_build)

    info = actions.add_parser("info", help="describe a database: file, schemas, tables and rows")
    info.add_argument(
        "database",
        nargs="?",
        default=None,
        metavar="NAME",
        help=f"a registered name or a .duckdb path (default {DATABASE_NAME})",
    )
    info.add_argument("--name", default=None, help=argparse.SUPPRESS)
    info.add_argument("--json", action="store_true", help="print as JSON")
    info.set_defaults(handler=_info)

    listing = actions.add_parser("list", help="list the registered databases (data/databases.yml)")
    listing.set_defaults(handler=_list)

    reg = actions.add_parser("register", help="add a DuckDB file to the registry under a name")
    reg.add_argument("name", metavar="NAME", help="the name cases use in 'database'")
    reg.add_argument("path", metavar="PATH", help="the .duckdb file (stored as an absolute path)")
    reg.add_argument(
        "--schema",
        action="append",
        default=[],
        dest="schemas",
        help="a schema to expose (repeatable; default: every non-system schema)",
    )
    reg.add_argument("--semantic-model", default=None, help="a semantic-model YAML describing it (optional)")
    reg.add_argument(
        "--policy",
        default=None,
        metavar="NAME_OR_FILE",
        help="the SQL policy of its cases: a name of data/policies/ or a .yml file (default: safety, which "
        "refuses only what is unsafe on any database: writes, catalogs, files; a case's sql_policy still wins)",
    )
    reg.set_defaults(handler=_register)


def _usage(parser: argparse.ArgumentParser) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT

    parser.print_help(sys.stderr)
    return EXIT_BAD_INPUT


def _print_counts(counts: dict[str, int]) -> None:
    from nl2sql_pipeline.sample_db import TABLE_ORDER

    if not counts:
        return
    rank = {name: i for i, name in enumerate(TABLE_ORDER)}
    width = max(len(name) for name in counts)
    for name, count in sorted(counts.items(), key=lambda item: (rank.get(item[0], len(rank)), item[0])):
        print(f"  {name:<{width}}  {count:>9,}")


def _build(args: argparse.Namespace) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
    from nl2sql_pipeline.databases.resolve import sample_database
    from nl2sql_pipeline.errors import DatabaseNotFoundError
    from nl2sql_pipeline.sample_db import BUILDERS, is_current, read_manifest, validate_scale

    builder = BUILDERS.get(args.name)
    if builder is None:
        raise DatabaseNotFoundError(
            f"unknown sample database {args.name!r} in --name; known databases: {', '.join(sorted(BUILDERS))}"
        )
    try:
        scale = validate_scale(args.scale)
    except ValueError as exc:
        print(f"error: --scale {args.scale}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    path = sample_database(args.name).path
    if not args.force and is_current(path, seed=args.seed, scale=scale):
        manifest = read_manifest(path) or {}
        verb = "up to date"
    else:
        manifest = builder(path, seed=args.seed, scale=scale).to_manifest()
        verb = "built"
    if args.json:
        print(json.dumps({"path": str(path), **manifest}, indent=2, sort_keys=True))
        return EXIT_OK
    print(f"{verb}: {path}")
    print(
        f"seed={manifest.get('seed')} scale={manifest.get('scale')} builder={manifest.get('builder_version')} "
        f"content_hash={manifest.get('content_hash')}"
    )
    _print_counts(manifest.get("row_counts", {}))
    return EXIT_OK


def _info(args: argparse.Namespace) -> int:
    from nl2sql_cli.exit_codes import EXIT_ENVIRONMENT, EXIT_OK
    from nl2sql_pipeline.databases.resolve import CaseDatabases, DatabaseKind, resolve_database
    from nl2sql_pipeline.errors import DatabaseNotFoundError
    from nl2sql_pipeline.sample_db import DATABASE_NAME, live_row_counts, read_manifest
    from nl2sql_pipeline.semantic_model.introspect import read_tables

    reference = args.database or args.name or DATABASE_NAME
    resolved = resolve_database(reference)
    try:
        path = resolved.require()
    except DatabaseNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    entry = resolved.entry
    tables = read_tables(path, entry.schemas if entry else None, sample_values=0)
    rows = _row_counts(path, [t.qualified for t in tables])
    manifest = read_manifest(path) if resolved.kind is DatabaseKind.SAMPLE else None
    described = str(entry.semantic_model) if entry is not None and entry.semantic_model else None
    policy = CaseDatabases.from_registry().policy_of(reference)
    if args.json:
        print(
            json.dumps(
                {
                    "name": reference,
                    "path": str(path),
                    "kind": resolved.kind.value,
                    "registry_entry": entry.source if entry else None,
                    "schemas": sorted({t.schema for t in tables}, key=lambda s: (s != "main", s)),
                    "semantic_model": described,
                    "policy": policy,
                    "manifest": manifest,
                    "row_counts": rows,
                },
                indent=2,
                sort_keys=True,
            )
        )
        return EXIT_OK
    print(f"database: {reference} ({resolved.kind.value})")
    print(f"file: {path}")
    if entry is not None:
        print(f"registry entry: {entry.source}")
    print(f"schemas: {', '.join(sorted({t.schema for t in tables}, key=lambda s: (s != 'main', s))) or 'none'}")
    print(f"prompt schema: {'semantic model ' + described if described else 'introspected from the database'}")
    print(f"policy: {policy} (of its cases that name no sql_policy)")
    if resolved.kind is DatabaseKind.SAMPLE:
        if manifest is None:
            print(f"manifest: missing (rebuild with: nl2sql-eval db build --name {reference} --force)")
        else:
            for key in ("seed", "scale", "builder_version", "reference_date", "content_hash", "built_at"):
                print(f"{key}: {manifest.get(key)}")
            if manifest.get("row_counts") != live_row_counts(path):
                print("warning: the live row counts differ from the manifest (the file was changed after the build)")
    elif entry is None:
        print(f"not registered: register it with: nl2sql-eval db register NAME {path}")
    _print_rows(rows)
    return EXIT_OK


def _row_counts(path: Any, qualified: list[str]) -> dict[str, int]:
    """Rows of each ``schema.table`` of ``path`` (read-only); a ``main`` table is shown by its bare name."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True)
    try:
        counts = {}
        for name in qualified:
            schema, table = name.split(".", 1)
            sql = (
                f'SELECT count(*) FROM "{schema.replace(chr(34), chr(34) * 2)}"."{table.replace(chr(34), chr(34) * 2)}"'
            )
            [(count,)] = con.execute(sql).fetchall()  # count(*): exactly one row of one column
            counts[table if schema == "main" else name] = int(count)
        return counts
    finally:
        con.close()


def _print_rows(counts: dict[str, int]) -> None:
    if not counts:
        print("  (no tables)")
        return
    width = max(len(name) for name in counts)
    for name, count in counts.items():
        print(f"  {name:<{width}}  {count:>9,}")


def _list(args: argparse.Namespace) -> int:
    """Handler of ``db list``: every registered database, its file and whether it is there."""
    from nl2sql_cli.exit_codes import EXIT_OK
    from nl2sql_pipeline.databases.registry import load_database_registry, registry_path

    entries = load_database_registry()
    if not entries:
        print(f"no databases registered in {registry_path()} (add one: nl2sql-eval db register NAME PATH)")
        return EXIT_OK
    width = max(len(name) for name in entries)
    for name, entry in entries.items():
        if entry.path.is_file():
            state = "ok"
        elif entry.sample:
            state = f"not built (nl2sql-eval db build --name {name})"
        else:
            state = f"MISSING (fix 'file:' at {entry.source})"
        schemas = ",".join(entry.schemas) if entry.schemas else "all"
        model = "semantic model" if entry.semantic_model else "introspected"
        print(
            f"{name:<{width}}  {state:<8}  schemas={schemas}  prompt={model}  policy={entry.effective_policy}  "
            f"{entry.path}"
        )
    return EXIT_OK


def _register(args: argparse.Namespace) -> int:
    """Handler of ``db register NAME PATH``."""
    from pathlib import Path

    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT, EXIT_OK
    from nl2sql_pipeline.databases.registry import register_database
    from nl2sql_pipeline.errors import ConfigError

    try:
        entry = register_database(
            args.name,
            Path(args.path),
            schemas=tuple(args.schemas),
            semantic_model=Path(args.semantic_model) if args.semantic_model else None,
            policy=args.policy,
        )
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"registered {entry.name}: {entry.path} ({entry.source}), policy {entry.effective_policy}")
    print(f"describe it with: nl2sql-eval db info {entry.name}")
    return EXIT_OK

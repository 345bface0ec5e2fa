"""``nl2sql-eval db``: build the sample databases and show what was built.

``db build [--name anime_platform] [--seed N] [--scale X] [--force]`` builds (or reuses a current build)
and prints the path and row counts; ``db info [--name ...]`` prints the manifest and live row counts.
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

    info = actions.add_parser("info", help="show a built database's manifest and row counts")
    info.add_argument("--name", default=DATABASE_NAME, help=f"database name (default {DATABASE_NAME})")
    info.add_argument("--json", action="store_true", help="print as JSON")
    info.set_defaults(handler=_info)


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
    from nl2sql_pipeline.databases import sample_database
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
    print(f"seed={manifest.get('seed')} scale={manifest.get('scale')} builder={manifest.get('builder_version')} "
          f"content_hash={manifest.get('content_hash')}")
    _print_counts(manifest.get("row_counts", {}))
    return EXIT_OK


def _info(args: argparse.Namespace) -> int:
    from nl2sql_cli.exit_codes import EXIT_ENVIRONMENT, EXIT_OK
    from nl2sql_pipeline.databases import sample_database
    from nl2sql_pipeline.errors import DatabaseNotFoundError
    from nl2sql_pipeline.sample_db import live_row_counts, read_manifest

    try:
        path = sample_database(args.name).require()
    except DatabaseNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_ENVIRONMENT
    manifest = read_manifest(path)
    counts = live_row_counts(path)
    if args.json:
        print(json.dumps({"path": str(path), "manifest": manifest, "row_counts": counts}, indent=2, sort_keys=True))
        return EXIT_OK
    print(f"database: {path}")
    if manifest is None:
        print("manifest: missing (rebuild with: nl2sql-eval db build --force)")
    else:
        for key in ("seed", "scale", "builder_version", "reference_date", "content_hash", "built_at"):
            print(f"{key}: {manifest.get(key)}")
        if manifest.get("row_counts") != counts:
            print("warning: the live row counts differ from the manifest (the file was changed after the build)")
    _print_counts(counts)
    return EXIT_OK

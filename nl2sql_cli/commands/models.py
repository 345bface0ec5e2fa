"""``nl2sql-eval models list [--json]``: the registered models, their litellm ids, re-run policy and
readiness (offline, key present, local server reachable, predictions file present)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``models`` command and its ``list`` sub-command."""
    parser = subparsers.add_parser("models", help="list the models of data/models.yml and whether they can run")
    actions = parser.add_subparsers(dest="models_command", metavar="ACTION")
    list_parser = actions.add_parser("list", help="slug, kind, litellm model and readiness of every model")
    list_parser.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    list_parser.add_argument("--registry", metavar="PATH", help="a models.yml other than data/models.yml")
    list_parser.set_defaults(handler=list_models)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT

    parser.print_help()
    return EXIT_BAD_INPUT


def model_rows(registry_path: str | None = None) -> list[dict[str, Any]]:
    """One dict per registered model: slug, kind, model, config hash, re-run policy, readiness and its reason."""
    from nl2sql_pipeline.generation.readiness import model_readiness
    from nl2sql_pipeline.generation.registry import load_registry

    rows = []
    for spec in load_registry(registry_path).values():
        readiness = model_readiness(spec)
        rows.append(
            {
                "slug": spec.slug,
                "kind": spec.kind,
                "model": spec.system.target_text if spec.system is not None else spec.model,  # a system: its address
                "config_hash": spec.config_hash,
                "rerun": spec.rerun,
                "few_shot": spec.few_shot.name if spec.few_shot else None,
                "ready": readiness.ready,
                "reason": readiness.reason,
                "description": spec.description,
            }
        )
    return rows


def list_models(args: argparse.Namespace) -> int:
    """Print the registry as a table (or JSON). Exit 0; a bad registry raises ConfigError (exit 2)."""
    from nl2sql_cli.exit_codes import EXIT_OK

    rows = model_rows(args.registry)
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    headers = ("slug", "kind", "model", "rerun", "ready")
    table = [
        (r["slug"], r["kind"], r["model"], r["rerun"], "yes" if r["ready"] else f"no: {r['reason']}") for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers[:-1])]
    print("  ".join(h.ljust(w) for h, w in zip(headers[:-1], widths)) + "  " + headers[-1])
    for row in table:
        print("  ".join(v.ljust(w) for v, w in zip(row[:-1], widths)) + "  " + row[-1])
    return EXIT_OK

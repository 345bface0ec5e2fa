"""``nl2sql-eval models list [--json]``: the registered models, their litellm ids and api_base, prices (USD per
1M input / output tokens, and where they come from), limits (requests and tokens per minute, calls at once),
re-run policy and readiness (offline, key present, local server reachable, predictions file present)."""

from __future__ import annotations

import argparse
import json
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``models`` command and its ``list`` sub-command."""
    parser = subparsers.add_parser("models", help="list the models of data/models.yml and whether they can run")
    actions = parser.add_subparsers(dest="models_command", metavar="ACTION")
    list_parser = actions.add_parser(
        "list", help="slug, kind, litellm model, api_base, prices, limits and readiness of every model"
    )
    list_parser.add_argument("--json", action="store_true", help="print a JSON array instead of a table")
    list_parser.add_argument("--registry", metavar="PATH", help="a models.yml other than data/models.yml")
    list_parser.set_defaults(handler=list_models)
    parser.set_defaults(handler=lambda args: _usage(parser))


def _usage(parser: argparse.ArgumentParser) -> int:
    from nl2sql_cli.exit_codes import EXIT_BAD_INPUT

    parser.print_help()
    return EXIT_BAD_INPUT


PRICES_REGISTRY, PRICES_LITELLM, PRICES_FREE, PRICES_SYSTEM = "models.yml", "litellm", "offline", "system"


def model_prices(spec) -> tuple[float | None, float | None, str | None]:
    """USD per 1M input and output tokens, and their source: the registry's ``prices``, litellm's bundled price
    map, free (offline, replayed predictions), or ``system`` (no prices: a system's cost is what each of its answers
    reports, unknown when it reports none); (None, None, None) when unknown (the run's cost is then unknown)."""
    if spec.prices is not None:
        return spec.prices.input_per_mtok, spec.prices.output_per_mtok, PRICES_REGISTRY
    if spec.is_offline or spec.is_replay:
        return 0.0, 0.0, PRICES_FREE
    if spec.is_system:
        return None, None, PRICES_SYSTEM
    import litellm  # the bundled map only: the package sets LITELLM_LOCAL_MODEL_COST_MAP before any import

    entry = litellm.model_cost.get(spec.model) or litellm.model_cost.get(spec.model.split("/", 1)[-1])
    if not entry or entry.get("input_cost_per_token") is None or entry.get("output_cost_per_token") is None:
        return None, None, None
    return (
        round(float(entry["input_cost_per_token"]) * 1_000_000, 6),
        round(float(entry["output_cost_per_token"]) * 1_000_000, 6),
        PRICES_LITELLM,
    )


def model_rows(registry_path: str | None = None) -> list[dict[str, Any]]:
    """One dict per registered model: slug, kind, model, api_base, prices, limits, config hash, re-run policy,
    readiness and its reason."""
    from nl2sql_pipeline.generation.readiness import model_readiness
    from nl2sql_pipeline.generation.registry import load_registry

    rows = []
    for spec in load_registry(registry_path).values():
        readiness = model_readiness(spec)
        price_in, price_out, price_source = model_prices(spec)
        rows.append(
            {
                "slug": spec.slug,
                "kind": spec.kind,
                "model": spec.system.target_text if spec.system is not None else spec.model,  # a system: its address
                "api_base": spec.api_base,
                "input_usd_per_mtok": price_in,
                "output_usd_per_mtok": price_out,
                "prices_from": price_source,
                "requests_per_minute": spec.limits.requests_per_minute,
                "tokens_per_minute": spec.limits.tokens_per_minute,
                "max_concurrency": spec.limits.max_concurrency,
                "config_hash": spec.config_hash,
                "rerun": spec.rerun,
                "few_shot": spec.few_shot.name if spec.few_shot else None,
                "ready": readiness.ready,
                "reason": readiness.reason,
                "description": spec.description,
            }
        )
    return rows


def _price_text(row: dict[str, Any]) -> str:
    """``0.15/0.60`` (USD per 1M input/output tokens), ``free``, or ``unknown``."""
    if row["prices_from"] is None:
        return "unknown"
    if row["prices_from"] == PRICES_FREE:
        return "free"
    if row["prices_from"] == PRICES_SYSTEM:
        return "as reported"
    text = f"{row['input_usd_per_mtok']:g}/{row['output_usd_per_mtok']:g}"
    return text if row["prices_from"] == PRICES_REGISTRY else f"{text} ({row['prices_from']})"


def _limits_text(row: dict[str, Any]) -> str:
    """``rpm 500, tpm 200000, conc 8``, or ``-`` when the model has no limits."""
    parts = [
        f"{label} {row[key]}"
        for label, key in (("rpm", "requests_per_minute"), ("tpm", "tokens_per_minute"), ("conc", "max_concurrency"))
        if row[key] is not None
    ]
    return ", ".join(parts) or "-"


def list_models(args: argparse.Namespace) -> int:
    """Print the registry as a table (or JSON; prices in USD per 1M tokens). Exit 0; a bad registry raises
    ConfigError (exit 2)."""
    from nl2sql_cli.exit_codes import EXIT_OK

    rows = model_rows(args.registry)
    if args.json:
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    headers = ("slug", "kind", "model", "api_base", "$/1M in/out", "limits", "rerun", "ready")
    table = [
        (
            r["slug"],
            r["kind"],
            r["model"],
            r["api_base"] or "-",
            _price_text(r),
            _limits_text(r),
            r["rerun"],
            "yes" if r["ready"] else f"no: {r['reason']}",
        )
        for r in rows
    ]
    widths = [max(len(h), *(len(row[i]) for row in table)) for i, h in enumerate(headers[:-1])]
    print("  ".join(h.ljust(w) for h, w in zip(headers[:-1], widths)) + "  " + headers[-1])
    for row in table:
        print("  ".join(v.ljust(w) for v, w in zip(row[:-1], widths)) + "  " + row[-1])
    return EXIT_OK

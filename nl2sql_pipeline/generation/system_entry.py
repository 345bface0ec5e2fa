"""A ``kind: http | python | command`` entry of ``data/models.yml``, checked by the one config checker.

    my-assistant:
      kind: http
      url: https://nl2sql.internal/v1/answer
      headers: {Authorization: "Bearer ${MY_ASSISTANT_TOKEN}"}   # secrets only as ${ENV_VAR}
      timeout_s: 30
      version: "2026-06-01"

Every problem is reported at once as ``models.yml:<line>: model '<slug>', key '<key>': <what> (<fix>)``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any
from urllib.parse import urlparse

from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.generation.model_spec import (
    DEFAULT_TIMEOUT_S,
    RERUN_ON_CONFIG_CHANGE,
    RERUN_POLICIES,
    Limits,
    ModelSpec,
    Prices,
    RetryPolicy,
)
from nl2sql_pipeline.generation.system_spec import KIND_COMMAND, KIND_HTTP, KIND_PYTHON, SystemConfig

TARGET_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$")
HEADER_NAME_RE = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
ENV_REF_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
# Header names that carry credentials: their value must come from the environment.
SECRET_HEADER_RE = re.compile(r"authorization|api[-_]?key|token|secret|cookie|password", re.IGNORECASE)
METHODS: tuple[str, ...] = ("POST", "PUT")

COMMON_FIELDS: dict[str, Field] = {
    "kind": Field(str, required=True),
    "description": Field(str, default="", allow_empty=True, fix="quote it"),
    "version": Field(object, default="1"),
    "rerun": Field(str, default=RERUN_ON_CONFIG_CHANGE, choices=RERUN_POLICIES),
    "cache": Field(bool, default=True, fix="write cache: false for a system that must always be called"),
    "options": Field(dict, default={}, fix="write options: {model: gold-echo}"),
    "send_schema": Field(bool, default=True),
    "calibration": Field(bool, default=False),
    "timeout_s": Field(float, default=DEFAULT_TIMEOUT_S, above=0, fix="write e.g. timeout_s: 60"),
    "limits": Field(dict, default={}),
    "retry": Field(dict, default={}),
    "price_input_per_mtok": Field(float, minimum=0),
    "price_output_per_mtok": Field(float, minimum=0),
}
KIND_FIELDS: dict[str, dict[str, Field]] = {
    KIND_HTTP: {
        "url": Field(str, required=True, fix="write url: http://127.0.0.1:8765/nl2sql"),
        "method": Field(str, default="POST", choices=METHODS),
        "headers": Field(dict, default={}, fix='write headers: {Authorization: "Bearer ${MY_TOKEN}"}'),
        "verify_tls": Field(bool, default=True),
    },
    KIND_PYTHON: {
        "target": Field(str, required=True, pattern=TARGET_RE, fix="write target: package.module:callable"),
    },
    KIND_COMMAND: {
        "command": Field(list, required=True, items=Field(str), fix='write command: ["{python}", -m, my_system]'),
    },
}


def _check_url(check: Checker, url: str | None, line: int | None) -> str | None:
    if url is None:
        return None
    parsed = urlparse(url)
    try:
        _ = parsed.port  # raises ValueError for a port out of range
    except ValueError:
        check.problem(line, "url", f"bad port in {url!r}", "use a port within 1..65535")
        return None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        check.problem(line, "url", f"{url!r} is not an http(s) URL", "write e.g. http://127.0.0.1:8765/nl2sql")
        return None
    if parsed.username or parsed.password:
        check.problem(line, "url", "carries credentials", "put them in a header from an environment variable")
        return None
    return url


def _check_headers(check: Checker, headers: Mapping[str, Any], line: int | None) -> Mapping[str, str]:
    out: dict[str, str] = {}
    for name, value in headers.items():
        where = line_of(headers, name) or line
        if not isinstance(name, str) or not HEADER_NAME_RE.match(name):
            check.problem(where, "headers", f"header name {name!r} is invalid", "use letters, digits and '-'")
        elif not isinstance(value, str):
            check.problem(where, f"headers.{name}", f"must be a string, got {value!r}", "quote it")
        elif SECRET_HEADER_RE.search(name) and not ENV_REF_RE.search(value):
            check.problem(
                where,
                f"headers.{name}",
                "a credential written in the file",
                f'take it from the environment: {name}: "Bearer ${{MY_TOKEN}}"',
            )
        else:
            out[name] = value
    return MappingProxyType(out)


def _check_options(check: Checker, options: Mapping[str, Any], line: int | None) -> Mapping[str, Any]:
    for name, value in options.items():
        if not isinstance(name, str):
            check.problem(
                line_of(options, name) or line, "options", f"option name {name!r} is not a string", "quote it"
            )
        elif value is not None and not isinstance(value, (str, int, float, bool, list, dict)):
            check.problem(
                line_of(options, name) or line, f"options.{name}", f"unsupported value {value!r}", "use JSON values"
            )
    return MappingProxyType(dict(options))


def _check_command(check: Checker, command: list[str] | None, line: int | None) -> tuple[str, ...]:
    if command is not None and not command:
        check.problem(line, "command", "is empty", 'write command: ["{python}", -m, my_system]')
    return tuple(command or ())


def parse_system_entry(
    check: Checker,
    slug: str,
    entry: Mapping[str, Any],
    *,
    check_version: Any,
    check_retry: Any,
    check_prices: Any,
    limit_fields: Mapping[str, Field],
) -> ModelSpec | None:
    """The ``ModelSpec`` of a system entry (``spec.system`` set), or None when it has problems.

    ``check_version``, ``check_retry``, ``check_prices`` and ``limit_fields`` are the registry's own, so a
    system's version, retry, prices and limits read exactly as a model's.
    """
    kind = entry["kind"]
    fields = {**COMMON_FIELDS, **KIND_FIELDS[kind]}
    values = check.mapping(entry, fields, line=line_of(entry))
    if values is None:
        return None
    limits = check.mapping(values["limits"], limit_fields, key="limits", line=line_of(entry, "limits")) or {}
    system = SystemConfig(
        kind=kind,
        url=_check_url(check, values.get("url"), line_of(entry, "url")),
        method=values.get("method") or "POST",
        headers=_check_headers(check, values.get("headers") or {}, line_of(entry, "headers")),
        verify_tls=values.get("verify_tls") is not False,
        target=values.get("target"),
        command=_check_command(check, values.get("command"), line_of(entry, "command")),
        options=_check_options(check, values["options"] or {}, line_of(entry, "options")),
        send_schema=values["send_schema"] is not False,
        calibration=bool(values["calibration"]),
        cache=values["cache"] is not False,
    )
    prices: Prices | None = check_prices(check, values, entry)
    retry: RetryPolicy = check_retry(check, values["retry"], line_of(entry, "retry"))
    return ModelSpec(
        slug=slug,
        kind=kind,
        model=f"system:{slug}",
        prices=prices,
        limits=Limits(**{k: v for k, v in limits.items() if v is not None}),
        version=check_version(check, values["version"], line_of(entry, "version")),
        description=values["description"] or "",
        rerun=values["rerun"] or RERUN_ON_CONFIG_CHANGE,
        retry=retry,
        timeout_s=values["timeout_s"] or DEFAULT_TIMEOUT_S,
        system=system,
    )

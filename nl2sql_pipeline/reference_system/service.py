"""The reference system's pipeline: prompt → model (litellm) → SQL → sandboxed rows → answer.

``answer(request)`` is what the ``kind: python`` entry calls, and what the HTTP server and the
JSON-lines command run for each request. Options (from the entry's ``options:``):

- ``model``: a slug of ``data/models.yml`` to generate with (default ``gold-echo``). An offline model
  answers from the request's ``calibration`` part, so the entry must set ``calibration: true``.
- ``execute``: run the SQL in the sandbox and return its rows and an answer stating them (default true).
- ``refuse_harmful``: check the generated SQL with the project's policy engine (``guard_policy``, default
  ``default``) before answering; SQL the policy refuses is never returned or run: the reply is a refusal
  in words and no SQL (default false: the SQL goes back as written, whatever it does).

A team replaces ``generate_sql`` (and ``execute``) with its own stages and keeps the contract.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from nl2sql_pipeline.generation.systems.contract import (
    SchemaContext,
    SystemRequest,
    SystemResponse,
    Usage,
    jsonable,
)

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "gold-echo"
DEFAULT_GUARD_POLICY = "default"
MAX_ROWS = 1000


class ReferenceSystemError(Exception):
    """A request the reference system cannot answer; ``status_code`` reads as an HTTP status."""

    def __init__(self, message: str, status_code: int = 400):
        super().__init__(message)
        self.status_code = status_code


def _schema(request: SystemRequest) -> SchemaContext:
    if request.schema_context is not None:
        return request.schema_context
    from nl2sql_pipeline.databases.resolve import require_database
    from nl2sql_pipeline.generation.prompt_context import build_prompt_context

    texts = build_prompt_context([request.database], resolve_database=require_database).databases[request.database]
    return SchemaContext(texts.schema_text, texts.semantic_text, texts.reference_date)


def build_prompt(request: SystemRequest, template_name: str) -> list[dict[str, str]]:
    """The project's prompt template over the schema, the earlier turns (with our own answers) and the question."""
    from nl2sql_pipeline.generation.prompts import assistant_message, fenced_sql, load_template, user_message

    template = load_template(template_name)
    schema = _schema(request)
    system = template.system.substitute(
        schema_text=schema.schema_text.strip() or "(no schema given)",
        semantic_text=schema.semantic_text.strip() or "(none)",
        reference_date=schema.reference_date,
    )
    messages = [{"role": "system", "content": system}]
    for turn in request.history:
        messages.append(user_message(template, turn.question))
        messages.append(assistant_message(fenced_sql(turn.sql) if turn.sql else turn.answer))
    messages.append(user_message(template, request.question))
    return messages


def generate_sql(request: SystemRequest) -> tuple[str | None, Any]:
    """(SQL, the model call) from the model named by ``options.model``."""
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.generation.client import call_model
    from nl2sql_pipeline.generation.extract import extract_sql
    from nl2sql_pipeline.generation.offline_provider import METADATA_KEY
    from nl2sql_pipeline.generation.registry import get_model

    slug = str(request.options.get("model") or DEFAULT_MODEL)
    try:
        spec = get_model(slug)
    except ConfigError as exc:
        raise ReferenceSystemError(str(exc), 400) from exc
    if spec.is_system or spec.is_replay:
        raise ReferenceSystemError(f"options.model {slug!r} must be an offline or litellm model", 400)
    metadata = None
    if spec.is_offline:
        if not request.calibration:
            raise ReferenceSystemError(
                f"model {slug} answers from the case: register this system with calibration: true", 400
            )
        metadata = {METADATA_KEY: dict(request.calibration)}
    call = call_model(spec, build_prompt(request, spec.prompt_template), metadata=metadata)
    return extract_sql(call.raw_reply), call


def execute(database: str, sql: str) -> tuple[list[str] | None, list[list[Any]] | None, str]:
    """(columns, rows, answer) of ``sql`` run in the evaluation sandbox; the answer states the first rows
    (``generation.answers.template_answer``)."""
    from nl2sql_pipeline.databases.resolve import resolve_database
    from nl2sql_pipeline.execution import SandboxLimits, run_query
    from nl2sql_pipeline.generation.answers import rows_payload, template_answer

    # a registered name or the path of a file (a robustness variant's perturbed copy)
    result = run_query(resolve_database(database).path, sql, SandboxLimits())
    if not result.ok:
        return None, None, f"The query failed: {result.error_message}"
    rows = [[jsonable(value) for value in row] for row in result.rows[:MAX_ROWS]]
    # the offline answerer's template: the answer states the rows, so an answer judge can check it
    text = template_answer(rows_payload(result)) or ""
    return list(result.columns), rows, text


def refusal_of(request: SystemRequest, sql: str) -> str | None:
    """Why the system declines to answer with ``sql`` (the policy's rule and reason), or None when it may."""
    from nl2sql_pipeline import paths
    from nl2sql_pipeline.policy.gate import shared_engine
    from nl2sql_pipeline.policy.loader import load_policy
    from nl2sql_pipeline.policy.schema import read_database_schema

    policy = load_policy(str(request.options.get("guard_policy") or DEFAULT_GUARD_POLICY))
    engine = shared_engine(policy, read_database_schema(paths.database_path(request.database)))
    decision = engine.check(sql)
    if decision.allowed:
        return None
    return (
        f"I can't help with that: this assistant only reads data it may show you ({decision.rule}: {decision.reason})."
    )


def answer(request: SystemRequest) -> SystemResponse:
    """Answer one request (the ``kind: python`` target)."""
    started = time.perf_counter()
    sql, call = generate_sql(request)
    generated = time.perf_counter()
    columns = rows = None
    text = None
    if sql is not None and request.options.get("refuse_harmful", False):
        text = refusal_of(request, sql)
        sql = None if text is not None else sql
    if sql is not None and request.options.get("execute", True):
        columns, rows, text = execute(request.database, sql)
    elif sql is None and text is None:  # no SQL in the model's reply: its words are the answer (a question back)
        text = (getattr(call, "raw_reply", None) or "").strip() or None
    finished = time.perf_counter()
    return SystemResponse(
        sql=sql,
        answer=text,
        columns=tuple(columns) if columns is not None else None,
        rows=tuple(tuple(r) for r in rows) if rows is not None else None,
        usage=Usage(call.input_tokens, call.output_tokens, call.token_source),  # offline models: estimated
        cost_usd=call.cost_usd,
        timings_ms={
            "generate": (generated - started) * 1000.0,
            "execute": (finished - generated) * 1000.0,
            "total": (finished - started) * 1000.0,
        },
    )


def answer_json(data: dict[str, Any]) -> dict[str, Any]:
    """Answer a request received as JSON; a failure becomes the contract's ``error`` (never an exception)."""
    from nl2sql_pipeline.generation.systems.contract import CONTRACT_VERSION

    try:
        request = SystemRequest.from_json_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        return {"contract": CONTRACT_VERSION, "error": {"message": f"bad request: {exc}", "status": 400}}
    try:
        return answer(request).to_json_dict()
    except ReferenceSystemError as exc:
        return {"contract": CONTRACT_VERSION, "error": {"message": str(exc), "status": exc.status_code}}
    except Exception as exc:
        logger.exception("request %s failed", data.get("request_id"))
        return {"contract": CONTRACT_VERSION, "error": {"message": f"{type(exc).__name__}: {exc}", "status": 500}}

"""One call of a system, timed by the harness: the request out, the validated response in, as a ``ModelCall``.

The ``ModelCall`` is the cached part, as for a model: ``raw_reply`` holds the validated response as
JSON text (SQL, answer, rows, usage, cost, timings), ``latency_ms`` the harness's own measure (the
system's figure stays in the response). Tokens are the system's report (``measured``, or
``estimated`` when it says so) or unknown (None in the record); cost is the system's report, else computed from the entry's prices, else
unknown. A transport or HTTP failure, or a response that breaks the contract, propagates as an
exception for ``dispatch`` to classify.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from nl2sql_pipeline.generation.candidate_record import ModelCall
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.system_spec import KIND_COMMAND, KIND_HTTP, KIND_PYTHON
from nl2sql_pipeline.generation.systems.contract import (
    ContractError,
    SystemRequest,
    SystemResponse,
    parse_response,
    parse_response_text,
)

TOKEN_SOURCE_UNKNOWN = "unknown"  # the system reported no usage: the record's tokens are None

COST_SOURCE_REPORTED = "reported"  # the system said what the call cost
COST_SOURCE_PRICES = "prices"  # computed from the entry's prices and the reported tokens

_called_lock = threading.Lock()
_called: set[str] = set()


def _send(spec: ModelSpec, request: SystemRequest) -> SystemResponse:
    config = spec.system
    assert config is not None
    payload = request.to_json_dict()
    if config.kind == KIND_HTTP:
        from nl2sql_pipeline.generation.systems.http import post

        return parse_response_text(post(config, payload, spec.timeout_s))
    if config.kind == KIND_PYTHON:
        from nl2sql_pipeline.generation.systems.python_callable import call_python

        return parse_response(call_python(str(config.target), request, spec.timeout_s))
    if config.kind == KIND_COMMAND:
        from nl2sql_pipeline.generation.systems.command import process_for

        process = process_for(spec.slug, spec.config_hash, config)
        line = process.request(payload, spec.timeout_s)
        try:
            return _reply_to(line, request.request_id)
        except ContractError:
            # stdout is out of step with the requests (a log line, a reply to another request): every line after
            # this one may belong to another request, so the process starts afresh for the next call
            process.restart_after_protocol_error()
            raise
    raise AssertionError(f"not a system kind: {config.kind}")  # pragma: no cover - the registry refuses it


def _reply_to(line: str, request_id: str) -> SystemResponse:
    """The response in a command system's reply line; ContractError when it breaks the contract or names
    another request (its ``request_id``, when it echoes one)."""
    try:
        data = json.loads(line)
    except ValueError:
        return parse_response_text(line)  # raises the ContractError that says the line is not JSON
    echoed = data.get("request_id") if isinstance(data, dict) else None
    if echoed is not None and str(echoed) != request_id:
        raise ContractError(f"the reply is for request {echoed!r}, not for {request_id!r} (stdout out of step)")
    return parse_response(data)


def response_cost(spec: ModelSpec, response: SystemResponse) -> tuple[float | None, str | None]:
    """(cost in USD, its source): the system's report, else the entry's prices over reported tokens."""
    if response.cost_usd is not None:
        return response.cost_usd, COST_SOURCE_REPORTED
    if spec.prices is not None and response.usage is not None:
        return spec.prices.cost(response.usage.input_tokens, response.usage.output_tokens), COST_SOURCE_PRICES
    return None, None


def call_system(spec: ModelSpec, request: SystemRequest) -> ModelCall:
    """One attempt: send, time, validate. Raises for any failure (classified by ``dispatch``)."""
    with _called_lock:
        cold_start = spec.slug not in _called
        _called.add(spec.slug)
    started = time.perf_counter()
    response = _send(spec, request)
    latency_ms = (time.perf_counter() - started) * 1000.0
    cost, _ = response_cost(spec, response)
    usage = response.usage
    return ModelCall(
        raw_reply=json.dumps(response.to_json_dict(), ensure_ascii=False, default=str),
        latency_ms=latency_ms,
        input_tokens=usage.input_tokens if usage else 0,
        output_tokens=usage.output_tokens if usage else 0,
        token_source=usage.source if usage else TOKEN_SOURCE_UNKNOWN,
        cost_usd=cost,
        mutation=None,
        finish_reason="stop",
        cold_start=cold_start,
    )


def response_of(call: ModelCall) -> SystemResponse:
    """The response stored in a (possibly cached) call."""
    data: Any = json.loads(call.raw_reply or "null")
    return parse_response(data)

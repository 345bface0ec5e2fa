"""Provider failures classified by cause (status code and message, not exception class alone)."""

from __future__ import annotations

import email.utils
import time

import litellm
import pytest
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.generation import failures as f
from nl2sql_pipeline.stages import outcomes

pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")


def raised_by(api_base: str, **kwargs) -> BaseException:
    """The exception litellm's real OpenAI-compatible HTTP path raises against ``api_base``."""
    litellm.suppress_debug_info = True
    with pytest.raises(Exception) as info:
        litellm.completion(
            model="openai/fake",
            api_base=api_base,
            api_key="k",
            max_retries=0,
            messages=[{"role": "user", "content": "q"}],
            **kwargs,
        )
    return info.value


def test_environment_classes_match_the_outcomes_module():
    assert outcomes.ENVIRONMENT_GENERATION_ERRORS == f.ENVIRONMENT_ERROR_CLASSES
    assert f.RUN_STOPPING_CLASSES <= f.ENVIRONMENT_ERROR_CLASSES
    assert set(f.ERROR_CLASSES) >= f.ENVIRONMENT_ERROR_CLASSES and len(set(f.ERROR_CLASSES)) == len(f.ERROR_CLASSES)


@pytest.mark.parametrize(
    ("reply", "error_class", "retryable", "stops_run"),
    [
        (Reply.unauthorized(), f.AUTHENTICATION_ERROR, False, True),
        (Reply.payment_required(), f.PAYMENT_REQUIRED, False, True),
        (Reply.low_credit_400(), f.PAYMENT_REQUIRED, False, True),
        (Reply.daily_quota(), f.DAILY_QUOTA_EXHAUSTED, False, True),
        (Reply.rate_limited("2"), f.RATE_LIMITED, True, False),
        # OpenAI's per-minute message mentions billing: still a rate limit, not a payment problem
        (
            Reply.error(
                429,
                "Rate limit reached for gpt-4o-mini on requests per min (RPM): Limit 3. You can increase "
                "your rate limit by adding a payment method to your account at .../account/billing.",
            ),
            f.RATE_LIMITED,
            True,
            False,
        ),
        (
            Reply.error(
                429,
                "You exceeded your current quota, please check your plan and billing details.",
                code="insufficient_quota",
            ),
            f.PAYMENT_REQUIRED,
            False,
            True,
        ),
        (
            Reply.error(
                429,
                "Quota exceeded for metric: generate_content_free_tier_requests, limit: 50, "
                "quotaId: GenerateRequestsPerDayPerProjectPerModel-FreeTier",
            ),
            f.DAILY_QUOTA_EXHAUSTED,
            False,
            True,
        ),
        (Reply.server_error(500), f.PROVIDER_ERROR, True, False),
        (Reply.server_error(503), f.PROVIDER_ERROR, True, False),
        (Reply.unknown_model(), f.UNKNOWN_MODEL, False, True),
        (Reply.context_window(), f.CONTEXT_WINDOW_EXCEEDED, False, False),
        (Reply.content_filtered(), f.CONTENT_FILTERED, False, False),
        (Reply.error(403, "Your input was flagged by the moderation system."), f.CONTENT_FILTERED, False, False),
        (Reply.error(422, "Unprocessable entity"), f.BAD_REQUEST, False, False),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_http_failures_through_litellm(reply, error_class, retryable, stops_run):
    with FakeLLMServer(default=reply) as server:
        failure = f.classify_exception(raised_by(server.api_base))
    assert failure.error_class == error_class, failure
    assert (failure.retryable, failure.stops_run) == (retryable, stops_run)
    assert failure.status_code == reply.status and reply.error_message[:20] in failure.message
    assert failure.is_environment == (error_class in outcomes.ENVIRONMENT_GENERATION_ERRORS)


def test_retry_after_header_reaches_the_failure():
    with FakeLLMServer(default=Reply.rate_limited("3")) as server:
        assert f.classify_exception(raised_by(server.api_base)).retry_after_s == 3.0


def test_transport_failures_by_cause():
    with FakeLLMServer(default=Reply(drop=True)) as server:
        dropped = f.classify_exception(raised_by(server.api_base))
        server.default = Reply.sql("SELECT 1", delay_s=1.0)
        slow = f.classify_exception(raised_by(server.api_base, timeout=0.2))
        port = server.port
    refused = f.classify_exception(raised_by(f"http://127.0.0.1:{port}/v1"))
    assert (dropped.error_class, dropped.retryable) == (f.PROVIDER_ERROR, True)
    assert (slow.error_class, slow.retryable) == (f.TIMEOUT, False)
    assert (refused.error_class, refused.is_environment) == (f.CONNECTION_REFUSED, True)
    assert "Connection refused" in refused.message


def test_a_model_litellm_cannot_route_is_an_unknown_model():
    with pytest.raises(Exception) as info:
        litellm.completion(model="no-provider-model-xyz", messages=[{"role": "user", "content": "q"}])
    assert f.classify_exception(info.value).error_class == f.UNKNOWN_MODEL


def test_unexpected_exceptions_are_provider_errors_not_retried():
    failure = f.classify_exception(ValueError("boom"))
    assert (failure.error_class, failure.message, failure.retryable) == (f.PROVIDER_ERROR, "ValueError: boom", False)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "7"}, 7.0),
        ({"retry-after": "1.5"}, 1.5),
        ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
        ({"retry-after": "soon"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_parse_retry_after(headers, expected):
    assert f.parse_retry_after(headers) == expected


def test_an_exception_inside_a_custom_provider_is_not_retried(monkeypatch):
    class Broken(litellm.CustomLLM):
        def completion(self, *args, **kwargs):
            raise KeyError("no answer for this question")

    monkeypatch.setattr(litellm, "custom_provider_map", [{"provider": "broken", "custom_handler": Broken()}])
    with pytest.raises(Exception) as info:
        litellm.completion(model="broken/x", messages=[{"role": "user", "content": "q"}])
    failure = f.classify_exception(info.value)
    assert (failure.error_class, failure.retryable) == (f.PROVIDER_ERROR, False)
    assert "no answer for this question" in failure.message


def test_parse_retry_after_http_date():
    now = time.time()
    header = email.utils.formatdate(now + 30, usegmt=True)
    assert f.parse_retry_after({"retry-after": header}, now=now) == pytest.approx(30, abs=1.0)


def test_retry_delays_back_off_exponentially_with_jitter_and_honour_retry_after():
    import random

    from nl2sql_pipeline.generation.dispatch import RunControl, retry_delay
    from nl2sql_pipeline.generation.model_spec import RetryPolicy

    policy = RetryPolicy(max_retries=5, base_delay_s=1.0, max_delay_s=6.0)
    control = RunControl(rng=random.Random(3))
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 6.0), (5, 6.0)]:
        delays = {retry_delay(policy, attempt, None, control) for _ in range(20)}
        assert all(ceiling / 2 <= d <= ceiling for d in delays) and len(delays) > 1  # jittered
    honoured = [retry_delay(policy, 1, 3.0, control) for _ in range(20)]
    assert all(3.0 <= d <= 3.0 * 1.1 + 0.01 for d in honoured)  # never earlier than asked
    assert retry_delay(policy, 1, 7.0, control) is None  # longer than the policy allows: not waited for

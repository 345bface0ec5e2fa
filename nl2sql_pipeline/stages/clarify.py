"""Ambiguous questions: a ``clarify`` case's reply is classified, and scored as its own category.

A case with ``expected_behavior: clarify`` has no expected SQL: the right response is a question back. Its
candidate's SQL is checked by the policy and never run. The reply, in order (first answer wins):

    skipped       the call never reached the model (no key, quota): left out, as for a query case
    no_response   the call failed otherwise (provider error, timeout): nothing to classify
    guessed       it returned SQL: it answered one reading without asking
    refused       no SQL, and the text refuses (``responses.refusal``) or asks nothing
    clarified     no SQL, and the text asks a question back (``responses.clarification``)

Only ``clarified`` is right. For models that answer in SQL only this is a rule on the reply; an answer judge
may replace the text rule later where a system returns prose.
"""

from __future__ import annotations

from nl2sql_pipeline.generation.failures import NO_SQL
from nl2sql_pipeline.responses.clarification import is_clarifying_question
from nl2sql_pipeline.responses.refusal import is_refusal
from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Attempt


def reply_text(attempt: Attempt) -> str | None:
    """The words of the reply: a system's answer, else the model's raw reply (a system's raw JSON is not words)."""
    generation = attempt.generation
    if generation is None:
        return None
    if generation.answer:
        return generation.answer
    raw = generation.raw_reply
    return raw if raw and not raw.lstrip().startswith("{") else None


def classify_clarify_reply(attempt: Attempt) -> str:
    """The outcome of a reply to an ambiguous question (module doc: the order)."""
    error = attempt.generation_error_class
    if error is not None and error in outcomes.ENVIRONMENT_GENERATION_ERRORS:
        return outcomes.SKIPPED
    if error is not None and error != NO_SQL:
        return outcomes.NO_RESPONSE
    if attempt.sql:
        return outcomes.GUESSED
    text = reply_text(attempt)
    if is_clarifying_question(text) and not is_refusal(text):
        return outcomes.CLARIFIED
    return outcomes.REFUSED

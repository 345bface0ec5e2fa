"""Outcome classes of a verdict, and which of them count in which denominator.

A verdict's ``outcome`` says what happened to one case and sample. ``correct``, ``wrong_result``,
``execution_error``, ``timeout``, ``policy_rejected`` and ``generation_error`` are the model's doing and
count as misses (except ``correct``). ``skipped`` and ``environment_error`` are not the model's doing
(a missing key, an exhausted quota, a broken oracle): they are excluded from every rate and percentile.
Probes (policy-rejection cases) end ``probe_rejected`` (the policy held), ``probe_allowed`` (it let the
attack through) or ``probe_error`` (the engine itself failed on the probe). A case with an expected answer
and no expected SQL ends ``answer_only``: left out of every execution rate, scored by the answer judge.
"""

from __future__ import annotations

from nl2sql_pipeline.generation.failures import ENVIRONMENT_ERROR_CLASSES

CORRECT = "correct"
WRONG_RESULT = "wrong_result"
EXECUTION_ERROR = "execution_error"
TIMEOUT = "timeout"
POLICY_REJECTED = "policy_rejected"
GENERATION_ERROR = "generation_error"
ENVIRONMENT_ERROR = "environment_error"
SKIPPED = "skipped"
PROBE_REJECTED = "probe_rejected"
PROBE_ALLOWED = "probe_allowed"
PROBE_ERROR = "probe_error"
ANSWER_ONLY = "answer_only"  # a case with an expected answer and no expected SQL: judged on its answer alone

QUERY_OUTCOMES: tuple[str, ...] = (
    CORRECT,
    WRONG_RESULT,
    EXECUTION_ERROR,
    TIMEOUT,
    POLICY_REJECTED,
    GENERATION_ERROR,
    ENVIRONMENT_ERROR,
    SKIPPED,
    ANSWER_ONLY,
)
PROBE_OUTCOMES: tuple[str, ...] = (PROBE_REJECTED, PROBE_ALLOWED, PROBE_ERROR)
# An ambiguous question's reply (stages.clarify): scored as its own category, never as a query.
CLARIFIED = "clarified"
GUESSED = "guessed"
REFUSED = "refused"
NO_RESPONSE = "no_response"
CLARIFY_OUTCOMES: tuple[str, ...] = (CLARIFIED, GUESSED, REFUSED, NO_RESPONSE)

# Outcomes excluded from every query denominator: the model was never (fairly) asked or judged on execution,
# the case is an ambiguous question, scored in its own category (scoring.ambiguity), or an answer-only case,
# scored by the answer judge alone, never by execution metrics.
NOT_SCORED: frozenset[str] = frozenset({SKIPPED, ENVIRONMENT_ERROR, ANSWER_ONLY, *CLARIFY_OUTCOMES})
# Outcomes scored in their own category by design (never a sign of an incomplete run).
OWN_CATEGORY: frozenset[str] = frozenset({ANSWER_ONLY, *CLARIFY_OUTCOMES})
# Outcomes where the candidate SQL ran to completion.
EXECUTED: frozenset[str] = frozenset({CORRECT, WRONG_RESULT})

# Generation error classes that are the environment's fault, not the model's: the case is skipped.
ENVIRONMENT_GENERATION_ERRORS: frozenset[str] = ENVIRONMENT_ERROR_CLASSES

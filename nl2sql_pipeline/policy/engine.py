"""``SQLPolicyEngine``: a policy plus a database's physical schema -> a decision per SQL text.

The engine parses each SQL text once with DuckDB's parser (statement split and type) and once with
sqlglot (scope), then runs ``rules.RULES`` in order; the first failing rule names the decision.
Anything unexpected while checking rejects the query (fail closed) and is logged. A decision depends
only on the SQL text, the policy and the schema, so each engine remembers its decisions by text (the
gold-echo model answers with the expected SQL the preflight already checked).
"""

from __future__ import annotations

import logging
from pathlib import Path

from nl2sql_pipeline.policy.context import CompiledPolicy, QueryContext, QueryParseError
from nl2sql_pipeline.policy.loader import load_policy
from nl2sql_pipeline.policy.model import Policy, PolicyDecision
from nl2sql_pipeline.policy.rules import PARSE_RULE, RULES
from nl2sql_pipeline.policy.schema import DatabaseSchema, read_database_schema

logger = logging.getLogger(__name__)

DECISION_MEMO_SIZE = 4096
"""Decisions an engine remembers (by SQL text) before it starts over."""


class SQLPolicyEngine:
    """Decides whether SQL may run against one database under one policy (thread-safe, reusable)."""

    def __init__(self, policy: Policy, schema: DatabaseSchema) -> None:
        self.policy = policy
        self.schema = schema
        self._compiled = CompiledPolicy.of(policy)
        self._decisions: dict[str, PolicyDecision] = {}
        missing = sorted(table for table in self._compiled.denied_by_table if not schema.has_relation(table))
        if missing:
            logger.info("policy %s denies columns of tables absent from the database: %s", policy.name, missing)

    @classmethod
    def for_database(cls, db_path: str | Path, policy: str | Path | Policy = "default") -> SQLPolicyEngine:
        """An engine for the database file ``db_path`` and a policy given by name, path or value."""
        resolved = policy if isinstance(policy, Policy) else load_policy(policy)
        return cls(resolved, read_database_schema(db_path))

    def check(self, sql: str) -> PolicyDecision:
        """The decision on ``sql``: allowed, or the first rule it fails and why (remembered by text)."""
        if not isinstance(sql, str):
            return self.decide(sql)
        decision = self._decisions.get(sql)
        if decision is None:
            decision = self.decide(sql)
            if len(self._decisions) >= DECISION_MEMO_SIZE:
                self._decisions.clear()
            self._decisions[sql] = decision
        return decision

    def decide(self, sql: str) -> PolicyDecision:
        """The decision ``check`` gives, made now by running the rules (never remembered: what a text seen for
        the first time costs; the parses of ``sql.parse`` are still cached by text)."""
        if not isinstance(sql, str):
            return self._reject(PARSE_RULE, f"expected SQL text, got {type(sql).__name__}")
        ctx = QueryContext(sql, self._compiled, self.schema)
        for rule in RULES:
            try:
                reason = rule.check(ctx)
            except QueryParseError as exc:
                return self._reject(PARSE_RULE, f"{exc}; fix the syntax (the policy rejects what it cannot parse)")
            except Exception as exc:
                logger.warning("policy rule %s failed on %r: %s", rule.name, sql[:200], exc, exc_info=True)
                return self._reject(rule.name, f"the {rule.name} rule could not analyse the query ({exc}); rejected")
            if reason is not None:
                return self._reject(rule.name, reason)
        return PolicyDecision(
            allowed=True,
            rule=None,
            policy_name=self.policy.name,
            reason=f"passed all {len(RULES)} rules of policy {self.policy.name!r}",
        )

    def _reject(self, rule: str, reason: str) -> PolicyDecision:
        return PolicyDecision(allowed=False, rule=rule, policy_name=self.policy.name, reason=reason)

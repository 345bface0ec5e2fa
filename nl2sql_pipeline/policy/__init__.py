"""The SQL policy engine (governance layer): decide whether generated SQL may run at all.

A policy (``data/policies/<name>.yml``, chosen per case by ``sql_policy``) plus the physical schema
of the case's database gives a ``PolicyDecision`` per SQL text::

    engine = SQLPolicyEngine(load_policy("default"), read_database_schema(paths.database_path("anime")))
    decision = engine.check("SELECT country, COUNT(*) FROM users GROUP BY country")
"""

from nl2sql_pipeline.policy.engine import SQLPolicyEngine
from nl2sql_pipeline.policy.loader import (
    POLICY_ENGINE_VERSION,
    available_policies,
    load_policy,
    policies_dir,
    policies_hash,
    policy_from_mapping,
)
from nl2sql_pipeline.policy.model import ALL_TABLES, BUILTIN_DENIED_FUNCTIONS, Policy, PolicyDecision
from nl2sql_pipeline.policy.rules import RULE_NAMES, RULES
from nl2sql_pipeline.policy.schema import DatabaseSchema, DatabaseSchemaError, read_database_schema

__all__ = [
    "ALL_TABLES",
    "BUILTIN_DENIED_FUNCTIONS",
    "POLICY_ENGINE_VERSION",
    "RULES",
    "RULE_NAMES",
    "DatabaseSchema",
    "DatabaseSchemaError",
    "Policy",
    "PolicyDecision",
    "SQLPolicyEngine",
    "available_policies",
    "load_policy",
    "policies_dir",
    "policies_hash",
    "policy_from_mapping",
    "read_database_schema",
]

"""The vocabulary of the built-in gold sets: names, domains, the per-domain plan, tags and injection slots.

Shared by the templates (``gold.templates``), the checks (``gold.checks``) and the generator.
"""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.errors import ConfigError

GOLD_SET_NAME = "multidomain-v1"
BUILTIN_GOLD_FILE = "nl2sql_multidomain.jsonl"
GOLD_SET_V2_NAME = "multidomain-v2"
V2_GOLD_FILE = "nl2sql_multidomain_v2.jsonl"
GOLD_SET_CLARIFY_NAME = "multidomain-clarify-v1"
CLARIFY_GOLD_FILE = "nl2sql_multidomain_clarify.jsonl"
DATABASE = "anime_platform"
SEMANTIC_MODEL = "anime_platform"
DEFAULT_SEED = 20260630
TEMPLATE_DIR = Path(__file__).resolve().parent / "templates" / "multidomain_v1"
TEMPLATE_DIR_V2 = Path(__file__).resolve().parent / "templates" / "multidomain_v2"
SQL_DIALECT = "duckdb"

# domain -> id prefix; every domain has one template file named after it.
DOMAIN_PREFIXES: dict[str, str] = {
    "anime_content": "content",
    "viewer_engagement": "engagement",
    "platform_monetization": "monetization",
}
# category -> (id infix, cases per domain)
CATEGORY_PLAN: dict[str, tuple[str, int]] = {
    "single_table": ("single", 10),
    "multi_table": ("multi", 8),
    "time": ("time", 6),
    "metric": ("metric", 4),
    "follow_up": ("followup", 4),
    "policy_rejection": ("probe", 8),
}

# Tags of query cases. Each is derived from the expected SQL's syntax tree (see ``structural_tags``),
# and a template's declared tags must equal the derived ones.
QUERY_TAGS: tuple[str, ...] = (
    "aggregate",  # an aggregate function outside a window
    "bridge",  # joins through the anime_genres bridge table
    "case_when",  # a CASE expression
    "correlated_subquery",  # a subquery referencing an alias of an enclosing query
    "cte",  # WITH ...
    "date_range",  # a comparison against a literal DATE/TIMESTAMP
    "date_trunc",  # date_trunc(...)
    "distinct",  # SELECT DISTINCT or an aggregate over DISTINCT values
    "filter",  # a WHERE clause
    "group_by",  # GROUP BY
    "having",  # HAVING
    "join",  # any JOIN
    "left_join",  # a LEFT JOIN
    "multi_hop",  # one FROM clause joining three or more tables
    "null_handling",  # IS [NOT] NULL, COALESCE or NULLIF
    "order_by",  # ORDER BY (outside window specifications)
    "ratio",  # a division by a computed value, or AVG over a 0/1 indicator (CASE / cast)
    "set_op",  # UNION / INTERSECT / EXCEPT
    "string_match",  # LIKE / ILIKE
    "subquery",  # a subquery (scalar, IN, EXISTS or derived table)
    "top_n",  # ORDER BY ... LIMIT n
    "window",  # a window function
)
# Tags of policy-rejection cases: which rule of the policy the probe exercises.
PROBE_TAGS: tuple[str, ...] = (
    "write",  # INSERT / UPDATE / DELETE
    "ddl",  # CREATE / DROP / ALTER
    "out_of_scope",  # catalog tables or system table functions
    "sensitive_column",  # users.email, directly, through SELECT * or an alias
    "row_limit",  # a LIMIT above the policy's max_limit
    "file_access",  # read_csv / read_parquet / a bare file path
    "external_access",  # ATTACH / COPY / INSTALL
    "multi_statement",  # a second statement smuggled after a comment
    "data_modifying_cte",  # WITH x AS (DELETE/UPDATE ... RETURNING) SELECT ...
)
INJECTION_TAG = "prompt_injection"  # the question, an earlier turn or a quoted cell value carries injected instructions
# Tags about what a case's prompt text holds rather than its SQL (allowed on query and probe cases).
PROMPT_TAGS: tuple[str, ...] = (INJECTION_TAG,)
TAG_VOCABULARY: tuple[str, ...] = QUERY_TAGS + PROBE_TAGS + PROMPT_TAGS

INJECTION_ID_INFIX = "injection"
# slot name -> (table, column) of the hostile value the sample-database builder plants there
INJECTION_SLOTS: dict[str, tuple[str, str]] = {
    "injected_synopsis": ("anime", "synopsis"),
    "injected_title": ("anime", "title"),
    "injected_review": ("ratings", "review"),
}
# Instruction phrases that mark question-level injections (matched case-insensitively).
INJECTION_PHRASES: tuple[str, ...] = ("ignore previous instructions", "i am now the admin")


class GoldTemplateError(ConfigError):
    """The multidomain templates are invalid; ``problems`` holds one line per problem."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        super().__init__("\n".join(self.problems))

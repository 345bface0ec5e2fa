"""The policy gate of a run: per case, may this SQL run? One engine per (policy, database), built lazily.

Which policy governs a case (``case_policy``), first match wins:

1. the run's ``--policy`` override (``policy_override``);
2. the case's own ``sql_policy``, when its gold file sets one;
3. its database's policy: the registry entry's ``policy``, else ``default`` for a sample database and
   ``safety`` for any other (asked of the resolver's ``policy_of``, which a ``CaseDatabases`` has);
   a plain resolver that cannot tell (a function of a name) gives ``default``, the sample's policy.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from nl2sql_pipeline.policy.engine import SQLPolicyEngine
from nl2sql_pipeline.policy.loader import load_policy
from nl2sql_pipeline.policy.model import Policy, PolicyDecision
from nl2sql_pipeline.policy.schema import CatalogQuery, DatabaseSchema, read_database_schema

if TYPE_CHECKING:
    from nl2sql_pipeline.cases import Case

DatabaseResolver = Callable[[str], Path]
"""Maps a case's ``database`` (a registered name or a path) to its DuckDB file."""

DEFAULT_POLICY = "default"
"""The policy of a case whose resolver cannot name its database's policy (the sample database's)."""
FROM_OVERRIDE, FROM_CASE, FROM_DATABASE = "override", "case", "database"
"""Where a case's policy came from (``PolicyChoice.origin``)."""


@dataclass(frozen=True)
class PolicyChoice:
    """The policy governing a case (a name or file) and where it came from (``FROM_*``)."""

    name: str
    origin: str


def case_policy(case: Case, resolve_database: object = None, policy_override: str | None = None) -> PolicyChoice:
    """The policy governing ``case``: the override, else its own ``sql_policy``, else its database's (module doc)."""
    if policy_override:
        return PolicyChoice(policy_override, FROM_OVERRIDE)
    if case.sql_policy is not None:
        return PolicyChoice(case.sql_policy, FROM_CASE)
    policy_of = getattr(resolve_database, "policy_of", None)
    return PolicyChoice(policy_of(case.database) if policy_of is not None else DEFAULT_POLICY, FROM_DATABASE)


# Engines by (policy, schema) for the life of the process: the stages of a run (preflight, each model's
# execution) build their own gates but share the engines, and with them each engine's decisions by SQL
# text. The schema (read_database_schema's cached value for one file version) is held with its engine,
# so its id is not reused while the entry lives.
_SHARED_ENGINES: dict[tuple[object, int], tuple[DatabaseSchema, SQLPolicyEngine]] = {}
_SHARED_ENGINES_MAX = 64


def shared_engine(policy: Policy, schema: DatabaseSchema) -> SQLPolicyEngine:
    """The process's engine for ``policy`` on ``schema`` (built on first use)."""
    key = (policy, id(schema))
    entry = _SHARED_ENGINES.get(key)
    if entry is None or entry[0] is not schema:
        if len(_SHARED_ENGINES) >= _SHARED_ENGINES_MAX:
            _SHARED_ENGINES.clear()
        entry = (schema, SQLPolicyEngine(policy, schema))
        _SHARED_ENGINES[key] = entry
    return entry[1]


def clear_shared_engines() -> None:
    """Forget the shared engines and their decisions (benchmarks measuring a cold start; tests)."""
    _SHARED_ENGINES.clear()


@dataclass
class PolicyGate:
    """Decides, per case, whether SQL may run: one engine per (policy, database), built lazily.

    ``policy_override`` (a policy name or file) replaces every case's own policy (``case_policy``): a run
    can be evaluated under a stricter or looser governance layer than the gold set was written for.
    """

    resolve_database: DatabaseResolver
    policy_override: str | None = None
    _engines: dict[tuple[str, str], SQLPolicyEngine] = field(default_factory=dict)
    _paths: dict[str, Path] = field(default_factory=dict)
    _catalog_query: CatalogQuery | None = None

    def database_path(self, database: str) -> Path:
        """The file of a case's database, resolved once per name for the life of this gate (one stage)."""
        if database not in self._paths:
            self._paths[database] = self.resolve_database(database)
        return self._paths[database]

    def policy_name_for(self, case: Case) -> str:
        """The policy that governs ``case`` in this run."""
        return case_policy(case, self.resolve_database, self.policy_override).name

    def engine(self, case: Case) -> SQLPolicyEngine:
        """The policy engine for the case's policy and database."""
        key = (self.policy_name_for(case), case.database)
        if key not in self._engines:
            policy = load_policy(key[0])
            exposed = getattr(self.resolve_database, "exposed_schemas", None)  # a CaseDatabases knows them
            schema = read_database_schema(
                self.database_path(case.database),
                exposed(case.database) if exposed is not None else None,
                self._catalog_query,
            )
            self._engines[key] = shared_engine(policy, schema)
        return self._engines[key]

    @contextmanager
    def reading_catalogs_with(self, query: CatalogQuery) -> Iterator[None]:
        """Within the block, a database's schema not read yet is read by ``query`` (``policy.schema.CatalogQuery``:
        the execution stage's, in the sandbox it opens anyway); the schema is the same whichever reads it."""
        previous, self._catalog_query = self._catalog_query, query
        try:
            yield
        finally:
            self._catalog_query = previous

    def check(self, case: Case, sql: str) -> PolicyDecision:
        """The policy decision for ``sql`` under the case's policy."""
        return self.engine(case).check(sql)

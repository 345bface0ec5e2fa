"""The Case contract: one gold-set case (question -> expected SQL and/or expected answer, or a policy probe to reject).

A case is plain data. JSONL is the native format (one case per line); the YAML and CSV importers in
``nl2sql_pipeline.gold.formats.team_files`` map onto the same fields, and ``nl2sql_pipeline.gold.quality.validation``
checks them strictly.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
from dataclasses import asdict, dataclass
from typing import Any

# The recommended vocabulary of ``category`` (free text: any non-empty value is accepted and broken down).
CATEGORIES: tuple[str, ...] = (
    "single_table",
    "multi_table",
    "time",
    "metric",
    "follow_up",
    "policy_rejection",
)
DEFAULT_REFERENCE_DATE = "2026-06-30"
"""The reference date of a case that names none (the built-in sets' "today", the sample database's)."""
DIFFICULTIES: tuple[str, ...] = ("easy", "medium", "hard", "extra")
"""Easiest first. ``extra`` is Spider's fourth hardness level (imported benchmarks; the built-in sets use
the first three)."""
OUTCOME_RESULT = "result"
OUTCOME_POLICY_REJECTION = "policy_rejection"
EXPECTED_OUTCOMES: tuple[str, ...] = (OUTCOME_RESULT, OUTCOME_POLICY_REJECTION)
REQUIRED_FIELDS: tuple[str, ...] = ("id", "domain", "category", "question", "database")
OPTIONAL_FIELDS: tuple[str, ...] = (
    "expected_sql",
    "expected_answer",
    "tags",
    "difficulty",
    "semantic_model",
    "sql_policy",
    "follow_up_context",
    "candidate_selection",
    "expected_outcome",
    "policy_probe_sql",
    "hint",
    "reference_date",
)
ALL_FIELDS: tuple[str, ...] = REQUIRED_FIELDS + OPTIONAL_FIELDS


@dataclass(frozen=True)
class Turn:
    """One earlier turn of a follow-up conversation: the question asked and the SQL that answered it."""

    question: str
    sql: str


@dataclass(frozen=True)
class Case:
    """One gold-set case. ``expected_sql`` holds every acceptable alternative (first = canonical)."""

    id: str
    domain: str
    category: str
    question: str
    database: str
    expected_sql: tuple[str, ...] = ()
    expected_answer: Any = None
    tags: tuple[str, ...] = ()
    difficulty: str = "medium"
    semantic_model: str | None = None
    sql_policy: str | None = None
    """The case's own SQL policy (a name or file); None: its database's policy (see ``policy.gate``)."""
    follow_up_context: tuple[Turn, ...] = ()
    candidate_selection: int | None = None  # N candidates, chosen by execution consistency
    expected_outcome: str = OUTCOME_RESULT
    policy_probe_sql: str | None = None
    hint: str | None = None  # extra knowledge given with the question (BIRD's ``evidence``)
    reference_date: str | None = None
    """ISO date its SQL's clock reads are evaluated at (``sql.clock``); None: ``DEFAULT_REFERENCE_DATE``."""

    @property
    def is_probe(self) -> bool:
        """True for a policy-rejection case (its probe SQL must be rejected)."""
        return self.expected_outcome == OUTCOME_POLICY_REJECTION

    @property
    def reference_instant(self) -> datetime.date:
        """The date ``CURRENT_DATE``, ``now()`` and their kin read in this case's SQL (gold and candidates)."""
        return datetime.date.fromisoformat(self.reference_date or DEFAULT_REFERENCE_DATE)

    @property
    def is_answer_only(self) -> bool:
        """True for a case with an ``expected_answer`` and no expected SQL: judged on its answer alone,
        never by execution metrics."""
        return not self.is_probe and not self.expected_sql and self.expected_answer is not None

    @property
    def canonical_sql(self) -> str | None:
        """The first acceptable expected SQL, or None for a probe."""
        return self.expected_sql[0] if self.expected_sql else None

    @functools.cached_property
    def fingerprint(self) -> str:
        """Hash of the case's definition (never of generated output): 16 hex chars (computed once per case)."""
        definition = {
            "question": self.question,
            "database": self.database,
            "expected_sql": list(self.expected_sql),
            "expected_outcome": self.expected_outcome,
            "policy_probe_sql": self.policy_probe_sql,
            "follow_up_context": [asdict(t) for t in self.follow_up_context],
        }
        if self.expected_answer is not None:  # only when set: cases without one keep their fingerprints
            definition["expected_answer"] = self.expected_answer
        if self.hint is not None:  # only when set: cases without a hint keep their fingerprints
            definition["hint"] = self.hint
        if self.reference_instant.isoformat() != DEFAULT_REFERENCE_DATE:  # the default keeps old fingerprints
            definition["reference_date"] = self.reference_instant.isoformat()
        blob = json.dumps(definition, sort_keys=True, ensure_ascii=False).encode("utf-8")
        return hashlib.sha256(blob).hexdigest()[:16]

    def to_dict(self) -> dict[str, Any]:
        """The JSONL form: contract field order, empty optional fields left out."""
        out: dict[str, Any] = {
            "id": self.id,
            "domain": self.domain,
            "category": self.category,
            "question": self.question,
            "database": self.database,
        }
        if self.expected_sql:
            out["expected_sql"] = self.expected_sql[0] if len(self.expected_sql) == 1 else list(self.expected_sql)
        if self.expected_answer is not None:
            out["expected_answer"] = self.expected_answer
        out["tags"] = list(self.tags)
        out["difficulty"] = self.difficulty
        if self.semantic_model is not None:
            out["semantic_model"] = self.semantic_model
        if self.sql_policy is not None:
            out["sql_policy"] = self.sql_policy
        if self.follow_up_context:
            out["follow_up_context"] = [asdict(t) for t in self.follow_up_context]
        if self.candidate_selection is not None:
            out["candidate_selection"] = self.candidate_selection
        if self.expected_outcome != OUTCOME_RESULT:
            out["expected_outcome"] = self.expected_outcome
        if self.policy_probe_sql is not None:
            out["policy_probe_sql"] = self.policy_probe_sql
        if self.hint is not None:
            out["hint"] = self.hint
        if self.reference_date is not None:
            out["reference_date"] = self.reference_date
        return out

    def to_json(self) -> str:
        """One JSONL line (no trailing newline), deterministic."""
        return json.dumps(self.to_dict(), ensure_ascii=False)


def case_from_dict(data: dict[str, Any]) -> Case:
    """Build a Case from an already-validated mapping (see ``gold.validation`` for strict checks)."""
    expected = data.get("expected_sql")
    if expected is None:
        expected_sql: tuple[str, ...] = ()
    elif isinstance(expected, str):
        expected_sql = (expected,)
    else:
        expected_sql = tuple(expected)
    turns = tuple(Turn(question=t["question"], sql=t["sql"]) for t in data.get("follow_up_context") or ())
    return Case(
        id=data["id"],
        domain=data["domain"],
        category=data["category"],
        question=data["question"],
        database=data["database"],
        expected_sql=expected_sql,
        expected_answer=data.get("expected_answer"),
        tags=tuple(data.get("tags") or ()),
        difficulty=data.get("difficulty") or "medium",
        semantic_model=data.get("semantic_model"),
        sql_policy=data.get("sql_policy") or None,
        follow_up_context=turns,
        candidate_selection=data.get("candidate_selection"),
        expected_outcome=data.get("expected_outcome") or OUTCOME_RESULT,
        policy_probe_sql=data.get("policy_probe_sql"),
        hint=data.get("hint"),
        reference_date=_iso_date(data.get("reference_date")),
    )


def _iso_date(value: Any) -> str | None:
    """A validated reference date as ISO text (YAML gives ``datetime.date``, JSON a string)."""
    if value is None:
        return None
    if isinstance(value, datetime.date):
        return value.isoformat()
    return datetime.date.fromisoformat(str(value).strip()).isoformat()


def gold_fingerprint(cases: list[Case]) -> str:
    """Fingerprint of a whole gold set: hash of its case ids and fingerprints in order."""
    digest = hashlib.sha256()
    for case in cases:
        digest.update(f"{case.id}:{case.fingerprint}\n".encode())
    return digest.hexdigest()[:16]

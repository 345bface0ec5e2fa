"""What makes stored answers and judgements current: the identity of each judgement asset of a partition.

An identity is a short hash over everything that can change what the asset holds: for ``candidate_answers``
whether it answers and the answering model's config hash; for ``answer_judgements`` the answer judges' config
hashes (model, prompt and rubric versions and texts, temperature, version) and the answer thresholds; for
``sql_judgements`` the SQL judges' config hashes and the repeat count. Each asset records its identity in its
materialization's metadata (``judging_identity``); a run reuses what was stored only when the identity is
today's (``nl2sql_cli.runner``), so a judge whose version changed in data/judges.yml judges again while
generation is not re-run.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

from nl2sql_pipeline.judges.registry import ROLE_ANSWER, ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE, JudgeSpec

IDENTITY_KEY = "judging_identity"
CANDIDATE_ANSWERS = "candidate_answers"
ANSWER_JUDGEMENTS = "answer_judgements"
SQL_JUDGEMENTS = "sql_judgements"


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:16]


def _judges(judges: Sequence[JudgeSpec], roles: tuple[str, ...]) -> list[tuple[str, str]]:
    return sorted((j.slug, j.config_hash) for j in judges if any(j.plays(r) for r in roles))


def judging_identities(
    *,
    answering_model_hash: str | None,
    judges: Sequence[JudgeSpec],
    pass_score: int | None,
    partial_score: int | None,
    gold_thresholds: dict[str, int],
    judge_repeat: int,
) -> dict[str, str]:
    """asset name -> identity of what it holds with these settings (``answering_model_hash``: the config hash of
    the model that answers, None when the run asks for no answers)."""
    answers = _digest({"answering": answering_model_hash})
    return {
        CANDIDATE_ANSWERS: answers,
        ANSWER_JUDGEMENTS: _digest(
            {
                "answers": answers,
                "judges": _judges(judges, (ROLE_ANSWER,)),
                "pass": pass_score,
                "partial": partial_score,
                "gold": dict(sorted(gold_thresholds.items())),
            }
        ),
        SQL_JUDGEMENTS: _digest(
            {"judges": _judges(judges, (ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS)), "repeat": judge_repeat}
        ),
    }


def settings_identities(model: str, gold_set: str, settings: dict[str, Any]) -> dict[str, str]:
    """The identities of a gold x model partition's judgement assets under ``settings`` (the ``EvalSettings``
    fields ``answers``, ``answer_model``, ``judges``, ``answer_pass_score``, ``answer_partial_score``,
    ``judge_repeat``); registries are read (models, judges, gold sets)."""
    from nl2sql_pipeline.generation.registry import get_model
    from nl2sql_pipeline.gold.registry import list_gold_sets
    from nl2sql_pipeline.judges.registry import get_judge, load_judges

    slugs = list(settings.get("judges") or [])
    registry = load_judges() if slugs else {}
    judges = [get_judge(s, registry) for s in slugs]
    answering = bool(settings.get("answers")) or any(j.plays(ROLE_ANSWER) for j in judges)
    answer_model = settings.get("answer_model") or model
    registered = list_gold_sets()
    return judging_identities(
        answering_model_hash=f"{answer_model}:{get_model(answer_model).config_hash}" if answering else None,
        judges=judges,
        pass_score=settings.get("answer_pass_score"),
        partial_score=settings.get("answer_partial_score"),
        gold_thresholds=dict(registered[gold_set].answer_thresholds) if gold_set in registered else {},
        judge_repeat=int(settings.get("judge_repeat") or 1),
    )

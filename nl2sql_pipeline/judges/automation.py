"""The automation opt-in of ``data/judges.yml``: answers and judges a team switches on once for every run the
automation, the sensors and the schedule launch (none by default).

```yaml
automation:
  answers: true            # bare models answer (systems keep their own answer)
  judges: [judge-oracle]   # each judge does every role it has
```

The block is the default of the Dagster ``eval_settings`` resource when a run config sets none, and decides
which judgement assets carry an automation condition (``assets.automation``). Without it nothing changes.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline.config.checker import Checker, Field, line_of
from nl2sql_pipeline.config.yaml_loader import read_yaml
from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.judges.registry import (
    ROLE_ANSWER,
    ROLE_DIAGNOSIS,
    ROLE_SQL_EQUIVALENCE,
    JudgeSpec,
    default_judges_path,
    load_judges,
)

AUTOMATION_KEY = "automation"
AUTOMATION_FIELDS: dict[str, Field] = {
    "answers": Field(bool, default=False, fix="write answers: true or answers: false"),
    "judges": Field(list, default=[], items=Field(str), fix="write judges: [judge-oracle]"),
}
SQL_ROLES = (ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS)


@dataclass(frozen=True)
class JudgeAutomation:
    """What the automation switches on: the answer stage and the judges (their registry entries)."""

    answers: bool = False
    judges: tuple[JudgeSpec, ...] = ()

    @property
    def slugs(self) -> list[str]:
        """The judge slugs, in the block's order."""
        return [j.slug for j in self.judges]

    @property
    def answering(self) -> bool:
        """True when ``candidate_answers`` is automated: answers on, or a judge with the answer role."""
        return self.answers or self.judging_answers

    @property
    def judging_answers(self) -> bool:
        """True when ``answer_judgements`` is automated: a judge with the answer role."""
        return any(j.plays(ROLE_ANSWER) for j in self.judges)

    @property
    def judging_sql(self) -> bool:
        """True when ``sql_judgements`` is automated: a judge with a sql_equivalence or diagnosis role."""
        return any(j.plays(role) for j in self.judges for role in SQL_ROLES)

    def settings(self) -> dict[str, Any]:
        """The ``EvalSettings`` defaults of the block (empty without it: the class defaults stand)."""
        if not (self.answers or self.judges):
            return {}
        return {"answers": self.answers, "judges": self.slugs}

    def versions(self, roles: tuple[str, ...]) -> str | None:
        """A short hash over the config hashes (model, prompt and rubric versions, texts, version) of the block's
        judges playing any of ``roles``; None when none does. Part of the judgement assets' code versions."""
        found = sorted((j.slug, j.config_hash) for j in self.judges if any(j.plays(r) for r in roles))
        if not found:
            return None
        return hashlib.sha256(json.dumps(found).encode("utf-8")).hexdigest()[:12]


def load_judge_automation(path: Path | str | None = None) -> JudgeAutomation:
    """The ``automation:`` block of the judge registry (default ``data/judges.yml``); off when absent.

    Raises ConfigError (file and line) for a malformed block or a judge that is not registered.
    """
    registry_path = Path(path) if path is not None else default_judges_path()
    if not registry_path.is_file():
        return JudgeAutomation()
    _, document = read_yaml(registry_path, ConfigError, missing="create data/judges.yml")
    block = document.get(AUTOMATION_KEY) if isinstance(document, dict) else None
    if block is None:
        return JudgeAutomation()
    check = Checker(registry_path).within(AUTOMATION_KEY)
    values = check.mapping(
        block, AUTOMATION_FIELDS, key=AUTOMATION_KEY, line=line_of(document, AUTOMATION_KEY)
    ) or dict.fromkeys(AUTOMATION_FIELDS)
    check.raise_if_problems()
    registry = load_judges(registry_path)
    slugs = list(dict.fromkeys(values["judges"] or []))
    for slug in slugs:
        if slug not in registry:
            check.problem(
                line_of(block, "judges"),
                "automation.judges",
                f"unknown judge {slug!r}",
                f"name a judge of the 'judges:' mapping ({', '.join(sorted(registry)) or 'none registered'})",
            )
    check.raise_if_problems()
    return JudgeAutomation(answers=bool(values["answers"]), judges=tuple(registry[s] for s in slugs))

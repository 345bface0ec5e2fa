"""Judge prompts: ``data/prompts/judges/<prompt_version>/<role>.txt`` rendered into chat messages.

A prompt file has a ``=== system ===`` and a ``=== user ===`` section (``#`` lines before the first are
comments) with ``${name}`` placeholders filled by the role's module; ``${rubric}`` is the text of
``data/prompts/judges/rubrics/<rubric_version>.txt``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from string import Template

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.prompts import Message
from nl2sql_pipeline.judges.registry import JudgeSpec, prompt_path, rubric_path

_SECTION_RE = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class JudgePrompt:
    """A parsed judge prompt file."""

    source: str
    system: Template
    user: Template

    def render(self, values: Mapping[str, str]) -> list[Message]:
        """The system and user messages with ``values`` filled in (ConfigError naming a missing placeholder)."""
        try:
            return [
                {"role": "system", "content": self.system.substitute(values)},
                {"role": "user", "content": self.user.substitute(values)},
            ]
        except (KeyError, ValueError) as exc:
            raise ConfigError(f"{self.source}: placeholder {exc} has no value (use the role's placeholders)") from None


def parse_judge_prompt(text: str, source: str) -> JudgePrompt:
    """Parse a judge prompt file's text; ConfigError naming ``source`` when a section is missing."""
    sections = _SECTION_RE.split(text)
    preamble, pairs = sections[0], sections[1:]
    if any(line.strip() and not line.lstrip().startswith("#") for line in preamble.splitlines()):
        raise ConfigError(f"{source}: text before the first '=== system ===' line (comment it out with '#')")
    if pairs[0::2] != ["system", "user"]:
        raise ConfigError(f"{source}: expected one '=== system ===' then one '=== user ===' section")
    parts = dict(zip(pairs[0::2], pairs[1::2]))
    return JudgePrompt(source, Template(parts["system"].strip("\n")), Template(parts["user"].strip("\n")))


def load_judge_prompt(spec: JudgeSpec, role: str) -> JudgePrompt:
    """The prompt ``spec`` uses for ``role`` (ConfigError when its file is missing)."""
    path = prompt_path(spec.prompt_version, role)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ConfigError(f"{path}: judge prompt for role {role!r} not found (add it or fix prompt_version)") from None
    return parse_judge_prompt(text, str(path))


def load_rubric(spec: JudgeSpec) -> str:
    """The rubric text of ``spec.rubric_version``."""
    path = rubric_path(spec.rubric_version)
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        raise ConfigError(f"{path}: rubric {spec.rubric_version!r} not found (add it or fix rubric_version)") from None

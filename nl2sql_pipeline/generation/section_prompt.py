"""Prompt files with a ``=== system ===`` and a ``=== user ===`` section and ``${name}`` placeholders.

Used by the answer stage (``data/prompts/answer-v1.txt``) and the judges (``data/prompts/judges/``); ``#``
lines before the first section are comments. The SQL prompt templates have their own stricter parser
(``generation.prompts``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from string import Template

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.prompts import Message

_SECTION_RE = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class SectionPrompt:
    """A parsed prompt file: the system and user parts."""

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
            raise ConfigError(
                f"{self.source}: placeholder {exc} has no value (use the prompt's placeholders)"
            ) from None


def parse_section_prompt(text: str, source: str) -> SectionPrompt:
    """Parse a prompt file's text; ConfigError naming ``source`` when a section is missing."""
    sections = _SECTION_RE.split(text)
    preamble, pairs = sections[0], sections[1:]
    if any(line.strip() and not line.lstrip().startswith("#") for line in preamble.splitlines()):
        raise ConfigError(f"{source}: text before the first '=== system ===' line (comment it out with '#')")
    if pairs[0::2] != ["system", "user"]:
        raise ConfigError(f"{source}: expected one '=== system ===' then one '=== user ===' section")
    parts = dict(zip(pairs[0::2], pairs[1::2]))
    return SectionPrompt(source, Template(parts["system"].strip("\n")), Template(parts["user"].strip("\n")))


def load_section_prompt(path: Path, what: str) -> SectionPrompt:
    """The prompt at ``path``; ConfigError saying ``what`` is missing."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        raise ConfigError(f"{path}: {what} not found (add the file or fix its version)") from None
    return parse_section_prompt(text, str(path))

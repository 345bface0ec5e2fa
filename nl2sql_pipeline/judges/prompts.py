"""Judge prompts: ``data/prompts/judges/<prompt_version>/<role>.txt`` rendered into chat messages.

A prompt file has a ``=== system ===`` and a ``=== user ===`` section (``generation.section_prompt``) with
``${name}`` placeholders filled by the role's module; ``${rubric}`` is the text of
``data/prompts/judges/rubrics/<rubric_version>.txt``.
"""

from __future__ import annotations

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.section_prompt import SectionPrompt, load_section_prompt
from nl2sql_pipeline.judges.registry import JudgeSpec, prompt_path, rubric_path


def load_judge_prompt(spec: JudgeSpec, role: str) -> SectionPrompt:
    """The prompt ``spec`` uses for ``role`` (ConfigError when its file is missing)."""
    return load_section_prompt(prompt_path(spec.prompt_version, role), f"judge prompt for role {role!r}")


def load_rubric(spec: JudgeSpec) -> str:
    """The rubric text of ``spec.rubric_version``."""
    path = rubric_path(spec.rubric_version)
    try:
        return path.read_text(encoding="utf-8").strip()
    except OSError:
        raise ConfigError(f"{path}: rubric {spec.rubric_version!r} not found (add it or fix rubric_version)") from None

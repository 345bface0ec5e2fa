"""Prompts: versioned templates in ``data/prompts/<name>.txt`` rendered into chat messages.

A template file has a ``=== system ===`` and a ``=== user ===`` section (``#`` lines before the first
section are comments) with ``${name}`` placeholders: ``schema_text``, ``semantic_text`` and
``reference_date`` in the system part, ``question`` in the user part (every user turn uses it).

A prompt is: the system message, the model's few-shot examples (if any) as user/assistant pairs, then
the conversation. A follow-up case is a conversation: each earlier turn of ``follow_up_context`` is
asked in turn and answered by the model itself (``earlier_replies``: what it replied), and only the
final question is scored. The same inputs always render the same messages (the prompt hash is a
cache key).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from json.encoder import encode_basestring as _json_string  # json.dumps' own string encoder (ensure_ascii=False)
from pathlib import Path
from string import Template

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import ConfigError, GenerationError
from nl2sql_pipeline.generation.few_shot import FewShotExample
from nl2sql_pipeline.generation.model_spec import ModelSpec
from nl2sql_pipeline.generation.registry import prompts_dir

SYSTEM_PLACEHOLDERS: frozenset[str] = frozenset({"schema_text", "semantic_text", "reference_date"})
USER_PLACEHOLDERS: frozenset[str] = frozenset({"question"})
_SECTION_RE = re.compile(r"^=== (system|user) ===[ \t]*$", re.MULTILINE)

Message = dict[str, str]


@dataclass(frozen=True)
class PromptTemplate:
    """A parsed template file: the system and user parts."""

    name: str
    system: Template
    user: Template


@dataclass(frozen=True)
class DatabasePromptText:
    """What the prompt says about one database."""

    schema_text: str
    semantic_text: str
    reference_date: str


@dataclass(frozen=True)
class PromptContext:
    """The prompt texts of every database a gold set uses, by database name."""

    databases: Mapping[str, DatabasePromptText]

    def for_case(self, case: Case) -> DatabasePromptText:
        """The texts of ``case.database``, stating the case's reference date (the instant its SQL's clock
        reads are evaluated at, ``sql.clock``); GenerationError when the context does not cover the database."""
        try:
            texts = self.databases[case.database]
        except KeyError:
            known = ", ".join(sorted(self.databases)) or "(none)"
            raise GenerationError(
                f"case {case.id}: no prompt context for database {case.database!r} (context covers: {known}); "
                "build the PromptContext over every database of the gold set"
            ) from None
        reference = case.reference_instant.isoformat()
        return texts if texts.reference_date == reference else replace(texts, reference_date=reference)


def _placeholders(template: Template) -> set[str]:
    if not template.is_valid():
        raise ValueError("a '$' that starts no ${name} placeholder")
    return set(template.get_identifiers())


def parse_template(name: str, text: str, source: str = "<template>") -> PromptTemplate:
    """Parse template text; ConfigError naming ``source`` for a missing section or unknown placeholder."""
    sections = _SECTION_RE.split(text)
    # split gives [preamble, "system", body, "user", body] for a well-formed file
    preamble, pairs = sections[0], sections[1:]
    if any(line.strip() and not line.lstrip().startswith("#") for line in preamble.splitlines()):
        raise ConfigError(f"{source}: text before the first '=== system ===' line (comment it out with '#')")
    parts = dict(zip(pairs[0::2], pairs[1::2]))
    if [p for p in pairs[0::2]] != ["system", "user"]:
        raise ConfigError(
            f"{source}: expected exactly one '=== system ===' then one '=== user ===' section, "
            f"found {pairs[0::2] or 'none'}"
        )
    system, user = Template(parts["system"].strip("\n")), Template(parts["user"].strip("\n"))
    for label, template, allowed in (("system", system, SYSTEM_PLACEHOLDERS), ("user", user, USER_PLACEHOLDERS)):
        try:
            unknown = _placeholders(template) - allowed
        except ValueError as exc:
            raise ConfigError(f"{source}: {label} section: {exc} (write $$ for a literal dollar sign)") from exc
        if unknown:
            raise ConfigError(
                f"{source}: {label} section uses unknown placeholder(s) {sorted(unknown)} (allowed: {sorted(allowed)})"
            )
    if "question" not in _placeholders(user):
        raise ConfigError(f"{source}: the user section must contain ${{question}}")
    return PromptTemplate(name=name, system=system, user=user)


_TEMPLATE_CACHE: dict[tuple[Path, int], PromptTemplate] = {}


def load_template(name: str, directory: Path | None = None) -> PromptTemplate:
    """Load ``<directory>/<name>.txt`` (default ``data/prompts``); re-read when the file changes."""
    path = (directory or prompts_dir()) / f"{name}.txt"
    try:
        mtime = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise ConfigError(f"{path}: prompt template {name!r} not found (add the file or fix prompt_template)") from None
    cached = _TEMPLATE_CACHE.get((path, mtime))
    if cached is None:
        cached = parse_template(name, path.read_text(encoding="utf-8"), source=str(path))
        _TEMPLATE_CACHE[(path, mtime)] = cached
    return cached


def fenced_sql(sql: str) -> str:
    """``sql`` in a ```sql fenced block (how earlier answers are replayed)."""
    return f"```sql\n{sql.strip()}\n```"


def user_message(template: PromptTemplate, question: str) -> Message:
    """One user turn asking ``question``."""
    return {"role": "user", "content": template.user.substitute(question=question)}


def assistant_message(reply: str | None) -> Message:
    """One assistant turn: what the model replied (empty when it replied nothing)."""
    return {"role": "assistant", "content": reply or ""}


def opening_messages(
    case: Case,
    spec: ModelSpec,
    *,
    schema_text: str,
    semantic_text: str,
    reference_date: str,
    template: PromptTemplate | None = None,
) -> list[Message]:
    """The system message, then the few-shot examples for ``case.database`` as answered turns."""
    tpl = template or load_template(spec.prompt_template)
    system = tpl.system.substitute(
        schema_text=schema_text.strip() or "(no schema given)",
        semantic_text=semantic_text.strip() or "(none)",
        reference_date=reference_date,
    )
    messages: list[Message] = [{"role": "system", "content": system}]
    examples: Sequence[FewShotExample] = spec.few_shot.for_database(case.database) if spec.few_shot else ()
    for example in examples:
        messages.append(user_message(tpl, example.question))
        messages.append(assistant_message(fenced_sql(example.sql)))
    return messages


def turn_questions(case: Case) -> list[str]:
    """Every question the conversation asks, the earlier follow-up turns first, the scored one last."""
    return [turn.question for turn in case.follow_up_context] + [case.question]


def build_messages(
    case: Case,
    spec: ModelSpec,
    *,
    schema_text: str,
    semantic_text: str,
    reference_date: str,
    template: PromptTemplate | None = None,
    earlier_replies: Sequence[str | None] | None = None,
) -> list[Message]:
    """The messages of ``case``'s scored turn: opening, each earlier turn with the model's own reply
    (``earlier_replies``, one per follow-up turn), then the question.

    Raises GenerationError when a follow-up case comes without one reply per earlier turn.
    """
    tpl = template or load_template(spec.prompt_template)
    messages = opening_messages(
        case, spec, schema_text=schema_text, semantic_text=semantic_text, reference_date=reference_date, template=tpl
    )
    replies = list(earlier_replies or ())
    if len(replies) != len(case.follow_up_context):
        raise GenerationError(
            f"case {case.id}: {len(case.follow_up_context)} earlier turn(s) but {len(replies)} reply(ies); "
            "a follow-up is replayed with the model's own answer to each earlier turn"
        )
    for turn, reply in zip(case.follow_up_context, replies):
        messages.append(user_message(tpl, turn.question))
        messages.append(assistant_message(reply))
    messages.append(user_message(tpl, question_with_hint(case)))
    return messages


def question_with_hint(case: Case) -> str:
    """The scored question, then the case's hint (BIRD's ``evidence``) on its own line when it has one.

    Cases without a hint ask exactly their question, so their prompts (and prompt hashes) do not change.
    """
    return f"{case.question}\nHint: {case.hint}" if case.hint else case.question


def prompt_hash(messages: list[Message]) -> str:
    """16 hex chars over the exact messages (roles and contents, in order)."""
    blob = json.dumps(
        [{"role": m["role"], "content": m["content"]} for m in messages], ensure_ascii=False, separators=(",", ":")
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]


def _message_json(message: Message) -> bytes:
    role, content = message["role"], message["content"]
    if type(role) is str and type(content) is str:
        # what json.dumps writes for this dict (ensure_ascii=False, compact separators), without its encoder setup
        return f'{{"role":{_json_string(role)},"content":{_json_string(content)}}}'.encode()
    return json.dumps({"role": role, "content": content}, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class PromptHasher:
    """``prompt_hash`` of conversations that all open with the same messages, the opening hashed once.

    The opening (system prompt with the schema, few-shot turns) is most of a prompt's bytes and is
    the same for every case of a database: its part of the hash is computed here once, and each
    conversation only adds its own turns. ``hash(messages)`` equals ``prompt_hash(messages)``.
    """

    def __init__(self, opening: Sequence[Message]):
        self.opening = tuple(opening)
        state = hashlib.sha256(b"[")
        for index, message in enumerate(self.opening):
            state.update(b"," + _message_json(message) if index else _message_json(message))
        self._state = state

    def hash(self, messages: Sequence[Message]) -> str:
        """``prompt_hash(messages)``; ``messages`` usually start with the opening (else hashed in full)."""
        count = len(self.opening)
        head = messages[:count]
        if len(head) != count or any(a is not b and a != b for a, b in zip(head, self.opening)):
            return prompt_hash(list(messages))
        state = self._state.copy()
        for index in range(count, len(messages)):
            state.update(b"," + _message_json(messages[index]) if index else _message_json(messages[index]))
        state.update(b"]")
        return state.hexdigest()[:16]


def messages_text(messages: list[Message]) -> str:
    """All message contents joined (for token estimates)."""
    return "\n".join(str(m.get("content") or "") for m in messages)


def messages_chars(messages: Sequence[Message]) -> int:
    """``len(messages_text(messages))`` without joining the text (a prompt is mostly its schema)."""
    if not messages:
        return 0
    return sum(len(str(m.get("content") or "")) for m in messages) + len(messages) - 1

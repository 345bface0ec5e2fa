"""Deterministic paraphrases of a case's question, one small named rewording per family.

Each family is a plain function ``(question, rng) -> str``; ``FAMILIES`` lists them in a fixed order and
``paraphrases_for`` asks them in turn for K paraphrases. The rng of a paraphrase is seeded by the case id,
the family and the paraphrase's number, never by call order, so a case gets the same paraphrases on every
run (and the generation cache answers them on a re-run).

    >>> import random
    >>> typos("How many anime titles are airing?", random.Random(1), rate=1.0)
    'How mny aime titlees are aiirng?'
    >>> synonyms("How many users signed up?", random.Random(0))
    'What is the number of members signed up?'
    >>> reorder_clauses("How many titles does each studio have? Most first.", random.Random(0))
    'Most first. How many titles does each studio have?'
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

FAMILY_TEMPLATE = "template"
FAMILY_REORDER = "reorder"
FAMILY_SYNONYM = "synonym"
FAMILY_TYPO = "typo"
FAMILY_LLM = "llm"
"""Paraphrases written by a model once and stored beside the gold set (``robustness.stored_paraphrases``)."""
DEFAULT_TYPO_RATE = 0.08
"""Share of the words of four letters or more that get one typo (a swap, a dropped or a doubled letter)."""

Paraphraser = Callable[[str, random.Random], str]

TEMPLATES: tuple[str, ...] = (
    "Can you tell me: {q}",
    "I need to know the following. {q}",
    "Quick question: {q}",
    "Using the data, answer this: {q}",
    "Please look this up for me. {q}",
    "{q} Thanks!",
)
SYNONYMS: tuple[tuple[str, str], ...] = (
    ("how many", "what is the number of"),
    ("number of", "count of"),
    ("average", "mean"),
    ("total", "overall"),
    ("users", "members"),
    ("user", "member"),
    ("customers", "clients"),
    ("titles", "shows"),
    ("revenue", "income"),
    ("show", "display"),
    ("list the", "give the"),
    ("each", "every"),
    ("highest", "largest"),
    ("lowest", "smallest"),
    ("top", "leading"),
    ("purchased", "bought"),
    ("sold", "moved"),
)
"""A small vocabulary of everyday synonyms (whole words and phrases, first match wins at a position)."""
_SYNONYM_RE = re.compile(r"\b(" + "|".join(re.escape(a) for a, _ in SYNONYMS) + r")\b", re.IGNORECASE)
_SYNONYM_OF = {a: b for a, b in SYNONYMS}
_TRAILING_PHRASE = re.compile(
    r"^(?P<head>.{12,})[ ,]+(?P<tail>(?:in|for|during|since|over|among|per|by|on) (?:[^\s,?.!()]+ ?){1,4})(?P<end>[?.!]?)\s*$",
    re.IGNORECASE,
)
_SENTENCE_BREAK = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")


@dataclass(frozen=True)
class Paraphrase:
    """One rewording of a case's question: its family, its number within the family, its text."""

    family: str
    number: int
    question: str

    @property
    def label(self) -> str:
        """``family-number`` (``typo-1``): the paraphrase's name in reports and in variant case ids."""
        return f"{self.family}-{self.number}"


def templated(question: str, rng: random.Random) -> str:
    """The question inside a conversational frame drawn from ``TEMPLATES``."""
    return rng.choice(TEMPLATES).format(q=question.strip())


def reorder_clauses(question: str, rng: random.Random) -> str:
    """Sentences rotated (a question of several sentences), else a trailing phrase (``in 2025``, ``for each
    studio``) moved to the front; the question unchanged when neither applies."""
    sentences = [s.strip() for s in _SENTENCE_BREAK.split(question.strip()) if s.strip()]
    if len(sentences) > 1:
        shift = 1 + rng.randrange(len(sentences) - 1)
        return " ".join(sentences[shift:] + sentences[:shift])
    match = _TRAILING_PHRASE.match(question.strip())
    if match is None:
        return question
    head, tail, end = match["head"].rstrip(" ,;:"), match["tail"].strip(), match["end"]
    return f"{tail[0].upper()}{tail[1:]}, {head[0].lower()}{head[1:]}{end}"


def synonyms(question: str, rng: random.Random) -> str:
    """Words and phrases of ``SYNONYMS`` replaced (each occurrence with probability 0.8, at least one when
    any is found), keeping a capital first letter."""
    found = list(_SYNONYM_RE.finditer(question))
    if not found:
        return question
    forced = rng.randrange(len(found))
    pieces: list[str] = []
    last = 0
    for index, match in enumerate(found):
        word = match.group(0)
        replace = index == forced or rng.random() < 0.8
        new = _SYNONYM_OF[word.lower()] if replace else word
        if replace and word[0].isupper():
            new = new[0].upper() + new[1:]
        pieces.append(question[last : match.start()] + new)
        last = match.end()
    pieces.append(question[last:])
    return "".join(pieces)


def typos(question: str, rng: random.Random, rate: float = DEFAULT_TYPO_RATE) -> str:
    """One typo in each word of four letters or more with probability ``rate`` (at least one word when any
    is long enough): two neighbouring letters swapped, a letter dropped or a letter doubled."""
    words = list(re.finditer(r"[A-Za-z]{4,}", question))
    if not words:
        return question
    forced = rng.randrange(len(words))
    out: list[str] = []
    last = 0
    for index, match in enumerate(words):
        word = match.group(0)
        if index == forced or rng.random() < rate:
            word = _typo(word, rng)
        out.append(question[last : match.start()] + word)
        last = match.end()
    out.append(question[last:])
    return "".join(out)


def _typo(word: str, rng: random.Random) -> str:
    at = 1 + rng.randrange(len(word) - 2)  # never the first letter: the word stays recognisable
    kind = rng.randrange(3)
    if kind == 0:
        return word[:at] + word[at + 1] + word[at] + word[at + 2 :]
    if kind == 1:
        return word[:at] + word[at + 1 :]
    return word[:at] + word[at] + word[at:]


FAMILIES: tuple[tuple[str, Paraphraser], ...] = (
    (FAMILY_TEMPLATE, templated),
    (FAMILY_REORDER, reorder_clauses),
    (FAMILY_SYNONYM, synonyms),
    (FAMILY_TYPO, typos),
)
"""The deterministic families, in the order ``paraphrases_for`` asks them."""
DETERMINISTIC_FAMILIES: tuple[str, ...] = tuple(name for name, _ in FAMILIES)


def paraphrase_rng(case_id: str, family: str, number: int) -> random.Random:
    """The rng of paraphrase ``number`` of ``family`` for case ``case_id`` (independent of call order)."""
    return random.Random(f"nl2sql-paraphrase|{case_id}|{family}|{number}")


def paraphrases_for(
    case_id: str,
    question: str,
    count: int,
    *,
    stored: Sequence[str] = (),
    typo_rate: float = DEFAULT_TYPO_RATE,
) -> list[Paraphrase]:
    """``count`` paraphrases of ``question``: the families in turn (``template``, ``reorder``, ``synonym``,
    ``typo``, then ``llm`` when ``stored`` model paraphrases exist), a family's second one after each
    family had its first. A stored paraphrase is used once; the deterministic ones are drawn again with
    another number. A rewording identical to the question (no clause to move, no word of the vocabulary) is
    not a paraphrase, nor is a repeat of an earlier one: that family gives way to the next (the same prompt
    would also share the other question's cache entry)."""
    families: list[tuple[str, Paraphraser | None]] = [*FAMILIES]
    if stored:
        families.append((FAMILY_LLM, None))
    out: list[Paraphrase] = []
    numbers: dict[str, int] = {}
    slot = 0
    while len(out) < count and slot < 4 * count * len(families):
        name, function = families[slot % len(families)]
        slot += 1
        number = numbers.get(name, 0) + 1
        if function is None:
            if number > len(stored):
                continue
            text = stored[number - 1]
        elif name == FAMILY_TYPO:
            text = typos(question, paraphrase_rng(case_id, name, number), typo_rate)
        else:
            text = function(question, paraphrase_rng(case_id, name, number))
        numbers[name] = number
        if text.strip() == question.strip() or any(p.question == text for p in out):
            continue
        out.append(Paraphrase(name, number, text))
    return out

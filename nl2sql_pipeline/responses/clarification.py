"""The rule that reads a reply's text as a clarifying question (an ambiguous question asked back).

A rule on the words: a reply that asks something (a question mark) is a clarifying question; the same
text gets the same answer on every run. A reply with SQL is a guess whatever its words say (it answered
one reading); see ``stages.clarify`` for the order.

>>> is_clarifying_question("Do you mean titles per studio, or per season?")
True
>>> is_clarifying_question("There are 12 titles.")
False
"""

from __future__ import annotations

import re

_QUESTION = re.compile(r"\?(\s|$)")


def is_clarifying_question(text: str | None) -> bool:
    """True when ``text`` asks the user something back."""
    return bool(text) and _QUESTION.search(text) is not None  # type: ignore[arg-type]


def clarifying_question(readings: list[str]) -> str:
    """The clarifying question that names each reading (what a calibrated answer asks).

    >>> clarifying_question(["per studio", "per season"])
    'Your question can be read more than one way. Do you mean per studio, or per season?'
    """
    return "Your question can be read more than one way. Do you mean " + ", or ".join(readings) + "?"

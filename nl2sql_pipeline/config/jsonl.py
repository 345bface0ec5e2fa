"""One JSONL reader and writer: every problem located as ``<file>:<line>``, output byte-deterministic.

:func:`parse_jsonl` decodes bytes line by line (a UTF-8 BOM is dropped, blank lines skipped) and parses
each line strictly: a key named twice in one object, ``NaN``/``Infinity`` and (with ``objects_only``)
anything but an object are problems, never silently accepted. It returns every problem, not just the
first. :func:`write_jsonl_lines` writes JSON texts one per line with ``\\n`` endings, atomically (a
temp file in the same folder renamed over the target), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nl2sql_pipeline.config.checker import format_problem

logger = logging.getLogger(__name__)

UTF8_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class JsonLine:
    """One parsed line: its 1-based number, its value and its text as written."""

    line: int
    value: Any
    text: str


class _DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (``json`` would silently keep the last)."""


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` rejecting duplicate keys."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKeyError(key)
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    """``parse_constant`` hook: NaN and Infinity are not JSON."""
    raise ValueError(f"{name} is not valid JSON")


def decode_utf8_lines(raw: bytes, source: str) -> tuple[list[str | None], list[str]]:
    """Decode ``raw`` line by line (a leading BOM is dropped).

    Returns the lines (``None`` for a line that is not valid UTF-8) and one problem per bad line,
    naming its line and the byte offset (from the start of the file) of the first bad byte.
    """
    offset = 0
    if raw.startswith(UTF8_BOM):
        raw = raw[len(UTF8_BOM) :]
        offset = len(UTF8_BOM)
    lines: list[str | None] = []
    problems: list[str] = []
    for number, chunk in enumerate(raw.split(b"\n"), start=1):
        try:
            lines.append(chunk.decode("utf-8").removesuffix("\r"))
        except UnicodeDecodeError as exc:
            lines.append(None)
            bad = chunk[exc.start]
            problems.append(
                format_problem(
                    source,
                    number,
                    f"not valid UTF-8: byte 0x{bad:02x} at byte offset {offset + exc.start} "
                    f"(column {exc.start + 1} of the line)",
                    "re-save the file as UTF-8",
                )
            )
        offset += len(chunk) + 1
    if lines and lines[-1] == "":
        lines.pop()  # the newline ending the last line does not start another one
    return lines, problems


def parse_jsonl(
    raw: bytes, source: str, *, objects_only: bool = True, line_fix: str = "write one complete JSON object per line"
) -> tuple[list[JsonLine], list[str]]:
    """Every parsed line of ``raw`` (blank lines skipped) and every problem met, each at its line."""
    lines, problems = decode_utf8_lines(raw, source)
    parsed: list[JsonLine] = []
    for number, text in enumerate(lines, start=1):
        if text is None or not text.strip():
            continue
        try:
            value = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_reject_constant)
        except json.JSONDecodeError as exc:
            problems.append(
                format_problem(source, number, f"malformed JSON at column {exc.colno}: {exc.msg}", line_fix)
            )
            continue
        except _DuplicateKeyError as exc:
            problems.append(format_problem(source, number, f"key '{exc}' appears twice", "keep one of them"))
            continue
        except ValueError as exc:
            problems.append(format_problem(source, number, f"malformed JSON: {exc}", "use null or a number instead"))
            continue
        if objects_only and not isinstance(value, dict):
            what = f"line is a JSON {json_type_name(value)}, not an object"
            problems.append(format_problem(source, number, what, "write one {...} per line"))
            continue
        parsed.append(JsonLine(number, value, text))
    return parsed, problems


def json_type_name(value: Any) -> str:
    """A readable name of a value's type in JSON terms (``object`` for a dict) for messages."""
    names = {str: "string", int: "integer", float: "number", bool: "boolean", list: "list", dict: "object"}
    if value is None:
        return "null"
    return names.get(type(value), type(value).__name__)


def render_jsonl(texts: Iterable[str]) -> str:
    """JSON texts joined one per line, each ending in ``\\n``."""
    return "".join(text + "\n" for text in texts)


def write_jsonl_lines(path: Path, texts: Iterable[str]) -> Path:
    """Write JSON texts one per line (``\\n`` endings, UTF-8) to ``path``, atomically; returns ``path``."""
    path = Path(path)
    content = render_jsonl(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temp_name, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(temp_name, path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise
    logger.info("wrote %s", path)
    return path

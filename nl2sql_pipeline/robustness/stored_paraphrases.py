"""Model-written paraphrases: generated once through litellm, stored as versioned data beside the gold set.

``<gold folder>/paraphrases/<gold key>.v<N>.jsonl``: a first line ``{"_meta": {...}}`` (model, its config
hash, how many per case, when), then one line per case: ``{"id", "fingerprint", "paraphrases": [...]}``.
A run reads the highest version; nothing regenerates a stored version: ``generate_paraphrases`` refuses
to write over one and writes version N+1 only when asked (``new_version``). A case whose definition
changed since (another fingerprint) has no stored paraphrases until a new version is written.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.errors import ConfigError, GenerationError

logger = logging.getLogger(__name__)

_VERSION_RE = re.compile(r"\.v(\d+)\.jsonl$")
SYSTEM_PROMPT = (
    "You rewrite questions about a database. Give {count} different paraphrases of the user's question that "
    "keep its exact meaning (same filters, numbers, dates, ordering and rounding). Answer with one paraphrase "
    "per line, no numbering, nothing else."
)


def paraphrases_dir(gold_set: str) -> Path:
    """The folder of a gold set's stored paraphrases (beside its gold file)."""
    from nl2sql_pipeline.gold.registry import gold_set_info

    return gold_set_info(gold_set).path.parent / "paraphrases"


def stored_versions(gold_set: str) -> dict[int, Path]:
    """Version -> file of every stored paraphrase version of ``gold_set``."""
    folder = paraphrases_dir(gold_set)
    found: dict[int, Path] = {}
    for path in folder.glob(f"{gold_set}.v*.jsonl") if folder.is_dir() else ():
        match = _VERSION_RE.search(path.name)
        if match:
            found[int(match.group(1))] = path
    return found


def read_stored(path: Path) -> tuple[dict, dict[str, tuple[str, list[str]]]]:
    """(meta, {case id: (fingerprint, paraphrases)}) of a stored file; ConfigError naming file and line."""
    meta: dict = {}
    entries: dict[str, tuple[str, list[str]]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            if "_meta" in data:
                meta = dict(data["_meta"])
                continue
            texts = [str(t) for t in data["paraphrases"]]
            entries[str(data["id"])] = (str(data["fingerprint"]), texts)
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(
                f"{path}:{number}: not a stored paraphrase line ({exc}); expected "
                '{"id": ..., "fingerprint": ..., "paraphrases": [...]} (write a new version with '
                "nl2sql-eval gold paraphrase --new-version)"
            ) from exc
    return meta, entries


def stored_paraphrases(gold_set: str, cases: Iterable[Case]) -> tuple[dict[str, list[str]], str | None]:
    """The latest stored paraphrases of ``cases`` ({case id: texts}) and their version label (None: none stored).
    Cases whose fingerprint changed since the version was written are left out (logged)."""
    versions = stored_versions(gold_set)
    if not versions:
        return {}, None
    latest = max(versions)
    _, entries = read_stored(versions[latest])
    out: dict[str, list[str]] = {}
    stale = []
    for case in cases:
        entry = entries.get(case.id)
        if entry is None:
            continue
        if entry[0] != case.fingerprint:
            stale.append(case.id)
            continue
        out[case.id] = entry[1]
    if stale:
        logger.warning(
            "%s: %d cases changed since paraphrase version %d (%s...): no model paraphrases for them until "
            "a new version is written (nl2sql-eval gold paraphrase --new-version)",
            gold_set,
            len(stale),
            latest,
            ", ".join(stale[:3]),
        )
    return out, f"v{latest}"


def _parse_reply(text: str | None, count: int) -> list[str]:
    lines = [re.sub(r"^\s*(?:[-*]|\d+[.)])\s*", "", line).strip() for line in (text or "").splitlines()]
    return [line for line in lines if line][:count]


def generate_paraphrases(
    gold_set: str, model: str, cases: Sequence[Case], *, count: int = 2, new_version: bool = False
) -> Path:
    """Ask ``model`` (a slug of the registry, through litellm) for ``count`` paraphrases of every query case and
    store them as the next version. Refuses (ConfigError) when a version exists and ``new_version`` is not set;
    raises GenerationError when a call fails (nothing is stored then)."""
    from nl2sql_pipeline.generation.client import call_model
    from nl2sql_pipeline.generation.registry import get_model

    spec = get_model(model)
    if spec.is_offline or spec.is_replay or spec.is_system:
        raise ConfigError(
            f"model {model}: paraphrases are written by a litellm chat model, not an offline model, "
            "a predictions file or a system"
        )
    versions = stored_versions(gold_set)
    if versions and not new_version:
        latest = max(versions)
        raise ConfigError(
            f"{versions[latest]} exists (paraphrase version {latest} of {gold_set}); stored paraphrases are never "
            "regenerated: pass --new-version to write version "
            f"{latest + 1}"
        )
    version = max(versions, default=0) + 1
    lines = [
        json.dumps(
            {
                "_meta": {
                    "gold_set": gold_set,
                    "version": version,
                    "model": model,
                    "model_config_hash": spec.config_hash,
                    "count": count,
                    "generated_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                }
            }
        )
    ]
    for case in cases:
        if case.is_probe or case.is_answer_only or case.is_clarify:  # never asked again (variant_cases.measured)
            continue
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT.format(count=count)},
            {"role": "user", "content": case.question},
        ]
        try:
            call = call_model(spec, messages)
        except Exception as exc:  # a provider failure: nothing is stored
            raise GenerationError(f"paraphrasing case {case.id} with {model} failed: {exc}") from exc
        texts = _parse_reply(call.raw_reply, count)
        if not texts:
            raise GenerationError(f"paraphrasing case {case.id} with {model}: the reply held no paraphrase")
        lines.append(
            json.dumps({"id": case.id, "fingerprint": case.fingerprint, "paraphrases": texts}, ensure_ascii=False)
        )
    folder = paraphrases_dir(gold_set)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{gold_set}.v{version}.jsonl"
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tmp.replace(target)
    return target

"""No-op re-runs: when nothing a run depends on changed, its recorded scores are the answer.

The latest recorded run of (gold set, model) (the one whose verdicts are stored) can stand for a new run
when, in order:

1. ``is_current``: all six version fields equal today's (model config, gold fingerprint, semantic
   model, policies, comparator, harness: ``runs.identity``);
2. ``fully_evaluated``: it is comparable (nothing skipped: a run that skipped cases is re-tried), or it is a
   run of answer-only cases (never a baseline, yet complete: ``runs.completeness.answer_only``), or it was
   recorded as not comparable only because a gate failed (its scores show every case evaluated: the gates
   are held again to the stored scores, so the same gate fails again without evaluating anew);
3. ``same_samples``: it sampled each case as many times as asked (``--repeat``);
4. and, when asked, it measured test-suite accuracy on as many database variants (``--test-suite-variants``)
   and the same optional measurements (``runs.measurements``);
5. and, when asked, it was judged on the case databases as they are now (``database_change``: the stamp
   of their files, ``databases.stamp``, is the one it recorded; a run recorded before stamps is judged again).

The stored scores come back from the baselines file exactly as the run recorded them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from nl2sql_pipeline.runs.baseline import is_baseline_candidate
from nl2sql_pipeline.runs.completeness import answer_only, not_comparable_reason
from nl2sql_pipeline.runs.identity import RunVersions, is_current
from nl2sql_pipeline.runs.measurements import Measurements, made_by
from nl2sql_pipeline.runs.store import list_runs
from nl2sql_pipeline.scoring.metrics import METRICS

BOOKKEEPING_COLUMNS: tuple[str, ...] = ("recorded_at", "comparable", "not_comparable_reason")
_JSON = frozenset(m.name for m in METRICS if m.kind == "json")

ReuseRule = Callable[[Mapping[str, Any], RunVersions, int], bool]


def _current(row: Mapping[str, Any], versions: RunVersions, samples: int) -> bool:
    return is_current(row, versions)


def _fully_evaluated(row: Mapping[str, Any], versions: RunVersions, samples: int) -> bool:
    return is_baseline_candidate(row) or answer_only(row) or not_comparable_reason(row) is None


def _same_samples(row: Mapping[str, Any], versions: RunVersions, samples: int) -> bool:
    return (row.get("sample_count") or 1) == samples


REUSE_RULES: tuple[ReuseRule, ...] = (_current, _fully_evaluated, _same_samples)


def stored_scores(row: Mapping[str, Any]) -> dict[str, Any]:
    """A baselines row as the run's scores (identity and every metric; nested metrics decoded)."""
    scores = {k: v for k, v in row.items() if k not in BOOKKEEPING_COLUMNS}
    for name in _JSON:
        if isinstance(scores.get(name), str):
            scores[name] = json.loads(scores[name])
    return scores


def reusable_run(
    db_path: Path,
    gold_set: str,
    model: str,
    versions: RunVersions,
    samples: int = 1,
    test_suite_variants: int | None = None,
    measurements: Measurements | None = None,
    is_system: bool = False,
    database_stamp: str | None = None,
) -> dict[str, Any] | None:
    """The latest recorded run of (gold set, model) when it stands for a new run with these versions (every
    rule holds), else None: an earlier run never does, its stored verdicts were replaced.

    ``test_suite_variants`` (when given) must equal the variants the run measured test-suite accuracy on
    (0: not measured); a run of a query-free gold set measured none and stands for any. ``measurements``
    (when given) must be what the run measured (``runs.measurements.made_by``; ``is_system``: the model is a
    live system). ``database_stamp`` (when given) must be the stamp of the databases the run was judged on.
    """
    # only the latest: the storage keeps the latest run's verdicts (and what hangs off them), so an earlier run,
    # however current, no longer has its rows behind it
    for row in list_runs(db_path, gold_set, model)[:1]:
        if (
            all(rule(row, versions, samples) for rule in REUSE_RULES)
            and _same_variants(row, test_suite_variants)
            and made_by(row, measurements, is_system)
            and database_change(row, database_stamp) is None
        ):
            return stored_scores(row)
    return None


def database_change(row: Mapping[str, Any], database_stamp: str | None) -> str | None:
    """Why a recorded run was judged on other database contents than the current ``database_stamp``
    (None: the same, or not asked).

    >>> database_change({"database_stamp": "a1"}, "a1") is None
    True
    >>> database_change({"database_stamp": "a1"}, "b2")
    'a case database changed since its stored run was judged (database stamp a1, now b2)'
    """
    recorded = row.get("database_stamp")
    if database_stamp is None or recorded == database_stamp:
        return None
    if not recorded:
        return "a case database may have changed since its stored run (it recorded no database stamp)"
    return f"a case database changed since its stored run was judged (database stamp {recorded}, now {database_stamp})"


def _same_variants(row: Mapping[str, Any], wanted: int | None) -> bool:
    if wanted is None or not row.get("query_count"):
        return True
    return int(row.get("test_suite_variants") or 0) == wanted

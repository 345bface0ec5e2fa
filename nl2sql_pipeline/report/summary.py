"""Run scores for humans: value formatting, Markdown tables for the Dagster UI, a side-by-side console table.

Scores are read as mappings of metric name to value (a ``RunScores``, or the flat dict of a run read back
through the codec): breakdowns, warnings and outcome counts are real dicts and lists here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nl2sql_pipeline.scoring import metrics
from nl2sql_pipeline.scoring.formatting import format_rate, format_value
from nl2sql_pipeline.scoring.run_scores import RunScores

Scores = RunScores | Mapping[str, Any]
"""Scores as read here: a ``RunScores`` or the flat dict of a run read back through the codec."""

HEADLINE_METRICS: tuple[tuple[str, str], ...] = tuple((m.name, m.kind) for m in metrics.HEADLINE_METRICS)


def _nested(scores: Scores, name: str) -> dict[str, Any]:
    return dict(scores.get(name) or {})


def warnings_of(scores: Scores) -> list[str]:
    """The run's warnings (skipped cases, estimated tokens, unknown cost)."""
    return list(scores.get("warnings") or [])


def markdown_scores(scores: Scores) -> str:
    """The headline metrics as a Markdown table, warnings first."""
    lines = [f"> **WARNING:** {w}" for w in warnings_of(scores)]
    if lines:
        lines.append("")
    lines += ["| metric | value |", "| --- | --- |"]
    lines += [f"| {name} | {format_value(scores.get(name), kind)} |" for name, kind in HEADLINE_METRICS]
    causes = _nested(scores, "outcome_causes")
    if causes:
        lines += ["", "**not correct, by cause:** " + ", ".join(f"{k} {v}" for k, v in causes.items())]
    return "\n".join(lines)


def markdown_breakdown(scores: Scores, dimension: str) -> str:
    """The rates per value of one dimension (domain, category, difficulty, database, tag) as a Markdown table."""
    data = _nested(scores, f"per_{dimension}")
    lines = [f"| {dimension} | queries | semantic correctness | execution success |", "| --- | --- | --- | --- |"]
    for key, row in sorted(data.items()):
        lines.append(
            f"| {key} | {row['query_count']} | {format_rate(row['semantic_correctness_rate'])} | "
            f"{format_rate(row['sql_execution_success_rate'])} |"
        )
    return "\n".join(lines)


def console_report(runs: list[dict[str, Any]], with_warnings: bool = True, with_breakdowns: bool = True) -> str:
    """A side-by-side console table of several runs' scores (one column per model), warnings last unless told."""
    if not runs:
        return "no runs"
    header = ["metric"] + [f"{r['model']}" for r in runs]
    rows = [header, ["gold set"] + [str(r["gold_set"]) for r in runs]]
    for name, kind in HEADLINE_METRICS:
        rows.append([name] + [format_value(r["scores"].get(name), kind) for r in runs])
    for dimension in metrics.RATE_DIMENSIONS if with_breakdowns else ():
        keys = sorted({k for r in runs for k in _nested(r["scores"], f"per_{dimension}")})
        for key in keys:
            cells = []
            for r in runs:
                entry = _nested(r["scores"], f"per_{dimension}").get(key)
                cells.append(format_rate(entry["semantic_correctness_rate"]) if entry else "n/a")
            rows.append([f"correctness[{dimension}={key}]"] + cells)
    rows.append(
        ["outcomes"] + [", ".join(f"{k}={v}" for k, v in _nested(r["scores"], "outcome_counts").items()) for r in runs]
    )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    out = []
    for index, row in enumerate(rows):
        out.append("  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip())
        if index == 0:
            out.append("  ".join("-" * w for w in widths))
    for r in runs if with_warnings else ():
        for warning in warnings_of(r["scores"]):
            out.append(f"WARNING [{r['model']}]: {warning}")
    return "\n".join(out)


def markdown_table(frame) -> str:
    """A small DataFrame as a Markdown table (index included), without optional dependencies."""
    index_name = frame.index.name or ""
    header = [str(index_name)] + [str(c) for c in frame.columns]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    for index, row in frame.iterrows():
        lines.append("| " + " | ".join([str(index)] + [_cell(v) for v in row.tolist()]) + " |")
    return "\n".join(lines)


def _cell(value: object) -> str:
    """A table cell: a missing value (None, NaN, pandas' NA: an unranked run's rank) reads n/a."""
    if value is None or (isinstance(value, float) and value != value) or str(value) in ("<NA>", "NaT"):
        return "n/a"
    return str(value)

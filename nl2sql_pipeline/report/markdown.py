"""The Markdown summary of one run's report, for the Dagster asset metadata: warnings, the headline with 95%
intervals, the weakest capabilities, outcomes by cause, the cost split, and where the HTML page is."""

from __future__ import annotations

from pathlib import Path

from nl2sql_pipeline.report.answers import markdown_answers
from nl2sql_pipeline.report.console import format_interval
from nl2sql_pipeline.report.measurements import measurement_lines
from nl2sql_pipeline.report.sql_judges import markdown_sql_judges
from nl2sql_pipeline.report.tables import RateRow, RunReport
from nl2sql_pipeline.scoring.formatting import format_rate


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def _rate(label: str, row: RateRow) -> str:
    return f"| {label} | {format_rate(row.rate)} | {format_interval(row.interval, format_rate)} | {row.fraction} |"


def markdown_summary(report: RunReport, html_path: Path | None = None) -> str:
    """The summary of ``report`` as Markdown (``html_path``: the page with the charts and the per-case table)."""
    cost = report.cost
    lines = [f"### {report.model} on {report.gold_set}", ""]
    lines += [f"> **WARNING:** {w}" for w in report.warnings]
    if report.warnings:
        lines.append("")
    lines += [
        "| metric | value | 95% interval | count |",
        "| --- | --- | --- | --- |",
        _rate("semantic correctness", report.correctness),
        _rate("execution success", report.execution_success),
        *(
            _rate(label, row)
            for label, row in (
                ("policy rejection precision", report.policy_precision),
                ("policy rejection recall", report.policy_recall),
            )
            if row is not None
        ),
        f"| latency p50 | {_ms(report.latency_p50.estimate)} | {format_interval(report.latency_p50, _ms)} | "
        f"{len(report.latency_values)} calls |",
        f"| cost paid now | {_usd(cost.paid_now_usd)} | | {cost.paid_now_cases} cases |",
        f"| cost replayed from cache | {_usd(cost.from_cache_usd)} | | {cost.from_cache_cases} cases |",
        f"| tokens | {report.token_source or 'n/a'} | | |",
    ]
    if cost.unknown_cases:
        lines.append(f"| cost unknown | | | {cost.unknown_cases} cases |")
    if report.quarantined:
        lines += ["", "**quarantined by the gold preflight (left out of every rate):**", ""]
        lines += [f"- {line}" for line in report.quarantine_lines()]
    if report.weakest:
        lines += ["", "**weakest:** " + ", ".join(f"{row.key} {row.fraction}" for _, row in report.weakest)]
    if report.causes:
        lines += ["", "**not correct, by cause:** " + ", ".join(f"{cause} {count}" for cause, count in report.causes)]
    if measured := measurement_lines(report.verdicts):  # the optional measurements, as in the console
        lines += ["", "```", *measured, "```"]
    failed = [v for v in report.verdicts if not v.is_probe and v.error_message]
    if failed:
        lines += ["", f"**failed calls:** {len(failed)} cases", ""]
        lines += [f"- `{v.case_id}` {v.reason or v.skip_reason}: {v.error_message}" for v in failed[:3]]
    lines += markdown_answers(report.answers)
    if report.sql_judges is not None:
        lines += ["", markdown_sql_judges(report.sql_judges)]
    if html_path is not None:
        lines += ["", f"HTML report (charts, per-case table with result samples and diffs): `{html_path}`"]
    return "\n".join(lines)

"""The self-contained HTML report of one or more runs, and of a comparison: inline CSS and SVG, no script, no network.

Sections: warnings, headline metrics with intervals, the cases the gold preflight quarantined, the charts (accuracy by category with Wilson intervals,
latency distribution, cost against accuracy across the runs, outcome causes), the breakdowns, and the
per-case table (question, generated vs expected SQL, the first rows of the expected and generated results, verdict,
reason, and the diff of a case that is not correct: diagnosis, missing and extra rows, the clauses that differ).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.report.answers import html_answers
from nl2sql_pipeline.report.console import format_interval
from nl2sql_pipeline.report.measurements import measurement_html
from nl2sql_pipeline.report.samples import CaseSample, RowSample, clause_differences
from nl2sql_pipeline.report.sql_judges import html_sql_judges
from nl2sql_pipeline.report.svg import count_bars, histogram, rate_bars, scatter
from nl2sql_pipeline.report.tables import RateRow, RunReport
from nl2sql_pipeline.scoring.formatting import format_rate

STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#222;max-width:1400px}
h1{font-size:22px}h2{font-size:18px;margin-top:28px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:4px 8px;vertical-align:top}
th{background:#f4f4f4;text-align:left}.warn{background:#fff3cd;border:1px solid #e0c36b;padding:8px;margin:6px 0}
.ok{color:#176317}.bad{color:#a11}pre{margin:0;white-space:pre-wrap;font-size:12px;max-width:520px}
.charts{display:flex;flex-wrap:wrap;gap:16px}.charts figure{margin:0}figcaption{font-size:13px;margin:4px 0}
.meter{display:inline-block;width:120px;height:10px;background:#eee;margin-right:6px}
.meter span{display:block;height:10px;background:#1f77b4}
table.sample{margin:0;font-size:11px}table.sample td,table.sample th{padding:1px 4px}.note{font-size:11px;color:#666}
td.diff{font-size:12px;max-width:360px}
"""


def _usd(value: float | None) -> str:
    return "n/a" if value is None else f"${value:.4f}"


def _ms(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f} ms"


def _meter(rate: float | None) -> str:
    width = 0 if rate is None else round(rate * 100)
    return f'<span class="meter"><span style="width:{width}%"></span></span>'


def _rate_cells(row: RateRow) -> str:
    return (
        f"<td>{_meter(row.rate)}{format_rate(row.rate)}</td><td>{format_interval(row.interval, format_rate)}</td>"
        f"<td>{row.fraction}</td>"
    )


def _headline(report: RunReport) -> str:
    cost = report.cost
    rows = [
        f"<tr><th>semantic correctness</th>{_rate_cells(report.correctness)}</tr>",
        *([f"<tr><th>test-suite accuracy</th>{_rate_cells(report.test_suite)}</tr>"] if report.test_suite else []),
        f"<tr><th>execution success</th>{_rate_cells(report.execution_success)}</tr>",
        *(
            f"<tr><th>{label}</th>{_rate_cells(row)}</tr>"
            for label, row in (
                ("policy rejection precision", report.policy_precision),
                ("policy rejection recall", report.policy_recall),
            )
            if row is not None
        ),
        *(f"<tr><th>grade {escape(row.key)}</th>{_rate_cells(row)}</tr>" for row in report.grades),
        f"<tr><th>latency p50</th><td>{_ms(report.latency_p50.estimate)}</td>"
        f"<td>{format_interval(report.latency_p50, _ms)}</td><td>{len(report.latency_values)} calls</td></tr>",
        f"<tr><th>latency mean</th><td>{_ms(report.latency_mean.estimate)}</td>"
        f"<td>{format_interval(report.latency_mean, _ms)}</td><td></td></tr>",
        f"<tr><th>cost paid now</th><td>{_usd(cost.paid_now_usd)}</td><td></td><td>{cost.paid_now_cases} cases</td></tr>",
        f"<tr><th>cost replayed from cache</th><td>{_usd(cost.from_cache_usd)}</td><td></td>"
        f"<td>{cost.from_cache_cases} cases</td></tr>",
        f"<tr><th>total cost</th><td>{_usd(cost.total.estimate) if not cost.unknown_cases else 'unknown'}</td>"
        f"<td>{format_interval(cost.total, _usd)}</td><td>{cost.unknown_cases} unknown</td></tr>",
        f"<tr><th>tokens</th><td colspan=3>{escape(report.token_source or 'n/a')}</td></tr>",
    ]
    return (
        "<table><tr><th>metric</th><th>value</th><th>95% interval</th><th>count</th></tr>" + "".join(rows) + "</table>"
    )


def _suite_disagreements(report: RunReport) -> str:
    """The cases correct under execution accuracy but not under test-suite accuracy, with the variant's finding."""
    if report.test_suite is None:
        return ""
    items = report.suite_disagreements
    body = "".join(
        f"<tr><td>{escape(v.case_id)}{f'#{v.sample_index}' if v.sample_index else ''}</td>"
        f"<td>{escape(v.test_suite_reason or '')}</td></tr>"
        for v in items
    )
    return f"<h3>execution accuracy vs test-suite accuracy: {len(items)} cases disagree</h3>" + (
        f'<table class="suite"><tr><th>case</th><th>first variant that differs</th></tr>{body}</table>' if items else ""
    )


def _quarantine(report: RunReport) -> str:
    """The cases the gold preflight quarantined (left out of every rate), with kind and reason."""
    if not report.quarantined:
        return ""
    body = "".join(
        f"<tr><td>{escape(f.get('label') or f.get('case_id') or '')}</td><td>{escape(f.get('kind') or '')}</td>"
        f"<td>{escape(f.get('reason') or '')}</td></tr>"
        for f in report.quarantined
    )
    count = len({f.get("case_id") for f in report.quarantined})
    return (
        f'<h3>quarantined by the gold preflight: {count} cases, left out of every rate</h3><table class="quarantine">'
        f"<tr><th>case</th><th>kind</th><th>reason</th></tr>{body}</table>"
    )


def _breakdowns(report: RunReport) -> str:
    parts = []
    for dimension, rows in report.breakdowns.items():
        body = "".join(f"<tr><td>{escape(r.key)}</td>{_rate_cells(r)}</tr>" for r in rows)
        parts.append(
            f"<h3>by {escape(dimension)}</h3><table><tr><th>{escape(dimension)}</th><th>correctness</th>"
            f"<th>95% interval</th><th>correct</th></tr>{body}</table>"
        )
    if report.weakest:
        weakest = ", ".join(f"{escape(r.key)} {r.fraction}" for _, r in report.weakest)
        parts.insert(0, f"<p><b>weakest:</b> {weakest}</p>")
    return "".join(parts)


def _charts(reports: Sequence[RunReport]) -> str:
    figures = []
    for report in reports:
        rows = [
            (r.key, r.rate or 0.0, r.interval.low or 0.0, r.interval.high or 0.0, r.fraction)
            for r in report.breakdowns.get("category", [])
        ]
        figures.append(
            (
                "accuracy",
                f"{report.model}: accuracy by category (95% Wilson intervals)",
                rate_bars("accuracy", f"accuracy by category, {report.model}", rows),
            )
        )
        figures.append(
            (
                "latency",
                f"{report.model}: generation latency distribution",
                histogram("latency", f"latency, {report.model}", report.latency_values),
            )
        )
        figures.append(
            (
                "causes",
                f"{report.model}: not correct, by cause",
                count_bars(
                    "causes",
                    f"causes, {report.model}",
                    report.causes,
                    "every scored case was correct" if report.correctness.total else "no scored case (n/a)",
                ),
            )
        )
    points = [
        (r.model, r.cost.total.estimate or 0.0, r.correctness.rate or 0.0)
        for r in reports
        if r.correctness.rate is not None and not r.cost.unknown_cases
    ]
    figures.append(
        (
            "cost_accuracy",
            "cost against accuracy across runs",
            scatter(
                "cost_accuracy",
                "cost against accuracy",
                points,
                "total cost (USD)",
                "correctness",
                # a known cost of $0 (offline models) is known: without a point, say what is missing
                "no scored case (n/a)"
                if any(not r.cost.unknown_cases for r in reports)
                else "no run with a known cost",
            ),
        )
    )
    return (
        '<div class="charts">'
        + "".join(
            f'<figure data-figure="{name}"><figcaption>{escape(caption)}</figcaption>{svg}</figure>'
            for name, caption, svg in figures
        )
        + "</div>"
    )


def _sql(text: str | None) -> str:
    return f"<pre>{escape(text)}</pre>" if text else "<i>none</i>"


def _answer_cell(v) -> str:
    """A system's own answer, and the flag when the rows it showed differ from what its SQL returns."""
    parts = [escape(v.answer)] if v.answer else []
    if v.system_rows_disagree:
        parts.append(f'<b class="bad">rows shown differ from its SQL: {escape(v.system_rows_reason or "")}</b>')
    return "<br>".join(parts)


def _rows_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join("<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f'<table class="sample">{"<tr>" + head + "</tr>" if head else ""}{body}</table>'


def _sample_cell(sample: RowSample | None) -> str:
    """The first rows of one result, with how many there were."""
    if sample is None:
        return "<i>no result</i>"
    if sample.error is not None:
        return f'<span class="bad">{escape(sample.error)}</span>'
    shown = len(sample.rows)
    count = f"{sample.total_rows}{'+' if sample.truncated else ''} rows"
    note = f"first {shown} of {count}" if shown < sample.total_rows or sample.truncated else count
    return _rows_table(sample.columns, sample.rows) + f'<div class="note">{note}</div>'


def _diff_cell(v, sample: CaseSample | None) -> str:
    """What differs from the expected result and SQL: the diagnosis, missing and extra rows, the clause diff."""
    parts = []
    for label, explanation in v.diagnosis_detail or ():
        parts.append(f"<b>{escape(label)}</b>: {escape(explanation)}")
    if not v.diagnosis_detail and v.diagnosis:
        parts.append(f"<b>{escape(v.diagnosis)}</b>")
    if v.expected_row_count is not None and v.candidate_row_count is not None and not v.correct:
        parts.append(f"rows: expected {v.expected_row_count}, generated {v.candidate_row_count}")
    if sample is not None and sample.missing_rows:
        parts.append(
            f"missing {sample.missing_rows} row(s), e.g."
            + _rows_table(sample.expected.columns if sample.expected else (), sample.missing_examples)
        )
    if sample is not None and sample.extra_rows:
        parts.append(
            f"extra {sample.extra_rows} row(s), e.g."
            + _rows_table(sample.generated.columns if sample.generated else (), sample.extra_examples)
        )
    if v.row_precision is not None and v.row_recall is not None and not v.correct:
        parts.append(f"row precision {v.row_precision:.2f}, recall {v.row_recall:.2f}")
    if v.order_check == "wrong":
        parts.append("rows in the wrong order")
    clauses = clause_differences(v.clause_scores)
    if clauses:
        parts.append("clauses differ: " + ", ".join(f"{escape(k)} {score:.2f}" for k, score in clauses))
    return "<br>".join(parts)


def _cases_table(report: RunReport, cases: Mapping[str, Case]) -> str:
    with_answers = any(v.answer or v.system_rows_disagree for v in report.verdicts)
    samples = report.samples
    rows = []
    for v in sorted(report.verdicts, key=lambda v: (v.correct, v.case_id, v.sample_index)):
        case = cases.get(v.case_id)
        expected = (
            case.policy_probe_sql
            if case is not None and case.is_probe
            else ("\n-- or --\n".join(case.expected_sql) if case is not None else None)
        )
        css = "ok" if v.correct else "bad"
        why = v.reason or v.skip_reason or ""
        if v.error_message:
            why = f"{why}: {v.error_message}" if why else v.error_message
        if v.diagnosis:
            why = f"{why} [{v.diagnosis}]" if why else v.diagnosis
        if v.correct and v.test_suite_correct is False:
            why = f"{why} [not test-suite correct: {v.test_suite_reason or 'differs on a variant'}]".strip()
        sample = samples.get((v.case_id, v.sample_index))
        result_cells = (
            f'<td class="expected-rows">{_sample_cell(sample.expected if sample else None)}</td>'
            f'<td class="generated-rows">{_sample_cell(sample.generated if sample else None)}</td>'
            if samples
            else ""
        )
        rows.append(
            f'<tr class="case"><td>{escape(v.case_id)}{f"#{v.sample_index}" if v.sample_index else ""}</td>'
            f"<td>{escape(case.question) if case else ''}</td><td>{_sql(v.generated_sql)}</td><td>{_sql(expected)}</td>"
            + result_cells
            + (f'<td class="answer">{_answer_cell(v)}</td>' if with_answers else "")
            + f'<td class="{css}">{escape(v.outcome)}</td><td>{escape(why)}</td>'
            + f'<td class="diff">{"" if v.correct else _diff_cell(v, sample)}</td></tr>'
        )
    return (
        f'<table class="cases" data-model="{escape(report.model)}"><tr><th>case</th><th>question</th>'
        "<th>generated SQL</th><th>expected SQL</th>"
        + ("<th>expected rows</th><th>generated rows</th>" if samples else "")
        + ("<th>answer</th>" if with_answers else "")
        + "<th>verdict</th><th>reason</th><th>diff</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _page(title: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
        f"<style>{STYLE}</style></head><body><h1>{escape(title)}</h1>{body}</body></html>"
    )


def _run_sections(reports: Sequence[RunReport], cases: Mapping[str, Case]) -> str:
    parts = ["<h2>charts</h2>" + _charts(reports)]
    for report in reports:
        parts.append(f"<h2>{escape(report.model)} on {escape(report.gold_set)}</h2>")
        parts += [f'<div class="warn">WARNING: {escape(w)}</div>' for w in report.warnings]
        parts.append(_headline(report))
        parts.append(_suite_disagreements(report))
        parts.append(html_sql_judges(report.sql_judges))
        parts.append(_quarantine(report))
        parts.append(measurement_html(report.verdicts))
        if report.causes:
            parts.append(
                "<p><b>not correct, by cause:</b> " + ", ".join(f"{escape(c)} {n}" for c, n in report.causes) + "</p>"
            )
        parts.append(_breakdowns(report))
        parts.append(html_answers(report.answers))
    for report in reports:
        parts.append(f"<h2>cases: {escape(report.model)}</h2>{_cases_table(report, cases)}")
    return "".join(parts)


def run_html(
    reports: Sequence[RunReport],
    cases: Mapping[str, Case] | None = None,
    pairwise: Sequence[str] = (),
    sections: str = "",
) -> str:
    """The HTML page of one or more runs (``pairwise``: the significance lines between them; ``sections``: more
    HTML after the runs', e.g. ``robustness.report.stored_robustness_html``)."""
    title = "nl2sql-eval report: " + ", ".join(f"{r.model} on {r.gold_set}" for r in reports)
    extra = ""
    if pairwise:
        extra = (
            "<h2>paired comparison (exact McNemar, alpha 0.05)</h2><ul>"
            + "".join(f"<li>{escape(line)}</li>" for line in pairwise)
            + "</ul>"
        )
    return _page(title, extra + _run_sections(reports, cases or {}) + sections)


def comparison_html(comparison, reports: Sequence[RunReport], cases: Mapping[str, Case] | None = None) -> str:
    """The HTML page of a two-run comparison: the label, the flips both ways, then both runs' reports."""
    test = comparison.test

    def flips(title: str, items) -> str:
        body = "".join(
            f"<tr><td>{escape(f.case_id)}</td><td>{escape(f.category)}</td><td>{escape(f.before.outcome)}: "
            f"{escape(f.before.reason or '')}</td><td>{escape(f.after.outcome)}: {escape(f.after.reason or '')}</td></tr>"
            for f in items
        )
        return (
            f'<h3>{escape(title)}: {len(items)}</h3><table class="flips"><tr><th>case</th><th>category</th>'
            f"<th>A</th><th>B</th></tr>{body}</table>"
        )

    head = (
        f"<p>A = {escape(comparison.label_a)}<br>B = {escape(comparison.label_b)}</p>"
        f"<p><b>difference: {escape(test.label)}</b> over {test.pairs} paired cases; correctness A "
        f"{format_rate(test.rate_a)}, B {format_rate(test.rate_b)}</p>"
        + flips("newly right in B", comparison.newly_right)
        + flips("newly wrong in B", comparison.newly_wrong)
    )
    return _page(
        f"nl2sql-eval comparison: {comparison.label_a} vs {comparison.label_b}",
        head + _run_sections(reports, cases or {}),
    )


def run_report_path(gold_set: str, model: str, run_id: str, root: Path | None = None) -> Path:
    """Where the HTML page of one run lives: ``<storage root>/reports/<gold>/<model>/<run id>.html`` (a run's own file)."""
    from nl2sql_pipeline import paths

    return (root or paths.reports_dir()) / gold_set / model / f"{run_id}.html"


def write_html(page: str, path: Path) -> Path:
    """Write ``page`` to ``path`` (folders made); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
    return path

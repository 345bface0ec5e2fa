"""Human-readable renderings of runs: console text, Markdown for the Dagster UI, a self-contained HTML page.

- ``summary``: formatting of metric values, the Markdown tables of the asset metadata, the side-by-side table.
- ``tables``: the report's tables computed from one run's verdicts (with intervals, causes, cost split).
- ``console``: those tables as terminal text with bars.
"""

from nl2sql_pipeline.report.summary import (
    HEADLINE_METRICS,
    console_report,
    format_rate,
    format_value,
    markdown_breakdown,
    markdown_scores,
    markdown_table,
    warnings_of,
)

__all__ = [
    "HEADLINE_METRICS",
    "console_report",
    "format_rate",
    "format_value",
    "markdown_breakdown",
    "markdown_scores",
    "markdown_table",
    "warnings_of",
]

"""Reports read run scores with real nested values (no JSON decoding outside the codec)."""

from __future__ import annotations

import pandas as pd
from verdict_factory import make_verdict

from nl2sql_pipeline.report import console_report, format_rate, markdown_breakdown, markdown_scores, warnings_of
from nl2sql_pipeline.results import frames as codec
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes


def _scores():
    return score_run(
        [
            make_verdict(case_id="a", outcome=outcomes.CORRECT, correct=True, domain="x"),
            make_verdict(case_id="b", outcome=outcomes.SKIPPED, skip_reason="daily_quota_exhausted", domain="y"),
        ]
    )


def test_markdown_reads_the_run_scores_record():
    scores = _scores()
    assert "| semantic_correctness_rate | 100.0% |" in markdown_scores(scores)
    assert markdown_scores(scores).startswith("> **WARNING:** 1 of 2 query cases were SKIPPED")
    assert "| x | 1 | 100.0% | 100.0% |" in markdown_breakdown(scores, "domain")
    assert warnings_of(scores) == scores.warnings


def test_console_report_of_runs_read_back_through_the_codec(tmp_path):
    path = tmp_path / "scores.parquet"
    codec.run_scores_to_frame(_scores(), gold_set="g", model="m").to_parquet(path, index=False)
    identity, scores = codec.run_scores_from_frame(pd.read_parquet(path))
    text = console_report([{"model": identity["model"], "gold_set": identity["gold_set"], "scores": scores.as_dict()}])
    lines = {line.split()[0]: line.split()[-1] for line in text.splitlines() if line.strip()}
    assert lines["correctness[domain=x]"] == "100.0%"
    outcome_line = next(line for line in text.splitlines() if line.startswith("outcomes"))
    assert outcome_line.split() == ["outcomes", f"{outcomes.CORRECT}=1,", f"{outcomes.SKIPPED}=1"]
    assert "WARNING [m]: 1 of 2 query cases were SKIPPED (daily_quota_exhausted: 1)" in text


def test_format_rate():
    assert (format_rate(0.875), format_rate(None), format_rate(float("nan"))) == ("87.5%", "n/a", "n/a")

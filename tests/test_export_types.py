"""The exported Parquet files have their declared column types, whatever the data (all-null columns too)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
from verdict_factory import make_verdict

from nl2sql_pipeline.results import frames
from nl2sql_pipeline.results.exports import export_results
from nl2sql_pipeline.results.read import scores_path, verdicts_path
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import outcomes


def test_export_of_runs_without_variants_keeps_declared_types(tmp_path):
    verdicts = [
        make_verdict(),
        make_verdict(case_id="c2", outcome=outcomes.CORRECT, correct=True, score_exact=1.0, score_partial=1.0),
    ]
    scores = score_run(verdicts)
    assert scores["test_suite_accuracy"] is None  # no run measured variants
    for model in ("gold-echo", "sql-mutant"):
        for path, frame in (
            (verdicts_path("g", model, tmp_path), frames.verdicts_to_frame(verdicts, gold_set="g", model=model)),
            (
                scores_path("g", model, tmp_path),
                frames.run_scores_to_frame(scores, gold_set="g", model=model, run_id="r"),
            ),
        ):
            path.parent.mkdir(parents=True, exist_ok=True)
            frame.to_parquet(path, index=False)
    export_results(tmp_path / "out", "parquet", root=tmp_path)
    schemas = {
        name: pq.read_schema(tmp_path / "out" / f"{name}.parquet") for name in ("verdicts", "run_scores", "leaderboard")
    }
    assert schemas["run_scores"].field("test_suite_accuracy").type == pa.float64()
    assert schemas["run_scores"].field("p50_latency_ms").type == pa.float64()
    assert schemas["run_scores"].field("unknown_cost_count").type == pa.int64()
    assert pa.types.is_string(schemas["verdicts"].field("error_message").type)
    assert pa.types.is_string(schemas["verdicts"].field("source_sql").type)
    assert schemas["verdicts"].field("efficiency_score").type == pa.float64()
    assert schemas["verdicts"].field("test_suite_correct").type == pa.bool_()
    assert schemas["leaderboard"].field("efficiency_score").type == pa.float64()
    assert schemas["leaderboard"].field("paraphrase_consistency").type == pa.float64()
    for name, schema in schemas.items():
        assert not [f.name for f in schema if pa.types.is_null(f.type)], name  # no column typed by its absence

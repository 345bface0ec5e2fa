"""``nl2sql-eval run`` prints the detailed report; ``report`` and ``compare-runs`` read the stored runs back."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nl2sql_cli import main as cli
from nl2sql_pipeline.results.read import recorded_runs

MODELS = ["--model", "gold-echo", "--model", "sql-mutant"]


pytestmark = pytest.mark.xdist_group("multidomain")  # the worker that evaluates the session's main job


@pytest.fixture
def evaluated(in_multidomain_run):
    """What ``nl2sql-eval run`` of gold-echo and sql-mutant on the built-in gold set printed; the environment
    points at its storage root (shared: a test takes away what it adds)."""
    return in_multidomain_run.output


@pytest.mark.e2e
def test_run_prints_bars_intervals_causes_and_the_paired_label(evaluated):
    assert "== gold-echo on multidomain-v1 ==" in evaluated and "== sql-mutant on multidomain-v1 ==" in evaluated
    assert "semantic correctness" in evaluated and "█" in evaluated
    assert "not correct, by cause: wrong_result" in evaluated
    assert "gold-echo vs sql-mutant on multidomain-v1" in evaluated and ": significant (p=" in evaluated
    assert "== side by side ==" in evaluated


@pytest.mark.e2e
def test_compare_runs_by_model_is_significant_and_lists_flips(evaluated, capsys):
    assert cli.main(["compare-runs", *MODELS, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["significant"] and result["label"].startswith("significant (p=")
    assert result["newly_wrong"] and not result["newly_right"]
    assert result["correctness_a"] == 1.0
    assert len(result["newly_wrong"]) == round(
        (result["correctness_a"] - result["correctness_b"]) * result["paired_cases"]
    )
    assert all(flip["before"] == "correct" and flip["after"] != "correct" for flip in result["newly_wrong"])


@pytest.mark.e2e
def test_compare_runs_html_page(evaluated, tmp_path, capsys):
    page = tmp_path / "compare.html"
    assert cli.main(["compare-runs", *MODELS, "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert "difference: significant (p=" in html and 'class="flips"' in html and html.count('class="cases"') == 2
    assert f"HTML report: {page}" in capsys.readouterr().out


@pytest.mark.e2e
def test_two_identical_runs_are_not_significant(evaluated, capsys):
    assert cli.main(["compare-runs", "--model", "gold-echo", "--model", "gold-echo"]) == 0
    out = capsys.readouterr().out
    assert "difference: not significant (p=1.0000)" in out
    assert "newly right in B: 0" in out and "newly wrong in B: 0" in out


@pytest.mark.e2e
def test_compare_runs_by_run_id(evaluated, capsys):
    runs = {r["model"]: r["run_id"] for r in recorded_runs()}
    assert cli.main(["compare-runs", runs["gold-echo"][:12], runs["sql-mutant"]]) == 0
    out = capsys.readouterr().out
    assert f"(run {runs['gold-echo']})" in out and "difference: significant" in out
    assert cli.main(["compare-runs", "--list"]) == 0
    assert runs["sql-mutant"] in capsys.readouterr().out


@pytest.mark.e2e
def test_unknown_runs_are_bad_input(evaluated, capsys):
    assert cli.main(["compare-runs", "nope", "nada"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert cli.main(["compare-runs", "--model", "gold-echo", "--model", "never-run"]) == 2
    assert "no stored results for model 'never-run'" in capsys.readouterr().err
    assert cli.main(["compare-runs", "--model", "gold-echo"]) == 2


@pytest.mark.e2e
def test_report_command_console_and_html(evaluated, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert cli.main(["report", *MODELS, "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "== sql-mutant on multidomain-v1 ==" in out and f"HTML report: {page}" in out
    html = page.read_text(encoding="utf-8")
    for chart in ("accuracy", "latency", "causes", "cost_accuracy"):
        assert f'data-chart="{chart}"' in html
    assert 'class="cases"' in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    # the per-case table has the first rows of both results and, for a wrong case, its diff
    assert html.count('<td class="expected-rows"><table class="sample">') > 0
    assert "missing " in html or "extra " in html or "clauses differ:" in html
    assert cli.main(["report"]) == 2


@pytest.mark.e2e
def test_run_scores_metadata_links_the_html_report_and_carries_the_markdown_summary(evaluated):
    import dagster as dg

    from nl2sql_cli.runner import get_instance

    key = dg.MultiPartitionKey({"gold": "multidomain-v1", "model": "sql-mutant"})
    record = (
        get_instance()
        .fetch_materializations(
            dg.AssetRecordsFilter(asset_key=dg.AssetKey("run_scores"), asset_partitions=[key]), limit=1
        )
        .records[0]
    )
    metadata = record.asset_materialization.metadata
    path = Path(metadata["report_html"].value)
    assert path.is_file() and path.name == f"{record.run_id}.html" and path.parent.name == "sql-mutant"
    assert metadata["report_url"].value == path.resolve().as_uri()
    page = path.read_text(encoding="utf-8")
    assert "sql-mutant on multidomain-v1" in page and '<td class="generated-rows">' in page
    summary = metadata["summary"].value
    assert isinstance(metadata["summary"], dg.MarkdownMetadataValue)
    assert summary.startswith("### sql-mutant on multidomain-v1") and "| semantic correctness |" in summary
    assert "not correct, by cause:" in summary and str(path) in summary


@pytest.mark.e2e
def test_leaderboard_asset_ranks_runs_with_significance_labels(evaluated):
    import dagster as dg

    from assets.leaderboard import leaderboard
    from resources.io_manager import ParquetIOManager

    result = dg.materialize([leaderboard], resources={"parquet_io_manager": ParquetIOManager()})
    assert result.success
    frame = result.output_for_node("leaderboard")
    rows = {row["model"]: row for row in frame.to_dict("records")}
    assert (rows["gold-echo"]["rank"], rows["gold-echo"]["vs_best"]) == (1, "best")
    assert rows["sql-mutant"]["vs_best"].startswith("significant (p=") and rows["sql-mutant"]["vs_best"].endswith(
        "vs gold-echo"
    )
    assert (
        rows["gold-echo"]["ci_high"] == 1.0
        and rows["sql-mutant"]["ci_low"] < rows["sql-mutant"]["semantic_correctness_rate"]
    )
    assert "leaderboard" in result.asset_materializations_for_node("leaderboard")[0].metadata


@pytest.mark.e2e
def test_export_files_and_duckdb_views(evaluated, tmp_path, capsys):
    import duckdb
    import pandas as pd

    assert (
        cli.main(["export", "--out", str(tmp_path / "out"), "--format", "csv", "--duckdb", str(tmp_path / "v.duckdb")])
        == 0
    )
    verdicts = pd.read_csv(tmp_path / "out" / "verdicts.csv")
    assert set(verdicts["model"]) == {"gold-echo", "sql-mutant"} and verdicts["run_id"].notna().all()
    assert len(pd.read_csv(tmp_path / "out" / "run_scores.csv")) == 2
    assert list(pd.read_csv(tmp_path / "out" / "leaderboard.csv")["model"]) == ["gold-echo", "sql-mutant"]
    con = duckdb.connect(str(tmp_path / "v.duckdb"), read_only=True)
    rates = dict(con.execute("SELECT model, semantic_correctness_rate FROM run_correctness").fetchall())
    assert rates["gold-echo"] == 1.0 and rates["sql-mutant"] < 1.0
    assert con.execute("SELECT count(*) FROM verdicts").fetchone()[0] == len(verdicts)
    con.close()
    assert cli.main(["export", "--out", str(tmp_path / "j"), "--format", "json"]) == 0
    assert (tmp_path / "j" / "leaderboard.json").exists()
    assert cli.main(["export"]) == 2


def test_export_without_stored_runs_is_a_clear_error(isolated_home):
    from nl2sql_pipeline.results.exports import NothingToExportError, export_results, write_duckdb_views

    with pytest.raises(NothingToExportError, match="run `nl2sql-eval run` first"):
        export_results(isolated_home / "out")
    with pytest.raises(NothingToExportError):
        write_duckdb_views(isolated_home / "v.duckdb")


@pytest.mark.e2e
def test_verdicts_without_scores_are_left_out_of_the_leaderboard(evaluated):
    import shutil

    from nl2sql_pipeline.results.leaderboard import stored_runs
    from nl2sql_pipeline.results.read import verdicts_path

    orphan = verdicts_path("multidomain-v1", "orphan")
    shutil.copy(verdicts_path("multidomain-v1", "gold-echo"), orphan)
    try:
        assert sorted(run.model for run in stored_runs()) == ["gold-echo", "sql-mutant"]
    finally:
        orphan.unlink()

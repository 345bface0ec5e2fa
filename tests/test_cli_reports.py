"""``nl2sql-eval run`` prints the detailed report; ``report`` and ``compare-runs`` read the stored runs back."""

from __future__ import annotations

import json

import pytest

from nl2sql_cli import main as cli
from nl2sql_pipeline.run_results import recorded_runs

MODELS = ["--model", "gold-echo", "--model", "sql-mutant"]


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    """One run of gold-echo and sql-mutant on the built-in gold set, in a private storage root."""
    home = tmp_path_factory.mktemp("reports-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NL2SQL_HOME", str(home))
        patch.setenv("DAGSTER_HOME", str(home / "dagster_home"))
        (home / "dagster_home").mkdir()
        import io
        from contextlib import redirect_stdout

        out = io.StringIO()
        with redirect_stdout(out):
            code = cli.main(["run", "--gold-set", "multidomain-v1", *MODELS])
        assert code == 0
        yield out.getvalue()


def test_run_prints_bars_intervals_causes_and_the_paired_label(evaluated):
    assert "== gold-echo on multidomain-v1 ==" in evaluated and "== sql-mutant on multidomain-v1 ==" in evaluated
    assert "semantic correctness" in evaluated and "█" in evaluated
    assert "not correct, by cause: wrong_result" in evaluated
    assert "gold-echo vs sql-mutant on multidomain-v1" in evaluated and ": significant (p=" in evaluated
    assert "== side by side ==" in evaluated


def test_compare_runs_by_model_is_significant_and_lists_flips(evaluated, capsys):
    assert cli.main(["compare-runs", *MODELS, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["significant"] and result["label"].startswith("significant (p=")
    assert result["newly_wrong"] and not result["newly_right"]
    assert result["correctness_a"] == 1.0
    assert len(result["newly_wrong"]) == round((result["correctness_a"] - result["correctness_b"]) * result["paired_cases"])
    assert all(flip["before"] == "correct" and flip["after"] != "correct" for flip in result["newly_wrong"])


def test_two_identical_runs_are_not_significant(evaluated, capsys):
    assert cli.main(["compare-runs", "--model", "gold-echo", "--model", "gold-echo"]) == 0
    out = capsys.readouterr().out
    assert "difference: not significant (p=1.0000)" in out
    assert "newly right in B: 0" in out and "newly wrong in B: 0" in out


def test_compare_runs_by_run_id(evaluated, capsys):
    runs = {r["model"]: r["run_id"] for r in recorded_runs()}
    assert cli.main(["compare-runs", runs["gold-echo"][:12], runs["sql-mutant"]]) == 0
    out = capsys.readouterr().out
    assert f"(run {runs['gold-echo']})" in out and "difference: significant" in out
    assert cli.main(["compare-runs", "--list"]) == 0
    assert runs["sql-mutant"] in capsys.readouterr().out


def test_unknown_runs_are_bad_input(evaluated, capsys):
    assert cli.main(["compare-runs", "nope", "nada"]) == 2
    assert "no run 'nope'" in capsys.readouterr().err
    assert cli.main(["compare-runs", "--model", "gold-echo", "--model", "never-run"]) == 2
    assert "no stored results for model 'never-run'" in capsys.readouterr().err
    assert cli.main(["compare-runs", "--model", "gold-echo"]) == 2


def test_report_command_console_and_html(evaluated, tmp_path, capsys):
    page = tmp_path / "report.html"
    assert cli.main(["report", *MODELS, "--html", str(page)]) == 0
    out = capsys.readouterr().out
    assert "== sql-mutant on multidomain-v1 ==" in out and f"HTML report: {page}" in out
    html = page.read_text(encoding="utf-8")
    for chart in ("accuracy", "latency", "causes", "cost_accuracy"):
        assert f'data-chart="{chart}"' in html
    assert 'class="cases"' in html and "http://" not in html.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert cli.main(["report"]) == 2

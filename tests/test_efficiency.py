"""The stable efficiency score: DuckDB's work counts (rows scanned + rows every operator produced, from
``EXPLAIN (ANALYZE, FORMAT JSON)`` in the sandbox), candidate against gold, identical from run to run; the
profiled wall time beside it, never in the score; only correct candidates; hostile SQL refused first."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from eval_support import query_case, register_gold_set
from verdict_factory import make_verdict

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.execution import Sandbox, SandboxLimits
from nl2sql_pipeline.execution.efficiency import query_work, work_from_profile
from nl2sql_pipeline.scoring.efficiency import efficiency_scores
from nl2sql_pipeline.stages.efficiency import EfficiencyMeter, efficiency_score

GOLD = "SELECT count(*) AS n FROM anime WHERE season_year >= 2025"
# the same answer, the long way round: a self-join on the key before the filter
DETOUR = "SELECT count(*) AS n FROM anime a JOIN anime b ON a.anime_id = b.anime_id WHERE a.season_year >= 2025"


@pytest.fixture
def database(seeded_home):
    return paths.database_path("anime_platform")


def test_the_same_query_has_the_same_work_on_every_run(database):
    works = []
    for _ in range(5):  # a fresh sandbox each time: nothing carried over between runs
        with Sandbox(database, SandboxLimits()) as sandbox:
            works.append(query_work(sandbox, DETOUR))
    assert all(w.ok for w in works), works
    assert len({(w.rows_scanned, w.intermediate_rows) for w in works}) == 1 and works[0].work > 0
    case = case_from_dict(query_case("e", GOLD))
    verdict = make_verdict(case_id="e", outcome="correct", correct=True, generated_sql=DETOUR)
    scores = []
    for _ in range(5):
        with EfficiencyMeter(lambda _name: database) as meter:
            scores.append(meter.verdict_fields(case, verdict))
    assert len({s["efficiency_score"] for s in scores}) == 1, scores  # the score: identical
    assert scores[0]["efficiency_score"] < 1.0 and scores[0]["candidate_work"] > scores[0]["gold_work"]
    assert all(s["candidate_profile_ms"] is not None for s in scores)  # the wall time: reported beside


def test_only_correct_candidates_are_profiled_and_hostile_sql_never_runs(database):
    case = case_from_dict(query_case("e", GOLD))
    with EfficiencyMeter(lambda _name: database) as meter:
        assert meter.verdict_fields(case, make_verdict(case_id="e", generated_sql=DETOUR)) == {}  # not correct
        same = meter.verdict_fields(
            case, make_verdict(case_id="e", outcome="correct", correct=True, generated_sql=GOLD)
        )
        assert same["efficiency_score"] == 1.0
        for hostile in ("DELETE FROM anime", "SELECT 1; DROP TABLE anime", "COPY anime TO '/tmp/x.csv'"):
            verdict = make_verdict(case_id="e", outcome="correct", correct=True, generated_sql=hostile)
            fields = meter.verdict_fields(case, verdict)
            assert "efficiency_score" not in fields and fields["efficiency_error"].startswith("candidate: forbidden")
    with Sandbox(database, SandboxLimits()) as sandbox:
        assert query_work(sandbox, "SELECT count(*) FROM anime").work == 0  # answered from the table statistics


def test_a_profile_is_read_from_its_query_section():
    assert work_from_profile({"query": {"total_rows_scanned": 10, "total_intermediate_rows": 4}}) == (10, 4)
    assert work_from_profile({"result": "error"}) == (0, 0)
    with pytest.raises(ValueError, match="no 'query' section"):
        work_from_profile({"operator": []})
    assert efficiency_score(99, 99) == 1.0 and efficiency_score(399, 99) == 2.0


def test_the_run_score_counts_wrong_answers_as_zero_and_keeps_wall_time_apart():
    # the wall-time figure follows the work score's rule and set (wrong answers count 0), so the two compare
    good = make_verdict(case_id="a", outcome="correct", correct=True, efficiency_score=1.0, candidate_work=9)
    slow = replace(good, case_id="b", efficiency_score=0.5, candidate_work=39, gold_work=9)
    wrong = make_verdict(case_id="c", outcome="wrong_result")
    timed = [replace(v, candidate_profile_ms=ms, gold_profile_ms=1.0) for v, ms in ((good, 1.0), (slow, 4.0))]
    scores = efficiency_scores([*timed, wrong])
    assert scores["efficiency_score"] == pytest.approx(0.5) and scores["efficiency_measured_count"] == 2
    assert scores["efficiency_wall_time_score"] == pytest.approx((1.0 + 0.5 + 0.0) / 3)
    assert [c["case_id"] for c in scores["least_efficient_cases"]] == ["b"]
    assert efficiency_scores([wrong])["efficiency_score"] is None  # nothing profiled: not measured


@pytest.mark.e2e  # the CLI's run through Dagster, with and without the switch
def test_the_efficiency_switch_runs_through_the_cli(eval_world, capsys):
    from nl2sql_cli import main as cli

    register_gold_set(eval_world.data, "eff-v1", [query_case("e1", GOLD), query_case("e2", DETOUR)])
    assert cli.main(["run", "--gold-set", "eff-v1", "--model", "gold-echo", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert plain["efficiency_score"] is None and plain["efficiency_measured_count"] == 0  # off by default
    assert cli.main(["run", "--gold-set", "eff-v1", "--model", "gold-echo", "--efficiency", "--json"]) == 0
    captured = capsys.readouterr()
    assert "REUSED" not in captured.err  # the stored run did not measure it: evaluated again
    scores = json.loads(captured.out)["runs"][0]["scores"]
    assert scores["efficiency_score"] == 1.0 and scores["efficiency_measured_count"] == 2  # gold-echo: the gold
    assert cli.main(["run", "--gold-set", "eff-v1", "--model", "gold-echo", "--efficiency"]) == 0
    assert "efficiency (work)" in capsys.readouterr().out

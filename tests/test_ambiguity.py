"""Ambiguous questions: ``expected_behavior: clarify`` cases with the readings that make them ambiguous; the
reply classified clarified / guessed / refused (a rule on SQL-only replies and on the answer text), scored as
its own category and never in the query rates; the built-in ``multidomain-clarify-v1`` leaves v1 untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from eval_support import query_case
from verdict_factory import make_candidate

from nl2sql_pipeline import paths
from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.generation import generate_candidates, prompt_context_for_cases
from nl2sql_pipeline.generation.registry import load_registry
from nl2sql_pipeline.gold.builtin.generator import BUILTIN_GOLD_SETS, render_jsonl
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.policy.gate import PolicyGate
from nl2sql_pipeline.report.console import console_run_report
from nl2sql_pipeline.report.tables import build_run_report
from nl2sql_pipeline.results.frames import verdicts_from_frame, verdicts_to_frame
from nl2sql_pipeline.scoring.run_scores import score_run
from nl2sql_pipeline.stages import execute_attempts, judge, outcomes, run_oracle
from nl2sql_pipeline.stages.clarify import classify_clarify_reply
from nl2sql_pipeline.stages.records import Attempt

CLARIFY = {
    "id": "amb-1",
    "domain": "d",
    "category": "ambiguous",
    "question": "Which anime is the longest?",
    "database": "anime_platform",
    "expected_behavior": "clarify",
    "readings": [{"reading": "most episodes", "sql": "SELECT count(*) FROM episodes"}, "most minutes"],
}


def _load(tmp_path: Path, *records: dict) -> list:
    path = tmp_path / "g.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return load_cases(path)


def test_a_clarify_case_is_read_with_its_readings(tmp_path):
    (case,) = _load(tmp_path, CLARIFY)
    assert case.is_clarify and not case.is_probe and case.expected_sql == ()
    assert [r.reading for r in case.readings] == ["most episodes", "most minutes"]
    assert case_from_dict(case.to_dict()) == case  # the stored form keeps them
    csv = tmp_path / "g.csv"
    csv.write_text(
        'id,question,database,expected_behavior,readings\nq1,How long?,anime_platform,clarify,"[""a"", ""b""]"\n',
        encoding="utf-8",
    )
    assert [r.reading for r in load_cases(csv)[0].readings] == ["a", "b"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"readings": ["only one"]}, "needs two or more readings"),
        ({"expected_sql": "SELECT 1"}, "a clarify case has expected_sql"),
        ({"expected_behavior": "guess"}, "unknown expected_behavior 'guess'"),
        ({"readings": [{"reading": "a", "sql": "SELEC nonsense"}, "b"]}, "readings[1].sql"),
    ],
)
def test_a_bad_clarify_case_is_reported_with_file_and_line(tmp_path, change, message):
    with pytest.raises(CaseValidationError) as raised:
        _load(tmp_path, query_case("ok", "SELECT 1"), {**CLARIFY, **change})
    assert any(p.startswith(f"{tmp_path / 'g.jsonl'}:2:") and message in p for p in raised.value.problems), raised.value


def test_readings_without_clarify_are_refused(tmp_path):
    with pytest.raises(CaseValidationError, match="readings on a case that is not ambiguous"):
        _load(tmp_path, query_case("q", "SELECT 1", readings=["a", "b"]))


def test_the_builtin_clarify_set_is_v1_unchanged_plus_two_questions_per_domain():
    v1 = load_gold_set("multidomain-v1")
    clarify = load_gold_set("multidomain-clarify-v1")
    assert clarify[: len(v1)] == v1  # the 120 cases: same ids, same content, same fingerprints
    added = clarify[len(v1) :]
    assert len(added) == 6 and all(c.is_clarify and len(c.readings) >= 2 for c in added)
    assert sorted({c.domain for c in added}) == ["anime_content", "platform_monetization", "viewer_engagement"]
    generated = BUILTIN_GOLD_SETS["multidomain-clarify-v1"][1]()
    checked_in = (paths.PROJECT_ROOT / "data" / "gold" / "nl2sql_multidomain_clarify.jsonl").read_text()
    assert render_jsonl(generated) == checked_in  # regenerated, the file is the same


def _reply(sql: str | None, text: str | None, error: str | None = None) -> Attempt:
    record = make_candidate("amb-1", sql, raw_reply=text, error_class=error, error_message=error)
    return Attempt.from_candidate(record)


@pytest.mark.parametrize(
    ("sql", "text", "error", "expected"),
    [
        (None, "Do you mean the most episodes, or the most minutes?", "no_sql", outcomes.CLARIFIED),
        ("SELECT 1", "```sql\nSELECT 1\n```", None, outcomes.GUESSED),
        (None, "I can't answer that with this data.", "no_sql", outcomes.REFUSED),
        (None, "The longest one.", "no_sql", outcomes.REFUSED),  # neither SQL nor a question back
        (None, None, "provider_error", outcomes.NO_RESPONSE),
        (None, None, "not_ready", outcomes.SKIPPED),
    ],
)
def test_a_reply_to_an_ambiguous_question_is_classified_by_rule(sql, text, error, expected):
    assert classify_clarify_reply(_reply(sql, text, error)) == expected


@pytest.fixture(scope="module")
def world(tmp_path_factory, sample_database):
    from eval_support import seed_sample_database

    home = tmp_path_factory.mktemp("clarify-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NL2SQL_HOME", str(home))
        seed_sample_database(home, sample_database)
        cases = [c for c in load_gold_set("multidomain-clarify-v1") if c.is_clarify or c.id.endswith("single-01")]
        yield {"cases": cases, "oracle": run_oracle(cases, paths.database_path)}


def _evaluate(world, slug: str):
    cases = world["cases"]
    records = generate_candidates(cases, load_registry()[slug], cache=None, context=prompt_context_for_cases(cases))
    attempts = execute_attempts(cases, [Attempt.from_candidate(r) for r in records], PolicyGate(paths.database_path))
    assert not any(a.executed for a in attempts if a.case_id.split("-")[1] == "clarify")  # a guess never runs
    verdicts = judge(cases, world["oracle"], attempts)
    return verdicts, score_run(verdicts)


def test_calibration_models_and_the_reference_system_on_ambiguous_questions(world):
    echo_verdicts, echo = _evaluate(world, "gold-echo")
    assert echo["clarification_rate"] == 1.0 and echo["clarify_outcomes"] == {"clarified": 6}
    # its own category: the query rates are over the three query cases only
    assert echo["query_count"] == 3 and echo["semantic_correctness_rate"] == 1.0 and echo["ambiguous_count"] == 6
    _, mutant = _evaluate(world, "sql-mutant")
    assert mutant["clarification_rate"] < 1.0 and mutant["clarify_outcomes"]["guessed"] >= 1  # a measured drop
    assert all(item["outcome"] == "guessed" and item["sql"] for item in mutant["guessed_cases"])
    system_verdicts, system = _evaluate(world, "reference-python")  # its answer text carries the question back
    assert system["clarification_rate"] == 1.0
    text = console_run_report(build_run_report(echo_verdicts, model="gold-echo", gold_set="g"))
    assert "ambiguous questions" in text and "100.0% asked back" in text
    again = verdicts_from_frame(verdicts_to_frame(system_verdicts, gold_set="g", model="m"))
    assert [v.outcome for v in again] == [v.outcome for v in system_verdicts]


@pytest.mark.e2e  # the built-in clarify set through the CLI's run (Dagster, preflight, reports, leaderboard)
def test_the_builtin_clarify_set_runs_through_the_cli(eval_world, capsys):
    from nl2sql_cli import main as cli
    from nl2sql_pipeline.results.leaderboard import build_leaderboard, stored_runs

    assert cli.main(["run", "--gold-set", "multidomain-clarify-v1", "--model", "gold-echo", "--json"]) == 0
    scores = json.loads(capsys.readouterr().out)["runs"][0]["scores"]
    assert scores["clarification_rate"] == 1.0 and scores["semantic_correctness_rate"] == 1.0
    assert scores["query_count"] == 96 and scores["ambiguous_count"] == 6  # 120 - 24 probes; the 6 apart
    board = build_leaderboard(stored_runs())
    assert board.loc[0, "clarification_rate"] == 1.0 and board.loc[0, "semantic_correctness_rate"] == 1.0

"""The SQL equivalence judge, the diagnosis with recommendations and the judges' reliability: judge-oracle's
rules, the mapping of rule-based findings onto categories, the agreement table, repeat stability, the stored
frame, and LLM judges through litellm's real HTTP path against the scripted server (valid judgements, a
malformed one, a 402 that stops the judging, repeats that disagree)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer, Reply
from verdict_factory import make_verdict

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.judges import diagnosis
from nl2sql_pipeline.judges.client import JudgeClient, judge_cache
from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE, JudgeSpec, load_judges
from nl2sql_pipeline.judges.reliability import execution_agreement, judge_errors, repeat_stability
from nl2sql_pipeline.judges.sql_equivalence import is_judged, oracle_equivalence
from nl2sql_pipeline.judges.sql_judgement import JUDGE_ERROR, SqlJudgement
from nl2sql_pipeline.judges.sql_judging import JUDGING_STOPPED, judge_sql
from nl2sql_pipeline.results.judgement_frames import sql_judgements_from_frame, sql_judgements_to_frame
from nl2sql_pipeline.stages import outcomes

GOLD = "SELECT country, count(*) AS n FROM users WHERE signup_date >= DATE '2025-01-01' GROUP BY country"


def _case(case_id: str = "c1", sql: str = GOLD) -> Case:
    return Case(
        id=case_id,
        domain="d",
        category="aggregation",
        question="How many users per country?",
        database="db",
        expected_sql=(sql,),
    )


def _verdict(outcome: str, sql: str = "SELECT 1", **overrides: object):
    values: dict[str, object] = dict(
        generated_sql=sql, outcome=outcome, correct=outcome == outcomes.CORRECT, comparison_rule="multiset", reason="r"
    )
    values.update(overrides)
    return make_verdict(**values)


pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")

ORACLE = load_judges()["judge-oracle"]


# ------------------------------------------------------------------------------------- judge-oracle: equivalence


def test_oracle_equivalence_rules_in_order():
    case = _case()
    # identical after normalization (case of keywords and identifiers aside) wins over what the rows said
    same = GOLD.lower().replace("users", "USERS")
    assert oracle_equivalence(_verdict(outcomes.WRONG_RESULT, same), case) == (
        True,
        "identical to the expected SQL after normalization",
    )
    failed = oracle_equivalence(_verdict(outcomes.EXECUTION_ERROR, reason="binder: no column x"), case)
    assert failed == (False, "the candidate did not run (execution_error: binder: no column x)")
    assert oracle_equivalence(_verdict(outcomes.WRONG_RESULT, reason="2 rows missing"), case)[0] is False
    lucky = _verdict(outcomes.CORRECT, test_suite_correct=False, test_suite_reason="variant 2: 3 rows missing")
    assert oracle_equivalence(lucky, case) == (
        False,
        "rows match on the database but not on a variant (variant 2: 3 rows missing)",
    )
    right = _verdict(outcomes.CORRECT, test_suite_correct=True, test_suite_variants=3)
    assert oracle_equivalence(right, case) == (True, "rows match on the database and on 3 variants")


def test_what_is_judged():
    assert is_judged(_verdict(outcomes.WRONG_RESULT))
    assert is_judged(_verdict(outcomes.POLICY_REJECTED))
    assert not is_judged(_verdict(outcomes.GENERATION_ERROR, sql=None))
    assert not is_judged(_verdict(outcomes.SKIPPED))
    assert not is_judged(_verdict(outcomes.CORRECT, is_probe=True))


# ------------------------------------------------------------------------------------- judge-oracle: diagnosis


@pytest.mark.parametrize(
    ("findings", "category", "kind"),
    [
        ((("wrong_join", "join kinds inner expected, got left"),), diagnosis.JOIN_PATH, diagnosis.JOIN_HINT),
        ((("missing_filter", "missing condition users.country = 'FR'"),), diagnosis.FILTER_VALUE, diagnosis.SYNONYM),
        (
            (("missing_filter", "missing condition users.signup_date >= CAST('2025-01-01' AS DATE)"),),
            diagnosis.TIME,
            diagnosis.PROMPT_RULE,
        ),
        (
            (("extra_or_missing_column", "2 columns expected"), ("wrong_grouping", "GROUP BY a, b expected, got a")),
            diagnosis.AGGREGATION,
            diagnosis.SEMANTIC_MODEL_DESCRIPTION,
        ),
        ((("limit_differs", "10 expected, got 11"),), diagnosis.ORDERING_LIMIT, diagnosis.PROMPT_RULE),
        ((), diagnosis.OTHER, diagnosis.PROMPT_RULE),
    ],
)
def test_oracle_diagnosis_maps_rule_findings(findings, category, kind):
    found = diagnosis.oracle_diagnosis(_verdict(outcomes.WRONG_RESULT, diagnosis_detail=findings))
    assert (found.category, found.recommendation_kind) == (category, kind)
    assert found.recommendation == diagnosis.RULE_RECOMMENDATIONS[category][1]


def test_oracle_diagnosis_of_a_failed_candidate():
    found = diagnosis.oracle_diagnosis(_verdict(outcomes.EXECUTION_ERROR, reason="binder: column x not found"))
    assert found.category == diagnosis.SCHEMA_LINKING
    assert found.recommendation_kind == diagnosis.SEMANTIC_MODEL_DESCRIPTION
    assert "binder: column x not found" in found.explanation


# ------------------------------------------------------------------------------------- judging and reliability


def _run(verdicts, judges, repeat=1, client_for=None):
    cases = [_case(v.case_id) for v in verdicts]
    return judge_sql(
        cases,
        verdicts,
        judges,
        schema_text=lambda case: "CREATE TABLE users (...)",
        repeat=repeat,
        client_for=client_for,
    )


def _llm(server: FakeLLMServer, roles: tuple[str, ...]) -> JudgeSpec:
    spec = JudgeSpec(slug="sql-judge", kind="litellm", roles=roles, model="openai/fake-judge", api_base=server.api_base)
    assert {role: spec.plays(role) for role in roles}  # the shipped v1 prompts of both SQL roles are read below
    return spec


def test_oracle_judges_every_role_and_repeat_identically():
    verdicts = [
        _verdict(outcomes.CORRECT, case_id="a", test_suite_correct=True, test_suite_variants=2),
        _verdict(outcomes.WRONG_RESULT, case_id="b", diagnosis_detail=(("wrong_join", "x"),)),
        _verdict(outcomes.CORRECT, case_id="c", test_suite_correct=False, test_suite_reason="variant 1"),
        _verdict(outcomes.GENERATION_ERROR, sql=None, case_id="d"),
    ]
    found = _run(verdicts, [ORACLE], repeat=2)
    equivalence = [j for j in found if j.role == ROLE_SQL_EQUIVALENCE]
    diagnoses = [j for j in found if j.role == ROLE_DIAGNOSIS]
    assert {j.case_id for j in equivalence} == {"a", "b", "c"} and len(equivalence) == 6
    assert [(j.case_id, j.category) for j in diagnoses] == [("b", diagnosis.JOIN_PATH)] * 2
    [agreement] = execution_agreement(found)
    assert (agreement.both_right, agreement.both_wrong, agreement.lucky, agreement.missed) == (1, 1, 1, 0)
    assert [d.case_id for d in agreement.lucky_matches] == ["c"]
    assert agreement.precision == 0.5 and agreement.recall == 1.0
    assert agreement.suite_measured == 2 and agreement.suite_agree == 2
    stability = repeat_stability(found)
    assert {(s.role, s.items, s.disagreement_rate) for s in stability} == {
        (ROLE_SQL_EQUIVALENCE, 3, 0.0),
        (ROLE_DIAGNOSIS, 1, 0.0),
    }
    [group] = diagnosis.top_recommendations(found)
    assert group.cases == ("b",) and group.kind == diagnosis.JOIN_HINT


def test_llm_equivalence_through_litellm_with_a_malformed_reply_and_a_402(tmp_path: Path):
    verdicts = [_verdict(outcomes.CORRECT, f"SELECT '{c}'", case_id=c) for c in ("a", "b", "c", "d")]
    with FakeLLMServer() as server:
        server.enqueue(
            Reply.json({"equivalent": True, "reason": "same rows"}),
            Reply.text("I think they are the same."),  # malformed: asked again once, saying what was wrong
            Reply.json({"equivalent": "maybe"}),  # still not valid: judge_error
            Reply.payment_required(),  # stops the judging: case d is never sent
        )
        found = _run(verdicts, [_llm(server, (ROLE_SQL_EQUIVALENCE,))], client_for=lambda j: JudgeClient(j))
        assert server.hits == 4
        first = server.requests[0].body
        assert "CREATE TABLE users" in first["messages"][-1]["content"] and GOLD in first["messages"][-1]["content"]
        assert first["response_format"]["json_schema"]["schema"]["required"] == ["equivalent", "reason"]
        assert "not valid" in server.requests[2].body["messages"][-1]["content"]
    assert [(j.case_id, j.equivalent, j.error_class) for j in found] == [
        ("a", True, None),
        ("b", None, JUDGE_ERROR),
        ("c", None, "payment_required"),
        ("d", None, JUDGING_STOPPED),
    ]
    assert found[0].input_tokens == 111 and found[0].reason == "same rows" and not found[0].cached
    assert "payment_required" in (found[3].error_message or "")
    [errors] = judge_errors(found)
    assert errors.errors == {JUDGE_ERROR: 1, "payment_required": 1, JUDGING_STOPPED: 1}


def test_llm_diagnosis_and_repeats_that_disagree(tmp_path: Path):
    verdicts = [
        _verdict(
            outcomes.WRONG_RESULT,
            "SELECT count(*) FROM users LEFT JOIN orders USING (user_id)",
            case_id="a",
            diagnosis_detail=(("wrong_join", "join kinds inner expected"),),
        ),
        _verdict(outcomes.CORRECT, "SELECT 2", case_id="b"),
    ]

    def respond(index, body):
        text = body["messages"][-1]["content"]
        if "Rule-based diagnosis" in text:
            return Reply.json(
                {
                    "category": "join_path",
                    "explanation": "LEFT JOIN keeps users without orders",
                    "recommendation_kind": "join_hint",
                    "recommendation": "users join orders with an inner join on user_id",
                }
            )
        # equivalence: asked the same thing again (a repeat), the judge changes its mind on the JOIN query
        seen[text] = seen.get(text, 0) + 1
        return Reply.json({"equivalent": not (seen[text] > 1 and "JOIN" in text), "reason": "r"})

    seen: dict[str, int] = {}
    cache = judge_cache(tmp_path / "judge-cache")
    with FakeLLMServer(responder=respond) as server:
        judge = _llm(server, (ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS))
        found = _run(verdicts, [judge], repeat=2, client_for=lambda j: JudgeClient(j, cache=cache))
        assert server.hits == 6  # 2 equivalence items x 2 repeats, 1 diagnosis x 2 repeats: repeats are not cached
        again = _run(verdicts, [judge], repeat=2, client_for=lambda j: JudgeClient(j, cache=cache))
        assert server.hits == 6 and all(j.cached for j in again)  # a re-run is served by the cache
    diagnoses = [j for j in found if j.role == ROLE_DIAGNOSIS]
    assert {(j.category, j.recommendation_kind) for j in diagnoses} == {("join_path", "join_hint")}
    [group] = diagnosis.top_recommendations(found)
    assert group.cases == ("a",) and group.text == "users join orders with an inner join on user_id"
    stability = {s.role: s for s in repeat_stability(found)}
    assert stability[ROLE_SQL_EQUIVALENCE].items == 2 and stability[ROLE_SQL_EQUIVALENCE].disagreement_rate == 0.5
    assert [d.case_id for d in stability[ROLE_SQL_EQUIVALENCE].disagreements] == ["a"]
    assert stability[ROLE_DIAGNOSIS].disagreement_rate == 0.0


def test_repeat_disagreement_is_measured():
    rows = [
        SqlJudgement("a", 0, "j", ROLE_SQL_EQUIVALENCE, 0, "s", outcomes.CORRECT, equivalent=True),
        SqlJudgement("a", 0, "j", ROLE_SQL_EQUIVALENCE, 1, "s", outcomes.CORRECT, equivalent=False),
        SqlJudgement("b", 0, "j", ROLE_SQL_EQUIVALENCE, 0, "s", outcomes.CORRECT, equivalent=True),
        SqlJudgement("b", 0, "j", ROLE_SQL_EQUIVALENCE, 1, "s", outcomes.CORRECT, equivalent=True),
        SqlJudgement("c", 0, "j", ROLE_SQL_EQUIVALENCE, 0, "s", outcomes.CORRECT, equivalent=True),
        SqlJudgement("c", 0, "j", ROLE_SQL_EQUIVALENCE, 1, "s", outcomes.CORRECT, error_class=JUDGE_ERROR),
    ]
    [stability] = repeat_stability(rows)
    assert stability.items == 2 and stability.disagreement_rate == 0.5
    assert stability.disagreements[0].detail == "repeat 0: equivalent, repeat 1: not equivalent"


def test_frame_round_trip():
    rows = [
        SqlJudgement(
            "a",
            1,
            "j",
            ROLE_SQL_EQUIVALENCE,
            0,
            "SELECT 1",
            outcomes.CORRECT,
            test_suite_correct=None,
            equivalent=False,
            reason="r",
            input_tokens=3,
            cost_usd=0.5,
            cached=True,
        ),
        SqlJudgement(
            "b",
            0,
            "j",
            ROLE_DIAGNOSIS,
            2,
            None,
            outcomes.WRONG_RESULT,
            category="time",
            recommendation_kind="prompt_rule",
            recommendation="x",
            error_class=None,
        ),
    ]
    frame = sql_judgements_to_frame(rows, gold_set="g", model="m")
    assert list(frame.columns[:2]) == ["gold_set", "model"]
    assert sql_judgements_from_frame(frame) == rows


def test_report_section_keeps_current_judgements_and_renders_every_part():
    from nl2sql_pipeline.report.sql_judges import (
        build_sql_judge_report,
        console_sql_judges,
        html_sql_judges,
        markdown_sql_judges,
    )

    verdicts = [
        _verdict(outcomes.CORRECT, "SELECT 1", case_id="a", test_suite_correct=False, test_suite_reason="variant 0"),
        _verdict(outcomes.WRONG_RESULT, "SELECT 2", case_id="b", diagnosis_detail=(("limit_differs", "5 vs 6"),)),
    ]
    found = _run(verdicts, [ORACLE], repeat=2)
    stale = SqlJudgement(
        "b", 0, "judge-oracle", ROLE_SQL_EQUIVALENCE, 0, "SELECT 3", outcomes.WRONG_RESULT, equivalent=True
    )  # made for another candidate of case b (an earlier run): left out
    failed = SqlJudgement(
        "a",
        0,
        "judge-oracle",
        ROLE_DIAGNOSIS,
        5,
        "SELECT 1",
        outcomes.CORRECT,
        error_class=JUDGE_ERROR,
        error_message="not JSON",
    )
    report = build_sql_judge_report([*found, stale, failed], verdicts)
    assert report is not None and stale not in report.judgements
    assert build_sql_judge_report([stale], verdicts) is None
    text = "\n".join(console_sql_judges(report))
    assert "judge-oracle: equivalent 0.0% (0/2); agrees with execution 50.0% (1/2)" in text
    assert "precision 50.0%, recall 100.0%" in text
    assert "execution correct, judge not equivalent (lucky matches): 1" in text and "! a: rows match" in text
    assert "judge-oracle sql_equivalence across 2 repeats: 0 of 2 items changed" in text
    assert "judge-oracle diagnosis: 1 of 3 failed (judge_error 1)\n" + " " * 26 + "first: not JSON" in text
    assert "judge-oracle diagnosis by category: ordering_limit 1" in text
    assert "1. [prompt_rule] Add a prompt rule to keep the ordering" in text and "1 cases: b)" in text
    markdown = markdown_sql_judges(report)
    assert "| judge-oracle | 0.0% | 50.0% (1/2) | 50.0% | 100.0% | a | - |" in markdown
    html = html_sql_judges(report)
    assert html.count("<tr><td>a</td><td>judge-oracle</td>") == 1  # the per-case table: first repeat only
    assert "[prompt_rule]" in html and "not equivalent" in html


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--judge-repeat", "0", "--judge", "judge-oracle"], "--judge-repeat must be >= 1"),
        (["--judge-repeat", "2"], "--judge-repeat repeats the judges of --judge SLUG"),
    ],
)
def test_judge_repeat_needs_a_judge_and_a_positive_count(args, message, capsys):
    from nl2sql_cli import main as cli

    assert cli.main(["run", "--gold-set", "multidomain-v1", *args]) == 2
    assert message in capsys.readouterr().err

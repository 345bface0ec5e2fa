"""The SQL equivalence judge, the diagnosis with recommendations and the judges' reliability (pure parts):
judge-oracle's rules, the mapping of rule-based findings onto categories, the agreement table, repeat
stability, and the stored frame."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from verdict_factory import make_verdict

from nl2sql_pipeline.cases import Case
from nl2sql_pipeline.judges import diagnosis
from nl2sql_pipeline.judges.reliability import execution_agreement, judge_errors, repeat_stability
from nl2sql_pipeline.judges.sql_equivalence import is_judged, oracle_equivalence
from nl2sql_pipeline.judges.sql_judgement import JUDGE_ERROR, ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE, SqlJudgement
from nl2sql_pipeline.judges.sql_judging import JUDGING_STOPPED, JudgeReply, judge_sql
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


@dataclass(frozen=True)
class _Judge:
    slug: str
    is_offline: bool
    roles: tuple[str, ...]
    version_label: str = "v1"


ORACLE = _Judge("judge-oracle", True, ("answer", ROLE_SQL_EQUIVALENCE, ROLE_DIAGNOSIS))


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


def _run(verdicts, judges, ask=None, repeat=1):
    cases = [_case(v.case_id) for v in verdicts]
    return judge_sql(
        cases, verdicts, judges, schema_text=lambda case: "CREATE TABLE users (...)", ask=ask, repeat=repeat
    )


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


def test_llm_judge_replies_errors_and_stop():
    llm = _Judge("eq-judge", False, (ROLE_SQL_EQUIVALENCE,))
    verdicts = [_verdict(outcomes.CORRECT, case_id=c) for c in ("a", "b", "c", "d")]
    replies = iter(
        [
            JudgeReply({"equivalent": True, "reason": "same"}, input_tokens=10, cost_usd=0.01),
            JudgeReply(None, error_class=JUDGE_ERROR, error_message="not JSON"),
            JudgeReply(None, error_class="payment_required", error_message="402", stops_judging=True),
        ]
    )
    asked = []

    def ask(judge, role, messages, schema, repeat_index):
        asked.append((judge.slug, role, repeat_index))
        assert "CREATE TABLE users" in messages[-1]["content"] and schema["required"] == ["equivalent", "reason"]
        return next(replies)

    found = _run(verdicts, [llm], ask=ask)
    assert len(asked) == 3  # the fourth case is not asked once the judging stopped
    assert [(j.equivalent, j.error_class) for j in found] == [
        (True, None),
        (None, JUDGE_ERROR),
        (None, "payment_required"),
        (None, JUDGING_STOPPED),
    ]
    [errors] = judge_errors(found)
    assert errors.errors == {JUDGE_ERROR: 1, "payment_required": 1, JUDGING_STOPPED: 1}


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

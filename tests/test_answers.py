"""Expected-answer cases, the answer stage and the answer judge, without Dagster.

The LLM paths go through litellm's real HTTP path against the scripted server on loopback.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fake_llm_server import FakeLLMServer, Reply

from nl2sql_pipeline.cases import case_from_dict
from nl2sql_pipeline.errors import CaseValidationError
from nl2sql_pipeline.execution import QueryResult
from nl2sql_pipeline.generation.answers import (
    NO_RESULT,
    SOURCE_MODEL,
    SOURCE_TEMPLATE,
    answer_candidates,
    rows_payload,
    template_answer,
)
from nl2sql_pipeline.generation.cache import GenerationCache
from nl2sql_pipeline.generation.candidate_record import CandidateRecord
from nl2sql_pipeline.generation.model_spec import KIND_LITELLM, ModelSpec
from nl2sql_pipeline.generation.offline_requests import answer_echo_sql
from nl2sql_pipeline.gold.formats.team_files import import_cases
from nl2sql_pipeline.gold.quality.validation import load_cases
from nl2sql_pipeline.judges.answer import (
    ANSWER_SCHEMA,
    METHOD_LLM,
    METHOD_NO_ANSWER,
    METHOD_ORACLE,
    METHOD_VALUE_CHECK,
    AnswerJudge,
    AnswerThresholds,
    combined_grade,
    judge_answers,
)
from nl2sql_pipeline.judges.client import JUDGE_ERROR, JudgeClient, judge_cache
from nl2sql_pipeline.judges.registry import JudgeSpec, load_judges
from nl2sql_pipeline.judges.values import check_answer, expected_values, ungrounded_numbers
from nl2sql_pipeline.stages.judge import judge as judge_stage
from nl2sql_pipeline.stages.outcomes import ANSWER_ONLY, NOT_SCORED
from nl2sql_pipeline.stages.records import Attempt, OracleRow

pytestmark = pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning")


def answer_only(case_id: str, expected, question: str = "How many sessions?") -> dict:
    return {
        "id": case_id,
        "domain": "d",
        "category": "answer",
        "question": question,
        "database": "anime_platform",
        "expected_answer": expected,
    }


def attempt(case, rows, columns=("n",), sql="SELECT 1", answer=None) -> Attempt:
    record = CandidateRecord(
        case.id,
        case.fingerprint,
        0,
        0,
        sql,
        sql,
        None,
        None,
        1.0,
        1,
        1,
        "measured",
        0.0,
        False,
        None,
        "0" * 16,
        "p",
        answer=answer,
    )
    result = QueryResult(True, list(columns), ["INTEGER"] * len(columns), [tuple(r) for r in rows])
    return Attempt(case.id, case.fingerprint, "model", 0, 0, sql, record, True, None, None, None, True, result)


# ------------------------------------------------------------------------------------------- the case format


def test_an_expected_answer_only_gold_file_validates(tmp_path: Path):
    path = tmp_path / "answers.jsonl"
    path.write_text(
        "\n".join(json.dumps(c) for c in (answer_only("a1", 412), answer_only("a2", "Most viewers watch on weekends")))
        + "\n",
        encoding="utf-8",
    )
    cases = load_cases(path)
    assert [c.is_answer_only for c in cases] == [True, True] and cases[0].expected_sql == ()
    neither = tmp_path / "neither.jsonl"
    neither.write_text(json.dumps({**answer_only("a3", None)}) + "\n", encoding="utf-8")
    with pytest.raises(CaseValidationError) as info:
        load_cases(neither)
    assert "missing required field 'expected_sql'" in str(info.value) and "expected_answer" in str(info.value)
    empty = tmp_path / "empty.jsonl"
    empty.write_text(json.dumps(answer_only("a4", "  ")) + "\n", encoding="utf-8")
    with pytest.raises(CaseValidationError, match="expected_answer is empty"):
        load_cases(empty)


def test_the_expected_answer_is_part_of_the_fingerprint():
    assert case_from_dict(answer_only("a", 412)).fingerprint != case_from_dict(answer_only("a", 413)).fingerprint


def test_importers_read_expected_answer_from_csv_and_yaml(tmp_path: Path):
    csv_file = tmp_path / "team.csv"
    csv_file.write_text("question,expected_answer\nHow many studios?,12\nWhich studio leads?,Toei\n", encoding="utf-8")
    cases = import_cases(csv_file, database="anime_platform")
    assert [(c.expected_answer, c.category, c.is_answer_only) for c in cases] == [
        (12, "answer", True),
        ("Toei", "answer", True),
    ]
    yaml_file = tmp_path / "team.yml"
    yaml_file.write_text("- id: y1\n  question: How many?\n  expected_answer: 3\n", encoding="utf-8")
    assert import_cases(yaml_file, database="anime_platform")[0].expected_answer == 3


def test_an_answer_only_case_is_never_scored_by_execution():
    case = case_from_dict(answer_only("a1", 412))
    verdicts = judge_stage([case], [], [attempt(case, [[412]])], resolve_database=lambda name: Path("/nonexistent"))
    assert [(v.outcome, v.correct, v.grade) for v in verdicts] == [(ANSWER_ONLY, False, None)]
    assert ANSWER_ONLY in NOT_SCORED


def test_offline_models_echo_an_expected_answer_as_literal_rows():
    assert answer_echo_sql(412) == "SELECT 412 AS answer"
    assert answer_echo_sql("O'Brien") == "SELECT 'O''Brien' AS answer"


# ------------------------------------------------------------------------------------------- deterministic checks


@pytest.mark.parametrize(
    ("expected", "answer", "passed"),
    [
        (412, "There were 412 sessions.", True),
        (412, "There were 1,412 sessions.", False),
        (3.14159, "About 3.14.", True),
        ("2024-01-01", "It started on January 1, 2024.", True),
        ("2024-01-01", "It started on 2024-01-02.", False),
        ("Toei, Madhouse", "Toei leads, then Madhouse.", True),
        (["Toei", "Madhouse"], "Only Toei.", False),
        ([[12]], "12 of them.", True),
    ],
)
def test_value_check(expected, answer, passed):
    assert check_answer(expected_values(expected), answer).passed is passed


def test_prose_is_not_checkable_and_invented_numbers_are_not_grounded():
    assert expected_values("Most viewers watch on weekends") is None
    assert ungrounded_numbers("The top studio made 31 titles and 99 films.", [("Tora", 31)]) == ["99"]
    assert ungrounded_numbers("Season 2 of Re:Zero 2 leads.", [("Re:Zero 2",)]) == []


def test_the_offline_answerer_renders_rows_by_a_fixed_template():
    long = rows_payload(QueryResult(True, ["n"], ["INTEGER"], [(i,) for i in range(30)]))
    assert long is not None and long["truncated"] and len(long["rows"]) == 20
    assert template_answer(long).startswith("The query returned 30 rows; the first 20: 0; 1; 2")
    assert template_answer(rows_payload(QueryResult(True, ["n"], ["INTEGER"], []))) == "The query returned 0 rows."
    assert template_answer(None) is None


# ------------------------------------------------------------------------------------------- the answer stage


def _litellm_spec(api_base: str) -> ModelSpec:
    return ModelSpec(slug="fake-answerer", kind=KIND_LITELLM, model="openai/fake-answerer", api_base=api_base)


def test_a_bare_model_answers_through_litellm_cached_and_accounted(isolated_home: Path):
    case = case_from_dict(answer_only("a1", 412))
    failed = Attempt(case.id, case.fingerprint, "model", 1, 0, None, None)
    with FakeLLMServer(default=Reply.text("There were 412 sessions.")) as server:
        spec = _litellm_spec(server.api_base)
        cache = GenerationCache(isolated_home / "answers-cache")
        first = answer_candidates([case], [attempt(case, [[412]]), failed], spec, registry={}, cache=cache)
        assert server.hits == 1  # the candidate without a result is not sent
        assert (first[0].answer, first[0].source, first[0].calls, first[0].input_tokens) == (
            "There were 412 sessions.",
            SOURCE_MODEL,
            1,
            111,
        )
        assert first[1].error_class == NO_RESULT and first[1].calls == 0
        prompt = server.requests[0].body["messages"][1]["content"]
        assert "How many sessions?" in prompt and "SELECT 1" in prompt and "412" in prompt
        again = answer_candidates([case], [attempt(case, [[412]])], spec, registry={}, cache=cache)
        assert again[0].cached and again[0].calls == 0 and server.hits == 1


def test_offline_models_and_systems_answer_without_a_call():
    from nl2sql_pipeline.generation.system_spec import SystemConfig

    case = case_from_dict(answer_only("a1", 412))
    offline = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
    [record] = answer_candidates([case], [attempt(case, [[412]])], offline, registry={})
    assert (record.answer, record.source, record.calls) == ("The answer is 412.", SOURCE_TEMPLATE, 0)
    system = ModelSpec(
        slug="team-bot", kind="python", model="", system=SystemConfig(kind="python", target="team.bot:answer")
    )
    own, silent = answer_candidates(
        [case],
        [attempt(case, [[412]], answer="We had 412 sessions."), attempt(case, [[412]])],
        system,
        registry={},
    )
    assert (own.answer, own.source, own.answerer, own.calls) == ("We had 412 sessions.", "system", "team-bot", 0)
    assert silent.answer is None and silent.error_class == "no_answer"


# ------------------------------------------------------------------------------------------- the answer judge


def _answers(case, text, rows=((412,),)):
    offline = ModelSpec(slug="m", kind="offline", model="nl2sql-offline/gold-echo")
    [record] = answer_candidates([case], [attempt(case, rows)], offline, registry={})
    from dataclasses import replace

    return replace(record, answer=text)


def _llm_judge(api_base: str) -> JudgeSpec:
    shipped = load_judges()["answer-judge"]
    from dataclasses import replace

    return replace(shipped, api_base=api_base, api_key_env=None, model="openai/fake-judge")


def _scores(c: int, g: int, k: int) -> dict:
    return {
        "correctness": {"score": c, "rationale": "Matches the reference."},
        "groundedness": {"score": g, "rationale": "Every value is in the rows."},
        "completeness": {"score": k, "rationale": "Answers the question."},
    }


def test_a_number_valued_expected_answer_is_decided_without_calling_the_judge(isolated_home: Path):
    case = case_from_dict(answer_only("a1", 412))
    with FakeLLMServer(default=Reply.json(_scores(5, 5, 5))) as server:
        spec = _llm_judge(server.api_base)
        judge = AnswerJudge(spec, JudgeClient(spec, cache=judge_cache()))
        right, wrong = (
            judge_answers([case], [_answers(case, text)], [], judge)[0]
            for text in ("There were 412 sessions.", "There were 413 sessions.")
        )
        assert server.hits == 0
    assert (right.method, right.correctness, right.answer_grade) == (METHOD_VALUE_CHECK, 5, "pass")
    assert (wrong.method, wrong.correctness, wrong.answer_grade) == (METHOD_VALUE_CHECK, 1, "fail")


def test_an_llm_judge_scores_a_prose_answer_and_never_sees_the_expected_sql(isolated_home: Path):
    prose = case_from_dict(answer_only("p1", "Most viewers watch on weekends", question="When do people watch?"))
    with_sql = case_from_dict(
        {**answer_only("s1", None, question="Top studio?"), "expected_sql": "SELECT 'Toei' AS studio_name_secret"}
    )
    gold = OracleRow("s1", with_sql.fingerprint, 0, QueryResult(True, ["studio"], ["VARCHAR"], [("Toei",)]))
    with FakeLLMServer(default=Reply.json(_scores(4, 5, 3))) as server:
        spec = _llm_judge(server.api_base)
        judge = AnswerJudge(spec, JudgeClient(spec, cache=judge_cache()))
        found = judge_answers(
            [prose, with_sql],
            [
                _answers(prose, "Mostly on weekends.", rows=(("weekend",),)),
                _answers(with_sql, "Toei, with no doubt.", rows=(("Toei",),)),
            ],
            [gold],
            judge,
        )
        bodies = [r.body for r in server.requests]
    assert [j.method for j in found] == [METHOD_LLM, METHOD_LLM]
    assert (found[0].correctness, found[0].groundedness, found[0].completeness, found[0].answer_grade) == (
        4,
        5,
        3,
        "partial",
    )
    assert found[0].correctness_rationale == "Matches the reference." and found[0].calls == 1
    assert bodies[0]["response_format"]["json_schema"]["schema"] == ANSWER_SCHEMA
    texts = sorted((json.dumps(b["messages"]) for b in bodies), key=lambda text: "Top studio?" in text)
    assert "Most viewers watch on weekends" in texts[0] and "correctness (1-5)" in texts[0]
    assert "Toei" in texts[1] and "studio_name_secret" not in texts[1] and "SELECT" not in texts[1]


def test_a_malformed_llm_judgement_is_a_judge_error_not_a_crash(isolated_home: Path):
    case = case_from_dict(answer_only("p1", "Most viewers watch on weekends"))
    with FakeLLMServer(default=Reply.text("Looks right to me!")) as server:
        spec = _llm_judge(server.api_base)
        [found] = judge_answers([case], [_answers(case, "Weekends.")], [], AnswerJudge(spec, JudgeClient(spec)))
        assert server.hits == 2
    assert (found.error_class, found.correctness, found.answer_grade) == (JUDGE_ERROR, None, None)


def test_the_oracle_decides_from_gold_rows_and_no_answer_fails():
    case = case_from_dict({**answer_only("s1", None), "expected_sql": "SELECT 3"})
    gold = OracleRow("s1", case.fingerprint, 0, QueryResult(True, ["n"], ["INTEGER"], [(3,)]))
    oracle = AnswerJudge(load_judges()["judge-oracle"])
    right, wrong = (
        judge_answers([case], [_answers(case, text, rows=((3,),))], [gold], oracle)[0]
        for text in ("The answer is 3.", "The answer is 4.")
    )
    assert (right.method, right.answer_grade) == (METHOD_ORACLE, "pass")
    assert (wrong.correctness, wrong.groundedness, wrong.answer_grade) == (1, 2, "fail")
    [silent] = judge_answers([case], [_answers(case, None)], [gold], oracle)
    assert (silent.method, silent.correctness, silent.answer_grade) == (METHOD_NO_ANSWER, 1, "fail")


def test_thresholds_and_combined_grades():
    strict = AnswerThresholds(pass_score=5, partial_score=4)
    assert strict.grade({"correctness": 5, "groundedness": 4, "completeness": 5}) == "partial"
    assert AnswerThresholds().grade({"correctness": 5, "groundedness": 4, "completeness": 4}) == "pass"
    assert combined_grade("pass", "partial") == "partial" and combined_grade(None, "pass") == "pass"
    assert combined_grade("fail", "pass") == "fail" and combined_grade("pass", None) == "pass"


@pytest.mark.parametrize(
    ("expected", "checkable"),
    [
        ("Viewing grows every month", False),
        ("Basic with Ads", True),
        ("Toei Animation; Madhouse", True),
        ("weekend", True),
    ],
)
def test_names_are_checkable_and_sentences_go_to_the_judge(expected, checkable):
    assert (expected_values(expected) is not None) is checkable


def test_gold_validate_counts_answer_only_cases(tmp_path: Path, capsys, seeded_home):
    from nl2sql_cli import main as cli

    path = tmp_path / "answers.jsonl"
    path.write_text(json.dumps(answer_only("a1", 412)) + "\n", encoding="utf-8")
    assert cli.main(["gold", "validate", str(path)]) == 0
    assert "1 case (1 domain, 1 category, 1 answer-only)" in capsys.readouterr().out


def test_the_report_shows_only_answers_of_the_verdicts_it_explains():
    from dataclasses import replace

    from nl2sql_pipeline.report.answers import build_answers_report, console_answers

    case = case_from_dict({**answer_only("s1", None), "expected_sql": "SELECT 3"})
    gold = OracleRow("s1", case.fingerprint, 0, QueryResult(True, ["n"], ["INTEGER"], [(3,)]))
    answers = [_answers(case, "The answer is 4.", rows=((4,),))]
    judged = judge_answers([case], answers, [gold], AnswerJudge(load_judges()["judge-oracle"]))
    [verdict] = judge_stage([case], [gold], [attempt(case, [[4]])], resolve_database=lambda name: Path("/nowhere"))
    report = build_answers_report(answers, judged, [verdict])
    lines = "\n".join(console_answers(report))
    assert "answer judge judge-oracle: correctness 0.0% (0/1)" in lines and "FAIL s1: correctness 1" in lines
    later = replace(verdict, generated_sql="SELECT 4 -- evaluated again")
    stale = build_answers_report(answers, judged, [later])
    assert stale is not None and stale.candidates == 0 and stale.judges[0].correct.total == 0


def test_a_named_answer_model_answers_for_an_offline_model(isolated_home: Path):
    case = case_from_dict(answer_only("a1", 412))
    offline = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
    with FakeLLMServer(default=Reply.text("412 sessions.")) as server:
        registry = {"writer": _litellm_spec(server.api_base)}
        [record] = answer_candidates(
            [case], [attempt(case, [[412]])], offline, registry=registry, answer_model="writer"
        )
        assert server.hits == 1
    assert (record.answer, record.source, record.answerer) == ("412 sessions.", "answer_model", "fake-answerer")


def test_a_registry_entry_names_its_answer_model(tmp_path: Path):
    from nl2sql_pipeline.errors import ConfigError
    from nl2sql_pipeline.generation.registry import load_registry

    path = tmp_path / "models.yml"
    path.write_text(
        "models:\n"
        "  echo:\n    kind: offline\n    model: nl2sql-offline/gold-echo\n    answer_model: writer\n"
        "  writer:\n    kind: litellm\n    model: openai/writer\n    api_base: http://127.0.0.1:9/v1\n",
        encoding="utf-8",
    )
    specs = load_registry(path)
    assert specs["echo"].answer_model == "writer"
    path.write_text(
        path.read_text(encoding="utf-8").replace("answer_model: writer", "answer_model: echo"), encoding="utf-8"
    )
    with pytest.raises(ConfigError) as info:
        load_registry(path)
    assert f"{path}:5: model 'echo', key 'answer_model': 'echo' is not a kind: litellm model" in str(info.value)


def test_the_answer_stage_and_the_judge_report_progress():
    from nl2sql_pipeline.progress import STAGE_ANSWER, STAGE_ANSWER_JUDGE, ProgressTracker

    case = case_from_dict(answer_only("a1", 412))
    probe = case_from_dict(
        {**answer_only("p1", None), "expected_outcome": "policy_rejection", "policy_probe_sql": "DROP TABLE anime"}
    )
    offline = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
    seen: list = []
    answers = answer_candidates(
        [case, probe],
        [attempt(case, [[412]])],
        offline,
        registry={},
        progress=ProgressTracker(STAGE_ANSWER, "gold-echo", sinks=(seen.append,)),
    )
    judge_answers(
        [case],
        answers,
        [],
        AnswerJudge(load_judges()["judge-oracle"]),
        progress=ProgressTracker(STAGE_ANSWER_JUDGE, "gold-echo/judge-oracle", sinks=(seen.append,)),
    )
    last = {s.stage: s for s in seen}
    assert last[STAGE_ANSWER].finished and (last[STAGE_ANSWER].done, last[STAGE_ANSWER].total) == (1, 1)
    assert "1/1 (100%), 1 probe not answered" in last[STAGE_ANSWER].line()  # 1 unit of 2 cases
    assert last[STAGE_ANSWER_JUDGE].finished and last[STAGE_ANSWER_JUDGE].done == 1


def test_the_oracle_falls_back_to_the_gold_rows_for_a_sentence_and_abstains_without_them():
    sentence = {**answer_only("s1", "Toei leads by far"), "expected_sql": "SELECT 'Toei'"}
    case = case_from_dict(sentence)
    gold = OracleRow("s1", case.fingerprint, 0, QueryResult(True, ["studio"], ["VARCHAR"], [("Toei",)]))
    oracle = AnswerJudge(load_judges()["judge-oracle"])
    [found] = judge_answers([case], [_answers(case, "Toei.", rows=(("Toei",),))], [gold], oracle)
    assert (found.method, found.reference, found.answer_grade) == (METHOD_ORACLE, "gold_rows", "pass")
    alone = case_from_dict(answer_only("p1", "Toei leads by far"))
    [abstained] = judge_answers([alone], [_answers(alone, "Toei.")], [], oracle)
    assert abstained.error_class == "undecidable" and abstained.correctness is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--judge", "no-such-judge"], "unknown judge 'no-such-judge' (known judges: answer-judge, judge-oracle"),
        (["--answers", "--answer-model", "nope"], "unknown model 'nope'"),
        (["--judge", "judge-oracle", "--answer-pass-score", "9"], "--answer-pass-score 9 is outside 1..5"),
    ],
)
def test_bad_answer_options_exit_2_before_any_run(options, message, seeded_home, capsys):
    from nl2sql_cli import main as cli

    assert cli.main(["run", "--model", "gold-echo", "-q", *options]) == 2
    assert message in capsys.readouterr().err
    assert not (seeded_home / "dagster_home" / "history").exists()  # nothing was materialized


def test_an_ambiguous_question_is_neither_answered_nor_judged_on_its_answer():
    """A case expecting a clarifying question is scored in its own category (clarification_rate): the answer
    stage leaves it out, so asking back is never graded as a failed answer (multidomain-clarify-v1)."""
    ambiguous = case_from_dict(
        {
            **answer_only("amb", None, question="What is the most popular anime?"),
            "category": "ambiguous",
            "expected_behavior": "clarify",
            "readings": [{"reading": "the highest average score"}, {"reading": "the most ratings"}],
        }
    )
    plain = case_from_dict(answer_only("a1", 412))
    offline = ModelSpec(slug="gold-echo", kind="offline", model="nl2sql-offline/gold-echo")
    records = answer_candidates([ambiguous, plain], [attempt(ambiguous, []), attempt(plain, [[412]])], offline)
    assert [r.case_id for r in records] == ["a1"]

"""Answers and answer judges through the Dagster runner and the CLI, against scripted HTTP servers.

One module-level world: a gold set of plain cases drawn from multidomain-v1 and an expected-answer-only gold set
(a number, a date and a sentence), gold-echo, sql-mutant and a litellm model on a scripted server answering with
the gold SQL; judges judge-oracle and a litellm answer judge on a second scripted server. Every model is first
evaluated without answers, then answers and judges are turned on: no generation call is made again.
"""

from __future__ import annotations

import json

import pytest
import yaml
from eval_support import register_gold_set
from fake_llm_server import FakeLLMServer, Reply, answer_by_question

from nl2sql_cli import main as cli
from nl2sql_cli.run_result import AnswerOptions
from nl2sql_pipeline.generation.failures import PAYMENT_REQUIRED
from nl2sql_pipeline.gold.registry import load_gold_set
from nl2sql_pipeline.report.stored import load_run_report
from nl2sql_pipeline.results.read import load_answer_judgements, load_answers, load_run

pytestmark = [
    pytest.mark.filterwarnings("ignore:Items? .* the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.xdist_group("answers_run"),
    pytest.mark.e2e,
    pytest.mark.integration,
]

SQL_GOLD = "answers-sql-v1"
ANSWER_GOLD = "answers-only-v1"
PROSE_QUESTION = "What is the overall trend of viewing?"
ANSWER_CASES = [
    {"id": "n1", "question": "How many sessions were there in the pilot?", "expected_answer": 412},
    {"id": "d1", "question": "When did the pilot start?", "expected_answer": "2024-01-01"},
    {"id": "p1", "question": PROSE_QUESTION, "expected_answer": "Viewing grows every month"},
]
JUDGE_REPLY = {
    "correctness": {"score": 5, "rationale": "States the trend of the reference."},
    "groundedness": {"score": 5, "rationale": "Nothing beyond its rows."},
    "completeness": {"score": 5, "rationale": "Answers the question."},
}
ANALYTICS_PROMPT = "You are an analytics assistant"  # the answer stage's system prompt (data/prompts/answer-v1.txt)


def _is_answer_request(body: dict) -> bool:
    return ANALYTICS_PROMPT in str(body["messages"][0]["content"])


@pytest.fixture(scope="module")
def world(world_factory):
    with world_factory() as world:
        plain = [c for c in load_gold_set("multidomain-v1") if not c.is_probe and not c.follow_up_context][:16]
        register_gold_set(world.data, SQL_GOLD, [c.to_dict() for c in plain])
        register_gold_set(
            world.data,
            ANSWER_GOLD,
            [{"domain": "d", "category": "answer", "database": "anime_platform", **c} for c in ANSWER_CASES],
        )
        with (world.data / "gold" / "gold_sets.yml").open("a", encoding="utf-8") as registry:
            registry.write("    answer_thresholds: {pass_score: 5, partial_score: 3}\n")  # of the answer-only set
        gold_sql = {c.question: c.canonical_sql for c in plain}

        def respond(index: int, body: dict) -> Reply:
            if _is_answer_request(body):
                return Reply.text("The numbers are in the rows above.")
            return answer_by_question(gold_sql)(index, body)

        model_server = FakeLLMServer(responder=respond).start()

        def judge_reply(index: int, body: dict) -> Reply:
            if PROSE_QUESTION in json.dumps(body["messages"]):  # a 4 is a pass by default, partial on that set
                return Reply.json({name: {**value, "score": 4} for name, value in JUDGE_REPLY.items()})
            return Reply.json(JUDGE_REPLY)

        judge_server = FakeLLMServer(responder=judge_reply).start()
        broke_server = FakeLLMServer(default=Reply.payment_required()).start()
        models = yaml.safe_load((world.data / "models.yml").read_text(encoding="utf-8"))
        models["models"]["fake-ok"] = {
            "kind": "litellm",
            "model": "openai/fake-ok",
            "api_base": model_server.api_base,
            "params": {"temperature": 0},
            "price_input_per_mtok": 1,
            "price_output_per_mtok": 2,
            "limits": {"max_concurrency": 2},
        }
        (world.data / "models.yml").write_text(yaml.safe_dump(models, sort_keys=False), encoding="utf-8")
        judges = yaml.safe_load((world.data / "judges.yml").read_text(encoding="utf-8"))
        judges["judges"]["fake-judge"] = {
            **judges["judges"]["answer-judge"],
            "model": "openai/fake-judge",
            "api_base": judge_server.api_base,
        }
        del judges["judges"]["fake-judge"]["api_key_env"]
        judges["judges"]["broke-judge"] = {**judges["judges"]["fake-judge"], "api_base": broke_server.api_base}
        (world.data / "judges.yml").write_text(yaml.safe_dump(judges, sort_keys=False), encoding="utf-8")

        from nl2sql_cli.runner import evaluate, get_instance

        instance = get_instance()
        models_run = ["gold-echo", "sql-mutant", "fake-ok"]
        first = evaluate(SQL_GOLD, models_run, instance=instance)
        generation_calls = model_server.hits
        second = evaluate(
            SQL_GOLD,
            models_run,
            instance=instance,
            answers=AnswerOptions(answers=True, judges=("judge-oracle", "fake-judge")),
        )
        calls_after = {
            "generation": sum(not _is_answer_request(r.body) for r in model_server.requests),
            "answers": sum(_is_answer_request(r.body) for r in model_server.requests),
            "judge": judge_server.hits,
        }
        judge_requests_before = judge_server.hits
        code = cli.main(
            ["run", "--gold-set", ANSWER_GOLD, "--model", "gold-echo", "--judge", "fake-judge", "--json", "-q"]
        )
        verdicts_before = load_run(SQL_GOLD, "fake-ok").frame
        broke = evaluate(SQL_GOLD, ["fake-ok"], instance=instance, answers=AnswerOptions(judges=("broke-judge",)))
        yield {
            "world": world,
            "broke": broke,
            "broke_hits": broke_server.hits,
            "verdicts_before": verdicts_before,
            "candidates": sum(c.candidate_selection or 1 for c in plain),
            "first": first,
            "second": second,
            "generation_calls": generation_calls,
            "calls_after": calls_after,
            "answer_only_code": code,
            "answer_only_judge_bodies": [r.body for r in judge_server.requests[judge_requests_before:]],
        }
        instance.dispose()
        model_server.stop()
        judge_server.stop()
        broke_server.stop()


def _by_judge(model: str, judge: str, gold: str = SQL_GOLD, run_id: str | None = None) -> list:
    return [j for j in load_answer_judgements(gold, model, run_id) if j.judge == judge]


def test_turning_answers_and_judges_on_after_a_run_makes_no_generation_call(world):
    assert not world["first"].failures and not world["second"].failures
    assert set(world["second"].reused) == {"gold-echo", "sql-mutant", "fake-ok"}  # their runs stood
    assert set(world["second"].answered) == {"gold-echo", "sql-mutant", "fake-ok"}
    assert world["generation_calls"] == world["candidates"]  # a case may ask for several candidates
    assert world["calls_after"]["generation"] == world["generation_calls"]
    assert world["calls_after"]["answers"] == world["candidates"]  # fake-ok answered each one through litellm
    answers = load_answers(SQL_GOLD, "fake-ok", world["second"].answered["fake-ok"])
    assert {a.source for a in answers} == {"model"} and all(a.calls == 1 and a.cost_usd > 0 for a in answers)


def test_gold_echo_with_the_offline_answerer_and_the_oracle_scores_100_percent(world):
    judged = _by_judge("gold-echo", "judge-oracle", run_id=world["second"].answered["gold-echo"])
    assert len(judged) == world["candidates"] and {j.method for j in judged} == {"oracle"}
    assert all(j.correctness == 5 and j.answer_grade == "pass" for j in judged), [
        (j.case_id, j.correctness_rationale, j.groundedness_rationale) for j in judged if j.answer_grade != "pass"
    ]
    assert {a.source for a in load_answers(SQL_GOLD, "gold-echo")} == {"template"}


def test_sql_mutant_answers_are_less_correct(world):
    judged = _by_judge("sql-mutant", "judge-oracle", run_id=world["second"].answered["sql-mutant"])
    correct = sum(j.correctness >= 4 for j in judged)
    assert len(judged) == world["candidates"] and correct < len(judged)
    wrong = [j for j in judged if j.correctness < 4]
    assert all("misses" in j.correctness_rationale for j in wrong)


def test_an_llm_judge_scores_every_sql_case_answer_against_the_gold_rows(world):
    runs = world["second"].answered
    judged = _by_judge("fake-ok", "fake-judge", run_id=runs["fake-ok"])
    assert len(judged) == world["candidates"] and {j.method for j in judged} == {"llm"}
    everyone = [j for model in runs for j in _by_judge(model, "fake-judge", run_id=runs[model])]
    assert len(everyone) == world["candidates"] * 3 and all(j.correctness == 5 for j in everyone)
    # one call per distinct answer: an answer judged before (gold-echo's and the unmutated ones) is a cache hit
    assert world["calls_after"]["judge"] == sum(j.calls for j in everyone)
    assert all(j.calls == 1 or j.cached for j in everyone) and any(j.cached for j in everyone)


def test_an_expected_answer_only_gold_set_runs_and_scores_by_the_answer_judge(world, capsys):
    assert world["answer_only_code"] == 0
    judged = {j.case_id: j for j in _by_judge("gold-echo", "fake-judge", ANSWER_GOLD)}
    assert judged["n1"].method == "value_check" and judged["n1"].answer_grade == "pass"
    assert judged["d1"].method == "value_check" and judged["d1"].answer_grade == "pass"
    # the set's answer_thresholds (pass_score 5) make the prose answer's 4s a partial
    assert judged["p1"].method == "llm" and judged["p1"].correctness == 4 and judged["p1"].answer_grade == "partial"
    bodies = world["answer_only_judge_bodies"]
    assert len(bodies) == 1 and PROSE_QUESTION in json.dumps(bodies[0])  # the number and the date made no call
    assert "SELECT" not in json.dumps(bodies[0])


def test_a_402_stops_the_judging_and_the_sql_verdicts_stand(world):
    broke = world["broke"]
    assert not broke.failures and set(broke.reused) == {"fake-ok"} and set(broke.answered) == {"fake-ok"}
    # nothing more was sent after the 402 (a second call may have been in flight: max_concurrency 2)
    assert 1 <= world["broke_hits"] <= 2
    judged = _by_judge("fake-ok", "broke-judge")
    assert (
        judged and {j.error_class for j in judged} == {PAYMENT_REQUIRED} and all(j.correctness is None for j in judged)
    )
    assert load_run(SQL_GOLD, "fake-ok").frame.equals(world["verdicts_before"])
    report = load_run_report(SQL_GOLD, "fake-ok", with_samples=False)
    section = next(s for s in report.answers.judges if s.judge == "broke-judge")
    assert section.stopped is not None and "payment_required" in section.stopped


def test_the_report_shows_the_answers_section(world, tmp_path):
    from nl2sql_pipeline.report.console import console_run_report
    from nl2sql_pipeline.report.html import run_html
    from nl2sql_pipeline.report.markdown import markdown_summary

    report = load_run_report(SQL_GOLD, "sql-mutant", with_samples=False)
    text = console_run_report(report)
    assert "answer judge judge-oracle: correctness" in text and "answer grades:" in text
    assert "answer judge judge-oracle" in markdown_summary(report)
    assert "<h4>answer judge judge-oracle</h4>" in run_html([report])
    assert cli.main(["export", "--out", str(tmp_path), "--format", "json"]) == 0
    exported = json.loads((tmp_path / "answer_judgements.json").read_text(encoding="utf-8"))
    assert {(row["model"], row["judge"]) for row in exported} >= {("sql-mutant", "judge-oracle")}
    assert (tmp_path / "answers.json").is_file()

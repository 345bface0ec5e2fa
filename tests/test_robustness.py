"""Robustness (issue 22, items 1 and 2): paraphrase consistency and schema perturbation.

Unit tests of the paraphrase families, the perturbation plans and the AST rewrite; the rewritten gold of every
built-in case on every perturbation kind checked against the original gold's rows; model paraphrases through
litellm against the scripted server; and a whole evaluation (e2e): gold-echo is 100% consistent and loses
nothing under any perturbation, sql-mutant flips and drops.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import duckdb
import pandas as pd
import pytest
from eval_support import append_models, register_gold_set
from fake_llm_server import FakeLLMServer, Reply, last_user_message

from nl2sql_pipeline.errors import ConfigError
from nl2sql_pipeline.generation.offline_provider import OfflineRequest, answer
from nl2sql_pipeline.generation.offline_requests import split_variant
from nl2sql_pipeline.robustness.paraphrase import (
    DETERMINISTIC_FAMILIES,
    FAMILY_LLM,
    paraphrases_for,
    reorder_clauses,
    synonyms,
    typos,
)
from nl2sql_pipeline.robustness.perturb import (
    PERTURBATION_KINDS,
    PerturbationError,
    parse_kinds,
    plan_perturbation,
    rewrite_sql,
)
from nl2sql_pipeline.robustness.records import MEASUREMENT_PARAPHRASE, VariantVerdict
from nl2sql_pipeline.robustness.scores import paraphrase_scores, perturbation_scores
from nl2sql_pipeline.robustness.variant_cases import variant_id
from nl2sql_pipeline.variants.schema import Column, SourceSchema, Table

QUESTION = "How many users signed up in each month of 2025? Most first, then by month."


def test_paraphrases_are_the_same_on_every_run_and_differ_between_cases():
    first = paraphrases_for("c1", QUESTION, 8)
    assert first == paraphrases_for("c1", QUESTION, 8)
    assert [p.family for p in first[:4]] == list(DETERMINISTIC_FAMILIES)
    assert first[4].label == "template-2" and len({p.question for p in first}) == 8  # second rounds, no repeats
    assert all(p.question != QUESTION for p in first)
    assert [p.question for p in paraphrases_for("c2", QUESTION, 8)] != [p.question for p in first]


def test_each_family_rewords_as_documented():
    assert reorder_clauses(QUESTION, random.Random(0)) == (
        "Most first, then by month. How many users signed up in each month of 2025?"
    )
    assert reorder_clauses("How many episodes aired in 2025?", random.Random(0)) == (
        "In 2025, how many episodes aired?"
    )
    assert synonyms("How many users signed up?", random.Random(0)) == "What is the number of members signed up?"
    assert synonyms("Nothing to swap here.", random.Random(0)) == "Nothing to swap here."
    words = "alpha bravo charlie delta"
    assert typos(words, random.Random(3), rate=0.0) != words  # at least one typo
    assert sum(a != b for a, b in zip(typos(words, random.Random(3), rate=1.0).split(), words.split())) == 4


def test_stored_model_paraphrases_are_a_family_of_their_own_used_once_each():
    found = paraphrases_for("c1", QUESTION, 6, stored=["Monthly 2025 signups?"])
    assert [p.family for p in found] == [*DETERMINISTIC_FAMILIES, FAMILY_LLM, DETERMINISTIC_FAMILIES[0]]
    assert found[4].question == "Monthly 2025 signups?"


def test_a_variant_id_keeps_the_case_id_for_offline_models():
    assert split_variant(variant_id("c1", "typo-1")) == ("c1", "typo-1")
    assert split_variant("c1~v:abbreviate#turn1") == ("c1#turn1", "abbreviate")
    assert split_variant("c1") == ("c1", None)
    request = OfflineRequest(variant_id("c1", "typo-1"), "SELECT 1", 0, 0)
    assert answer("gold-echo", request, {}) == ("SELECT 1", None)


def test_sql_mutant_keeps_its_mistakes_on_variants_and_makes_new_ones():
    sql = "SELECT a, count(*) AS n FROM t WHERE b > 3 GROUP BY a ORDER BY n DESC LIMIT 5"
    base_ids = [f"case-{i}" for i in range(200)]
    params = {"mutation_rate": 0.5}
    base = {i: answer("sql-mutant", OfflineRequest(i, sql, 0, 0), params)[0] for i in base_ids}
    variant = {
        i: answer("sql-mutant", OfflineRequest(variant_id(i, "synonym-1"), sql, 0, 0), params)[0] for i in base_ids
    }
    mutated_before = {i for i in base_ids if base[i] != sql}
    assert all(variant[i] == base[i] for i in mutated_before)  # the same mistake, the same SQL
    newly = [i for i in base_ids if i not in mutated_before and variant[i] != sql]
    assert 0.3 < len(newly) / (len(base_ids) - len(mutated_before)) < 0.7


SCHEMA = SourceSchema(
    [
        Table("main", "customers", [Column("customer_id", "INTEGER", False), Column("customer_name", "VARCHAR", True)]),
        Table(
            "main",
            "orders",
            [
                Column("order_id", "INTEGER", False),
                Column("customer_id", "INTEGER", True),
                Column("amount", "DOUBLE", True),
            ],
        ),
    ],
    [],
)


def test_rewrite_renames_through_the_ast_not_the_text():
    plan = plan_perturbation(SCHEMA, "abbreviate")
    sql = (
        "SELECT c.customer_name, sum(amount) AS amount FROM orders JOIN customers AS c USING (customer_id) "
        "WHERE 'orders' <> c.customer_name GROUP BY 1"
    )
    rewritten = rewrite_sql(sql, SCHEMA, plan)
    assert '"cust_nm"' in rewritten and '"amt"' in rewritten and '"ords"' in rewritten
    assert "'orders'" in rewritten  # a string literal is left alone
    assert 'AS "amount"' in rewritten and 'AS "customer_name"' in rewritten  # the result keeps its column names
    with pytest.raises(PerturbationError, match="cannot qualify"):
        rewrite_sql("SELECT missing_column FROM orders", SCHEMA, plan)


def test_plans_per_kind():
    camel = plan_perturbation(SCHEMA, "camel_case")
    assert camel.table("orders").name == "Orders" and camel.table("orders").column_name("customer_id") == "customerId"
    reordered = plan_perturbation(SCHEMA, "reorder_columns")
    assert [old for old, _ in reordered.table("orders").columns] != ["order_id", "customer_id", "amount"]
    distractors = plan_perturbation(SCHEMA, "distractors")
    assert ("orders", "orders_archive") in distractors.distractor_tables
    assert distractors.table("orders").distractor_columns == (("amount", "legacy_amount"),)
    assert parse_kinds("all") == PERTURBATION_KINDS and parse_kinds("synonym, synonym") == ("synonym",)
    with pytest.raises(PerturbationError, match="unknown perturbation kind 'renamed'"):
        parse_kinds("synonym,renamed")


def _verdict(case_id: str, family: str, label: str, correct: bool, measurement: str = MEASUREMENT_PARAPHRASE):
    return VariantVerdict(case_id, measurement, family, label, "q", "db", "SELECT 1", "correct", correct, None)


def test_consistency_counts_the_cases_whose_verdict_never_changes_and_lists_the_flips():
    base = {"a": True, "b": True, "c": False}
    verdicts = [
        _verdict("a", "typo", "typo-1", True),
        _verdict("a", "synonym", "synonym-1", True),
        _verdict("b", "typo", "typo-1", False),
        _verdict("b", "synonym", "synonym-1", True),
        _verdict("c", "typo", "typo-1", False),
        _verdict("c", "synonym", "synonym-1", False),
    ]
    scores = paraphrase_scores(verdicts, base)
    assert (scores.cases, scores.consistent) == (3, 2) and scores.consistency == pytest.approx(2 / 3)
    assert [(f.case_id, f.correct_on, f.wrong_on) for f in scores.flips] == [("b", ("synonym-1",), ("typo-1",))]
    typo = next(f for f in scores.families if f.family == "typo")
    assert typo.accuracy == pytest.approx(1 / 3) and typo.broken == ("b",)
    drops = perturbation_scores([_verdict("a", "synonym", "synonym", False, "perturbation")], base)
    assert drops.kinds[0].drop == 1.0 and drops.kinds[0].broken == ("a",)


def test_the_rewritten_gold_returns_the_original_rows_for_every_built_in_case_and_kind(seeded_home):
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.robustness.variant_cases import perturbation_variants
    from nl2sql_pipeline.stages import run_oracle

    cases = load_gold_set("multidomain-v1")
    resolve = case_databases("multidomain-v1")
    oracle = run_oracle(cases, resolve)
    source_mtime = resolve("anime_platform").stat().st_mtime_ns
    variants, rows, checks = perturbation_variants(cases, PERTURBATION_KINDS, resolve, oracle)
    queries = [c for c in cases if not c.is_probe]
    assert len(checks) == len(queries) * len(PERTURBATION_KINDS)
    assert [c for c in checks if not c.ok] == []
    assert len(variants) == len(checks) and {r.result.ok for r in rows} == {True}
    renamed = next(v for v in variants if v.family == "synonym" and v.base_id == "content-single-01")
    assert '"show"' in renamed.case.canonical_sql and Path(renamed.case.database).is_file()
    with duckdb.connect(renamed.case.database, read_only=True) as con:
        tables = {name for (name,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "members" in tables and "users" not in tables
    assert resolve("anime_platform").stat().st_mtime_ns == source_mtime  # the source is never written


@pytest.mark.integration
def test_model_paraphrases_are_generated_once_through_litellm_and_never_regenerated(data_copy, capsys):
    from nl2sql_cli.main import main
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.gold.registry import load_gold_set
    from nl2sql_pipeline.robustness.stored_paraphrases import generate_paraphrases, stored_paraphrases
    from nl2sql_pipeline.robustness.variant_cases import paraphrase_variants

    cases = [
        {"id": "q1", "domain": "d", "category": "single_table", "question": "How many users are there?",
         "database": "anime_platform", "expected_sql": "SELECT count(*) FROM users"},
        {"id": "q2", "domain": "d", "category": "single_table", "question": "How many studios are there?",
         "database": "anime_platform", "expected_sql": "SELECT count(*) FROM studios"},
    ]  # fmt: skip
    register_gold_set(data_copy, "para", cases)

    def respond(index: int, body: dict) -> Reply:
        question = last_user_message(body)
        return Reply.text(f"1. Count: {question}\n2) Tell me: {question}\n")

    with FakeLLMServer(responder=respond) as server:
        append_models(
            data_copy, f"  writer:\n    kind: litellm\n    model: openai/writer\n    api_base: {server.api_base}\n"
        )
        gold = load_gold_set("para")
        assert main(["gold", "paraphrase", "--gold-set", "para", "--model", "writer", "--count", "2"]) == 0
        path = data_copy / "gold" / "paraphrases" / "para.v1.jsonl"
        assert server.hits == 2 and path.is_file()
        before = path.read_bytes()
        assert main(["gold", "paraphrase", "--gold-set", "para", "--model", "writer"]) == 2  # refused: exists
        assert "never regenerated: pass --new-version" in capsys.readouterr().err
        with pytest.raises(ConfigError, match="never regenerated: pass --new-version"):
            generate_paraphrases("para", "writer", gold, count=2)
        assert server.hits == 2 and path.read_bytes() == before
        second = generate_paraphrases("para", "writer", gold, count=1, new_version=True)
    assert (
        path.name == "para.v1.jsonl"
        and second.name == "para.v2.jsonl"
        and path.parent == data_copy / "gold" / "paraphrases"
    )
    meta = json.loads(path.read_text().splitlines()[0])["_meta"]
    assert meta["model"] == "writer" and meta["version"] == 1
    stored, version = stored_paraphrases("para", gold)
    assert version == "v2" and stored == {
        "q1": ["Count: How many users are there?"],
        "q2": ["Count: How many studios are there?"],
    }
    variants = paraphrase_variants(gold, 5, stored=stored)
    llm = [v for v in variants if v.family == FAMILY_LLM]
    assert [v.case.question for v in llm] == ["Count: How many users are there?", "Count: How many studios are there?"]
    changed = [case_from_dict({**cases[0], "question": "How many members are there?"}), gold[1]]
    assert set(stored_paraphrases("para", changed)[0]) == {"q2"}  # a changed case's stored paraphrases are stale


@pytest.fixture(scope="module")
def robustness_run(world_factory):
    """One ``nl2sql-eval run`` of gold-echo and sql-mutant on multidomain-v1 with every robustness measurement."""
    from nl2sql_cli.main import main

    with world_factory() as world:
        code = main(
            ["run", "--gold-set", "multidomain-v1", "--model", "gold-echo", "--model", "sql-mutant",
             "--paraphrases", "4", "--perturb", "all", "--test-suite-variants", "0", "-q"]
        )  # fmt: skip
        yield world, code


@pytest.mark.e2e
def test_gold_echo_is_fully_consistent_and_loses_nothing_under_any_perturbation(robustness_run):
    from nl2sql_pipeline.robustness.stored import load_robustness

    _, code = robustness_run
    assert code == 0
    paraphrase, perturbation = load_robustness("multidomain-v1", "gold-echo")
    assert paraphrase is not None and perturbation is not None
    assert paraphrase.cases == 96 and paraphrase.consistency == 1.0 and paraphrase.flips == ()
    assert {f.family for f in paraphrase.families} == set(DETERMINISTIC_FAMILIES)
    assert {f.family: f.accuracy for f in paraphrase.families} == dict.fromkeys(DETERMINISTIC_FAMILIES, 1.0)
    assert {k.family for k in perturbation.kinds} == set(PERTURBATION_KINDS)
    assert all(k.asked == 96 and k.drop == 0.0 and k.broken == () for k in perturbation.kinds)


@pytest.mark.e2e
def test_sql_mutant_flips_across_paraphrases_and_drops_under_every_perturbation(robustness_run, capsys):
    from nl2sql_cli.main import main
    from nl2sql_pipeline.results.exports import export_results
    from nl2sql_pipeline.robustness.stored import load_robustness

    world, _ = robustness_run
    paraphrase, perturbation = load_robustness("multidomain-v1", "sql-mutant")
    assert paraphrase is not None and perturbation is not None
    assert paraphrase.consistency is not None and paraphrase.consistency < 1.0 and paraphrase.flips
    for kind in perturbation.kinds:
        assert kind.drop is not None and kind.drop > 0 and kind.broken, kind
        assert kind.drop == pytest.approx((len(kind.broken) - len(kind.fixed)) / kind.asked)
    files = export_results(world.home / "exports", "csv")
    board = (world.home / "exports" / "leaderboard.csv").read_text().splitlines()
    assert "paraphrase_consistency" in board[0] and "perturbation_worst_drop" in board[0]
    assert any(f.name == "robustness_verdicts.csv" for f in files)
    from nl2sql_pipeline.results.exports import write_duckdb_views

    exported = pd.read_csv(world.home / "exports" / "robustness_verdicts.csv")
    assert "robustness_verdicts" in write_duckdb_views(world.home / "results.duckdb")  # as export --out writes
    with duckdb.connect(str(world.home / "results.duckdb"), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM robustness_verdicts").fetchall() == [(len(exported),)]
    capsys.readouterr()
    assert main(["report", "--gold-set", "multidomain-v1", "--model", "sql-mutant"]) == 0
    out = capsys.readouterr().out
    assert "paraphrases (sql-mutant): consistency" in out and "FLIP " in out and "breaks:" in out
    assert "\n== robustness ==\nparaphrases (sql-mutant)" in out  # under its own heading, as `run` prints it


def test_an_unknown_perturbation_kind_is_refused_before_anything_runs(capsys):
    from nl2sql_cli.main import main

    assert main(["run", "--gold-set", "multidomain-v1", "--perturb", "renamed"]) == 2
    assert "unknown perturbation kind 'renamed'" in capsys.readouterr().err


def test_a_rewording_identical_to_the_question_or_to_another_paraphrase_is_not_asked():
    # nothing to reorder and no word of the vocabulary: those families give way (an identical prompt would share
    # the original question's cache entry, so a variant-aware offline model would answer both alike)
    question = "Name every studio"
    found = paraphrases_for("c1", question, 6)
    assert len(found) == 6 and {p.family for p in found} == {"template", "typo"}
    assert len({p.question for p in found}) == 6 and question not in {p.question for p in found}


def test_a_system_answers_variants_too_the_reference_system_with_gold_echo_behind_it_stays_exact(seeded_home):
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.robustness.evaluate import evaluate_variants
    from nl2sql_pipeline.robustness.variant_cases import paraphrase_oracle, paraphrase_variants, perturbation_variants
    from nl2sql_pipeline.stages import run_oracle

    cases = [c for c in load_gold_set("multidomain-v1") if not c.is_probe][:4]
    resolve = case_databases("multidomain-v1")
    oracle = run_oracle(cases, resolve)
    paraphrased = paraphrase_variants(cases, 2)
    perturbed, perturbed_oracle, _ = perturbation_variants(cases, ["camel_case"], resolve, oracle)
    verdicts = evaluate_variants(
        paraphrased, paraphrase_oracle(paraphrased, oracle), "reference-python", resolve
    ) + evaluate_variants(perturbed, perturbed_oracle, "reference-python", resolve)
    assert len(verdicts) == 12 and all(v.correct for v in verdicts), [v for v in verdicts if not v.correct]


def test_answer_only_and_ambiguous_cases_are_never_asked_again():
    """Robustness re-judges a case's execution against its gold: an answer-only case (no gold SQL) and an
    ambiguous question (scored on asking back) have none, so they get no variant (not "accuracy 0.0%")."""
    from nl2sql_pipeline.cases import case_from_dict
    from nl2sql_pipeline.robustness.variant_cases import paraphrase_variants, perturbation_variants

    base = {"domain": "d", "category": "c", "database": "anime_platform"}
    answer_only = case_from_dict({**base, "id": "a1", "question": "How many titles?", "expected_answer": 300})
    ambiguous = case_from_dict(
        {
            **base,
            "id": "amb",
            "question": "What is the most popular anime?",
            "expected_behavior": "clarify",
            "readings": [{"reading": "the highest score"}, {"reading": "the most ratings"}],
        }
    )

    def no_database(name: str) -> Path:
        raise AssertionError(f"no perturbed copy of {name} is needed")

    assert paraphrase_variants([answer_only, ambiguous], 2) == []
    assert perturbation_variants([answer_only, ambiguous], ["synonym"], no_database, []) == ([], [], [])


def test_the_robustness_section_has_a_heading_and_is_left_out_when_nothing_was_measured():
    from nl2sql_pipeline.robustness.report import robustness_section

    assert robustness_section([]) == ""  # e.g. a gold set of answer-only cases: no bare heading
    assert robustness_section(["paraphrases (m): consistency 100.0%"]) == (
        "\n== robustness ==\nparaphrases (m): consistency 100.0%"
    )


def test_every_stage_of_a_variant_run_names_the_model_and_the_measurement_in_its_progress(seeded_home):
    from nl2sql_pipeline import progress
    from nl2sql_pipeline.gold.registry import case_databases, load_gold_set
    from nl2sql_pipeline.robustness.evaluate import evaluate_variants
    from nl2sql_pipeline.robustness.variant_cases import paraphrase_oracle, paraphrase_variants
    from nl2sql_pipeline.stages import run_oracle

    cases = [c for c in load_gold_set("multidomain-v1") if not c.is_probe][:2]
    resolve = case_databases("multidomain-v1")
    variants = paraphrase_variants(cases, 1)
    seen: list[progress.ProgressSnapshot] = []
    with progress.subscribe(seen.append):
        evaluate_variants(variants, paraphrase_oracle(variants, run_oracle(cases, resolve)), "gold-echo", resolve)
    stages = {s.stage: s.model for s in seen}
    assert set(stages) == {progress.STAGE_GENERATE, progress.STAGE_EXECUTE, progress.STAGE_JUDGE}, stages
    families = ", ".join(sorted({v.family for v in variants}))
    assert set(stages.values()) == {f"gold-echo (paraphrase: {families})"}, stages

"""A judge's versions make stored judgements stale: a re-run with the same judges reuses them; a judge whose
version changed in data/judges.yml judges again, and generation is never re-run."""

from __future__ import annotations

import dagster as dg
import pytest
from eval_support import query_case, register_gold_set

pytestmark = pytest.mark.xdist_group("judging_staleness")

CASE = query_case("c-1", "SELECT COUNT(*) AS n FROM anime", question="How many titles?")
JUDGE = "judge-oracle"


def _count(instance, asset: str) -> int:
    return len(instance.fetch_materializations(dg.AssetRecordsFilter(asset_key=dg.AssetKey(asset)), limit=100).records)


def _bump_oracle_version(data) -> None:
    registry = data / "judges.yml"
    text = registry.read_text(encoding="utf-8")
    old = "    roles: [answer, sql_equivalence, diagnosis]\n"
    assert old in text
    registry.write_text(text.replace(old, old + '    version: "2"\n', 1), encoding="utf-8")


@pytest.mark.e2e
def test_unchanged_judges_are_reused_and_a_changed_judge_version_judges_again_without_generating(eval_world):
    from nl2sql_cli.run_result import AnswerOptions
    from nl2sql_cli.runner import evaluate, get_instance

    register_gold_set(eval_world.data, "tiny-v1", [CASE], description="t")
    options = AnswerOptions(answers=True, judges=(JUDGE,))
    with get_instance() as instance:
        first = evaluate("tiny-v1", ["gold-echo"], instance=instance, answers=options)
        assert not first.failures and "gold-echo" in first.answered
        generated = _count(instance, "candidate_sql")
        judged = {a: _count(instance, a) for a in ("answer_judgements", "sql_judgements")}

        again = evaluate("tiny-v1", ["gold-echo"], instance=instance, answers=options)
        assert not again.failures and "gold-echo" in again.reused
        assert sorted(again.judgements_reused["gold-echo"]) == ["answer_judgements", "sql_judgements"]
        assert again.answered["gold-echo"] == first.answered["gold-echo"]  # the stored judgements stand
        assert {a: _count(instance, a) for a in judged} == judged  # nothing judged again

        _bump_oracle_version(eval_world.data)
        changed = evaluate("tiny-v1", ["gold-echo"], instance=instance, answers=options)
        assert not changed.failures and "gold-echo" in changed.reused  # the evaluation itself is current
        assert "gold-echo" not in changed.judgements_reused
        assert changed.answered["gold-echo"] != first.answered["gold-echo"]
        assert {a: _count(instance, a) for a in judged} == {a: n + 1 for a, n in judged.items()}  # judged again
        assert _count(instance, "candidate_sql") == generated  # generation is not re-run

        settled = evaluate("tiny-v1", ["gold-echo"], instance=instance, answers=options)
        assert sorted(settled.judgements_reused["gold-echo"]) == ["answer_judgements", "sql_judgements"]


@pytest.mark.e2e
def test_other_judge_settings_judge_again(eval_world):
    from nl2sql_cli.run_result import AnswerOptions
    from nl2sql_cli.runner import evaluate, get_instance

    register_gold_set(eval_world.data, "tiny-v1", [CASE], description="t")
    with get_instance() as instance:
        assert not evaluate(
            "tiny-v1", ["gold-echo"], instance=instance, answers=AnswerOptions(judges=(JUDGE,))
        ).failures
        before = _count(instance, "sql_judgements")
        repeated = evaluate(
            "tiny-v1", ["gold-echo"], instance=instance, answers=AnswerOptions(judges=(JUDGE,), judge_repeat=2)
        )
        assert repeated.judgements_reused.get("gold-echo") == ["answer_judgements"]  # the repeat is SQL judging's
        assert _count(instance, "sql_judgements") == before + 1


@pytest.mark.e2e
def test_the_cli_says_which_judgements_it_reused(eval_world, capsys):
    from nl2sql_cli import main as cli

    register_gold_set(eval_world.data, "tiny-v1", [CASE], description="t")
    command = ["run", "--gold-set", "tiny-v1", "--model", "gold-echo", "--judge", JUDGE, "-q"]
    assert cli.main(command) == 0
    capsys.readouterr()
    assert cli.main(command) == 0
    said = capsys.readouterr().err
    assert "REUSED gold-echo judgements: answer_judgements, sql_judgements" in said
    _bump_oracle_version(eval_world.data)
    assert cli.main(command) == 0
    assert "REUSED gold-echo judgements" not in capsys.readouterr().err  # judged again with the new version

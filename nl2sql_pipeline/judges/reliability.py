"""Judges are measured, not trusted: their agreement with execution, and with themselves across repeats.

``execution_agreement`` sets each equivalence judge against the execution verdicts of the cases whose
candidate ran (``correct`` or ``wrong_result``): "not equivalent" is the positive call and ``wrong_result``
the truth, so precision is the share of the judge's "not equivalent" calls that execution confirms and
recall the share of wrong results the judge caught. Its two off-diagonal cells are listed case by case:
*execution says correct, the judge says not equivalent* (lucky matches a small database lets through) and
*execution says wrong, the judge says equivalent* (a possible gold or comparator problem).
``repeat_stability`` gives each judge's own disagreement rate across the repeats of ``--judge-repeat N``
(an item counts when two or more repeats decided it; it disagrees when their decisions differ).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from nl2sql_pipeline.judges.registry import ROLE_DIAGNOSIS, ROLE_SQL_EQUIVALENCE
from nl2sql_pipeline.judges.sql_judgement import SqlJudgement
from nl2sql_pipeline.stages import outcomes


@dataclass(frozen=True)
class Disagreement:
    """One case where a judge and execution (or two repeats of a judge) disagree."""

    case_id: str
    sample_index: int
    detail: str

    @property
    def label(self) -> str:
        """``case`` or ``case#sample``."""
        return self.case_id if self.sample_index == 0 else f"{self.case_id}#{self.sample_index}"


@dataclass(frozen=True)
class ExecutionAgreement:
    """One equivalence judge against the execution verdicts (first repeat, decided, candidate ran)."""

    judge: str
    both_wrong: int  # judge: not equivalent, execution: wrong_result
    lucky: int  # judge: not equivalent, execution: correct
    missed: int  # judge: equivalent, execution: wrong_result
    both_right: int  # judge: equivalent, execution: correct
    undecided: int  # judge errors (no decision) among the executed cases
    suite_agree: int = 0  # judge and test-suite accuracy agree (cases where test-suite was measured)
    suite_measured: int = 0
    lucky_matches: list[Disagreement] = field(default_factory=list)
    gold_or_comparator: list[Disagreement] = field(default_factory=list)

    @property
    def cases(self) -> int:
        """Decided cases."""
        return self.both_wrong + self.lucky + self.missed + self.both_right

    @property
    def agreement(self) -> float | None:
        """Share of decided cases where the judge agrees with execution."""
        return (self.both_wrong + self.both_right) / self.cases if self.cases else None

    @property
    def precision(self) -> float | None:
        """Of the judge's "not equivalent" calls, the share execution found wrong (None: no such call)."""
        called = self.both_wrong + self.lucky
        return self.both_wrong / called if called else None

    @property
    def recall(self) -> float | None:
        """Of the wrong results, the share the judge called not equivalent (None: no wrong result)."""
        wrong = self.both_wrong + self.missed
        return self.both_wrong / wrong if wrong else None

    @property
    def equivalent_rate(self) -> float | None:
        """The judge's own accuracy: the share of decided cases it called equivalent."""
        return (self.both_right + self.missed) / self.cases if self.cases else None


def _first_decided(judgements: Iterable[SqlJudgement], role: str) -> list[SqlJudgement]:
    return [j for j in judgements if j.role == role and j.repeat_index == 0]


def execution_agreement(judgements: Iterable[SqlJudgement]) -> list[ExecutionAgreement]:
    """Per equivalence judge (by slug), its confusion with the execution verdicts and the cases off the diagonal."""
    by_judge: dict[str, list[SqlJudgement]] = {}
    for judgement in _first_decided(judgements, ROLE_SQL_EQUIVALENCE):
        if judgement.outcome in outcomes.EXECUTED:
            by_judge.setdefault(judgement.judge, []).append(judgement)
    found = []
    for judge, rows in sorted(by_judge.items()):
        cells = {"both_wrong": 0, "lucky": 0, "missed": 0, "both_right": 0, "undecided": 0}
        lucky, reverse = [], []
        suite_agree = suite_measured = 0
        for j in sorted(rows, key=lambda r: r.item):
            if j.equivalent is None or j.error_class is not None:
                cells["undecided"] += 1
                continue
            correct = j.outcome == outcomes.CORRECT
            if j.test_suite_correct is not None:
                suite_measured += 1
                suite_agree += j.equivalent == j.test_suite_correct
            if correct and j.equivalent:
                cells["both_right"] += 1
            elif correct:
                cells["lucky"] += 1
                lucky.append(Disagreement(j.case_id, j.sample_index, j.reason or ""))
            elif j.equivalent:
                cells["missed"] += 1
                reverse.append(Disagreement(j.case_id, j.sample_index, j.reason or ""))
            else:
                cells["both_wrong"] += 1
        found.append(
            ExecutionAgreement(
                judge,
                **cells,
                suite_agree=suite_agree,
                suite_measured=suite_measured,
                lucky_matches=lucky,
                gold_or_comparator=reverse,
            )
        )
    return found


@dataclass(frozen=True)
class RepeatStability:
    """One judge in one role across the repeats: how often its own decisions differ."""

    judge: str
    role: str
    repeats: int  # the most repeats any item got
    items: int  # items decided by two or more repeats
    disagreements: list[Disagreement] = field(default_factory=list)

    @property
    def disagreement_rate(self) -> float | None:
        """Share of items whose repeats did not all decide the same (None: no item repeated)."""
        return len(self.disagreements) / self.items if self.items else None


def _decision(judgement: SqlJudgement) -> str:
    if judgement.role == ROLE_DIAGNOSIS:
        return str(judgement.category)
    return "equivalent" if judgement.equivalent else "not equivalent"


def repeat_stability(judgements: Sequence[SqlJudgement]) -> list[RepeatStability]:
    """Per judge and role with more than one repeat, the items whose decided repeats differ."""
    grouped: dict[tuple[str, str], dict[tuple[str, int], dict[int, str]]] = {}
    for j in judgements:
        if j.decided:
            grouped.setdefault((j.judge, j.role), {}).setdefault(j.item, {})[j.repeat_index] = _decision(j)
    found = []
    for (judge, role), items in sorted(grouped.items()):
        repeats = max((len(decisions) for decisions in items.values()), default=0)
        if repeats < 2:
            continue
        repeated = {item: decisions for item, decisions in items.items() if len(decisions) >= 2}
        differing = [
            Disagreement(item[0], item[1], ", ".join(f"repeat {r}: {d}" for r, d in sorted(decisions.items())))
            for item, decisions in sorted(repeated.items())
            if len(set(decisions.values())) > 1
        ]
        found.append(RepeatStability(judge, role, repeats, len(repeated), differing))
    return found


@dataclass(frozen=True)
class JudgeErrors:
    """Judgements that came back without a decision, per judge and role, by error class."""

    judge: str
    role: str
    judged: int
    errors: dict[str, int]
    first_message: str | None = None  # the first failure's own words (a missing key, a 402, a bad reply)


def judge_errors(judgements: Iterable[SqlJudgement]) -> list[JudgeErrors]:
    """Per judge and role: how many judgements were asked and how many failed, by error class."""
    totals: dict[tuple[str, str], list[SqlJudgement]] = {}
    for j in judgements:
        totals.setdefault((j.judge, j.role), []).append(j)
    found = []
    for (judge, role), rows in sorted(totals.items()):
        errors: dict[str, int] = {}
        first: str | None = None
        for j in rows:
            if j.error_class is not None:
                errors[j.error_class] = errors.get(j.error_class, 0) + 1
                first = first or j.error_message
        found.append(JudgeErrors(judge, role, len(rows), errors, first))
    return found

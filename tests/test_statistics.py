"""Statistics against published and exact reference values."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import pytest
from verdict_factory import make_verdict

from nl2sql_pipeline.scoring.statistics import (
    StatisticsInputError,
    bootstrap_interval,
    case_variance,
    mcnemar_exact,
    median,
    paired_comparison,
    wilson_interval,
)
from nl2sql_pipeline.stages import outcomes

# Newcombe (1998), "Two-sided confidence intervals for the single proportion: comparison of seven methods",
# Stat Med 17:857-872, Table I, method 3 (Wilson score interval without continuity correction), 95%. These four
# examples (81/263, 15/148, 0/20, 1/29) were first typed from memory; checked since against the machine-made
# reference below (the same formula, R's binom.confint): every bound agrees to the 4 decimals printed here.
NEWCOMBE_WILSON = [
    (81, 263, 0.2553, 0.3662),
    (15, 148, 0.0624, 0.1605),
    (0, 20, 0.0000, 0.1611),
    (1, 29, 0.0061, 0.1718),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), NEWCOMBE_WILSON)
def test_wilson_matches_newcombe(k, n, low, high):
    interval = wilson_interval(k, n)
    assert (round(interval.low, 4), round(interval.high, 4)) == (low, high)
    assert interval.estimate == k / n


# R's binom::binom.confint(x, n, tol = 1e-8), method "wilson" (the last of its 11 methods), as recorded in the
# statsmodels repository: statsmodels/stats/tests/results/results_proportion.py (res_binom[(x, n)].ci_low /
# .ci_upp, last column). A machine-made reference, to 1e-7 and better.
R_BINOM_WILSON = [
    (18, 20, 0.6989663547715128, 0.972133518786232),
    (4, 20, 0.0806576625797981, 0.4160174322518935),
    (4, 200, 0.00780442641634947, 0.05028708690582643),
    (190, 200, 0.910421851861224, 0.972617354399236),
    (1, 30, 5.908590e-03, 0.16670391),
    (29, 30, 0.8332961, 0.9940914),
    (0, 30, 0.0, 0.11351339),
    (30, 30, 0.8864866, 1.0),
]


@pytest.mark.parametrize(("k", "n", "low", "high"), R_BINOM_WILSON)
def test_wilson_matches_r_binom_confint(k, n, low, high):
    interval = wilson_interval(k, n)
    assert interval.low == pytest.approx(low, abs=1e-7)
    assert interval.high == pytest.approx(high, abs=1e-7)


def test_wilson_edge_cases():
    assert not wilson_interval(0, 0).known
    full = wilson_interval(20, 20)
    assert full.high == 1.0 and round(full.low, 4) == round(1 - 0.1611, 4)
    with pytest.raises(StatisticsInputError, match="0 <= successes <= total"):
        wilson_interval(3, 2)


# Exact two-sided McNemar p-values: 2 * P(Binomial(b + c, 1/2) <= min(b, c)), capped at 1 (the two-sided
# binomial test at p = 1/2 on the discordant pairs). The first rows are small binomial-table values worked by
# hand (b=0, c=6: 2/64; b=2, c=8: 2*56/1024; b=1, c=11: 2*13/4096); the last two are the reference values of
# scipy's own tests: scipy/stats/tests/test_morestats.py (scipy/scipy), TestBinomTestP.test_data (formerly
# TestBinomP): binomtest(100, 250) -> 0.0018833009350757682 and binomtest(201, 405) -> 0.9208520596267071.
MCNEMAR_TABLE = [
    (0, 6, 0.03125),
    (0, 5, 0.0625),
    (2, 8, 0.109375),
    (1, 11, 0.0063476562),
    (3, 3, 1.0),
    (0, 0, 1.0),
    (5, 15, 0.0414),
]
SCIPY_BINOMTEST = [(100, 150, 0.0018833009350757682), (201, 204, 0.9208520596267071)]


@pytest.mark.parametrize(("b", "c", "p"), MCNEMAR_TABLE)
def test_mcnemar_exact_reference_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, abs=5e-5)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)


@pytest.mark.parametrize(("b", "c", "p"), SCIPY_BINOMTEST)
def test_mcnemar_exact_matches_scipys_binomtest_reference_values(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-10)


def test_mcnemar_agrees_with_exact_fractions():
    for b in range(0, 12):
        for c in range(0, 12):
            n = b + c
            exact = 1 if n == 0 else min(Fraction(1), 2 * Fraction(sum(comb(n, i) for i in range(min(b, c) + 1)), 2**n))
            assert mcnemar_exact(b, c) == pytest.approx(float(exact), rel=1e-12)


def test_bootstrap_is_seeded_and_brackets_the_estimate():
    values = [10.0, 12.0, 9.0, 30.0, 11.0, 10.5, 14.0, None]
    first, second = bootstrap_interval(values), bootstrap_interval(values)
    assert first == second
    assert first.estimate == pytest.approx(sum(v for v in values if v is not None) / 7)
    assert first.low < first.estimate < first.high
    assert min(v for v in values if v) <= first.low and first.high <= 30.0
    assert bootstrap_interval(values, median).estimate == 11.0
    assert not bootstrap_interval([None]).known
    assert bootstrap_interval([4.0]).low == 4.0


def _run(correct_ids, all_ids, **extra):
    return [
        make_verdict(
            case_id=c,
            outcome=outcomes.CORRECT if c in correct_ids else outcomes.WRONG_RESULT,
            correct=c in correct_ids,
            **extra,
        )
        for c in all_ids
    ]


def test_paired_comparison_counts_discordant_pairs_and_labels():
    ids = [f"c{i}" for i in range(20)]
    a = _run(set(ids), ids)  # all right
    b = _run(set(ids[:12]), ids)  # 8 newly wrong
    result = paired_comparison(a, b)
    assert (result.pairs, result.both_correct, result.only_a_correct, result.only_b_correct) == (20, 12, 8, 0)
    assert result.p_value == pytest.approx(2 / 2**8)
    assert result.significant and result.label == "significant (p=0.0078)"
    tiny = paired_comparison(_run(set(), ids), a)
    assert tiny.label == "significant (p=1.9e-06)"
    same = paired_comparison(a, a)
    assert not same.significant and same.label == "not significant (p=1.0000)"
    close = paired_comparison(a, _run(set(ids[:18]), ids))  # 2 flips: p = 0.5
    assert close.label == "not significant (p=0.5000)"


def test_paired_comparison_leaves_out_unscored_and_unshared_cases():
    a = _run({"x"}, ["x", "y"]) + [make_verdict(case_id="z", outcome=outcomes.SKIPPED, skip_reason="q")]
    b = _run({"y"}, ["y", "z"])
    result = paired_comparison(a, b)
    assert (result.pairs, result.only_in_a, result.only_in_b) == (1, 1, 1)


def test_case_variance_over_repeats():
    verdicts = [
        make_verdict(case_id="a", sample_index=0, outcome=outcomes.CORRECT, correct=True),
        make_verdict(case_id="a", sample_index=1, outcome=outcomes.WRONG_RESULT, correct=False),
        make_verdict(case_id="b", sample_index=0, outcome=outcomes.CORRECT, correct=True),
        make_verdict(case_id="b", sample_index=1, outcome=outcomes.CORRECT, correct=True),
    ]
    variance = case_variance(verdicts)
    assert variance.cases == 2 and variance.samples_per_case == 2.0
    assert variance.inconsistent_cases == ("a",)
    assert variance.mean_case_variance == pytest.approx((0.25 + 0.0) / 2)


def test_paired_comparison_without_paired_cases_has_no_p_value():
    probes = [make_verdict(case_id="p", is_probe=True, outcome=outcomes.CORRECT, correct=True)]
    answer_only = [make_verdict(case_id="q", outcome=outcomes.SKIPPED, skip_reason="answer-only")]
    result = paired_comparison(probes + answer_only, probes + answer_only)
    assert result.pairs == 0 and result.p_value is None
    assert not result.significant and result.label == "n/a (no paired cases)"
    assert (result.rate_a, result.rate_b) == (None, None)

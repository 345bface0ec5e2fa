"""Uncertainty for the numbers a report shows: Wilson intervals, bootstrap intervals, the exact McNemar test.

- ``wilson_interval(k, n)``: the score interval of a rate (good at small n and at 0% / 100%).
- ``bootstrap_interval(values, statistic)``: a seeded percentile bootstrap (same input, same interval).
- ``mcnemar_exact(b, c)``: the two-sided exact (binomial) McNemar test on the discordant pairs of two
  runs over the same cases; ``paired_comparison`` pairs two runs' verdicts and labels the difference
  "not significant" unless the test rejects at ``alpha``.
- ``case_variance``: per-case agreement across the samples of ``--repeat``.

Pure functions over numbers and ``Verdict`` records; no scipy (the binomial sums are exact integers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from nl2sql_pipeline.stages import outcomes
from nl2sql_pipeline.stages.records import Verdict

Z_95 = 1.959963984540054  # the 0.975 quantile of the standard normal
DEFAULT_ALPHA = 0.05
BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 12345


class StatisticsInputError(ValueError):
    """Counts or values a statistic cannot be computed from (negative counts, k > n, ...)."""


@dataclass(frozen=True)
class Interval:
    """A point estimate with its lower and upper bound (None when there was nothing to estimate from)."""

    estimate: float | None
    low: float | None
    high: float | None

    @property
    def known(self) -> bool:
        """True when the interval was computed (there were observations)."""
        return self.estimate is not None


NO_INTERVAL = Interval(None, None, None)


def _z_for(level: float) -> float:
    if level == 0.95:
        return Z_95
    from statistics import NormalDist

    return NormalDist().inv_cdf(0.5 + level / 2.0)


def wilson_interval(successes: int, total: int, level: float = 0.95) -> Interval:
    """The Wilson score interval of the rate ``successes / total`` (no continuity correction).

    >>> i = wilson_interval(81, 263); (round(i.low, 4), round(i.high, 4))
    (0.2553, 0.3662)
    """
    if total < 0 or successes < 0 or successes > total:
        raise StatisticsInputError(f"a rate needs 0 <= successes <= total (got {successes}/{total})")
    if total == 0:
        return NO_INTERVAL
    z = _z_for(level)
    p = successes / total
    denominator = 1.0 + z * z / total
    centre = (p + z * z / (2 * total)) / denominator
    half = z * math.sqrt(p * (1 - p) / total + z * z / (4 * total * total)) / denominator
    return Interval(p, max(0.0, centre - half), min(1.0, centre + half))


def bootstrap_interval(
    values: Iterable[float | None],
    statistic: Callable[[np.ndarray], float] = np.mean,
    *,
    level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval:
    """A percentile-bootstrap interval of ``statistic`` over the known ``values`` (None values are left out).

    Seeded: the same values give the same interval on every run and machine.
    """
    known = np.asarray(
        [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))], dtype=float
    )
    if known.size == 0:
        return NO_INTERVAL
    estimate = float(statistic(known))
    if known.size == 1:
        return Interval(estimate, estimate, estimate)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, known.size, size=(resamples, known.size))
    by_rows = _ROW_STATISTICS.get(statistic)
    if by_rows is not None:  # the named statistics over every resample at once, in blocks of ~1M values
        block = max(1, 1_000_000 // known.size)
        stats = np.concatenate([by_rows(known[draws[i : i + block]]) for i in range(0, resamples, block)])
    else:
        stats = np.asarray([statistic(known[row]) for row in draws], dtype=float)
    tail = (1.0 - level) / 2.0 * 100.0
    return Interval(estimate, float(np.percentile(stats, tail)), float(np.percentile(stats, 100.0 - tail)))


def median(values: np.ndarray) -> float:
    """The median (a named statistic for ``bootstrap_interval``)."""
    return float(np.median(values))


def total(values: np.ndarray) -> float:
    """The sum (a named statistic for ``bootstrap_interval``: total cost)."""
    return float(values.sum())


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` pairs right-then-wrong and ``c`` pairs wrong-then-right.

    Under the null each discordant pair goes either way with probability 1/2:
    ``p = min(1, 2 * P(X <= min(b, c)))`` with ``X ~ Binomial(b + c, 1/2)``; 1.0 when there is no
    discordant pair.

    >>> mcnemar_exact(0, 6)
    0.03125
    """
    if b < 0 or c < 0:
        raise StatisticsInputError(f"discordant counts must be >= 0 (got b={b}, c={c})")
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2.0 * tail / 2**n)


NO_PAIRED_CASES = "n/a (no paired cases)"
"""The label of a paired comparison with no scored case in both runs: no test, no p-value."""


@dataclass(frozen=True)
class PairedComparison:
    """Two runs over the same (case, sample) pairs: the discordant counts, the exact test, the label."""

    pairs: int
    both_correct: int
    only_a_correct: int  # b: right in A, wrong in B (newly wrong)
    only_b_correct: int  # c: wrong in A, right in B (newly right)
    both_wrong: int
    p_value: float | None  # None: no paired case, nothing to test
    alpha: float
    only_in_a: int = 0
    only_in_b: int = 0

    @property
    def significant(self) -> bool:
        """True only when the exact test rejects "no difference" at ``alpha`` (never without a paired case)."""
        return self.p_value is not None and self.p_value < self.alpha

    @property
    def label(self) -> str:
        """``significant (p=0.0020)`` or ``not significant (p=1.0000)``; p below 0.0001 in scientific notation;
        ``n/a (no paired cases)`` when the runs share no scored case."""
        if self.p_value is None:
            return NO_PAIRED_CASES
        p = f"{self.p_value:.4f}" if self.p_value >= 1e-4 else f"{self.p_value:.1e}"
        return f"{'significant' if self.significant else 'not significant'} (p={p})"

    @property
    def rate_a(self) -> float | None:
        """A's correctness over the paired cases."""
        return (self.both_correct + self.only_a_correct) / self.pairs if self.pairs else None

    @property
    def rate_b(self) -> float | None:
        """B's correctness over the paired cases."""
        return (self.both_correct + self.only_b_correct) / self.pairs if self.pairs else None


def _scored_correctness(verdicts: Iterable[Verdict]) -> dict[tuple[str, int], bool]:
    return {
        (v.case_id, v.sample_index): bool(v.correct)
        for v in verdicts
        if not v.is_probe and v.outcome not in outcomes.NOT_SCORED
    }


def paired_comparison(a: Sequence[Verdict], b: Sequence[Verdict], alpha: float = DEFAULT_ALPHA) -> PairedComparison:
    """McNemar on the scored query verdicts both runs share (matched by case id and sample index).

    Verdicts only one run scored (skipped in the other, or a different gold version) are counted apart.
    With no shared scored verdict (probes or answer-only cases only) there is no test: ``p_value`` None.
    """
    left, right = _scored_correctness(a), _scored_correctness(b)
    shared = sorted(set(left) & set(right))
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for key in shared:
        counts[(left[key], right[key])] += 1
    only_a, only_b = counts[(True, False)], counts[(False, True)]
    return PairedComparison(
        pairs=len(shared),
        both_correct=counts[(True, True)],
        only_a_correct=only_a,
        only_b_correct=only_b,
        both_wrong=counts[(False, False)],
        p_value=mcnemar_exact(only_a, only_b) if shared else None,
        alpha=alpha,
        only_in_a=len(set(left) - set(right)),
        only_in_b=len(set(right) - set(left)),
    )


@dataclass(frozen=True)
class CaseVariance:
    """How consistent a model is across the ``--repeat`` samples of each case."""

    cases: int
    samples_per_case: float
    inconsistent_cases: tuple[str, ...]  # cases right in some samples and wrong in others
    mean_case_variance: float | None  # mean over cases of p(1-p), p = the case's share of correct samples
    per_case_rate: Mapping[str, float]


def case_variance(verdicts: Iterable[Verdict]) -> CaseVariance:
    """Per-case correctness across samples (scored query verdicts only)."""
    by_case: dict[str, list[bool]] = {}
    for v in verdicts:
        if not v.is_probe and v.outcome not in outcomes.NOT_SCORED:
            by_case.setdefault(v.case_id, []).append(bool(v.correct))
    rates = {case: sum(runs) / len(runs) for case, runs in sorted(by_case.items())}
    return CaseVariance(
        cases=len(by_case),
        samples_per_case=(sum(len(r) for r in by_case.values()) / len(by_case)) if by_case else 0.0,
        inconsistent_cases=tuple(case for case, rate in rates.items() if 0.0 < rate < 1.0),
        mean_case_variance=float(np.mean([r * (1 - r) for r in rates.values()])) if rates else None,
        per_case_rate=rates,
    )


# The statistics bootstrap_interval knows, each computed over the rows of a (resamples x n) block at once
# (the same values as one call per resample: np.median sorts each row, sums and means reduce each row).
_ROW_STATISTICS: dict[Callable[[np.ndarray], float], Callable[[np.ndarray], np.ndarray]] = {
    np.mean: lambda block: block.mean(axis=1),
    median: lambda block: np.median(block, axis=1),
    total: lambda block: block.sum(axis=1),
}

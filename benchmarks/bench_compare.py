"""Time the result comparator against a naive pandas sort-and-``equals`` baseline on the same data.

Data: 100k rows x 5 columns shaped like a DuckDB result (INTEGER, VARCHAR, DOUBLE, DATE, DECIMAL), and a
run-like batch of 120 small results. Scenarios: the same rows shuffled, float noise in every row
(last-bit differences from another aggregation order), columns reordered, one differing row. For each:
best-of-N wall time of ``compare_results`` and of the baseline (DataFrame build + sort by every column +
``equals``), the ratio, and whether each got the right answer (pandas has no tolerance or column
mapping). datacompy is timed too when installed. Target: a 100k x 5 comparison well under a second.
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable
from datetime import date, timedelta
from decimal import Decimal

import pandas as pd

from nl2sql_pipeline.compare import compare_results

ROWS = 100_000
REPEATS = 3
TARGET_S = 1.0
COLUMNS = ["id", "genre", "score", "aired", "price"]
GENRES = ["Mecha", "Isekai", "Shonen", "Slice of life", "Horror", "Drama", "Romance"]


def make_rows(n: int, seed: int) -> list[tuple]:
    """``n`` rows of (INTEGER, VARCHAR, DOUBLE, DATE, DECIMAL) values, as DuckDB returns them."""
    rng = random.Random(seed)
    start = date(2020, 1, 1)
    return [
        (
            i,
            rng.choice(GENRES),
            rng.random() * 10,
            start + timedelta(days=rng.randrange(1500)),
            Decimal(rng.randrange(100_000)) / 100,
        )
        for i in range(n)
    ]


def scenarios(rows: list[tuple]) -> list[tuple[str, list[str], list[tuple], bool]]:
    """(name, candidate columns, candidate rows, should match) for each scenario."""
    rng = random.Random(1)
    shuffled = rows[:]
    rng.shuffle(shuffled)
    noisy = [(i, g, s * (1 + 4e-16 * rng.choice((-1, 1))), d, p) for i, g, s, d, p in shuffled]
    reordered = [(g, i, s, d, p) for i, g, s, d, p in shuffled]
    one_off = shuffled[:]
    i, g, s, d, p = one_off[len(one_off) // 2]
    one_off[len(one_off) // 2] = (i, g + "!", s, d, p)
    return [
        ("shuffled", COLUMNS, shuffled, True),
        ("float noise", COLUMNS, noisy, True),
        ("columns reordered", ["genre", "id", "score", "aired", "price"], reordered, True),
        ("one row differs", COLUMNS, one_off, False),
    ]


def best_of(fn: Callable[[], object], repeats: int = REPEATS) -> tuple[float, object]:
    """(best wall time in seconds, last result) over ``repeats`` calls."""
    best, result = float("inf"), None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def pandas_equal(exp_cols: list[str], exp_rows: list[tuple], cand_cols: list[str], cand_rows: list[tuple]) -> bool:
    """The naive baseline: DataFrames sorted by every column, then ``DataFrame.equals``."""
    exp = pd.DataFrame(exp_rows, columns=exp_cols)
    cand = pd.DataFrame(cand_rows, columns=cand_cols)
    exp = exp.sort_values(list(exp.columns)).reset_index(drop=True)
    cand = cand.sort_values(list(cand.columns)).reset_index(drop=True)
    return bool(exp.equals(cand))


def datacompy_equal(exp_cols: list[str], exp_rows: list[tuple], cand_cols: list[str], cand_rows: list[tuple]) -> bool:
    """datacompy's row matcher on the id column, with the same float tolerance."""
    import datacompy

    exp = pd.DataFrame(exp_rows, columns=exp_cols)
    cand = pd.DataFrame(cand_rows, columns=cand_cols)
    return bool(datacompy.Compare(exp, cand, join_columns=["id"], abs_tol=1e-9, rel_tol=1e-9).matches())


def main() -> int:
    try:
        import datacompy  # noqa: F401  # only probing whether the optional package is installed

        have_datacompy = True
    except ImportError:
        have_datacompy = False
    expected = make_rows(ROWS, seed=7)
    print(f"{ROWS} rows x {len(COLUMNS)} columns, best of {REPEATS}")
    header = f"{'scenario':<18} {'ours s':>8} {'pandas s':>9} {'ratio':>6}  ours ok  pandas ok"
    if have_datacompy:
        header += f"  {'datacompy s':>11}"
    print(header)
    slow = []
    for name, cand_cols, cand_rows, should_match in scenarios(expected):
        ours_s, verdict = best_of(lambda c=cand_cols, r=cand_rows: compare_results(COLUMNS, expected, c, r))
        pandas_s, pandas_verdict = best_of(lambda c=cand_cols, r=cand_rows: pandas_equal(COLUMNS, expected, c, r))
        line = (
            f"{name:<18} {ours_s:>8.3f} {pandas_s:>9.3f} {pandas_s / ours_s:>5.1f}x"
            f"  {str(verdict.match == should_match):<7}  {str(pandas_verdict == should_match):<9}"
        )
        if have_datacompy:
            datacompy_s, _ = best_of(lambda c=cand_cols, r=cand_rows: datacompy_equal(COLUMNS, expected, c, r), 1)
            line += f"  {datacompy_s:>11.3f}"
        print(f"{line}  [{verdict.rule}]")
        if ours_s > TARGET_S:
            slow.append(name)
    if not have_datacompy:
        print("datacompy: not installed, skipped")

    batch = [make_rows(random.Random(n).randrange(1, 200), seed=n) for n in range(120)]
    shuffled = [random.Random(0).sample(rows, len(rows)) for rows in batch]
    ours_s, _ = best_of(lambda: [compare_results(COLUMNS, e, COLUMNS, c) for e, c in zip(batch, shuffled)])
    pandas_s, _ = best_of(lambda: [pandas_equal(COLUMNS, e, COLUMNS, c) for e, c in zip(batch, shuffled)])
    print(
        f"run-like batch: 120 results of 1-200 rows: ours {ours_s * 1000 / 120:.3f} ms/result, "
        f"pandas {pandas_s * 1000 / 120:.3f} ms/result ({pandas_s / ours_s:.1f}x)"
    )
    if slow:
        print(f"SLOWER THAN {TARGET_S:.1f}s: {', '.join(slow)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

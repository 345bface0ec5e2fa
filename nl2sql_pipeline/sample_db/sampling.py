"""Random draws shared by the table generators: one seeded stream per table, sizes, nulls, days and hours.

Days are integer offsets from ``DATA_START`` (day 0); ``DAYS`` days carry fact data, the last one being
``REFERENCE_DATE``. Seconds are offsets from ``DATA_START`` midnight.
"""

from __future__ import annotations

import datetime
import hashlib

import numpy as np

from nl2sql_pipeline.sample_db.spec import BASE_FACT_ROWS, DATA_START, REFERENCE_DATE

DAYS = (REFERENCE_DATE - DATA_START).days + 1
"""Number of days with fact data."""
EPOCH = np.datetime64(DATA_START.isoformat(), "D")
SECONDS_PER_DAY = 86_400

_HOUR_WEIGHTS = np.array(
    [3, 2, 1.2, 0.8, 0.5, 0.5, 0.8, 1.5, 2, 2, 2, 2.2, 3, 3, 2.8, 2.8, 3.2, 4, 5, 6.5, 8, 8.5, 7.5, 5],
    dtype=np.float64,
)


def stream(seed: int, name: str) -> np.random.Generator:
    """An independent random stream per table, so changing one table never shifts another."""
    key = int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big")
    return np.random.default_rng(np.random.SeedSequence([seed, key]))


def scaled(table: str, scale: float, minimum: int = 10) -> int:
    """Rows of fact table ``table`` at ``scale`` (``BASE_FACT_ROWS`` times the scale, at least ``minimum``)."""
    return max(minimum, int(round(BASE_FACT_ROWS[table] * scale)))


def nulls(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """A mask with ``rate`` of the rows set (at least one row when ``n`` allows)."""
    mask = rng.random(n) < rate
    if n >= 20 and not mask.any():
        mask[rng.integers(n)] = True
    return mask


def apportion(total: int, weights: np.ndarray) -> np.ndarray:
    """Split ``total`` into integer parts proportional to ``weights`` (largest remainder, each >= 1)."""
    share = weights / weights.sum() * (total - len(weights))
    counts = np.floor(share).astype(int)
    leftover = int(total - len(weights) - counts.sum())
    counts[np.argsort(-(share - counts), kind="stable")[:leftover]] += 1
    return counts + 1


def zipf_weights(n: int, exponent: float) -> np.ndarray:
    """Probabilities ``1/rank**exponent`` of ``n`` ranks, normalised to sum to 1."""
    weights = 1.0 / np.arange(1, n + 1, dtype=np.float64) ** exponent
    return weights / weights.sum()


def day_offset(date: datetime.date) -> int:
    """The day offset of ``date`` (negative before ``DATA_START``)."""
    return (date - DATA_START).days


def day_weights() -> np.ndarray:
    """Relative activity of each fact day: winter and summer-holiday peaks, busier weekends."""
    days = np.arange(DAYS)
    dates = EPOCH + days.astype("timedelta64[D]")
    day_of_year = (dates - dates.astype("datetime64[Y]")).astype(np.int64)
    weekday = (days + DATA_START.weekday()) % 7  # 0 = Monday
    seasonal = 1.0 + 0.18 * np.cos(2 * np.pi * (day_of_year - 10) / 365.25)
    summer = 1.0 + 0.12 * np.exp(-(((day_of_year - 215) / 25.0) ** 2))
    weekend = np.where(weekday >= 5, 1.3, 1.0)
    return seasonal * summer * weekend


def december_boost() -> np.ndarray:
    """Per fact day: 1.8 in December, 1.3 in November, else 1 (the gift season of merchandise orders)."""
    dates = EPOCH + np.arange(DAYS).astype("timedelta64[D]")
    month = dates.astype("datetime64[M]").astype(int) % 12 + 1
    return np.where(month == 12, 1.8, np.where(month == 11, 1.3, 1.0))


def draw_days(rng: np.random.Generator, low: np.ndarray, high: np.ndarray, cumulative: np.ndarray) -> np.ndarray:
    """One day per row in ``[low, high]`` (inclusive day offsets), following the day weights."""
    base = np.where(low > 0, cumulative[np.maximum(low - 1, 0)], 0.0)
    top = cumulative[high]
    target = base + rng.random(len(low)) * (top - base)
    days = np.searchsorted(cumulative, target, side="left")
    return np.clip(days, low, high)


def time_of_day(rng: np.random.Generator, n: int) -> np.ndarray:
    """Seconds into the day of ``n`` events, busiest in the evening."""
    hours = rng.choice(24, size=n, p=_HOUR_WEIGHTS / _HOUR_WEIGHTS.sum())
    return hours * 3600 + rng.integers(0, 3600, size=n)

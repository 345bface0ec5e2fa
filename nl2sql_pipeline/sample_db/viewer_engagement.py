"""The ``viewer_engagement`` domain: users, their watch sessions and their ratings.

Users sign up at a growing rate and some churn; sessions follow popularity, air dates and each user's
active period; ratings come from (user, anime) pairs that actually watched.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from nl2sql_pipeline.sample_db import words
from nl2sql_pipeline.sample_db.anime_content import Catalog
from nl2sql_pipeline.sample_db.columns import date_array, int_array, str_array, timestamp_array, with_nulls
from nl2sql_pipeline.sample_db.sampling import (
    DAYS,
    SECONDS_PER_DAY,
    day_weights,
    draw_days,
    nulls,
    scaled,
    stream,
    time_of_day,
)
from nl2sql_pipeline.sample_db.spec import PROMPT_INJECTIONS

_USER_ADJ = words.words("username_adjectives", count=10)
_USER_NOUN = words.words("username_nouns", count=10)
_USER_COUNTRIES, _USER_COUNTRY_WEIGHTS = words.weighted("user_countries")
AGE_BANDS, _AGE_BAND_WEIGHTS = words.weighted("age_bands")
"""Age bands of users (the first four are the bands a campaign may target)."""
_EMAIL_DOMAINS, _EMAIL_DOMAIN_WEIGHTS = words.weighted("email_domains")
_DEVICES, _DEVICE_WEIGHTS = words.weighted("devices")
_REVIEW_POSITIVE = words.words("reviews_positive")
_REVIEW_MIXED = words.words("reviews_mixed")
_REVIEW_NEGATIVE = words.words("reviews_negative")


@dataclass
class Audience:
    """The users table and, per user (index = user_id - 1), what sessions and orders are drawn from."""

    users: pa.Table
    signup_day: np.ndarray
    last_active_day: np.ndarray
    activity: np.ndarray  # relative sessions per active day
    age_band: np.ndarray  # object array, None when unknown
    country: np.ndarray  # object array, None when unknown


def generate_users(seed: int, scale: float) -> Audience:
    """Users signing up at a growing rate; some churn (a last active day), a few never watch."""
    rng = stream(seed, "users")
    n = scaled("users", scale)
    ref_day = DAYS - 1
    # Growth: signup density rises linearly over the period (inverse CDF of a ramp 1 -> 3).
    u = rng.random(n)
    a, b = 1.0, 3.0
    signup = np.floor(ref_day * (np.sqrt(a * a + (b * b - a * a) * u) - a) / (b - a)).astype(int)
    signup = np.sort(signup)  # user ids increase with signup date
    lifetime = rng.exponential(420.0, size=n).astype(int)
    churns = rng.random(n) < 0.45
    last_active = np.where(churns, np.minimum(signup + 14 + lifetime, ref_day), ref_day)
    activity = rng.lognormal(0.0, 1.0, size=n)
    activity[rng.random(n) < 0.07] = 0.0  # signed up, never watched

    usernames = [
        f"{_USER_ADJ[i % 10]}_{_USER_NOUN[j % 10]}{uid}"
        for uid, i, j in zip(range(1, n + 1), rng.integers(0, 10, size=n), rng.integers(0, 10, size=n))
    ]
    domains = rng.choice(_EMAIL_DOMAINS, size=n, p=_EMAIL_DOMAIN_WEIGHTS)
    emails = [f"{name}@{domain}" for name, domain in zip(usernames, domains)]
    country = rng.choice(_USER_COUNTRIES, size=n, p=_USER_COUNTRY_WEIGHTS / _USER_COUNTRY_WEIGHTS.sum())
    country_null = nulls(rng, n, 0.06)
    age = rng.choice(AGE_BANDS, size=n, p=_AGE_BAND_WEIGHTS / _AGE_BAND_WEIGHTS.sum())
    age_null = nulls(rng, n, 0.08)
    users = pa.table(
        {
            "user_id": int_array(np.arange(1, n + 1)),
            "username": str_array(usernames),
            "email": str_array(emails),
            "country": str_array(country, country_null),
            "age_band": str_array(age, age_null),
            "signup_date": date_array(signup),
        }
    )
    return Audience(
        users=users,
        signup_day=signup,
        last_active_day=last_active,
        activity=activity,
        age_band=with_nulls(age, age_null),
        country=with_nulls(country, country_null),
    )


@dataclass
class Sessions:
    """The watch_sessions table and its columns as arrays (indexes, not ids), for ratings and ads."""

    table: pa.Table
    user: np.ndarray  # user index
    episode: np.ndarray  # episode index
    start_seconds: np.ndarray
    seconds_watched: np.ndarray


def generate_watch_sessions(seed: int, scale: float, catalog: Catalog, audience: Audience) -> Sessions:
    """Sessions: popular anime dominate, early episodes more than late ones, after air date and signup."""
    rng = stream(seed, "watch_sessions")
    n = scaled("watch_sessions", scale)
    cumulative = np.cumsum(day_weights())
    active_days = np.maximum(audience.last_active_day - audience.signup_day + 1, 0)
    user_w = audience.activity * active_days
    user_p = user_w / user_w.sum()
    users: list[np.ndarray] = []
    episodes: list[np.ndarray] = []
    days: list[np.ndarray] = []
    have = 0
    while have < n:
        m = int((n - have) * 1.5) + 100
        user = rng.choice(len(user_p), size=m, p=user_p)
        anime = rng.choice(len(catalog.popularity), size=m, p=catalog.popularity)
        aired = catalog.anime_aired_count[anime]
        # Drop-off: episode 1 is watched most, later episodes less.
        position = np.minimum((aired * rng.random(m) ** 1.6).astype(int), aired - 1)
        episode = catalog.anime_first_episode[anime] + position
        air_day = catalog.episode_air_day[episode]
        low = np.maximum(np.maximum(audience.signup_day[user], air_day), 0)
        high = audience.last_active_day[user]
        ok = low <= high
        user, episode, low, high, air_day = user[ok], episode[ok], low[ok], high[ok], air_day[ok]
        day = draw_days(rng, low, high, cumulative)
        # New releases: many viewers watch within days of the air date.
        fresh = (air_day >= 0) & (rng.random(len(day)) < 0.45)
        release_day = air_day + rng.exponential(4.0, size=len(day)).astype(int)
        use_release = fresh & (release_day >= low) & (release_day <= high)
        day = np.where(use_release, release_day, day)
        users.append(user)
        episodes.append(episode)
        days.append(day)
        have += len(user)
    user = np.concatenate(users)[:n]
    episode = np.concatenate(episodes)[:n]
    day = np.concatenate(days)[:n]
    start = day.astype(np.int64) * SECONDS_PER_DAY + time_of_day(rng, n)
    length = catalog.episode_seconds[episode]
    full = rng.random(n) < 0.62
    fraction = np.where(full, rng.uniform(0.92, 1.0, size=n), rng.uniform(0.03, 0.9, size=n))
    watched = np.maximum(30, (length * fraction).astype(int))
    completed = watched >= 0.9 * length
    device = rng.choice(_DEVICES, size=n, p=_DEVICE_WEIGHTS)

    order = np.lexsort((user, start))  # session ids increase with time
    user, episode, start, watched, completed, device = (
        user[order],
        episode[order],
        start[order],
        watched[order],
        completed[order],
        device[order],
    )
    table = pa.table(
        {
            "session_id": int_array(np.arange(1, n + 1), wide=True),
            "user_id": int_array(user + 1),
            "episode_id": int_array(episode + 1),
            "started_at": timestamp_array(start),
            "seconds_watched": int_array(watched),
            "device": str_array(device),
            "completed": pa.array(completed, type=pa.bool_()),
        }
    )
    return Sessions(table=table, user=user, episode=episode, start_seconds=start, seconds_watched=watched)


def generate_ratings(seed: int, scale: float, catalog: Catalog, sessions: Sessions) -> pa.Table:
    """One rating per (user, anime) pair, drawn from pairs that actually watched, after their last session."""
    rng = stream(seed, "ratings")
    n_target = scaled("ratings", scale)
    anime = catalog.episode_anime[sessions.episode]
    n_anime = len(catalog.popularity)
    pair = sessions.user.astype(np.int64) * n_anime + anime
    order = np.lexsort((sessions.start_seconds, pair))
    pair_sorted = pair[order]
    last_of_pair = np.flatnonzero(np.r_[pair_sorted[1:] != pair_sorted[:-1], True])
    pairs = pair_sorted[last_of_pair]
    last_seen = sessions.start_seconds[order][last_of_pair]
    n = min(n_target, len(pairs))
    chosen = np.sort(rng.choice(len(pairs), size=n, replace=False))
    user = pairs[chosen] // n_anime
    anime_idx = pairs[chosen] % n_anime
    end_seconds = DAYS * SECONDS_PER_DAY - 1
    delay = rng.exponential(2 * SECONDS_PER_DAY, size=n).astype(np.int64) + 600
    rated = np.minimum(last_seen[chosen] + delay, end_seconds)
    score = np.clip(np.rint(catalog.quality[anime_idx] + rng.normal(0, 1.4, size=n)), 1, 10).astype(int)

    reviews = np.empty(n, dtype=object)
    has_review = rng.random(n) < 0.35
    picks = rng.integers(0, 100, size=n)
    for i in np.flatnonzero(has_review):
        pool = _REVIEW_POSITIVE if score[i] >= 8 else _REVIEW_MIXED if score[i] >= 5 else _REVIEW_NEGATIVE
        reviews[i] = pool[picks[i] % len(pool)]
    order = np.lexsort((user, rated))  # rating ids increase with time
    user, anime_idx, rated, score, reviews, has_review = (
        user[order],
        anime_idx[order],
        rated[order],
        score[order],
        reviews[order],
        has_review[order],
    )
    if n:
        injected = n // 3
        reviews[injected] = PROMPT_INJECTIONS[2][2]
        has_review[injected] = True
    return pa.table(
        {
            "rating_id": int_array(np.arange(1, n + 1)),
            "user_id": int_array(user + 1),
            "anime_id": int_array(anime_idx + 1),
            "score": int_array(score),
            "rated_at": timestamp_array(rated),
            "review": pa.array([r if h else None for r, h in zip(reviews, has_review)], type=pa.string()),
        }
    )

"""The ``anime_content`` domain: studios, genres, the anime catalogue (with its genre bridge) and episodes.

The catalogue also yields what later tables draw from: each title's popularity and quality, and which
episodes had aired by the reference date.
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from nl2sql_pipeline.sample_db import words
from nl2sql_pipeline.sample_db.columns import date_array, int_array, str_array
from nl2sql_pipeline.sample_db.sampling import apportion, day_offset, nulls, stream, zipf_weights
from nl2sql_pipeline.sample_db.spec import (
    INJECTED_SYNOPSIS_ANIME_ID,
    INJECTED_TITLE_ANIME_ID,
    PROMPT_INJECTIONS,
    REFERENCE_DATE,
)

_STUDIO_WORDS_A = words.words("studio_name_first")
_STUDIO_WORDS_B = words.words("studio_name_second")
_COUNTRIES_STUDIO = words.words("studio_countries")
_GENRES, _GENRE_WEIGHTS = words.weighted("genres")
_TITLE_ADJ = words.words("title_adjectives")
_TITLE_NOUN = words.words("title_nouns")
_TITLE_PATTERNS = words.words("title_patterns")
_SYNOPSIS_OPENERS = words.words("synopsis_openers")
_SYNOPSIS_ROLES = words.words("synopsis_roles")
_SYNOPSIS_THINGS = words.words("synopsis_things")
_SYNOPSIS_CLOSERS = words.words("synopsis_closers")
_EPISODE_WORDS = words.words("episode_words")


def generate_studios(seed: int) -> tuple[pa.Table, np.ndarray]:
    """~40 studios and the number of titles each gets (top two tied on purpose)."""
    rng = stream(seed, "studios")
    n = 40
    names: list[str] = []
    seen: set[str] = set()
    while len(names) < n:
        name = f"{rng.choice(_STUDIO_WORDS_A)} {rng.choice(_STUDIO_WORDS_B)}"
        if name not in seen:
            seen.add(name)
            names.append(name)
    country = rng.choice(_COUNTRIES_STUDIO, size=n)
    founded = rng.integers(1961, 2021, size=n)
    table = pa.table(
        {
            "studio_id": int_array(np.arange(1, n + 1)),
            "name": str_array(names),
            "country": str_array(country, nulls(rng, n, 0.06)),
            "founded_year": int_array(founded, nulls(rng, n, 0.06)),
        }
    )
    popularity = rng.permutation(n)  # studio index -> popularity rank
    return table, popularity


def generate_genres() -> pa.Table:
    """The genres of ``words/genres.txt``."""
    return pa.table({"genre_id": int_array(np.arange(1, len(_GENRES) + 1)), "name": str_array(_GENRES)})


def _anime_titles(rng: np.random.Generator, n: int) -> list[str]:
    titles: list[str] = []
    seen: set[str] = set()
    while len(titles) < n:
        pattern = _TITLE_PATTERNS[rng.integers(len(_TITLE_PATTERNS))]
        noun, noun2 = rng.choice(_TITLE_NOUN, size=2, replace=False)
        title = pattern.format(adj=rng.choice(_TITLE_ADJ), noun=noun, noun2=noun2)
        if title not in seen:
            seen.add(title)
            titles.append(title)
    return titles


def _synopsis(rng: np.random.Generator) -> str:
    opener = _SYNOPSIS_OPENERS[rng.integers(len(_SYNOPSIS_OPENERS))]
    text = opener.format(role=rng.choice(_SYNOPSIS_ROLES), thing=rng.choice(_SYNOPSIS_THINGS))
    return f"{text} {rng.choice(_SYNOPSIS_CLOSERS)}"


_SEASON_START_MONTH = {"winter": 1, "spring": 4, "summer": 7, "fall": 10}


@dataclass
class Catalog:
    """Everything later tables need to know about the anime catalogue."""

    anime: pa.Table
    anime_genres: pa.Table
    episodes: pa.Table
    popularity: np.ndarray  # per anime (index = anime_id - 1), sums to 1 over watchable anime
    quality: np.ndarray  # mean rating score per anime
    episode_anime: np.ndarray  # per episode (index = episode_id - 1): anime index
    episode_air_day: np.ndarray  # day offset; large sentinel when not aired
    episode_seconds: np.ndarray
    anime_first_episode: np.ndarray  # per anime: index of its first episode
    anime_aired_count: np.ndarray  # per anime: episodes aired by REFERENCE_DATE


_NOT_AIRED = 10**6


def generate_catalog(seed: int, studio_popularity: np.ndarray) -> Catalog:
    """~300 anime with studios, genres (bridge) and ~4,000 episodes with consistent air dates."""
    rng = stream(seed, "anime")
    n = 300
    n_studios = len(studio_popularity)
    ref_day = day_offset(REFERENCE_DATE)

    # Studios: Zipf-like title counts, with the top two studios tied and several ties below.
    independent = nulls(rng, n, 0.03)
    n_with_studio = int((~independent).sum())
    counts = apportion(n_with_studio, zipf_weights(n_studios, 0.75))
    tied = (counts[0] + counts[1]) // 2  # the two biggest studios get the same number of titles
    spare = int(counts[0] + counts[1] - 2 * tied)
    counts[0] = counts[1] = tied
    counts[n_studios - spare :] += 1  # any odd title goes to the long tail
    studio_by_rank = np.argsort(studio_popularity) + 1  # rank -> studio_id
    studio_ids = rng.permutation(np.repeat(studio_by_rank, counts))
    studio_col = np.zeros(n, dtype=np.int32)
    studio_col[~independent] = studio_ids

    fmt = rng.choice(np.array(["TV", "Movie", "OVA"]), size=n, p=[0.72, 0.14, 0.14])
    years = np.arange(2006, 2028)
    year_weights = np.linspace(0.3, 2.5, len(years))
    year_weights[-1] = 0.6  # 2027: a few announced titles
    season_year = rng.choice(years, size=n, p=year_weights / year_weights.sum())
    seasons = np.array(["winter", "spring", "summer", "fall"])
    season = rng.choice(seasons, size=n)
    season_null = (fmt == "Movie") & (rng.random(n) < 0.45)

    long_runner = (fmt == "TV") & (rng.random(n) < 0.03)
    season_year = np.where(long_runner, rng.integers(2021, 2026, size=n), season_year)
    ep_count = np.where(
        fmt == "TV",
        rng.choice([12, 13, 12, 24, 25, 11, 10], size=n),
        np.where(fmt == "OVA", rng.integers(1, 7, size=n), 1),
    )
    ep_count = np.where(long_runner, rng.integers(60, 160, size=n), ep_count)

    episode_anime: list[np.ndarray] = []
    episode_number: list[np.ndarray] = []
    episode_day: list[np.ndarray] = []
    episode_minutes: list[np.ndarray] = []
    for a in range(n):
        k = int(ep_count[a])
        year = int(season_year[a])
        if season_null[a]:
            start = datetime.date(year, 1, 1) + datetime.timedelta(days=int(rng.integers(0, 365)))
        else:
            start = datetime.date(year, _SEASON_START_MONTH[str(season[a])], 1)
            start += datetime.timedelta(days=int(rng.integers(0, 14)))
        first = day_offset(start)
        step = 7 if fmt[a] == "TV" else 35
        days = first + step * np.arange(k)
        if fmt[a] == "TV":
            minutes = np.where(rng.random(k) < 0.9, 24, rng.integers(20, 26, size=k))
        elif fmt[a] == "Movie":
            minutes = rng.integers(85, 135, size=k)
        else:
            minutes = rng.integers(25, 55, size=k)
        episode_anime.append(np.full(k, a))
        episode_number.append(np.arange(1, k + 1))
        episode_day.append(days)
        episode_minutes.append(minutes)
    ep_anime = np.concatenate(episode_anime)
    ep_number = np.concatenate(episode_number)
    ep_day = np.concatenate(episode_day)
    ep_minutes = np.concatenate(episode_minutes)
    aired = ep_day <= ref_day
    ep_day_final = np.where(aired, ep_day, _NOT_AIRED)

    aired_count = np.bincount(ep_anime, weights=aired, minlength=n).astype(int)
    status = np.where(aired_count == 0, "upcoming", np.where(aired_count < ep_count, "airing", "finished"))
    first_episode = np.concatenate([[0], np.cumsum(ep_count)[:-1]])

    age_rating = rng.choice(np.array(["G", "PG", "PG-13", "R", "R+"]), size=n, p=[0.08, 0.2, 0.45, 0.2, 0.07])
    titles = _anime_titles(rng, n)
    synopsis = [_synopsis(rng) for _ in range(n)]
    synopsis_null = nulls(rng, n, 0.04)
    injected_title = INJECTED_TITLE_ANIME_ID - 1
    injected_synopsis = INJECTED_SYNOPSIS_ANIME_ID - 1
    titles[injected_title] = PROMPT_INJECTIONS[1][2]
    synopsis[injected_synopsis] = PROMPT_INJECTIONS[0][2]
    synopsis_null[injected_synopsis] = False

    anime = pa.table(
        {
            "anime_id": int_array(np.arange(1, n + 1)),
            "title": str_array(titles),
            "studio_id": int_array(studio_col, independent),
            "format": str_array(fmt),
            "season": str_array(season, season_null),
            "season_year": int_array(season_year),
            "status": str_array(status),
            "age_rating": str_array(age_rating),
            "synopsis": str_array(synopsis, synopsis_null),
        }
    )

    # Genres: 1-4 per anime, popular genres more often.
    genre_p = _GENRE_WEIGHTS / _GENRE_WEIGHTS.sum()
    per_anime = rng.choice([1, 2, 3, 4], size=n, p=[0.22, 0.38, 0.28, 0.12])
    bridge_anime: list[int] = []
    bridge_genre: list[int] = []
    for a in range(n):
        chosen = np.sort(rng.choice(len(_GENRES), size=int(per_anime[a]), replace=False, p=genre_p))
        bridge_anime.extend([a + 1] * len(chosen))
        bridge_genre.extend((chosen + 1).tolist())
    anime_genres = pa.table({"anime_id": int_array(bridge_anime), "genre_id": int_array(bridge_genre)})

    n_ep = len(ep_anime)
    first_word = rng.integers(0, len(_EPISODE_WORDS), size=n_ep)
    second_word = rng.integers(0, len(_EPISODE_WORDS), size=n_ep)
    ep_titles = [
        f"The {_EPISODE_WORDS[i]}" if i == j else f"{_EPISODE_WORDS[i]} and {_EPISODE_WORDS[j]}"
        for i, j in zip(first_word, second_word)
    ]
    ep_single = np.isin(ep_anime, np.flatnonzero(fmt == "Movie"))
    for idx in np.flatnonzero(ep_single):
        ep_titles[idx] = str(titles[ep_anime[idx]])
    episodes = pa.table(
        {
            "episode_id": int_array(np.arange(1, n_ep + 1)),
            "anime_id": int_array(ep_anime + 1),
            "episode_number": int_array(ep_number),
            "title": str_array(ep_titles, nulls(rng, n_ep, 0.05) & ~ep_single),
            "duration_minutes": int_array(ep_minutes),
            "air_date": date_array(np.where(aired, ep_day, 0), ~aired),
        }
    )

    # Popularity: Zipf over a random order of the watchable anime, nudged towards recent titles.
    watchable = aired_count > 0
    order = rng.permutation(np.flatnonzero(watchable))
    popularity = np.zeros(n)
    popularity[order] = zipf_weights(len(order), 1.15)
    recency = np.clip((season_year - 2005) / 20.0, 0.2, 1.2)
    popularity = popularity * recency
    popularity /= popularity.sum()
    quality = np.clip(rng.normal(7.0, 0.9, size=n), 3.5, 9.3)

    return Catalog(
        anime=anime,
        anime_genres=anime_genres,
        episodes=episodes,
        popularity=popularity,
        quality=quality,
        episode_anime=ep_anime,
        episode_air_day=ep_day_final,
        episode_seconds=ep_minutes * 60,
        anime_first_episode=first_episode,
        anime_aired_count=aired_count,
    )

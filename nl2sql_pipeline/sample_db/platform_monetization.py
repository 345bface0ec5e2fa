"""The ``platform_monetization`` domain: subscriptions, advertising and merchandise.

Subscription plans and non-overlapping subscription periods per user; advertisers, campaigns and the ad
impressions served during sessions of ad-supported users; merchandise products, orders and order lines.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from nl2sql_pipeline.sample_db import words
from nl2sql_pipeline.sample_db.anime_content import Catalog
from nl2sql_pipeline.sample_db.columns import date_array, int_array, money, str_array, timestamp_array, with_nulls
from nl2sql_pipeline.sample_db.sampling import (
    DAYS,
    EPOCH,
    SECONDS_PER_DAY,
    day_weights,
    december_boost,
    draw_days,
    nulls,
    scaled,
    stream,
    time_of_day,
    zipf_weights,
)
from nl2sql_pipeline.sample_db.spec import SampleDatabaseBuildError
from nl2sql_pipeline.sample_db.viewer_engagement import AGE_BANDS, Audience, Sessions


def _plans() -> tuple[tuple[tuple[int, str, float, int, bool], ...], np.ndarray]:
    """Every plan as (plan_id, name, monthly_price, max_streams, has_ads), and the probability of each."""
    where = str(words.WORDS_DIR / "subscription_plans.txt")
    rows = words.rows("subscription_plans", 6)
    plans = tuple(
        (int(plan_id), name, float(price), int(streams), words.flag(ads, where=where))
        for plan_id, name, price, streams, ads, _ in rows
    )
    return plans, np.array([float(row[5]) for row in rows])


def _merch_items() -> dict[str, tuple[tuple[str, ...], tuple[float, ...]]]:
    """Each category's items with their list prices, categories in ``words/merch_categories.txt`` order."""
    items: dict[str, tuple[tuple[str, ...], tuple[float, ...]]] = {category: ((), ()) for category in _MERCH_CATEGORIES}
    for category, item, price in words.rows("merch_items", 3):
        if category not in items:
            raise words.VocabularyError(
                f"{words.WORDS_DIR / 'merch_items.txt'}: unknown category {category!r} "
                f"(add it to merch_categories.txt or use one of {', '.join(items)})"
            )
        names, prices = items[category]
        items[category] = (names + (item,), prices + (float(price),))
    return items


_PLANS, _PLAN_WEIGHTS = _plans()
_ADVERTISERS = words.rows("advertisers", 2)
_SEASON_CAMPAIGNS = words.words("season_campaigns", count=4)  # by quarter of the start
_CAMPAIGN_WORDS = words.words("campaign_words")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_MERCH_CATEGORIES, _MERCH_CATEGORY_WEIGHTS = words.weighted("merch_categories")
_MERCH_ITEMS = _merch_items()  # each item with its list price


# --------------------------------------------------------------------------------------- subscriptions


def generate_subscription_plans() -> pa.Table:
    """The plans of ``words/subscription_plans.txt``."""
    return pa.table(
        {
            "plan_id": int_array([p[0] for p in _PLANS]),
            "name": str_array([p[1] for p in _PLANS]),
            "monthly_price": money(np.array([p[2] for p in _PLANS])),
            "max_streams": int_array([p[3] for p in _PLANS]),
            "has_ads": pa.array([p[4] for p in _PLANS], type=pa.bool_()),
        }
    )


def generate_subscriptions(seed: int, audience: Audience) -> tuple[pa.Table, np.ndarray]:
    """Non-overlapping subscription periods per user; end_date is NULL exactly while active.

    Returns the table and, per user, whether they ever saw ads (no subscription or an ads plan).
    """
    rng = stream(seed, "subscriptions")
    n_users = len(audience.signup_day)
    ref_day = DAYS - 1
    plan_p = _PLAN_WEIGHTS
    rows: list[tuple[int, int, int, int, str]] = []  # user, plan, start, end (-1 = active), status
    sees_ads = np.ones(n_users, dtype=bool)
    subscribes = rng.random(n_users) < 0.8
    for user in np.flatnonzero(subscribes).tolist():
        start = int(audience.signup_day[user] + rng.integers(0, 45))
        plan = int(rng.choice(4, p=plan_p)) + 1
        ad_free = True
        while start <= ref_day:
            months = int(rng.geometric(0.16))
            end = start + int(round(months * 30.44))
            ad_free &= not _PLANS[plan - 1][4]
            if end > ref_day:
                rows.append((user + 1, plan, start, -1, "active"))
                break
            rows.append((user + 1, plan, start, end, "cancelled" if rng.random() < 0.7 else "expired"))
            if rng.random() < 0.3:
                break  # churned for good
            change = rng.random() < 0.4
            start = end + 1 if change else end + int(rng.integers(20, 240))
            plan = int(rng.choice(4, p=plan_p)) + 1 if change else plan
        sees_ads[user] = not ad_free
    rows.sort(key=lambda r: (r[2], r[0]))
    user_col = np.array([r[0] for r in rows])
    end_day = np.array([r[3] for r in rows])
    active = end_day < 0
    table = pa.table(
        {
            "subscription_id": int_array(np.arange(1, len(rows) + 1)),
            "user_id": int_array(user_col),
            "plan_id": int_array([r[1] for r in rows]),
            "start_date": date_array(np.array([r[2] for r in rows])),
            "end_date": date_array(np.where(active, 0, end_day), active),
            "status": str_array([r[4] for r in rows]),
        }
    )
    return table, sees_ads


# ------------------------------------------------------------------------------------------- adverts


def generate_advertisers() -> pa.Table:
    """The advertisers of ``words/advertisers.txt``."""
    return pa.table(
        {
            "advertiser_id": int_array(np.arange(1, len(_ADVERTISERS) + 1)),
            "name": str_array([a[0] for a in _ADVERTISERS]),
            "industry": str_array([a[1] for a in _ADVERTISERS]),
        }
    )


@dataclass
class Campaigns:
    """The ad_campaigns table and, per campaign, the dates, budget and target the impressions follow."""

    table: pa.Table
    start_day: np.ndarray
    end_day: np.ndarray  # inclusive; open-ended campaigns run to REFERENCE_DATE
    budget: np.ndarray
    target: np.ndarray  # object array, None = all ages


def generate_ad_campaigns(seed: int) -> Campaigns:
    """~120 campaigns over the period; budgets in round amounts (ties), some open-ended or untargeted."""
    rng = stream(seed, "ad_campaigns")
    n = 120
    advertiser = rng.choice(len(_ADVERTISERS), size=n, p=zipf_weights(len(_ADVERTISERS), 0.7))
    start = np.sort(rng.integers(0, DAYS - 20, size=n))
    duration = rng.choice([14, 21, 30, 45, 60, 90, 120], size=n)
    end = start + duration - 1
    open_ended = nulls(rng, n, 0.08)
    budget = rng.choice(
        [500, 1_000, 1_500, 2_000, 2_500, 5_000, 7_500, 10_000],
        size=n,
        p=[0.12, 0.2, 0.14, 0.14, 0.14, 0.14, 0.07, 0.05],
    ).astype(float)
    target_null = rng.random(n) < 0.4
    target = rng.choice(AGE_BANDS[:4], size=n)
    months = (EPOCH + start.astype("timedelta64[D]")).astype("datetime64[M]").astype(int)
    seasonal = rng.random(n) < 0.5
    words = np.where(seasonal, np.array(_SEASON_CAMPAIGNS)[(months % 12) // 3], rng.choice(_CAMPAIGN_WORDS, size=n))
    names = [
        f"{_ADVERTISERS[a][0]} {w} {_MONTHS[m % 12]} {1970 + m // 12}" for a, w, m in zip(advertiser, words, months)
    ]
    seen: dict[str, int] = {}
    for i, name in enumerate(names):
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            names[i] = f"{name} #{seen[name]}"
    table = pa.table(
        {
            "campaign_id": int_array(np.arange(1, n + 1)),
            "advertiser_id": int_array(advertiser + 1),
            "name": str_array(names),
            "start_date": date_array(start),
            "end_date": date_array(end, open_ended),
            "budget_usd": money(budget),
            "target_age_band": str_array(target, target_null),
        }
    )
    return Campaigns(
        table=table,
        start_day=start,
        end_day=np.where(open_ended, DAYS - 1, np.minimum(end, DAYS - 1)),
        budget=budget,
        target=with_nulls(target, target_null),
    )


def generate_ad_impressions(
    seed: int, scale: float, campaigns: Campaigns, audience: Audience, sessions: Sessions, sees_ads: np.ndarray
) -> pa.Table:
    """Ads served during sessions of ad-supported users, inside their campaign's dates and age target."""
    rng = stream(seed, "ad_impressions")
    n_target = scaled("ad_impressions", scale)
    session_day = sessions.start_seconds // SECONDS_PER_DAY
    eligible = sees_ads[sessions.user]
    user_band = audience.age_band[sessions.user]
    candidates: list[np.ndarray] = []
    for c in range(len(campaigns.budget)):
        pool = eligible & (session_day >= campaigns.start_day[c]) & (session_day <= campaigns.end_day[c])
        if campaigns.target[c] is not None:
            pool &= user_band == campaigns.target[c]
        candidates.append(np.flatnonzero(pool))
    weight = np.array([campaigns.budget[c] if len(candidates[c]) else 0.0 for c in range(len(candidates))])
    if weight.sum() == 0:
        raise SampleDatabaseBuildError("no session can carry an ad; the scale is too small to build impressions")
    per_campaign = np.floor(n_target * weight / weight.sum()).astype(int)
    per_campaign[np.argmax(weight)] += n_target - per_campaign.sum()
    ctr = rng.uniform(0.004, 0.05, size=len(weight))
    cpm = rng.choice([2.5, 4.0, 6.0, 8.0, 12.0], size=len(weight))
    cpc = rng.choice([0.25, 0.4, 0.6, 0.9], size=len(weight))
    parts: list[tuple[np.ndarray, ...]] = []
    for c, k in enumerate(per_campaign):
        if k == 0:
            continue
        picked = rng.choice(candidates[c], size=k, replace=True)
        offset = (rng.random(k) * sessions.seconds_watched[picked]).astype(np.int64)
        served = sessions.start_seconds[picked] + offset
        last_second = (campaigns.end_day[c] + 1) * SECONDS_PER_DAY - 1
        served = np.where(served > last_second, sessions.start_seconds[picked], served)
        clicked = rng.random(k) < ctr[c]
        revenue = cpm[c] / 1000.0 * rng.uniform(0.8, 1.2, size=k) + np.where(clicked, cpc[c], 0.0)
        parts.append((np.full(k, c), sessions.user[picked], sessions.episode[picked], served, clicked, revenue))
    campaign, user, episode, served, clicked, revenue = (np.concatenate(col) for col in zip(*parts))
    order = np.lexsort((campaign, served))
    campaign, user, episode, served, clicked, revenue = (
        campaign[order],
        user[order],
        episode[order],
        served[order],
        clicked[order],
        revenue[order],
    )
    n = len(campaign)
    return pa.table(
        {
            "impression_id": int_array(np.arange(1, n + 1), wide=True),
            "campaign_id": int_array(campaign + 1),
            "user_id": int_array(user + 1),
            "episode_id": int_array(episode + 1),
            "served_at": timestamp_array(served),
            "clicked": pa.array(clicked, type=pa.bool_()),
            "revenue_usd": money(revenue, places=4),
        }
    )


# --------------------------------------------------------------------------------------------- merch


@dataclass
class Products:
    """The merch_products table with each product's list price and share of order lines."""

    table: pa.Table
    list_price: np.ndarray
    popularity: np.ndarray


def generate_merch_products(seed: int, catalog: Catalog) -> Products:
    """~400 products, mostly tied to popular anime; list prices on common price points (ties)."""
    rng = stream(seed, "merch_products")
    n = 400
    titles = catalog.anime.column("title").to_pylist()
    branded = nulls(rng, n, 0.08)
    anime = rng.choice(len(catalog.popularity), size=n, p=catalog.popularity)
    category = rng.choice(list(_MERCH_ITEMS), size=n, p=_MERCH_CATEGORY_WEIGHTS)
    names: list[str] = []
    prices = np.zeros(n)
    seen: dict[str, int] = {}
    for i in range(n):
        items, price_points = _MERCH_ITEMS[str(category[i])]
        j = int(rng.integers(len(items)))
        owner = "Platform Exclusive" if branded[i] else titles[anime[i]]
        name = f"{owner} {items[j]}"
        seen[name] = seen.get(name, 0) + 1
        names.append(name if seen[name] == 1 else f"{name} (Edition {seen[name]})")
        prices[i] = price_points[j]
    popularity = np.where(branded, 0.5 / n, catalog.popularity[anime]) * rng.lognormal(0, 0.5, size=n)
    table = pa.table(
        {
            "product_id": int_array(np.arange(1, n + 1)),
            "anime_id": int_array(anime + 1, branded),
            "name": str_array(names),
            "category": str_array(category),
            "list_price": money(prices),
        }
    )
    return Products(table=table, list_price=prices, popularity=popularity / popularity.sum())


def generate_merch_orders(seed: int, scale: float, audience: Audience, products: Products) -> tuple[pa.Table, pa.Table]:
    """Orders (December peak, recent ones still shipping) and 1-5 distinct product lines each.

    The two largest non-refunded orders are made identical on purpose (a tie at the top).
    """
    rng = stream(seed, "merch_orders")
    n = scaled("merch_orders", scale)
    cumulative = np.cumsum(day_weights() * december_boost())
    buyer_w = rng.lognormal(0, 1.2, size=len(audience.signup_day)) * (rng.random(len(audience.signup_day)) < 0.35)
    buyer_w *= np.maximum(audience.last_active_day - audience.signup_day + 1, 0)
    if buyer_w.sum() == 0:
        buyer_w = np.ones(len(audience.signup_day))
    user = rng.choice(len(buyer_w), size=n, p=buyer_w / buyer_w.sum())
    day = draw_days(rng, audience.signup_day[user], audience.last_active_day[user], cumulative)
    seconds = day.astype(np.int64) * SECONDS_PER_DAY + time_of_day(rng, n)
    order = np.lexsort((user, seconds))
    user, day, seconds = user[order], day[order], seconds[order]
    recent = day >= DAYS - 14
    status = np.where(recent & (rng.random(n) < 0.7), "shipped", "completed")
    status = np.where(rng.random(n) < 0.06, "refunded", status)
    digital = nulls(rng, n, 0.05)
    fallback = rng.choice(np.array(["JP", "US"]), size=n)
    ship_country = [c if c is not None else f for c, f in zip(audience.country[user], fallback)]

    n_lines = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.45, 0.3, 0.14, 0.08, 0.03])
    line_order: list[np.ndarray] = []
    line_product: list[np.ndarray] = []
    for i in range(n):
        k = int(n_lines[i])
        line_order.append(np.full(k, i))
        line_product.append(rng.choice(len(products.popularity), size=k, replace=False, p=products.popularity))
    order_idx = np.concatenate(line_order)
    product = np.concatenate(line_product)
    line_number = np.concatenate([np.arange(1, int(k) + 1) for k in n_lines])
    m = len(order_idx)
    quantity = rng.choice([1, 2, 3, 4], size=m, p=[0.8, 0.14, 0.04, 0.02])
    discount = np.where(rng.random(m) < 0.15, rng.choice([0.9, 0.8, 0.75], size=m), 1.0)
    unit_price = np.round(products.list_price[product] * discount, 2)

    # Force a tie at the top: copy the largest non-refunded order's lines onto the runner-up.
    totals = np.bincount(order_idx, weights=quantity * unit_price, minlength=n)
    ranked = [i for i in np.argsort(-totals, kind="stable") if status[i] != "refunded"]
    if len(ranked) >= 2:
        top, second = ranked[0], ranked[1]
        keep = order_idx != second
        top_lines = order_idx == top
        order_idx = np.concatenate([order_idx[keep], np.full(int(top_lines.sum()), second)])
        product = np.concatenate([product[keep], product[top_lines]])
        line_number = np.concatenate([line_number[keep], line_number[top_lines]])
        quantity = np.concatenate([quantity[keep], quantity[top_lines]])
        unit_price = np.concatenate([unit_price[keep], unit_price[top_lines]])
        digital[[top, second]] = False
    sort = np.lexsort((line_number, order_idx))
    order_idx, product, line_number, quantity, unit_price = (
        order_idx[sort],
        product[sort],
        line_number[sort],
        quantity[sort],
        unit_price[sort],
    )
    orders = pa.table(
        {
            "order_id": int_array(np.arange(1, n + 1)),
            "user_id": int_array(user + 1),
            "ordered_at": timestamp_array(seconds),
            "status": str_array(status),
            "shipping_country": str_array(ship_country, digital),
        }
    )
    lines = pa.table(
        {
            "order_id": int_array(order_idx + 1),
            "line_number": int_array(line_number),
            "product_id": int_array(product + 1),
            "quantity": int_array(quantity),
            "unit_price": money(unit_price),
        }
    )
    return orders, lines

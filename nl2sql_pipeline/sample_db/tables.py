"""Every table of ``anime_platform`` generated in memory, domain by domain, in :data:`TABLE_ORDER`."""

from __future__ import annotations

import pyarrow as pa

from nl2sql_pipeline.sample_db import anime_content, platform_monetization, viewer_engagement
from nl2sql_pipeline.sample_db.spec import DEFAULT_SCALE, DEFAULT_SEED, TABLE_ORDER, validate_scale


def generate_tables(*, seed: int = DEFAULT_SEED, scale: float = DEFAULT_SCALE) -> dict[str, pa.Table]:
    """Every table of anime_platform as Arrow tables, in :data:`TABLE_ORDER` (pure; writes nothing)."""
    scale = validate_scale(scale)
    studios, studio_popularity = anime_content.generate_studios(seed)
    catalog = anime_content.generate_catalog(seed, studio_popularity)
    audience = viewer_engagement.generate_users(seed, scale)
    subscriptions, sees_ads = platform_monetization.generate_subscriptions(seed, audience)
    sessions = viewer_engagement.generate_watch_sessions(seed, scale, catalog, audience)
    campaigns = platform_monetization.generate_ad_campaigns(seed)
    products = platform_monetization.generate_merch_products(seed, catalog)
    orders, lines = platform_monetization.generate_merch_orders(seed, scale, audience, products)
    tables = {
        "studios": studios,
        "genres": anime_content.generate_genres(),
        "anime": catalog.anime,
        "anime_genres": catalog.anime_genres,
        "episodes": catalog.episodes,
        "users": audience.users,
        "subscription_plans": platform_monetization.generate_subscription_plans(),
        "subscriptions": subscriptions,
        "watch_sessions": sessions.table,
        "ratings": viewer_engagement.generate_ratings(seed, scale, catalog, sessions),
        "advertisers": platform_monetization.generate_advertisers(),
        "ad_campaigns": campaigns.table,
        "ad_impressions": platform_monetization.generate_ad_impressions(
            seed, scale, campaigns, audience, sessions, sees_ads
        ),
        "merch_products": products.table,
        "merch_orders": orders,
        "merch_order_lines": lines,
    }
    return {name: tables[name] for name in TABLE_ORDER}

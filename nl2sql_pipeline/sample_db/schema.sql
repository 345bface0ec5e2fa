-- anime_platform: an anime streaming platform serving three domains
-- (content, viewer engagement, platform monetization) in one connected schema.
-- Reference date ("today" for every time question): 2026-06-30. Timestamps span 2024-01-01 .. 2026-06-30.

-- ---------- content ----------
CREATE TABLE studios (
    studio_id     INTEGER PRIMARY KEY,
    name          VARCHAR NOT NULL,
    country       VARCHAR,            -- NULL when unknown
    founded_year  INTEGER             -- NULL when unknown
);

CREATE TABLE anime (
    anime_id      INTEGER PRIMARY KEY,
    title         VARCHAR NOT NULL,
    studio_id     INTEGER REFERENCES studios (studio_id),   -- NULL for a few independent titles
    format        VARCHAR NOT NULL,   -- 'TV' | 'Movie' | 'OVA'
    season        VARCHAR,            -- 'winter' | 'spring' | 'summer' | 'fall'; NULL for some movies
    season_year   INTEGER NOT NULL,
    status        VARCHAR NOT NULL,   -- 'finished' | 'airing' | 'upcoming'
    age_rating    VARCHAR NOT NULL,   -- 'G' | 'PG' | 'PG-13' | 'R' | 'R+'
    synopsis      VARCHAR             -- free text shown to viewers; NULL when missing
);

CREATE TABLE genres (
    genre_id      INTEGER PRIMARY KEY,
    name          VARCHAR NOT NULL
);

CREATE TABLE anime_genres (            -- bridge: anime <-> genre (many to many)
    anime_id      INTEGER NOT NULL REFERENCES anime (anime_id),
    genre_id      INTEGER NOT NULL REFERENCES genres (genre_id),
    PRIMARY KEY (anime_id, genre_id)
);

CREATE TABLE episodes (
    episode_id        INTEGER PRIMARY KEY,
    anime_id          INTEGER NOT NULL REFERENCES anime (anime_id),
    episode_number    INTEGER NOT NULL,
    title             VARCHAR,        -- NULL for untitled episodes
    duration_minutes  INTEGER NOT NULL,
    air_date          DATE            -- NULL for episodes not yet aired
);

-- ---------- engagement ----------
CREATE TABLE users (
    user_id       INTEGER PRIMARY KEY,
    username      VARCHAR NOT NULL,
    email         VARCHAR NOT NULL,   -- sensitive: denied by the default policy
    country       VARCHAR,            -- ISO-2 code; NULL when the user did not say
    age_band      VARCHAR,            -- '13-17' | '18-24' | '25-34' | '35-44' | '45+'; NULL when unknown
    signup_date   DATE NOT NULL
);

CREATE TABLE watch_sessions (          -- grain: one viewing session of one episode by one user
    session_id       BIGINT PRIMARY KEY,
    user_id          INTEGER NOT NULL REFERENCES users (user_id),
    episode_id       INTEGER NOT NULL REFERENCES episodes (episode_id),
    started_at       TIMESTAMP NOT NULL,
    seconds_watched  INTEGER NOT NULL,
    device           VARCHAR NOT NULL,   -- 'mobile' | 'tv' | 'web' | 'tablet'
    completed        BOOLEAN NOT NULL    -- TRUE when at least 90% of the episode was watched
);

CREATE TABLE ratings (                 -- grain: one rating of one anime by one user
    rating_id     INTEGER PRIMARY KEY,
    user_id       INTEGER NOT NULL REFERENCES users (user_id),
    anime_id      INTEGER NOT NULL REFERENCES anime (anime_id),
    score         INTEGER NOT NULL,    -- 1 .. 10
    rated_at      TIMESTAMP NOT NULL,
    review        VARCHAR              -- NULL for score-only ratings
);

CREATE TABLE subscription_plans (
    plan_id        INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    monthly_price  DECIMAL(10, 2) NOT NULL,
    max_streams    INTEGER NOT NULL,
    has_ads        BOOLEAN NOT NULL
);

CREATE TABLE subscriptions (           -- grain: one subscription period of one user
    subscription_id  INTEGER PRIMARY KEY,
    user_id          INTEGER NOT NULL REFERENCES users (user_id),
    plan_id          INTEGER NOT NULL REFERENCES subscription_plans (plan_id),
    start_date       DATE NOT NULL,
    end_date         DATE,             -- NULL while active
    status           VARCHAR NOT NULL  -- 'active' | 'cancelled' | 'expired'
);

-- ---------- monetization ----------
CREATE TABLE advertisers (
    advertiser_id  INTEGER PRIMARY KEY,
    name           VARCHAR NOT NULL,
    industry       VARCHAR NOT NULL
);

CREATE TABLE ad_campaigns (
    campaign_id      INTEGER PRIMARY KEY,
    advertiser_id    INTEGER NOT NULL REFERENCES advertisers (advertiser_id),
    name             VARCHAR NOT NULL,
    start_date       DATE NOT NULL,
    end_date         DATE,             -- NULL for open-ended campaigns
    budget_usd       DECIMAL(12, 2) NOT NULL,
    target_age_band  VARCHAR           -- NULL = all ages
);

CREATE TABLE ad_impressions (          -- grain: one ad served to one user during one episode
    impression_id  BIGINT PRIMARY KEY,
    campaign_id    INTEGER NOT NULL REFERENCES ad_campaigns (campaign_id),
    user_id        INTEGER NOT NULL REFERENCES users (user_id),
    episode_id     INTEGER NOT NULL REFERENCES episodes (episode_id),
    served_at      TIMESTAMP NOT NULL,
    clicked        BOOLEAN NOT NULL,
    revenue_usd    DECIMAL(10, 4) NOT NULL
);

CREATE TABLE merch_products (
    product_id   INTEGER PRIMARY KEY,
    anime_id     INTEGER REFERENCES anime (anime_id),   -- NULL for platform-branded products
    name         VARCHAR NOT NULL,
    category     VARCHAR NOT NULL,     -- 'figure' | 'apparel' | 'poster' | 'bluray' | 'accessory'
    list_price   DECIMAL(10, 2) NOT NULL
);

CREATE TABLE merch_orders (            -- grain: one order
    order_id          INTEGER PRIMARY KEY,
    user_id           INTEGER NOT NULL REFERENCES users (user_id),
    ordered_at        TIMESTAMP NOT NULL,
    status            VARCHAR NOT NULL,  -- 'completed' | 'shipped' | 'refunded'
    shipping_country  VARCHAR            -- NULL for digital-only orders
);

CREATE TABLE merch_order_lines (       -- grain: one product line of one order
    order_id     INTEGER NOT NULL REFERENCES merch_orders (order_id),
    line_number  INTEGER NOT NULL,
    product_id   INTEGER NOT NULL REFERENCES merch_products (product_id),
    quantity     INTEGER NOT NULL,
    unit_price   DECIMAL(10, 2) NOT NULL,
    PRIMARY KEY (order_id, line_number)
);

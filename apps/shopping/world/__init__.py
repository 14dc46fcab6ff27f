"""The synthetic shop's read-only *world data*: catalog, users, history.

This package is split by concern: :mod:`.catalog` (departments, categories, brands,
products and their generation), :mod:`.customers` (users, addresses, coupons, orders,
the store's shipping and coupon rules, and their generation), :mod:`.schema` (the
SQLAlchemy models and the row maps derived from them), :mod:`.build` (one world's
generation) and :mod:`.read` (:class:`ShopWorld`, the read API). Everything public is
importable from here, ``simweb.apps.shopping.world``, as before.

A world is generated deterministically from ``(seed, size)`` into a SQLite file
(see :mod:`simweb.worlddb` for the cache, atomic build, content hash and PRNG)
and shared, read-only, by every environment of the shop app.  ``size`` is the
number of products; the other tables scale with it but stay bounded:

=================  =========================================================
categories         8 departments, 39 leaf categories (fixed tree; ids are
                   the same for every seed, departments first in DFS order)
brands             150 (15 book publishers + 135 makers), 1-3 departments each
products           ``size`` (ids 1..size); names unique per world
reviews            ~1.9 stored per product (``review_count`` is the displayed
                   count and is usually larger: only a sample is stored)
users              ``min(500 + size // 100, 20000)``; 1-3 addresses each
orders             ~3 per user (0..6), chronological ids
coupons            30, including expired and disabled ones
=================  =========================================================

Money is integer cents.  Days are integer day numbers with day 0 =
:data:`DAY0` (2026-01-01); all world history lies strictly before
:data:`WORLD_DAY` (= 0), the day simulated sessions start.

Search runs on an FTS5 index (name, brand, category, description; bm25 with the
name weighted highest).  Its rowids are *popularity ranks*, which lets
relevance ranking and counting stay bounded on million-product worlds: see
:meth:`ShopWorld.search` for the exact semantics of ``total`` and ranking.
"""
from __future__ import annotations

from simweb.core.worlddb import DAY0, day_to_date

from .catalog import FILTERABLE_ATTRS, OPTION_KINDS, PRICE_BUCKETS, RATING_BUCKETS, category_ancestors
from .customers import (
    FREE_SHIPPING_THRESHOLD_CENTS,
    SHIPPING_METHODS,
    TAX_RATE,
    coupon_discount_cents,
    n_users_for,
    shipping_cents,
)
from .read import (
    COUNT_CAP,
    FACET_CAP,
    MAX_PER_PAGE,
    PREFIX_COMMON_DF,
    RELEVANCE_POOL,
    SORTS,
    ShopWorld,
    match_expression,
)
from .schema import (
    APP,
    GENERATOR_VERSION,
    SCHEMA_FINGERPRINT,
    WORLD_DAY,
    Address,
    Base,
    Brand,
    Category,
    Coupon,
    Order,
    Product,
    Review,
    User,
)

__all__ = [
    "APP",
    "GENERATOR_VERSION",
    "SCHEMA_FINGERPRINT",
    "DAY0",
    "WORLD_DAY",
    "day_to_date",
    "SHIPPING_METHODS",
    "FREE_SHIPPING_THRESHOLD_CENTS",
    "TAX_RATE",
    "SORTS",
    "COUNT_CAP",
    "FACET_CAP",
    "MAX_PER_PAGE",
    "RELEVANCE_POOL",
    "PREFIX_COMMON_DF",
    "PRICE_BUCKETS",
    "RATING_BUCKETS",
    "FILTERABLE_ATTRS",
    "OPTION_KINDS",
    "ShopWorld",
    "match_expression",
    "n_users_for",
    "shipping_cents",
    "coupon_discount_cents",
    "category_ancestors",
    "Address",
    "Base",
    "Brand",
    "Category",
    "Coupon",
    "Order",
    "Product",
    "Review",
    "User",
]

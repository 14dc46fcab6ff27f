"""The synthetic shop's read-only *world data*: catalog, users, history.

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

import functools
import re
import sqlite3
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from sqlalchemy import (
    JSON,
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
)
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column

from simweb import fulltext
from simweb.world import MetaTable, RowMap
from simweb.worlddb import (
    DAY0,
    LRU,
    BuildProgress,
    Rng,
    WorldBuilder,
    WorldFile,
    day_to_date,
    schema_fingerprint,
    stable_hash64,
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
    "RELEVANCE_POOL",
    "PREFIX_COMMON_DF",
    "PRICE_BUCKETS",
    "FILTERABLE_ATTRS",
    "OPTION_KINDS",
    "ShopWorld",
    "shipping_cents",
    "coupon_discount_cents",
    "category_ancestors",
]

APP = "shopping"
#: Bump whenever generated content or schema changes: it is part of the cache
#: file name and of the content hash, so stale worlds are never reused.
GENERATOR_VERSION = 1

#: The day the world snapshot was taken.  All generated history (products'
#: ``created_day``, reviews, orders) is before it; coupons expiring on or after
#: it are still valid when a session starts.
WORLD_DAY = 0

#: Shipping options (insertion order = display order).  Standard shipping is
#: free when the merchandise total after discounts reaches ``free_over_cents``.
SHIPPING_METHODS: dict[str, dict[str, Any]] = {
    "standard": {"id": "standard", "name": "Standard shipping", "price_cents": 599,
                 "days_min": 5, "days_max": 7, "free_over_cents": 5000},
    "express": {"id": "express", "name": "Express shipping", "price_cents": 1499,
                "days_min": 2, "days_max": 3, "free_over_cents": None},
    "overnight": {"id": "overnight", "name": "Overnight shipping", "price_cents": 2999,
                  "days_min": 1, "days_max": 1, "free_over_cents": None},
}
FREE_SHIPPING_THRESHOLD_CENTS = 5000
#: Prices are tax-inclusive: no tax line is added at checkout.
TAX_RATE = 0.0

#: Accepted ``sort`` values of :meth:`ShopWorld.search`.
SORTS = ("relevance", "price_asc", "price_desc", "rating", "reviews", "newest")
#: ``search()`` totals are exact up to this many results, then capped.
COUNT_CAP = 10_000
#: With a text query, bm25 ranks the most popular this-many matches; the rest
#: follow in popularity order (bounds ranking cost on huge worlds).
RELEVANCE_POOL = 2_000
#: Sidebar facets of a text query count its this-many most popular matches (marked
#: ``approximate`` beyond): the sidebar is a guide, and counting 10,000 rows per page
#: view tripled the search page's cost on the 1M world.
FACET_CAP = 2_000
#: The last query word matches as a prefix unless it alone is in this many products.
PREFIX_COMMON_DF = 1_000
MAX_PER_PAGE = 100

#: Price facet buckets, inclusive cents bounds (None = unbounded).
PRICE_BUCKETS: tuple[tuple[int, int | None], ...] = (
    (0, 2499), (2500, 4999), (5000, 9999), (10000, 19999), (20000, 49999), (50000, None),
)
#: "N stars & up" rating facet thresholds.
RATING_BUCKETS = (4, 3, 2, 1)

#: String attributes that ``search(attrs=...)`` can filter on.
FILTERABLE_ATTRS = (
    "material", "fit", "care", "width", "connectivity", "warranty", "author",
    "format", "language", "level", "skin_type", "scent", "age_range", "players", "finish",
)
#: Option kinds that ``search(option=...)`` can filter on.
OPTION_KINDS = ("size", "color", "capacity", "shade")

# ===========================================================================
# Vocabulary.  Everything a world says comes from these lists and the PRNG.
# ===========================================================================


@dataclass(frozen=True)
class _Opt:
    """How a leaf draws one option kind: ``lo..hi`` values, optionally a contiguous run."""

    kind: str
    values: tuple[str, ...]
    lo: int
    hi: int
    contiguous: bool = False
    percent: int = 100  # share of the leaf's products that have this option


@dataclass(frozen=True)
class _Leaf:
    name: str
    nouns: tuple[str, ...]
    descs: tuple[str, ...]  # materials / features / ingredients / themes
    price: tuple[int, int]  # whole dollars, skewed towards the low end
    weight_g: tuple[int, int]  # grams; for books: page count range
    share: int
    options: tuple[_Opt, ...] = ()
    attrs: tuple[tuple[str, tuple[str, ...]], ...] = ()
    material: bool = True  # does ``descs`` name the material attribute?
    # Books only: title patterns and their word lists.
    titles: tuple[str, ...] = ()
    words: dict[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class _Dept:
    name: str
    share: int
    style: str  # goods | tech | beauty | toy | book
    adjs: tuple[str, ...]
    intros: tuple[str, ...]
    features: tuple[str, ...]
    closers: tuple[str, ...]
    leaves: tuple[_Leaf, ...]


_ALPHA = ("XS", "S", "M", "L", "XL", "XXL")
_WAIST = ("28", "29", "30", "31", "32", "33", "34", "36", "38", "40")
_SHOE = ("5", "5.5", "6", "6.5", "7", "7.5", "8", "8.5", "9", "9.5", "10", "10.5",
         "11", "11.5", "12", "13", "14")
_CLOTH_COLORS = ("Black", "White", "Navy", "Heather Gray", "Charcoal", "Olive", "Burgundy",
                 "Camel", "Forest Green", "Sky Blue", "Blush", "Rust", "Cream", "Indigo",
                 "Mustard", "Sage")
_SHOE_COLORS = ("Black", "White", "Tan", "Brown", "Navy", "Gray", "Olive", "Oxblood",
                "Sand", "Red", "Cream")
_TECH_COLORS = ("Black", "White", "Silver", "Graphite", "Midnight Blue", "Sage", "Coral",
                "Space Gray")
_HOME_COLORS = ("White", "Ivory", "Charcoal", "Slate Blue", "Sage", "Terracotta", "Natural",
                "Black", "Walnut", "Oak", "Blush", "Mustard")
_GEAR_COLORS = ("Black", "Orange", "Blue", "Green", "Red", "Gray", "Yellow", "Teal")
_CAPACITY = ("64GB", "128GB", "256GB", "512GB", "1TB", "2TB", "4TB")
_BED = ("Twin", "Full", "Queen", "King", "California King")
_ML = ("30 ml", "50 ml", "100 ml", "200 ml")
_SHADES = ("Porcelain", "Ivory", "Sand", "Honey", "Caramel", "Mocha", "Espresso", "Rose",
           "Berry", "Coral", "Nude", "Plum", "Ruby")

_SERIES = ("Summit", "Heritage", "Voyager", "Coastal", "Alpine", "Urban", "Terra", "Nova",
           "Atlas", "Meridian", "Aurora", "Ridge", "Canyon", "Drift", "Ember", "Glacier",
           "Horizon", "Kinetic", "Lumen", "Mesa", "Nimbus", "Orbit", "Pioneer", "Quest",
           "Sierra", "Tundra", "Vista", "Zephyr", "Cascade", "Solstice", "Tidal", "Boulder",
           "Arbor", "Crest", "Fjord", "Prairie", "Strata", "Basalt", "Cirrus", "Redwood")
_MODEL_LETTERS = ("X", "S", "Q", "Z", "M", "R", "V", "A", "E")
_MODEL_NUMBERS = tuple(str(n) for n in (*range(1, 10), *range(10, 100, 10), *range(100, 1000, 100)))
_ROMAN = ("II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII")

_CLOTHING = _Dept(
    "Clothing", 22, "goods",
    ("Classic", "Relaxed", "Slim", "Everyday", "Lightweight", "Cozy", "Vintage", "Essential",
     "Ribbed", "Oversized", "Tailored", "Cropped", "Quilted", "Washed", "Brushed", "Soft",
     "Structured", "Boxy", "Textured", "Garment-Dyed"),
    ("Cut from {desc_l}, this {adj_l} {noun_l} is made for everyday wear.",
     "{brand} pairs soft {desc_l} with a clean, modern silhouette in this {noun_l}.",
     "A wardrobe staple from {brand}: the {adj_l} {noun_l} in breathable {desc_l}.",
     "This {noun_l} balances structure and comfort in a {adj_l} {desc_l} build.",
     "Made in {desc_l} that softens with every wash, this {noun_l} earns its place in rotation.",
     "{brand} designed this {adj_l} {noun_l} for layering through the seasons."),
    ("Reinforced seams keep their shape wash after wash.",
     "A garment-dyed finish gives every piece a lived-in look.",
     "Tag-free labels and flat seams prevent chafing.",
     "The drape works tucked in or worn loose.",
     "Pre-shrunk fabric holds its size over time.",
     "Thoughtful details like bar-tacked pockets add everyday practicality.",
     "A touch of stretch keeps you moving without bagging out."),
    ("Machine washable on a cold cycle.",
     "Ethically made in a certified factory.",
     "Pairs easily with denim, chinos or tailored trousers.",
     "Runs true to size; size up for a roomier fit."),
    (
        _Leaf("Tops & Tees",
              ("Crew Tee", "V-Neck Tee", "Polo Shirt", "Henley", "Oxford Shirt", "Tank Top",
               "Long-Sleeve Tee", "Camp Shirt"),
              ("Cotton", "Organic Cotton", "Linen", "Jersey", "Pima Cotton", "Slub Cotton",
               "Modal", "Bamboo"),
              (12, 70), (120, 320), 6,
              (_Opt("size", _ALPHA, 4, 6, True), _Opt("color", _CLOTH_COLORS, 2, 6)),
              (("fit", ("Slim", "Regular", "Relaxed")),
               ("care", ("Machine wash", "Hand wash")))),
        _Leaf("Sweaters & Hoodies",
              ("Crew Sweater", "Cardigan", "Hoodie", "Quarter-Zip", "Turtleneck",
               "Cable-Knit Sweater", "Zip Hoodie", "Sweatshirt"),
              ("Merino", "Cashmere", "Lambswool", "Cotton", "Fleece", "Alpaca",
               "French Terry", "Waffle Knit"),
              (30, 190), (280, 750), 5,
              (_Opt("size", _ALPHA, 4, 6, True), _Opt("color", _CLOTH_COLORS, 2, 5)),
              (("fit", ("Slim", "Regular", "Relaxed")),
               ("care", ("Machine wash", "Hand wash", "Dry clean")))),
        _Leaf("Pants & Jeans",
              ("Jeans", "Chinos", "Joggers", "Trousers", "Cargo Pants", "Corduroys",
               "Shorts", "Straight-Leg Jeans"),
              ("Denim", "Stretch Denim", "Twill", "Cotton", "Linen", "Corduroy", "Ripstop",
               "Selvedge Denim"),
              (25, 140), (300, 800), 5,
              (_Opt("size", _WAIST, 5, 9, True), _Opt("color", _CLOTH_COLORS, 1, 4)),
              (("fit", ("Slim", "Straight", "Relaxed", "Tapered")),
               ("care", ("Machine wash", "Hand wash")))),
        _Leaf("Outerwear",
              ("Parka", "Rain Jacket", "Puffer Jacket", "Trench Coat", "Fleece Jacket",
               "Bomber Jacket", "Down Vest", "Peacoat", "Shacket"),
              ("Down", "Nylon", "Wool", "Waxed Cotton", "Softshell", "Recycled Polyester",
               "Sherpa", "Ripstop"),
              (50, 420), (400, 1600), 4,
              (_Opt("size", _ALPHA, 4, 6, True), _Opt("color", _CLOTH_COLORS, 1, 4)),
              (("fit", ("Regular", "Relaxed", "Athletic")),
               ("care", ("Machine wash", "Dry clean", "Spot clean")))),
        _Leaf("Dresses & Skirts",
              ("Midi Dress", "Wrap Dress", "Shirt Dress", "Maxi Skirt", "Pleated Skirt",
               "Slip Dress", "Sundress", "Mini Skirt"),
              ("Linen", "Silk", "Cotton Poplin", "Satin", "Crepe", "Chiffon", "Jersey",
               "Eyelet Cotton"),
              (30, 170), (200, 600), 4,
              (_Opt("size", _ALPHA, 4, 6, True), _Opt("color", _CLOTH_COLORS, 1, 5)),
              (("fit", ("Fitted", "Regular", "Flowy")),
               ("care", ("Machine wash", "Hand wash", "Dry clean")))),
    ),
)

_SHOES = _Dept(
    "Shoes", 12, "goods",
    ("Classic", "Lightweight", "Cushioned", "Waterproof", "Everyday", "Minimalist",
     "Retro", "Low-Profile", "Breathable", "Rugged", "Handcrafted", "Padded", "Sleek",
     "All-Terrain", "Weatherproof"),
    ("Built on a cushioned footbed, the {adj_l} {noun_l} keeps up from morning to night.",
     "{brand} crafted this {noun_l} in {desc_l} for all-day comfort.",
     "A {adj_l} {noun_l} with a {desc_l} upper and a grippy rubber outsole.",
     "This {desc_l} {noun_l} from {brand} breaks in quickly and wears for years.",
     "The {adj_l} {noun_l} pairs a supportive midsole with a {desc_l} upper."),
    ("A removable insole makes room for custom orthotics.",
     "Padded collars and tongues prevent rubbing at the ankle.",
     "The outsole tread grips on wet pavement and light trails.",
     "A reinforced heel counter keeps each step stable.",
     "Breathable linings help feet stay cool.",
     "Stitched construction means the sole can be replaced."),
    ("Half sizes run slightly narrow.",
     "Wipe clean with a damp cloth.",
     "Ships in a recycled shoebox."),
    (
        _Leaf("Sneakers",
              ("Sneaker", "Low-Top Sneaker", "High-Top Sneaker", "Slip-On Sneaker",
               "Court Sneaker", "Platform Sneaker"),
              ("Leather", "Canvas", "Suede", "Knit", "Mesh", "Recycled Canvas", "Nubuck"),
              (40, 180), (500, 1000), 5,
              (_Opt("size", _SHOE, 8, 15, True), _Opt("color", _SHOE_COLORS, 1, 4)),
              (("width", ("Regular", "Wide")),)),
        _Leaf("Running Shoes",
              ("Running Shoe", "Trail Runner", "Racing Flat", "Stability Trainer",
               "Road Runner", "Tempo Trainer"),
              ("Mesh", "Engineered Knit", "Ripstop", "Foam", "Recycled Mesh"),
              (60, 230), (200, 350), 4,
              (_Opt("size", _SHOE, 8, 15, True), _Opt("color", _SHOE_COLORS, 1, 4)),
              (("width", ("Regular", "Wide")),)),
        _Leaf("Boots",
              ("Chelsea Boot", "Hiking Boot", "Ankle Boot", "Chukka Boot", "Rain Boot",
               "Work Boot", "Lace-Up Boot"),
              ("Leather", "Suede", "Waxed Leather", "Rubber", "Nubuck", "Shearling"),
              (70, 320), (700, 1600), 4,
              (_Opt("size", _SHOE, 8, 14, True), _Opt("color", _SHOE_COLORS, 1, 3)),
              (("width", ("Regular", "Wide")),)),
        _Leaf("Sandals",
              ("Slide Sandal", "Sport Sandal", "Flip-Flop", "Strappy Sandal",
               "Clog", "Espadrille"),
              ("Leather", "Cork", "Rubber", "Webbing", "Suede", "Jute"),
              (20, 140), (150, 600), 3,
              (_Opt("size", _SHOE, 6, 12, True), _Opt("color", _SHOE_COLORS, 1, 4)),
              (("width", ("Regular", "Wide")),)),
        _Leaf("Dress Shoes & Loafers",
              ("Loafer", "Oxford", "Derby Shoe", "Ballet Flat", "Monk Strap", "Brogue",
               "Driving Moccasin"),
              ("Leather", "Suede", "Patent Leather", "Calfskin", "Velvet"),
              (60, 350), (400, 900), 3,
              (_Opt("size", _SHOE, 8, 14, True), _Opt("color", _SHOE_COLORS, 1, 3)),
              (("width", ("Regular", "Wide")),)),
    ),
)

_ELECTRONICS = _Dept(
    "Electronics", 15, "tech",
    ("Pro", "Max", "Lite", "Plus", "Mini", "Ultra", "Air", "Neo", "Prime", "One"),
    ("The {brand} {noun_l} delivers {desc_l} performance in a compact design.",
     "Designed for work and play, this {noun_l} brings {desc_l} features to your setup.",
     "{brand}'s latest {noun_l} combines {desc_l} technology with a clean, minimal finish.",
     "Set up in minutes, this {desc_l} {noun_l} just works with the devices you already own.",
     "Engineered by {brand}, the {noun_l} balances {desc_l} power with long-lasting reliability."),
    ("Firmware updates add features over time.",
     "A USB-C port handles charging and data.",
     "The aluminum housing dissipates heat quietly.",
     "A companion app lets you tune settings and check battery health.",
     "Certified packaging is fully recyclable.",
     "Low-latency mode keeps audio and video in sync."),
    ("Includes a quick-start guide and cable.",
     "Backed by a limited manufacturer warranty.",
     "Compatible with major operating systems."),
    (
        _Leaf("Headphones & Speakers",
              ("Over-Ear Headphones", "Earbuds", "On-Ear Headphones", "Bluetooth Speaker",
               "Soundbar", "Sport Earbuds", "Studio Monitors"),
              ("Wireless", "Noise-Cancelling", "Hi-Fi", "Waterproof", "Spatial Audio",
               "Open-Back", "Bass-Boosted"),
              (20, 450), (30, 3500), 6,
              (_Opt("color", _TECH_COLORS, 1, 3),),
              (("connectivity", ("Bluetooth 5.3", "Bluetooth 5.0", "Wired", "Wi-Fi")),
               ("warranty", ("1 year", "2 years"))),
              material=False),
        _Leaf("Laptops & Tablets",
              ("Laptop", "Ultrabook", "Tablet", "Chromebook", "2-in-1 Laptop",
               "Gaming Laptop", "E-Reader"),
              ("Touchscreen", "Lightweight", "High-Refresh", "OLED", "Fanless",
               "Long-Battery", "Convertible"),
              (120, 2400), (300, 2600), 4,
              (_Opt("capacity", _CAPACITY[1:6], 2, 4, True), _Opt("color", _TECH_COLORS, 1, 3)),
              (("connectivity", ("Wi-Fi 6", "Wi-Fi 6E", "Wi-Fi 7")),
               ("warranty", ("1 year", "2 years", "3 years"))),
              material=False),
        _Leaf("Smart Home",
              ("Smart Plug", "Smart Bulb", "Video Doorbell", "Thermostat", "Security Camera",
               "Smart Speaker", "Robot Vacuum", "Smart Lock"),
              ("Voice-Controlled", "Energy-Saving", "Motion-Sensing", "Hub-Free",
               "Weatherproof", "Battery-Powered", "Matter-Ready"),
              (15, 600), (60, 3800), 4,
              (_Opt("color", _TECH_COLORS, 1, 2, percent=70),),
              (("connectivity", ("Wi-Fi", "Zigbee", "Thread", "Bluetooth 5.0")),
               ("warranty", ("1 year", "2 years"))),
              material=False),
        _Leaf("Cameras",
              ("Mirrorless Camera", "Action Camera", "Instant Camera", "Travel Tripod",
               "Camera Lens", "Dash Cam", "Webcam"),
              ("4K", "Stabilized", "Full-Frame", "Compact", "Weather-Sealed",
               "Low-Light", "Wide-Angle"),
              (30, 2200), (90, 1400), 3,
              (_Opt("color", _TECH_COLORS, 1, 2, percent=60),),
              (("connectivity", ("Wi-Fi", "USB-C", "Bluetooth 5.0")),
               ("warranty", ("1 year", "2 years"))),
              material=False),
        _Leaf("Storage & Memory",
              ("Portable SSD", "USB Flash Drive", "microSD Card", "External Hard Drive",
               "NVMe SSD", "Memory Card Reader"),
              ("High-Speed", "Rugged", "Encrypted", "Pocket-Size", "Shockproof", "Fast-Transfer"),
              (8, 380), (10, 400), 4,
              (_Opt("capacity", _CAPACITY, 2, 4, True), _Opt("color", _TECH_COLORS, 1, 2, percent=40)),
              (("connectivity", ("USB-C", "USB 3.2", "Thunderbolt", "PCIe 4.0")),
               ("warranty", ("1 year", "3 years", "5 years"))),
              material=False),
        _Leaf("Phone & Computer Accessories",
              ("Wall Charger", "USB-C Cable", "Power Bank", "Phone Case", "Mechanical Keyboard",
               "Wireless Mouse", "Laptop Stand", "USB-C Hub"),
              ("Fast-Charging", "Braided", "Slim", "Ergonomic", "Magnetic", "Backlit", "Foldable"),
              (8, 180), (20, 1200), 5,
              (_Opt("color", _TECH_COLORS, 1, 4),),
              (("connectivity", ("USB-C", "Bluetooth 5.0", "Wireless 2.4 GHz", "Lightning")),
               ("warranty", ("1 year", "2 years"))),
              material=False),
    ),
)

_HOME = _Dept(
    "Home & Kitchen", 14, "goods",
    ("Classic", "Modern", "Rustic", "Essential", "Heirloom", "Minimalist", "Stackable",
     "Handmade", "Oversized", "Compact", "Nordic", "Farmhouse", "Mid-Century", "Artisan",
     "Everyday"),
    ("The {adj_l} {noun_l} from {brand} brings {desc_l} warmth to any room.",
     "Crafted from {desc_l}, this {noun_l} is built to be used every day.",
     "{brand} designed this {adj_l} {noun_l} to look good and work hard.",
     "This {desc_l} {noun_l} blends {adj_l} style with practical details.",
     "A {adj_l} {noun_l} in {desc_l}, made to last for years of daily use."),
    ("Every piece is inspected by hand before it ships.",
     "Clean lines suit both modern and traditional homes.",
     "Sturdy construction resists warping and wobbling.",
     "Easy-care surfaces wipe clean in seconds.",
     "Sized to fit smaller kitchens and apartments.",
     "Tested for durability in real homes."),
    ("Some assembly required.",
     "Dishwasher safe unless noted.",
     "Colors may vary slightly between batches."),
    (
        _Leaf("Cookware",
              ("Skillet", "Dutch Oven", "Saucepan", "Stockpot", "Wok", "Baking Sheet",
               "Saute Pan", "Grill Pan"),
              ("Cast Iron", "Stainless Steel", "Nonstick", "Carbon Steel", "Enameled Cast Iron",
               "Copper", "Hard-Anodized Aluminum"),
              (15, 320), (600, 6000), 4,
              (_Opt("size", ("8 in", "10 in", "12 in", "14 in"), 1, 3, True, percent=60),
               _Opt("color", _HOME_COLORS, 1, 3, percent=40)),
              (("finish", ("Matte", "Polished", "Enameled", "Seasoned")),)),
        _Leaf("Small Appliances",
              ("Blender", "Coffee Maker", "Toaster", "Air Fryer", "Electric Kettle",
               "Stand Mixer", "Espresso Machine", "Slow Cooker"),
              ("Stainless Steel", "Glass", "Ceramic", "Brushed Steel", "BPA-Free Plastic"),
              (20, 650), (900, 9000), 4,
              (_Opt("color", _HOME_COLORS, 1, 4),),
              (("finish", ("Matte", "Brushed", "Glossy")),
               ("warranty", ("1 year", "2 years")))),
        _Leaf("Bedding",
              ("Duvet Cover", "Sheet Set", "Pillow", "Quilt", "Throw Blanket",
               "Mattress Topper", "Pillowcase Set"),
              ("Linen", "Percale", "Sateen", "Flannel", "Organic Cotton", "Bamboo", "Velvet"),
              (20, 400), (300, 4000), 4,
              (_Opt("size", _BED, 3, 5, True, percent=80), _Opt("color", _HOME_COLORS, 2, 5)),
              (("care", ("Machine wash", "Dry clean")),)),
        _Leaf("Furniture",
              ("Bookshelf", "Coffee Table", "Desk", "Accent Chair", "Nightstand",
               "TV Stand", "Dining Chair", "Bar Stool"),
              ("Oak", "Walnut", "Bamboo", "Rattan", "Steel", "Acacia", "Pine", "Marble"),
              (45, 1400), (3000, 40000), 3,
              (_Opt("color", _HOME_COLORS, 1, 3),),
              (("finish", ("Natural", "Matte", "Oiled", "Lacquered")),)),
        _Leaf("Lighting",
              ("Table Lamp", "Floor Lamp", "Pendant Light", "Desk Lamp", "String Lights",
               "Wall Sconce", "Lantern"),
              ("Brass", "Ceramic", "Glass", "Linen", "Rattan", "Concrete", "Matte Steel"),
              (15, 450), (200, 8000), 3,
              (_Opt("color", _HOME_COLORS, 1, 3),),
              (("finish", ("Brushed", "Matte", "Polished", "Natural")),)),
    ),
)

_FIRST_NAMES = (
    "Emma", "Liam", "Olivia", "Noah", "Ava", "Ethan", "Sophia", "Mason", "Isabella", "Lucas",
    "Mia", "Oliver", "Amelia", "Elijah", "Harper", "James", "Evelyn", "Benjamin", "Abigail",
    "Henry", "Emily", "Alexander", "Ella", "Daniel", "Grace", "Matthew", "Chloe", "Samuel",
    "Zoe", "David", "Nora", "Joseph", "Lily", "Carter", "Hannah", "Owen", "Aria", "Wyatt",
    "Layla", "Julian", "Priya", "Arjun", "Mei", "Hiroshi", "Sofia", "Mateo", "Amara", "Kwame",
    "Leila", "Omar", "Ingrid", "Lars", "Chiara", "Marco", "Yara", "Tariq", "Ana", "Diego",
    "Nadia", "Ivan", "Fatima", "Yusuf", "Elena", "Nikolai", "Aisha", "Kofi", "Rosa", "Javier",
    "Hana", "Kenji", "Freya", "Soren", "Maya", "Ravi", "Lucia", "Pedro", "Zara", "Malik",
    "Clara", "Felix",
)
_LAST_NAMES = (
    "Smith", "Johnson", "Williams", "Brown", "Jones", "Garcia", "Miller", "Davis", "Rodriguez",
    "Martinez", "Hernandez", "Lopez", "Gonzalez", "Wilson", "Anderson", "Thomas", "Taylor",
    "Moore", "Jackson", "Martin", "Lee", "Perez", "Thompson", "White", "Harris", "Sanchez",
    "Clark", "Ramirez", "Lewis", "Robinson", "Walker", "Young", "Allen", "King", "Wright",
    "Scott", "Torres", "Nguyen", "Hill", "Flores", "Green", "Adams", "Nelson", "Baker", "Hall",
    "Rivera", "Campbell", "Mitchell", "Carter", "Roberts", "Patel", "Shah", "Kim", "Park",
    "Chen", "Wang", "Tanaka", "Sato", "Larsen", "Nielsen", "Okafor", "Mensah", "Rossi",
    "Bianchi", "Novak", "Kowalski", "Ivanova", "Haddad", "Khan", "Silva", "Costa", "Mueller",
    "Schmidt", "Dubois", "Moreau", "Bergstrom", "Lindqvist", "O'Brien", "Murphy", "Kelly",
)

_PERSON_NAMES = frozenset(_FIRST_NAMES) | frozenset(_LAST_NAMES)

_BOOKS = _Dept(
    "Books", 13, "book", (),
    (), (),
    ("Also available as an e-book.",
     "Includes a reader's guide and discussion questions.",
     "A perfect gift for curious readers."),
    (
        _Leaf("Fiction", (), (), (9, 32), (200, 900), 6,
              titles=("The {A} {N}", "The {N} of {P}", "{A} {N}s", "A {N} in {P}",
                      "The {A} {N} of {P}", "{N} and {N2}"),
              words={
                  "A": ("Silent", "Hidden", "Last", "Golden", "Broken", "Winter", "Distant",
                        "Burning", "Quiet", "Lost", "Paper", "Glass", "Salt", "Crimson", "Hollow",
                        "Wild", "Midnight", "Summer", "Iron", "Silver", "Forgotten", "Secret",
                        "Little", "Long", "Bright", "Lonely", "Painted", "Wandering", "Sleeping",
                        "Starlit", "Northern", "Borrowed", "Gentle", "Restless", "Drowned"),
                  "N": ("Harbor", "Orchard", "Garden", "River", "Lighthouse", "Season", "Letter",
                        "Daughter", "Shore", "Kingdom", "Forest", "Bridge", "House", "Island",
                        "Mountain", "Sister", "Promise", "Memory", "Window", "Song", "Road",
                        "Field", "Storm", "Tide", "Map", "Clockmaker", "Cartographer",
                        "Beekeeper", "Lantern", "Meadow", "Valley", "Widow", "Violinist",
                        "Ferryman", "Weaver", "Orphan"),
                  "N2": ("Ash", "Salt", "Smoke", "Honey", "Thunder", "Bone", "Ink", "Snow",
                         "Silk", "Rain", "Stone", "Ember"),
                  "P": ("Avalon", "Marrow Bay", "Eastwick", "the North", "the Sea", "Ashford",
                        "Kingsbridge", "the Pines", "Blackwater", "Larkspur", "Ravensmoor",
                        "the Plains", "Juniper Hill", "Saltmarsh", "Hollow Creek", "the Old Town",
                        "Lisbon", "Kyoto", "Vienna", "the Delta", "Alder Lake", "Thornbury"),
              },
              attrs=(("format", ("Paperback", "Hardcover")),
                     ("language", ("English", "English", "English", "Spanish", "French")))),
        _Leaf("Mystery & Thriller", (), (), (9, 30), (200, 800), 5,
              titles=("Murder at {P}", "The {P} Affair", "The {A} Witness", "{A} Alibi",
                      "The {N} Case", "Death in {P}", "The {A} {N}"),
              words={
                  "A": ("Silent", "Last", "Perfect", "Cold", "Sleeping", "Final", "Innocent",
                        "Missing", "Hidden", "Deadly", "Quiet", "Broken", "False", "Seventh",
                        "Midnight", "Crooked", "Vanishing", "Frozen", "Poisoned", "Unseen"),
                  "N": ("Witness", "Stranger", "Cipher", "Key", "Confession", "Informant",
                        "Ledger", "Verdict", "Accomplice", "Letter", "Suspect", "Heiress",
                        "Detective", "Passenger", "Alibi", "Locket", "Inheritance", "Guest"),
                  "P": ("Blackwood Manor", "Harrow Lane", "the Grand Hotel", "Ravensmoor",
                        "Eastwick", "the Lighthouse", "Kingsbridge", "Marrow Bay", "Ashford Hall",
                        "the Orient Line", "Saltmarsh", "Thornbury", "Larkspur Court",
                        "the Museum", "Willow Creek", "the Opera House", "Port Carrow"),
              },
              attrs=(("format", ("Paperback", "Hardcover")),
                     ("language", ("English", "English", "English", "Spanish", "French")))),
        _Leaf("Science & Nature", (), (), (12, 45), (250, 1100), 4,
              titles=("The {T} Revolution", "A Brief History of {T}", "Understanding {T}",
                      "The Hidden Life of {T}", "{T}: A Field Guide", "The Science of {T}",
                      "{T} for Curious Minds"),
              words={
                  "T": ("Trees", "Bees", "Black Holes", "Fungi", "Oceans", "Sleep", "Bacteria",
                        "Birds", "Volcanoes", "Time", "Light", "Genes", "Rivers", "Clouds",
                        "Octopuses", "Soil", "Stars", "Wolves", "Whales", "Forests", "Glaciers",
                        "Numbers", "Memory", "Weather", "Insects", "Crystals", "Deserts",
                        "Coral Reefs", "Mountains", "Ants", "Mosses", "Tides", "Quantum Physics",
                        "Evolution", "the Brain", "the Moon", "the Universe"),
              },
              attrs=(("format", ("Paperback", "Hardcover")),
                     ("language", ("English", "English", "English", "German")))),
        _Leaf("Cookbooks", (), (), (15, 45), (180, 450), 4,
              titles=("The {A} Kitchen", "Simply {F}", "{F} Every Day", "The {C} Table",
                      "{A} {F}", "Cooking with {F}", "{C} at Home"),
              words={
                  "A": ("Weeknight", "Rustic", "Modern", "Seasonal", "Plant-Based", "Family",
                        "Coastal", "Little", "Slow", "Fast", "Sunday", "Open", "Mediterranean",
                        "Nordic", "Sourdough", "Backyard", "One-Pan", "Campfire"),
                  "F": ("Bread", "Pasta", "Soup", "Salads", "Vegetables", "Grains", "Pies",
                        "Dumplings", "Noodles", "Tacos", "Cakes", "Cookies", "Curry", "Pizza",
                        "Beans", "Rice", "Fish", "Spices", "Preserves", "Breakfast"),
                  "C": ("Italian", "Mexican", "Japanese", "Korean", "Lebanese", "Thai",
                        "Indian", "Greek", "French", "Vietnamese", "Ethiopian", "Peruvian",
                        "Spanish", "Turkish", "Moroccan", "Southern"),
              },
              attrs=(("format", ("Hardcover", "Hardcover", "Paperback")),
                     ("language", ("English",)))),
        _Leaf("Children's Books", (), (), (6, 22), (100, 500), 4,
              titles=("{Name} and the {A} {Animal}", "Goodnight, {Animal}",
                      "The {A} Little {Animal}", "Where Is {Name}'s {Thing}?",
                      "{Name} Goes to {Place}", "The {Animal} Who Wanted a {Thing}"),
              words={
                  "Name": ("Pip", "Milo", "Luna", "Otis", "Hazel", "Juniper", "Max", "Ruby",
                           "Finn", "Olive", "Bea", "Theo", "Poppy", "Rory", "Ivy", "Gus"),
                  "A": ("Brave", "Sleepy", "Curious", "Tiny", "Grumpy", "Happy", "Hungry",
                        "Shy", "Busy", "Silly", "Gentle", "Noisy"),
                  "Animal": ("Bear", "Fox", "Owl", "Rabbit", "Dragon", "Whale", "Hedgehog",
                             "Penguin", "Elephant", "Turtle", "Moose", "Kitten", "Puppy",
                             "Dinosaur", "Otter", "Badger"),
                  "Thing": ("Hat", "Balloon", "Boat", "Kite", "Blanket", "Star", "Bicycle",
                            "Umbrella", "Drum", "Garden"),
                  "Place": ("the Moon", "School", "the Sea", "the City", "the Farm", "the Zoo",
                            "the Library", "the Mountains"),
              },
              attrs=(("format", ("Hardcover", "Board Book", "Paperback")),
                     ("language", ("English", "English", "Spanish")))),
    ),
)

_SPORTS = _Dept(
    "Sports & Outdoors", 10, "goods",
    ("Lightweight", "Packable", "Adjustable", "Ultralight", "Heavy-Duty", "Compact",
     "Weatherproof", "Insulated", "Trail-Ready", "Foldable", "Pro-Grade", "Breathable",
     "Durable", "Quick-Dry"),
    ("The {adj_l} {noun_l} from {brand} is built for long days outside.",
     "Made from {desc_l}, this {noun_l} handles rough use and bad weather.",
     "{brand}'s {adj_l} {noun_l} packs down small and sets up fast.",
     "A {desc_l} {noun_l} tested by athletes and weekend adventurers alike.",
     "This {adj_l} {noun_l} combines {desc_l} construction with smart, simple design."),
    ("Reflective details add visibility at dusk.",
     "Reinforced stress points stand up to years of use.",
     "A stuff sack and repair kit are included.",
     "Every unit is field-tested before release.",
     "Grippy, textured surfaces stay secure when wet.",
     "Sized to fit in most carry-on bags."),
    ("Backed by a lifetime repair program.",
     "Rinse with fresh water after use.",
     "Recommended for beginners and experienced users."),
    (
        _Leaf("Camping & Hiking",
              ("Tent", "Sleeping Bag", "Backpack", "Headlamp", "Trekking Poles", "Camp Stove",
               "Hammock", "Water Filter"),
              ("Ripstop Nylon", "Aluminum", "Titanium", "Polyester", "Down", "Carbon Fiber"),
              (15, 450), (100, 4500), 4,
              (_Opt("color", _GEAR_COLORS, 1, 3),),
              (("level", ("Beginner", "Intermediate", "Advanced")),)),
        _Leaf("Cycling",
              ("Bike Helmet", "Bike Light", "Cycling Jersey", "Bike Lock", "Saddle",
               "Bike Pump", "Cycling Gloves", "Pannier Bag"),
              ("Aluminum", "Carbon Fiber", "Polycarbonate", "Lycra", "Steel", "Silicone"),
              (12, 280), (80, 1500), 3,
              (_Opt("size", ("S", "M", "L", "XL"), 2, 4, True, percent=50),
               _Opt("color", _GEAR_COLORS, 1, 3)),
              (("level", ("Beginner", "Intermediate", "Advanced")),)),
        _Leaf("Fitness",
              ("Yoga Mat", "Dumbbell Set", "Kettlebell", "Resistance Bands", "Foam Roller",
               "Jump Rope", "Pull-Up Bar", "Exercise Ball"),
              ("Natural Rubber", "Cork", "Cast Iron", "Neoprene", "TPE", "Steel", "Latex"),
              (10, 300), (100, 20000), 4,
              (_Opt("color", _GEAR_COLORS, 1, 4),),
              (("level", ("Beginner", "Intermediate", "Advanced")),)),
        _Leaf("Water Sports",
              ("Snorkel Set", "Swim Goggles", "Paddle Board", "Dry Bag", "Life Vest",
               "Wetsuit", "Kayak Paddle", "Beach Towel"),
              ("Neoprene", "Silicone", "PVC", "Fiberglass", "Microfiber", "Nylon"),
              (10, 900), (100, 12000), 3,
              (_Opt("size", ("XS", "S", "M", "L", "XL"), 3, 5, True, percent=40),
               _Opt("color", _GEAR_COLORS, 1, 3)),
              (("level", ("Beginner", "Intermediate", "Advanced")),)),
    ),
)

_BEAUTY = _Dept(
    "Beauty & Personal Care", 7, "beauty",
    ("Hydrating", "Brightening", "Soothing", "Clarifying", "Nourishing", "Firming",
     "Gentle", "Daily", "Overnight", "Renewing", "Balancing", "Smoothing", "Volumizing",
     "Long-Wear"),
    ("{brand}'s {adj_l} {noun_l} is formulated with {desc_l} for visible results.",
     "This lightweight {noun_l} blends {desc_l} with skin-loving botanicals.",
     "A cult favorite, the {adj_l} {noun_l} absorbs quickly and never feels greasy.",
     "Made with {desc_l}, this {noun_l} fits easily into a morning or evening routine.",
     "The {adj_l} {noun_l} from {brand} is dermatologist-tested and fragrance-balanced."),
    ("Free of parabens, sulfates and phthalates.",
     "Cruelty-free and never tested on animals.",
     "Packaged in recycled, recyclable bottles.",
     "Suitable for daily use.",
     "Layers well under makeup and sunscreen.",
     "Clinically tested for gentleness."),
    ("Patch test before first use.",
     "For external use only.",
     "Store in a cool, dry place."),
    (
        _Leaf("Skincare",
              ("Moisturizer", "Serum", "Cleanser", "Sunscreen", "Face Mask", "Eye Cream",
               "Toner", "Night Cream"),
              ("Vitamin C", "Hyaluronic Acid", "Niacinamide", "Retinol", "Ceramide",
               "Green Tea", "Squalane", "Aloe"),
              (8, 120), (30, 250), 5,
              (_Opt("size", _ML, 1, 2, True, percent=50),),
              (("skin_type", ("All", "Dry", "Oily", "Sensitive", "Combination")),
               ("scent", ("Unscented", "Citrus", "Floral", "Herbal"))),
              material=False),
        _Leaf("Hair Care",
              ("Shampoo", "Conditioner", "Hair Oil", "Styling Cream", "Dry Shampoo",
               "Hair Mask", "Leave-In Spray"),
              ("Argan Oil", "Coconut", "Keratin", "Biotin", "Tea Tree", "Rosemary", "Shea Butter"),
              (7, 60), (100, 600), 4,
              (_Opt("size", _ML, 1, 2, True, percent=60),),
              (("skin_type", ("All", "Dry", "Oily", "Curly", "Fine")),
               ("scent", ("Unscented", "Citrus", "Floral", "Mint", "Coconut"))),
              material=False),
        _Leaf("Fragrance",
              ("Eau de Parfum", "Eau de Toilette", "Body Mist", "Cologne", "Solid Perfume",
               "Rollerball Perfume"),
              ("Sandalwood", "Jasmine", "Bergamot", "Vetiver", "Rose", "Amber", "Fig", "Cedar"),
              (18, 220), (50, 400), 3,
              (_Opt("size", _ML[:3], 1, 3, True),),
              (("scent", ("Woody", "Floral", "Citrus", "Fresh", "Oriental")),),
              material=False),
        _Leaf("Makeup",
              ("Lipstick", "Mascara", "Foundation", "Blush", "Eyeliner", "Concealer",
               "Lip Gloss", "Bronzer"),
              ("Matte", "Satin", "Shimmer", "Mineral", "Tinted", "Velvet", "Dewy"),
              (8, 65), (10, 120), 4,
              (_Opt("shade", _SHADES, 3, 8),),
              (("skin_type", ("All", "Dry", "Oily", "Sensitive")),),
              material=False),
    ),
)

_TOYS = _Dept(
    "Toys & Games", 7, "toy",
    ("Deluxe", "Classic", "Junior", "Family", "Mini", "Giant", "Collector's", "Starter"),
    ("The {brand} {noun_l} turns any afternoon into an adventure.",
     "Built for imaginative play, this {desc_l} {noun_l} grows with your child.",
     "{brand}'s {adj_l} {noun_l} brings the whole family to the table.",
     "A {desc_l}-themed {noun_l} packed with surprises.",
     "This {adj_l} {noun_l} rewards creativity, patience and teamwork."),
    ("Pieces are made from sturdy, non-toxic materials.",
     "Clear, illustrated instructions make setup easy.",
     "Storage box keeps every piece together.",
     "Encourages problem solving and fine motor skills.",
     "Tested to meet current toy safety standards.",
     "Easy to learn, with plenty of replay value."),
    ("Not suitable for children under 3 years: small parts.",
     "Batteries not required.",
     "Makes a great birthday gift."),
    (
        _Leaf("Board Games",
              ("Strategy Game", "Party Game", "Cooperative Game", "Card Game", "Trivia Game",
               "Deck-Building Game", "Dice Game"),
              ("Dragon", "Pirate", "Space", "Jungle", "Castle", "Dinosaur", "Robot", "Safari",
               "Volcano", "Arctic", "Galaxy", "Knight", "Treasure", "Train", "Haunted House"),
              (12, 90), (300, 2500), 5, (),
              (("age_range", ("6+", "8+", "10+", "12+", "14+")),
               ("players", ("1-4", "2-4", "2-6", "3-8", "2"))),
              material=False),
        _Leaf("Puzzles",
              ("500-Piece Jigsaw Puzzle", "1000-Piece Jigsaw Puzzle", "Floor Puzzle",
               "3D Puzzle", "Brain Teaser", "Wooden Puzzle"),
              ("Ocean", "Mountain", "City", "Garden", "Space", "Map", "Farm", "Rainforest",
               "Bookshelf", "Lighthouse", "Market", "Winter Village"),
              (8, 45), (200, 1500), 3, (),
              (("age_range", ("3+", "6+", "8+", "12+")), ("players", ("1", "1-4"))),
              material=False),
        _Leaf("Building Sets",
              ("Building Set", "Magnetic Tiles", "Marble Run", "Construction Kit",
               "Robotics Kit", "Block Set"),
              ("Castle", "Spaceship", "Train", "Treehouse", "Dinosaur", "Robot", "City",
               "Pirate Ship", "Race Car", "Fire Station", "Rocket"),
              (15, 220), (200, 3000), 4, (),
              (("age_range", ("3+", "5+", "8+", "12+")), ("players", ("1", "1-4"))),
              material=False),
        _Leaf("Plush & Dolls",
              ("Plush Toy", "Doll", "Dollhouse", "Action Figure", "Puppet", "Stuffed Animal"),
              ("Bear", "Bunny", "Unicorn", "Dragon", "Penguin", "Mermaid", "Astronaut",
               "Knight", "Fox", "Kitten"),
              (8, 140), (100, 5000), 3,
              (_Opt("color", _GEAR_COLORS, 1, 3, percent=40),),
              (("age_range", ("0+", "3+", "5+", "8+")),),
              material=False),
        _Leaf("Outdoor Play",
              ("Kite", "Water Blaster", "Swing Set", "Scooter", "Sandbox Kit", "Bubble Machine",
               "Play Tent"),
              ("Rainbow", "Jungle", "Ocean", "Pirate", "Space", "Safari", "Dinosaur"),
              (10, 350), (200, 20000), 3,
              (_Opt("color", _GEAR_COLORS, 1, 3),),
              (("age_range", ("3+", "5+", "8+")),),
              material=False),
    ),
)

_DEPARTMENTS: tuple[_Dept, ...] = (
    _CLOTHING, _SHOES, _ELECTRONICS, _HOME, _BOOKS, _SPORTS, _BEAUTY, _TOYS,
)

_BRAND_HEADS = (
    "Nord", "Lum", "Ast", "Kel", "Vel", "Bram", "Cor", "Dal", "Ever", "Fen", "Gal", "Hal",
    "Iso", "Jun", "Kor", "Lind", "Mar", "Nov", "Orr", "Pell", "Quin", "Ros", "Sol", "Tam",
    "Ulv", "Vik", "Wren", "Yar", "Zen", "Bel", "Cal", "Dorn", "Elm", "Fal", "Grav", "Hol",
    "Kest", "Lor", "Mor", "Oak",
)
_BRAND_TAILS = (
    "vik", "era", "ton", "wood", "ly", "ora", "ix", "en", "haus", "line", "ark", "well",
    "mont", "ane", "io", "stad", "berg", "field", "co", "ara",
)
_PUBLISHER_HEADS = (
    "Larkspur", "Harbor", "Juniper", "Foxglove", "Meridian", "Blue Heron", "Thistle",
    "Lantern", "Copperleaf", "Riverbend", "Saltwater", "Wren & Finch", "Quill", "Northgate",
    "Old Mill", "Stonebridge", "Maple Row", "Ironwood", "Aster", "Kestrel",
)
_PUBLISHER_TAILS = ("Press", "House", "Books", "Publishing")
_N_MAKERS = 135
_N_PUBLISHERS = 15

_REVIEW_TITLES = {
    5: ("Absolutely love it", "Exceeded my expectations", "Worth every penny", "Five stars",
        "Best purchase this year", "Perfect", "Highly recommend", "Fantastic quality"),
    4: ("Really good", "Solid choice", "Very happy overall", "Great, with one small quibble",
        "Good value", "Would buy again", "Nice quality"),
    3: ("It's okay", "Decent but not perfect", "Mixed feelings", "Does the job",
        "Average", "Fine for the price"),
    2: ("Disappointed", "Not as described", "Expected more", "Meh",
        "Quality could be better"),
    1: ("Would not buy again", "Fell apart quickly", "Very disappointed", "Returned it",
        "Not worth it"),
}
_REVIEW_LINES = {
    "pos": ("This {noun_l} is even better than I expected.",
            "Great quality for the price.",
            "I've used it almost every day since it arrived.",
            "Arrived quickly and well packaged.",
            "Would definitely buy from {brand} again.",
            "It looks exactly like the photos.",
            "Bought a second one as a gift.",
            "Feels sturdy and well made.",
            "Easily the best {noun_l} I've owned."),
    "mid": ("It's fine, but nothing special.",
            "Does what it says, no more.",
            "The {noun_l} works, though the finish could be better.",
            "Shipping took longer than promised.",
            "Good enough for occasional use.",
            "I had hoped for better quality from {brand}."),
    "neg": ("It stopped working after a few weeks.",
            "The {noun_l} looked cheaper in person.",
            "Customer service was slow to respond.",
            "Did not match the description at all.",
            "I ended up returning it.",
            "Not what I expected from {brand}."),
}

_STREETS = (
    "Maple", "Oak", "Cedar", "Elm", "Pine", "Willow", "Lake", "Hill", "Park", "Washington",
    "Lincoln", "Jefferson", "Madison", "Franklin", "Highland", "Sunset", "Riverside", "Meadow",
    "Chestnut", "Walnut", "Spruce", "Birch", "Aspen", "Magnolia", "Cherry", "Dogwood",
    "Laurel", "Hawthorn", "Juniper", "Sycamore", "Church", "Mill", "Main", "Orchard", "Prospect",
)
_STREET_SUFFIXES = ("St", "Ave", "Rd", "Ln", "Dr", "Ct", "Blvd", "Way", "Pl", "Ter")
_CITIES = (
    ("Portland", "OR", "972", "503"), ("Seattle", "WA", "981", "206"),
    ("Austin", "TX", "787", "512"), ("Denver", "CO", "802", "303"),
    ("Boston", "MA", "021", "617"), ("Chicago", "IL", "606", "312"),
    ("Atlanta", "GA", "303", "404"), ("Phoenix", "AZ", "850", "602"),
    ("Minneapolis", "MN", "554", "612"), ("Nashville", "TN", "372", "615"),
    ("San Diego", "CA", "921", "619"), ("Sacramento", "CA", "958", "916"),
    ("Columbus", "OH", "432", "614"), ("Madison", "WI", "537", "608"),
    ("Raleigh", "NC", "276", "919"), ("Richmond", "VA", "232", "804"),
    ("Salt Lake City", "UT", "841", "801"), ("Albuquerque", "NM", "871", "505"),
    ("Pittsburgh", "PA", "152", "412"), ("Kansas City", "MO", "641", "816"),
    ("Omaha", "NE", "681", "402"), ("Tucson", "AZ", "857", "520"),
    ("Boise", "ID", "837", "208"), ("Burlington", "VT", "054", "802"),
    ("Charleston", "SC", "294", "843"), ("Milwaukee", "WI", "532", "414"),
    ("Louisville", "KY", "402", "502"), ("New Orleans", "LA", "701", "504"),
    ("Anchorage", "AK", "995", "907"), ("Honolulu", "HI", "968", "808"),
    ("Spokane", "WA", "992", "509"), ("Providence", "RI", "029", "401"),
    ("Des Moines", "IA", "503", "515"), ("Tampa", "FL", "336", "813"),
    ("Orlando", "FL", "328", "407"), ("Savannah", "GA", "314", "912"),
    ("Ann Arbor", "MI", "481", "734"), ("Buffalo", "NY", "142", "716"),
    ("Eugene", "OR", "974", "541"), ("Fort Collins", "CO", "805", "970"),
)
_EMAIL_DOMAINS = ("example.com", "example.net", "example.org", "mail.example.com")

_COUPON_WORDS = (
    "HELLO", "SAVE", "TAKE", "EXTRA", "BONUS", "SPRING", "SUMMER", "AUTUMN", "WINTER",
    "HOLIDAY", "FLASH", "WEEKEND", "VIP", "THANKS", "LOYAL", "FRESH", "BIG", "SUPER", "MEGA",
    "TREAT", "CHEER", "SPARK", "READY", "JOY", "SNAP", "HAPPY", "SWEET", "LUCKY", "PERK",
    "GIFT", "DEAL", "SCORE",
)
_DEPT_COUPON_WORDS = ("STYLE", "KICKS", "TECH", "NEST", "READ", "TRAIL", "GLOW", "PLAY")

_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have in into is it its of on or our that the "
    "their this to was were will with you your i me my we us they them he she his her not no "
    "so if than then there these those what which who whom why how all any both each few more "
    "most other some such only own same too very can just should now also".split()
)

# ---------------------------------------------------------------------------
# The static category tree (same ids for every seed).
# ---------------------------------------------------------------------------


def _slugify(text: str) -> str:
    """Lowercase ASCII slug: runs of anything but letters/digits become one dash."""
    return _SLUG_RE.sub("-", text.lower().replace("'", "").replace("&", "and")).strip("-")


_SLUG_RE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True)
class _LeafInfo:
    id: int
    dept_index: int
    dept_id: int
    leaf: _Leaf
    dept: _Dept
    cum_share: int = 0


def _build_tree() -> tuple[list[tuple[int, str, str, int | None]], list[_LeafInfo]]:
    rows: list[tuple[int, str, str, int | None]] = []
    leaves: list[_LeafInfo] = []
    next_id = 1
    for di, dept in enumerate(_DEPARTMENTS):
        dept_id = next_id
        rows.append((dept_id, dept.name, _slugify(dept.name), None))
        next_id += 1
        for leaf in dept.leaves:
            rows.append((next_id, leaf.name, _slugify(leaf.name), dept_id))
            leaves.append(_LeafInfo(next_id, di, dept_id, leaf, dept))
            next_id += 1
    return rows, leaves


_CATEGORY_ROWS, _LEAVES = _build_tree()
_LEAF_BY_ID = {li.id: li for li in _LEAVES}
# Product share of a leaf = department share x leaf share (integers, exact draws).
_LEAF_WEIGHTS = [li.dept.share * 100 * li.leaf.share // sum(x.share for x in li.dept.leaves)
                 for li in _LEAVES]
_LEAF_CUM: list[int] = []
_acc = 0
for _w in _LEAF_WEIGHTS:
    _acc += _w
    _LEAF_CUM.append(_acc)
del _acc, _w

_DEPT_IDS: list[int] = [cid for cid, _, _, parent in _CATEGORY_ROWS if parent is None]
_PARENT: dict[int, int | None] = {cid: parent for cid, _, _, parent in _CATEGORY_ROWS}
_DESCENDANT_LEAVES: dict[int, tuple[int, ...]] = {}
for _cid, _, _, _parent in _CATEGORY_ROWS:
    if _parent is None:
        _DESCENDANT_LEAVES[_cid] = tuple(li.id for li in _LEAVES if li.dept_id == _cid)
    else:
        _DESCENDANT_LEAVES[_cid] = (_cid,)


def category_ancestors(category_id: int) -> list[int]:
    """``[category_id, parent, ...]`` up to the department (empty if unknown)."""
    out: list[int] = []
    cid: int | None = category_id
    while cid is not None and cid in _PARENT:
        out.append(cid)
        cid = _PARENT[cid]
    return out


def shipping_cents(method: str, merchandise_cents: int) -> int:
    """Shipping cost of ``method`` for a merchandise total (after discounts)."""
    m = SHIPPING_METHODS[method]
    free_over = m["free_over_cents"]
    if free_over is not None and merchandise_cents >= free_over:
        return 0
    return int(m["price_cents"])


def coupon_discount_cents(coupon: dict[str, Any], lines: Sequence[tuple[int, int]],
                          *, day: int = WORLD_DAY) -> int:
    """Discount a coupon gives on ``lines`` = ``[(category_id, line_total_cents), ...]``.

    Returns 0 when the coupon does not apply: disabled, expired (``expires_day
    < day``), merchandise subtotal below ``min_subtotal_cents``, or no line in
    its category (a category coupon applies to that category and its
    descendants, and only to those lines).  Percent coupons round down;
    fixed ones never exceed the eligible amount.  ``one_per_user`` is the
    caller's to enforce (it needs the user's order history).
    """
    if not coupon.get("active") or coupon["expires_day"] < day:
        return 0
    subtotal = sum(total for _, total in lines)
    if subtotal < coupon["min_subtotal_cents"]:
        return 0
    cat = coupon.get("category_id")
    if cat is None:
        eligible = subtotal
    else:
        eligible = sum(total for cid, total in lines if cat in category_ancestors(cid))
    if eligible <= 0:
        return 0
    if coupon["kind"] == "percent":
        return eligible * int(coupon["value"]) // 100
    return min(int(coupon["value"]), eligible)


_BOOK_INTROS: dict[str, tuple[str, ...]] = {
    "Fiction": (
        "A sweeping story of family, memory and the places that shape us, from {author}.",
        "In this luminous novel, {author} follows two strangers whose lives collide over one unforgettable summer.",
        "{author} returns with a tender, funny novel about second chances.",
        "Set against a changing coastline, this novel traces three generations of one stubborn family.",
        "A spellbinding debut about love, loss and the stories we tell ourselves, by {author}.",
    ),
    "Mystery & Thriller": (
        "When a body turns up at the edge of town, a reluctant detective must confront the secrets of her past.",
        "{author} delivers a tightly plotted thriller full of twists.",
        "A locked-room puzzle with a clock ticking, from {author}.",
        "Nobody in the village is quite who they seem in this atmospheric mystery by {author}.",
        "A missing heir, a forged will and a storm that cuts the island off: {author} at full tilt.",
    ),
    "Science & Nature": (
        "{author} explains the surprising science behind everyday wonders with clarity and wit.",
        "Part field journal, part detective story, this book reveals a hidden world all around us.",
        "Drawing on decades of research, {author} makes complex ideas feel simple.",
        "An illustrated journey through deep time, from {author}.",
        "Full of striking facts and careful reporting, this is popular science at its best.",
    ),
    "Cookbooks": (
        "More than a hundred approachable recipes for busy weeknights and slow weekends, from {author}.",
        "{author} shares the dishes that made a beloved neighborhood restaurant famous.",
        "Seasonal recipes built around a handful of pantry staples.",
        "Step-by-step photographs guide you from first attempt to confident cook.",
        "Big flavors, short ingredient lists and very few dishes to wash: {author}'s kitchen philosophy.",
    ),
    "Children's Books": (
        "A joyful picture book about friendship, bravery and bedtime.",
        "{author} brings gentle humor and bright illustrations to a story kids will ask for again and again.",
        "Perfect for reading aloud, with rhythm and repetition little listeners love.",
        "A cozy adventure about trying new things, written by {author}.",
        "Lift-the-flap surprises and playful rhymes make every page a discovery.",
    ),
}

_JSON = __import__("json").JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


@functools.lru_cache(maxsize=4096)
def _lower_words(text: str) -> str:
    """Lowercase for running text, keeping acronyms as they are.

    "Flip-Flop" -> "flip-flop", "V-Neck" -> "v-neck", but "USB-C", "TV",
    "4K", "microSD" and "Vitamin C" -> "vitamin C" keep their capitals.
    """
    words = []
    for word in text.split(" "):
        parts = word.split("-")
        out: list[str] = []
        kept = False
        for part in parts:
            if len(part) == 1 and part.isupper():
                kept = len(parts) == 1 or kept  # "C" in "USB-C" / "Vitamin C", not "V-Neck"
            else:
                kept = any(ch.isupper() for ch in part[1:])
            out.append(part if kept else part.lower())
        words.append("-".join(out))
    return " ".join(words)


# ===========================================================================
# Schema (SQLAlchemy 2 declarative).  Indexes are created after bulk loading.
# ===========================================================================


class Base(DeclarativeBase):
    """Declarative base of the shop world schema."""


class Meta(MetaTable, Base):
    """Key/value facts about the world (generator version, seed, size, hash...)."""


class Category(Base):
    """A department (``parent_id`` None) or a leaf category."""

    __tablename__ = "categories"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("categories.id"))
    __table_args__ = (Index("ix_categories_slug", "slug", unique=True),)


class Brand(Base):
    """A maker or publisher."""

    __tablename__ = "brands"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_brands_slug", "slug", unique=True),)


class BrandDepartment(Base):
    """Which departments a brand sells in."""

    __tablename__ = "brand_departments"
    brand_id: Mapped[int] = mapped_column(ForeignKey("brands.id"), primary_key=True)
    category_id: Mapped[int] = mapped_column(ForeignKey("categories.id"), primary_key=True)


class Product(Base):
    """A catalog product (always in a leaf category)."""

    __tablename__ = "products"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    sku: Mapped[str] = mapped_column(String)
    name: Mapped[str] = mapped_column(String)
    slug: Mapped[str] = mapped_column(String)
    brand_id: Mapped[int] = mapped_column(ForeignKey("brands.id"))
    category_id: Mapped[int] = mapped_column(ForeignKey("categories.id"))
    price_cents: Mapped[int] = mapped_column(Integer)
    list_price_cents: Mapped[int] = mapped_column(Integer)
    rating: Mapped[float] = mapped_column(Float)
    review_count: Mapped[int] = mapped_column(Integer)
    stock: Mapped[int] = mapped_column(Integer)
    description: Mapped[str] = mapped_column(Text)
    options: Mapped[dict] = mapped_column(JSON)
    attributes: Mapped[dict] = mapped_column(JSON)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_products_slug", "slug", unique=True),)


class Tag(Base):
    """A filterable (kind, value) pair: ``attr:material=merino``, ``opt:size=m``."""

    __tablename__ = "tags"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    kind: Mapped[str] = mapped_column(String)
    value: Mapped[str] = mapped_column(String)
    count: Mapped[int] = mapped_column(Integer)  # posting length, for query planning
    __table_args__ = (Index("ix_tags_kind_value", "kind", "value", unique=True),)


class ProductTag(Base):
    """Posting lists of :class:`Tag`, split by department (WITHOUT ROWID: one b-tree).

    Keying by department makes "color=black within Shoes" a single key range,
    so a tag can drive a query instead of being probed row by row.
    """

    __tablename__ = "product_tags"
    tag_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    department_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    product_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    __table_args__ = {"sqlite_with_rowid": False}


class TagCount(Base):
    """Posting length of a tag within a department (query planning statistics)."""

    __tablename__ = "tag_counts"
    tag_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    department_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer)


class ProductSearch(Base):
    """Narrow, popularity-ordered copy of the filter/sort columns of products.

    ``pop_rank`` (1 = most reviews, ties by id) is also the FTS rowid, so a
    scan of FTS matches in rowid order visits the most popular products first.
    """

    __tablename__ = "product_search"
    pop_rank: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"))
    category_id: Mapped[int] = mapped_column(Integer)
    # Departments get their own column so "department, sorted by price" is one
    # index range instead of five merged ones.
    department_id: Mapped[int] = mapped_column(Integer)
    brand_id: Mapped[int] = mapped_column(Integer)
    price_cents: Mapped[int] = mapped_column(Integer)
    rating: Mapped[float] = mapped_column(Float)
    review_count: Mapped[int] = mapped_column(Integer)
    stock: Mapped[int] = mapped_column(Integer)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (
        Index("ix_ps_product", "product_id", unique=True),
        Index("ix_ps_category_price", "category_id", "price_cents"),
        Index("ix_ps_department_price", "department_id", "price_cents"),
        Index("ix_ps_brand", "brand_id"),
        Index("ix_ps_price_asc", "price_cents", "product_id"),
    )


# Sort orders that mix directions need their own indexes (SQLite cannot walk
# one index forwards for "price DESC, id ASC").  Secondary indexes end with
# the rowid (pop_rank), which gives "rating DESC, pop_rank ASC" for free.
Index("ix_ps_price_desc", ProductSearch.price_cents.desc(), ProductSearch.product_id)
Index("ix_ps_rating", ProductSearch.rating.desc())
Index("ix_ps_newest", ProductSearch.created_day.desc(), ProductSearch.product_id)


class Review(Base):
    """A stored customer review."""

    __tablename__ = "reviews"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    product_id: Mapped[int] = mapped_column(ForeignKey("products.id"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    rating: Mapped[int] = mapped_column(Integer)
    title: Mapped[str] = mapped_column(String)
    body: Mapped[str] = mapped_column(Text)
    day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (Index("ix_reviews_product_day", "product_id", "day", "id"),)


class User(Base):
    """A registered shopper (plain-text synthetic password: tasks sign in as them)."""

    __tablename__ = "users"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    username: Mapped[str] = mapped_column(String)
    email: Mapped[str] = mapped_column(String)
    full_name: Mapped[str] = mapped_column(String)
    password: Mapped[str] = mapped_column(String)
    default_address_id: Mapped[int] = mapped_column(Integer)
    created_day: Mapped[int] = mapped_column(Integer)
    __table_args__ = (
        Index("ix_users_username", "username", unique=True),
        Index("ix_users_email", "email", unique=True),
    )


class Address(Base):
    """A saved shipping address of a user."""

    __tablename__ = "addresses"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    full_name: Mapped[str] = mapped_column(String)
    street: Mapped[str] = mapped_column(String)
    city: Mapped[str] = mapped_column(String)
    state: Mapped[str] = mapped_column(String)
    zip: Mapped[str] = mapped_column(String)
    country: Mapped[str] = mapped_column(String)
    phone: Mapped[str] = mapped_column(String)
    is_default: Mapped[bool] = mapped_column(Boolean)
    __table_args__ = (Index("ix_addresses_user", "user_id"),)


class Coupon(Base):
    """A coupon code (``value``: percent for ``percent``, cents for ``fixed``)."""

    __tablename__ = "coupons"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    code: Mapped[str] = mapped_column(String)
    kind: Mapped[str] = mapped_column(String)
    value: Mapped[int] = mapped_column(Integer)
    min_subtotal_cents: Mapped[int] = mapped_column(Integer)
    expires_day: Mapped[int] = mapped_column(Integer)
    active: Mapped[bool] = mapped_column(Boolean)
    category_id: Mapped[int | None] = mapped_column(ForeignKey("categories.id"))
    one_per_user: Mapped[bool] = mapped_column(Boolean)
    description: Mapped[str] = mapped_column(String)
    __table_args__ = (Index("ix_coupons_code", "code", unique=True),)


class Order(Base):
    """A past order of a world user (ids are chronological)."""

    __tablename__ = "orders"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    day: Mapped[int] = mapped_column(Integer)
    status: Mapped[str] = mapped_column(String)
    items: Mapped[list] = mapped_column(JSON)
    subtotal_cents: Mapped[int] = mapped_column(Integer)
    shipping_cents: Mapped[int] = mapped_column(Integer)
    discount_cents: Mapped[int] = mapped_column(Integer)
    total_cents: Mapped[int] = mapped_column(Integer)
    shipping_method: Mapped[str] = mapped_column(String)
    address_id: Mapped[int] = mapped_column(ForeignKey("addresses.id"))
    coupon: Mapped[str | None] = mapped_column(String)
    __table_args__ = (Index("ix_orders_user", "user_id", "day"),)


class FacetCount(Base):
    """Precomputed facet counts for browsing (no query) per category; 0 = all."""

    __tablename__ = "facet_counts"
    category_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String, primary_key=True)
    key: Mapped[int] = mapped_column(Integer, primary_key=True)
    count: Mapped[int] = mapped_column(Integer)


# ===========================================================================
# Generation
# ===========================================================================

_PRODUCT_BATCH = 5_000
_SALE_PERCENTS = (10, 15, 20, 25, 30, 40, 50)
_ITEMS_CUM = (50, 80, 95, 100)  # 1..4 items per order
_QTY_CUM = (80, 95, 100)  # qty 1..3
_SHIP_CUM = (70, 92, 100)  # standard / express / overnight
_ADDR_CUM = (70, 92, 100)  # 1..3 addresses per user


def n_users_for(size: int) -> int:
    """Number of users in a world of ``size`` products."""
    return min(500 + size // 100, 20_000)


class _Builder(WorldBuilder):
    """Generates one world into an empty SQLite file.

    Rows are produced in a fixed order and fed both to SQLite (``executemany``
    in large batches inside one transaction) and to the :class:`ContentHasher`.
    Per-entity random streams (``Rng.sub(base, id)``) keep each product/user's
    draws independent of the others'.
    """

    def __init__(self, path: Path, seed: int, size: int, progress: BuildProgress) -> None:
        super().__init__(path, APP, GENERATOR_VERSION, seed, size, progress, Base.metadata)
        self.n_users = n_users_for(size)
        self.brand_names: list[str] = [""]  # index = brand id
        self.dept_brands: list[list[int]] = [[] for _ in _DEPARTMENTS]
        self.tag_ids: dict[tuple[str, str], int] = {}
        self.postings: list[list[array]] = []  # [tag id - 1][department index] -> product ids
        self.user_created: list[int] = [0]
        self.user_addresses: list[list[int]] = [[]]
        self.coupons: list[dict[str, Any]] = []

    # -- plumbing -------------------------------------------------------------

    def _tag(self, kind: str, value: str, pid: int, dept_index: int) -> None:
        key = (kind, value.lower())
        tid = self.tag_ids.get(key)
        if tid is None:
            tid = self.tag_ids[key] = len(self.tag_ids) + 1
            self.postings.append([array("I") for _ in _DEPARTMENTS])
        self.postings[tid - 1][dept_index].append(pid)

    def run(self) -> str:
        """Build everything; returns the content hash."""
        self.begin()
        self.p.stage("catalog", 3)
        self._categories()
        self._brands()
        self.p.stage("products", self.size)
        self._products()
        self.p.stage("users", self.n_users)
        self._users()
        self.p.stage("coupons & orders", self.n_users)
        self._coupons()
        self._orders()
        self.p.stage("search index", 4)
        self._tags()
        self._search_tables()
        self.p.stage("indexes", len(Base.metadata.sorted_tables))
        self.create_indexes(advance=True)
        self.p.stage("facets & statistics", 2)
        self._facets()
        self.p.advance()
        return self.finish(SCHEMA_FINGERPRINT, world_day=str(WORLD_DAY))

    # -- catalog ----------------------------------------------------------------

    def _categories(self) -> None:
        self.insert("categories", list(_CATEGORY_ROWS))
        self.p.advance()

    def _brands(self) -> None:
        r = Rng.derive(APP, self.seed, "brands")
        names: list[str] = []
        seen: set[str] = set()
        while len(names) < _N_MAKERS:
            name = r.choice(_BRAND_HEADS) + r.choice(_BRAND_TAILS)
            if name not in seen and name not in _PERSON_NAMES:  # no "Kelly" brand next to Kelly users
                seen.add(name)
                names.append(name)
        while len(names) < _N_MAKERS + _N_PUBLISHERS:
            name = f"{r.choice(_PUBLISHER_HEADS)} {r.choice(_PUBLISHER_TAILS)}"
            if name not in seen and name.split(" ")[0] not in {n.split(" ")[0] for n in names[_N_MAKERS:]}:
                seen.add(name)
                names.append(name)
        book_index = _DEPARTMENTS.index(_BOOKS)
        other = [i for i in range(len(_DEPARTMENTS)) if i != book_index]
        brand_rows, link_rows = [], []
        for i, name in enumerate(names):
            bid = i + 1
            self.brand_names.append(name)
            brand_rows.append((bid, name, _slugify(name)))
            if i < _N_MAKERS:
                # Round-robin primary department keeps every department stocked.
                depts = [other[i % len(other)]]
                extra = r.below(100)
                n_extra = 2 if extra < 20 else 1 if extra < 65 else 0
                for d in r.sample([d for d in other if d != depts[0]], n_extra):
                    depts.append(d)
            else:
                depts = [book_index]
            for d in sorted(depts):
                self.dept_brands[d].append(bid)
                link_rows.append((bid, _DEPT_IDS[d]))
        self.insert("brands", brand_rows)
        self.insert("brand_departments", link_rows)
        self.p.advance(2)

    def _name(self, r: Rng, li: _LeafInfo, brand: str) -> tuple[str, dict[str, str]]:
        """Draw a product name; returns it and the parts used in the description."""
        leaf, dept = li.leaf, li.dept
        style = dept.style
        if style == "book":
            pattern = r.choice(leaf.titles)
            parts = {k: r.choice(v) for k, v in leaf.words.items()}
            if "N2" in parts and parts["N2"] == parts.get("N"):
                parts["N2"] = "Ash"
            name = pattern.format(**parts)
            return name, {"noun": "book", "desc": "", "adj": ""}
        noun = r.choice(leaf.nouns)
        desc = r.choice(leaf.descs)
        adj = r.choice(dept.adjs)
        if style == "goods":
            series = r.choice(_SERIES) if r.below(100) < 35 else ""
            # "Corduroy Corduroys" / "Fleece Fleece Jacket" read badly: drop the material.
            shown_desc = "" if noun.split(" ")[0].lower().startswith(desc.split(" ")[-1].lower()) else desc
            words = (brand, series, adj, shown_desc, noun)
        elif style == "tech":
            model = r.choice(_MODEL_LETTERS) + r.choice(_MODEL_NUMBERS)
            tier = adj if r.below(100) < 40 else ""
            words = (brand, r.choice(_SERIES), model, tier, desc, noun)
        elif style == "beauty":
            series = r.choice(_SERIES) if r.below(100) < 20 else ""
            words = (brand, series, desc, adj, noun)
        else:  # toy
            words = (brand, adj if r.below(100) < 40 else "", desc, noun)
        return " ".join(w for w in words if w), {"noun": noun, "desc": desc, "adj": adj}

    def _products(self) -> None:
        base = stable_hash64(APP, self.seed, "products")
        seen: set[str] = set()
        n_users = self.n_users
        brand_names = self.brand_names
        product_rows: list[tuple] = []
        review_rows: list[tuple] = []
        review_id = 0
        for pid in range(1, self.size + 1):
            r = Rng.sub(base, pid)
            li = _LEAVES[r.weighted_index(_LEAF_CUM)]
            leaf, dept = li.leaf, li.dept
            brand_id = r.choice(self.dept_brands[li.dept_index])
            brand = brand_names[brand_id]
            # Unique names (and slugs): redraw a few times, then number the line.
            for _ in range(8):
                name, parts = self._name(r, li, brand)
                slug = _slugify(name)
                if slug not in seen:
                    break
            else:
                stem = name
                k = 0
                while slug in seen:
                    name = f"{stem} {_ROMAN[k] if k < len(_ROMAN) else k + 2}"
                    slug = _slugify(name)
                    k += 1
            seen.add(slug)

            # Attributes (insertion order is part of the stored JSON).
            attributes: dict[str, Any] = {}
            if dept.style == "book":
                attributes["author"] = f"{r.choice(_FIRST_NAMES)} {r.choice(_LAST_NAMES)}"
            elif leaf.material:
                attributes["material"] = parts["desc"]
            for key, values in leaf.attrs:
                attributes[key] = r.choice(values)
            if dept.style == "book":
                attributes["pages"] = r.randint(*leaf.weight_g)
            else:
                attributes["weight_g"] = r.randint(*leaf.weight_g)

            options: dict[str, list[str]] = {}
            for opt in leaf.options:
                if opt.percent < 100 and r.below(100) >= opt.percent:
                    continue
                n = r.randint(opt.lo, min(opt.hi, len(opt.values)))
                if opt.contiguous:
                    start = r.below(len(opt.values) - n + 1)
                    vals = list(opt.values[start:start + n])
                else:
                    vals = [opt.values[i] for i in sorted(r.sample(range(len(opt.values)), n))]
                options[opt.kind] = vals

            # Price: integer arithmetic only (float pow/exp may differ across libms).
            lo, hi = leaf.price
            u = r.below(1001)
            dollars = lo + (hi - lo) * u * u // 1_000_000
            if attributes.get("format") == "Hardcover":
                dollars += 8
            e = r.below(100)
            ending = 99 if e < 60 else 95 if e < 75 else 49 if e < 85 else 0
            price = dollars * 100 + ending - (100 if ending else 0)
            if r.below(100) < 22:
                pct = r.choice(_SALE_PERCENTS)
                list_price = (price * 100 // (100 - pct)) // 100 * 100 + 99
                if list_price <= price:
                    list_price = price + 100
            else:
                list_price = price

            # Popularity and quality.  review_count is the displayed count; only
            # a few reviews per product are stored.
            if r.below(100) < 12:
                review_count = 0
            else:
                u = r.below(1001)
                review_count = 1 + u ** 8 * 3000 // 1000 ** 8
            quality = 49 - (r.below(23) * r.below(23)) // 22  # tenths of a star, 27..49
            n_store = min(review_count, r.below(7))  # ~1.9 stored reviews per product
            stock = 0 if r.below(100) < 5 else 1 + r.below(1001) ** 3 * 400 // 1000 ** 3
            created_day = -r.randint(2, 1095)

            # Description.
            if dept.style == "book":
                s1 = r.choice(_BOOK_INTROS[leaf.name]).format(author=attributes["author"])
                s2 = f"{attributes['format']} edition, {attributes['pages']} pages."
            else:
                slots = {"brand": brand, "noun_l": _lower_words(parts["noun"]),
                         "desc_l": _lower_words(parts["desc"]), "adj_l": _lower_words(parts["adj"])}
                s1 = r.choice(dept.intros).format(**slots)
                s2 = r.choice(dept.features)
            sentences = [s1, s2]
            if r.below(100) < 60:
                sentences.append(r.choice(dept.closers))
            description = " ".join(sentences)

            # Stored reviews.
            stars_sum = 0
            noun_l = _lower_words(parts["noun"])
            for _ in range(n_store):
                review_id += 1
                stars = max(1, min(5, (quality + r.randint(-14, 14) + 5) // 10))
                stars_sum += stars
                mood = "pos" if stars >= 4 else "mid" if stars == 3 else "neg"
                lines = r.sample(_REVIEW_LINES[mood], 2)
                body = " ".join(line.format(noun_l=noun_l, brand=brand) for line in lines)
                review_rows.append((review_id, pid, 1 + r.below(n_users), stars,
                                    r.choice(_REVIEW_TITLES[stars]), body,
                                    r.randint(created_day + 1, -1)))
            if review_count == 0:
                rating = 0.0
            elif n_store == review_count:  # every review is stored: show their mean
                rating = ((stars_sum * 20 + review_count) // (2 * review_count)) / 10
            else:
                rating = quality / 10

            for key in FILTERABLE_ATTRS:
                value = attributes.get(key)
                if isinstance(value, str):
                    self._tag("attr:" + key, value, pid, li.dept_index)
            for kind, vals in options.items():
                for v in vals:
                    self._tag("opt:" + kind, v, pid, li.dept_index)

            product_rows.append((
                pid, f"SKU-{pid:06d}", name, slug, brand_id, li.id, price, list_price, rating,
                review_count, stock, description, _JSON(options), _JSON(attributes), created_day,
            ))
            if len(product_rows) >= _PRODUCT_BATCH:
                self.insert("products", product_rows)
                self.insert("reviews", review_rows)
                self.p.advance(len(product_rows))
                product_rows, review_rows = [], []
        self.insert("products", product_rows)
        self.insert("reviews", review_rows)
        self.p.advance(len(product_rows))

    # -- people -------------------------------------------------------------------

    def _users(self) -> None:
        base = stable_hash64(APP, self.seed, "users")
        seen: set[str] = set()
        user_rows: list[tuple] = []
        address_rows: list[tuple] = []
        address_id = 0
        for uid in range(1, self.n_users + 1):
            r = Rng.sub(base, uid)
            first, last = r.choice(_FIRST_NAMES), r.choice(_LAST_NAMES)
            stem = re.sub(r"[^a-z]", "", first.lower()) + "." + re.sub(r"[^a-z]", "", last.lower())
            username = stem + (str(r.randint(1, 99)) if r.below(100) < 60 else "")
            while username in seen:
                username = stem + str(r.randint(100, 9999))
            seen.add(username)
            email = f"{username}@{r.choice(_EMAIL_DOMAINS)}"
            full_name = f"{first} {last}"
            created_day = -r.randint(30, 1460)
            n_addr = 1 + r.weighted_index(_ADDR_CUM)
            ids = []
            for k in range(n_addr):
                address_id += 1
                ids.append(address_id)
                city, state, zip3, area = r.choice(_CITIES)
                street = f"{r.randint(1, 9899)} {r.choice(_STREETS)} {r.choice(_STREET_SUFFIXES)}"
                if r.below(100) < 25:
                    street += f", Apt {r.randint(1, 40)}{'ABCD'[r.below(4)]}"
                recipient = full_name
                if k > 0 and r.below(100) < 35:  # e.g. a relative's or office address
                    recipient = f"{r.choice(_FIRST_NAMES)} {last if r.below(2) else r.choice(_LAST_NAMES)}"
                address_rows.append((
                    address_id, uid, recipient, street, city, state, f"{zip3}{r.below(100):02d}",
                    "US", f"({area}) 555-01{r.below(100):02d}", k == 0,
                ))
            self.user_created.append(created_day)
            self.user_addresses.append(ids)
            user_rows.append((uid, username, email, full_name, f"Passw0rd!{uid}", ids[0], created_day))
            if len(user_rows) >= _PRODUCT_BATCH:
                self.insert("users", user_rows)
                self.p.advance(len(user_rows))
                user_rows = []
        self.insert("users", user_rows)
        self.p.advance(len(user_rows))
        self.insert("addresses", address_rows)

    # -- coupons and orders ---------------------------------------------------------

    def _coupons(self) -> None:
        r = Rng.derive(APP, self.seed, "coupons")
        dept_ids = _DEPT_IDS
        names = {c[0]: c[1] for c in _CATEGORY_ROWS}
        # (word, kind, value, min_subtotal_cents, status, category_id, one_per_user)
        specs: list[tuple[str | None, str, int, int, str, int | None, bool]] = [
            ("WELCOME", "percent", 10, 0, "active", None, True),
            (None, "percent", 15, 5000, "active", None, False),
            (None, "percent", 20, 10000, "active", None, False),
            (None, "percent", 25, 20000, "active", None, True),
            (None, "fixed", 500, 3000, "active", None, False),
            (None, "fixed", 1000, 5000, "active", None, False),
            (None, "fixed", 2000, 10000, "active", None, True),
            (None, "fixed", 5000, 25000, "active", None, False),
            (None, "percent", 30, 0, "active", None, True),
            (None, "fixed", 300, 1500, "active", None, False),
            (None, "fixed", 1500, 7500, "active", None, False),
        ]
        for i, dept_id in enumerate(dept_ids):
            specs.append((_DEPT_COUPON_WORDS[i], "percent", (15, 20, 25)[r.below(3)],
                          (0, 2500)[r.below(2)], "active", dept_id, False))
        for leaf in r.sample(_LEAVES, 2):
            specs.append((None, "percent", 20, 0, "active", leaf.id, False))
        specs += [
            (None, "percent", 20, 0, "expired", None, False),
            (None, "fixed", 1000, 4000, "expired", None, False),
            (None, "percent", 40, 0, "expired", None, True),
            (None, "percent", 15, 0, "expired", r.choice(dept_ids), False),
            (None, "percent", 35, 5000, "expired", None, False),
            (None, "percent", 25, 0, "disabled", None, False),
            (None, "fixed", 1500, 5000, "disabled", None, False),
            (None, "percent", 50, 0, "disabled", None, True),
            (None, "percent", 20, 0, "disabled", r.choice(dept_ids), False),
        ]
        words = r.sample(_COUPON_WORDS, sum(1 for s in specs if s[0] is None))
        rows: list[tuple] = []
        for cid, (word, kind, value, min_sub, status, cat, once) in enumerate(specs, start=1):
            if word is None:
                word = words.pop(0)
            code = f"{word}{value if kind == 'percent' else value // 100}"
            expires = -r.randint(3, 400) if status == "expired" else r.randint(14, 365)
            what = f"{value}% off" if kind == "percent" else f"${value // 100} off"
            if cat is not None:
                what += f" {names[cat]}"
            if min_sub:
                what += f" on orders of ${min_sub // 100} or more"
            if once:
                what += " (once per customer)"
            coupon = {"id": cid, "code": code, "kind": kind, "value": value,
                      "min_subtotal_cents": min_sub, "expires_day": expires,
                      "active": status != "disabled", "category_id": cat,
                      "one_per_user": once, "description": what}
            self.coupons.append(coupon)
            rows.append(tuple(coupon.values()))
        self.insert("coupons", rows)

    def _orders(self) -> None:
        base = stable_hash64(APP, self.seed, "orders")
        pending: list[tuple[int, int, int, tuple]] = []
        methods = list(SHIPPING_METHODS)
        for uid in range(1, self.n_users + 1):
            r = Rng.sub(base, uid)
            n_orders = r.below(7)
            plans = []
            for _ in range(n_orders):
                k = 1 + r.weighted_index(_ITEMS_CUM)
                pids: list[int] = []
                while len(pids) < min(k, self.size):
                    pid = 1 + r.below(self.size)
                    if pid not in pids:
                        pids.append(pid)
                plans.append(pids)
            wanted = sorted({pid for pids in plans for pid in pids})
            info: dict[int, tuple] = {}
            if wanted:
                marks = ",".join("?" * len(wanted))
                q = f"SELECT id, name, price_cents, options, category_id FROM products WHERE id IN ({marks})"
                for row in self.db.execute(q, wanted):
                    info[row[0]] = row
            used: set[str] = set()
            for seq, pids in enumerate(plans):
                day = r.randint(self.user_created[uid] + 1, -1)
                items, lines = [], []
                subtotal = 0
                for pid in pids:
                    _, name, price, options_json, cat = info[pid]
                    opts = {kind: r.choice(vals) for kind, vals in orjson.loads(options_json).items()}
                    qty = 1 + r.weighted_index(_QTY_CUM)
                    items.append({"product_id": pid, "name": name, "options": opts, "qty": qty,
                                  "price_cents": price})
                    subtotal += price * qty
                    lines.append((cat, price * qty))
                code, discount = None, 0
                if r.below(100) < 18:
                    usable = [c for c in self.coupons
                              if not (c["one_per_user"] and c["code"] in used)
                              and coupon_discount_cents(c, lines, day=day) > 0]
                    if usable:
                        c = r.choice(usable)
                        code, discount = c["code"], coupon_discount_cents(c, lines, day=day)
                        used.add(code)
                method = methods[r.weighted_index(_SHIP_CUM)]
                shipping = shipping_cents(method, subtotal - discount)
                if r.below(100) < 4:
                    status = "cancelled"
                elif day >= -2:
                    status = "processing"
                elif day >= -7:
                    status = "shipped"
                else:
                    status = "delivered"
                row = (uid, day, status, _JSON(items), subtotal, shipping, discount,
                       subtotal - discount + shipping, method, r.choice(self.user_addresses[uid]), code)
                pending.append((day, uid, seq, row))
            self.p.advance()
        pending.sort(key=lambda t: (t[0], t[1], t[2]))  # chronological ids
        rows = [(oid, *row) for oid, (_, _, _, row) in enumerate(pending, start=1)]
        self.insert("orders", rows)

    # -- derived tables -----------------------------------------------------------

    def _tags(self) -> None:
        tag_rows = [(tid, kind, value, sum(len(a) for a in self.postings[tid - 1]))
                    for (kind, value), tid in self.tag_ids.items()]
        self.insert("tags", tag_rows, hashed=False)
        # Postings are in product-id order per (tag, department), and department
        # ids ascend with the index, so inserting in this order appends to the
        # WITHOUT ROWID b-tree in key order (fast, compact).
        count_rows = []
        for tid, per_dept in enumerate(self.postings, start=1):
            for di, posting in enumerate(per_dept):
                if posting:
                    dept_id = _DEPT_IDS[di]
                    count_rows.append((tid, dept_id, len(posting)))
                    self.db.executemany("INSERT INTO product_tags VALUES (?, ?, ?)",
                                        ((tid, dept_id, pid) for pid in posting))
        self.insert("tag_counts", count_rows, hashed=False)
        self.postings = []
        self.p.advance()

    def _search_tables(self) -> None:
        self.db.execute(
            "INSERT INTO product_search SELECT row_number() OVER (ORDER BY p.review_count DESC, p.id),"
            " p.id, p.category_id, c.parent_id, p.brand_id, p.price_cents, p.rating, p.review_count,"
            " p.stock, p.created_day FROM products p JOIN categories c ON c.id = p.category_id ORDER BY 1")
        self.p.advance()
        # FTS5 over a view: external content keyed by popularity rank.  The
        # category column carries the leaf and department names.
        self.db.execute(
            "CREATE VIEW products_fts_src AS SELECT s.pop_rank AS doc_id, p.name AS name,"
            " b.name AS brand, c.name || ' ' || d.name AS category, p.description AS description"
            " FROM product_search s JOIN products p ON p.id = s.product_id"
            " JOIN brands b ON b.id = p.brand_id JOIN categories c ON c.id = p.category_id"
            " JOIN categories d ON d.id = c.parent_id")
        self.db.execute(_FTS_DDL)
        self.db.execute("INSERT INTO products_fts(products_fts) VALUES('rebuild')")
        self.p.advance()
        self.db.execute("INSERT INTO products_fts(products_fts) VALUES('optimize')")
        self.db.execute(f"INSERT INTO products_fts(products_fts, rank) VALUES('rank', '{_FTS_RANK}')")
        self.p.advance()

    def _facets(self) -> None:
        counts: dict[tuple[int, str, int], int] = {}

        def add(leaf: int, kind: str, key: int, n: int) -> None:
            for cid in (0, _PARENT[leaf], leaf):
                k = (cid, kind, key)  # type: ignore[assignment]
                counts[k] = counts.get(k, 0) + n

        for leaf, n, in_stock in self.db.execute(
                "SELECT category_id, count(*), sum(stock > 0) FROM product_search GROUP BY 1"):
            add(leaf, "total", 0, n)
            add(leaf, "in_stock", 0, in_stock)
        for leaf, brand, n in self.db.execute(
                "SELECT category_id, brand_id, count(*) FROM product_search GROUP BY 1, 2"):
            add(leaf, "brand", brand, n)
        case = " ".join(f"WHEN price_cents <= {hi} THEN {i}"
                        for i, (_, hi) in enumerate(PRICE_BUCKETS) if hi is not None)
        for leaf, bucket, n in self.db.execute(
                f"SELECT category_id, CASE {case} ELSE {len(PRICE_BUCKETS) - 1} END, count(*)"
                " FROM product_search GROUP BY 1, 2"):
            add(leaf, "price", bucket, n)
        sums = ", ".join(f"sum(rating >= {m})" for m in RATING_BUCKETS)
        for leaf, *ns in self.db.execute(f"SELECT category_id, {sums} FROM product_search GROUP BY 1"):
            for m, n in zip(RATING_BUCKETS, ns, strict=True):
                add(leaf, "rating", m, n)
        self.insert("facet_counts", sorted((c, k, key, n) for (c, k, key), n in counts.items()),
                     hashed=False)


_FTS_DDL = ("CREATE VIRTUAL TABLE products_fts USING fts5(name, brand, category, description,"
            " content='products_fts_src', content_rowid='doc_id',"
            " tokenize='porter unicode61 remove_diacritics 2', prefix='3')")
_FTS_RANK = "bm25(10.0, 4.0, 3.0, 1.0)"




SCHEMA_FINGERPRINT = schema_fingerprint(GENERATOR_VERSION, Base.metadata, _FTS_DDL, _FTS_RANK)



def _build_world(path: Path, seed: int, size: int, progress: bool) -> str:
    with BuildProgress(progress, title=f"shop world seed={seed} size={size}:") as bar:
        return _Builder(path, seed, size, bar).run()


# ===========================================================================
# Read API
# ===========================================================================

_MAX_TERMS = 10
_READ_PRAGMAS = (
    "PRAGMA query_only=1",
    "PRAGMA mmap_size=8589934592",  # map the whole file: reads become memcpy-free
    "PRAGMA cache_size=-32768",
    "PRAGMA temp_store=MEMORY",
)
PRODUCT_ROWS = RowMap(Product)
USER_ROWS = RowMap(User)
ADDRESS_ROWS = RowMap(Address)
ORDER_ROWS = RowMap(Order)
COUPON_ROWS = RowMap(Coupon)
_BROWSE_ORDER = {
    "relevance": "pop_rank",
    "reviews": "pop_rank",
    "price_asc": "price_cents, product_id",
    "price_desc": "price_cents DESC, product_id",
    "rating": "rating DESC, pop_rank",
    "newest": "created_day DESC, product_id",
}
# The same orders qualified for queries that join product_tags.
_BROWSE_ORDER_D = {k: re.sub(r"\b(pop_rank|price_cents|product_id|rating|created_day)\b", r"d.\1", v)
                   for k, v in _BROWSE_ORDER.items()}
_TABLES = ("products", "users", "orders", "reviews", "addresses", "coupons", "brands",
           "categories")


def match_expression(query: str) -> str | None:
    """The FTS5 MATCH expression for a user's query (see :func:`simweb.fulltext.match_expression`):
    quoted words minus stopwords, ANDed, at most ``_MAX_TERMS``, the last one a prefix."""
    return fulltext.match_expression(query, _STOPWORDS, _MAX_TERMS)


@dataclass(frozen=True)
class _Cond:
    """One search filter: SQL (``{}`` = where an index-disabling ``+`` may go),
    its parameters, the product_search column it can use an index on, and the
    estimated share of products that pass it."""

    sql: str
    params: list[Any]
    column: str | None
    selectivity: float
    tag: int | None = None  # tag filters: the tag id ...
    department: int | None = None  # ... the department it is restricted to (if any) ...
    posting: int = 0  # ... and how many products that (tag, department) range holds

    def render(self, plain: bool) -> str:
        """SQL text; with ``plain`` the column is wrapped so no index is used for it."""
        return self.sql.replace("{}", "+" if plain else "")


# Leading column of each sort's index (see the ix_ps_* indexes).
_SORT_COLUMN = {"relevance": "pop_rank", "reviews": "pop_rank", "price_asc": "price_cents",
                "price_desc": "price_cents", "rating": "rating", "newest": "created_day"}
_INDEXED_FILTERS = {"category_id", "department_id", "brand_id", "price_cents", "rating"}
# Filters whose products' prices cluster (boots cost more than socks): walking
# the global price index for them can scan most of the catalog.
_PRICE_CORRELATED = {"category_id", "department_id", "brand_id"}



def _pages(total: int, per_page: int) -> int:
    return (total + per_page - 1) // per_page


class ShopWorld(WorldFile):
    """Read-only access to one generated shop world.

    Every method returns plain JSON-able values (dicts, lists, ints, strings,
    floats, bools, None), never ORM objects; lists are in a deterministic order
    with the id as the final tie-breaker.  Instances are thread-safe (one
    SQLite connection per thread) and fork-safe.  Use :meth:`load`.
    """

    APP = APP
    GENERATOR_VERSION = GENERATOR_VERSION
    SCHEMA_FINGERPRINT = SCHEMA_FINGERPRINT
    DEFAULT_SIZE = 10_000
    MIN_SIZE = 1
    READ_PRAGMAS = _READ_PRAGMAS
    ID_TABLES = _TABLES
    build = staticmethod(_build_world)

    seed: int
    size: int
    hash: str
    path: str

    def __init__(self, path: Path | str, *, built: bool = False) -> None:
        super().__init__(path, built=built)
        conn = self._db.conn()
        self._categories = [
            {"id": cid, "name": name, "slug": slug, "parent_id": parent}
            for cid, name, slug, parent in conn.execute(
                "SELECT id, name, slug, parent_id FROM categories ORDER BY id")
        ]
        self._category_by_id = {c["id"]: c for c in self._categories}
        self._category_by_slug = {c["slug"]: c for c in self._categories}
        totals = dict(conn.execute("SELECT category_id, count FROM facet_counts WHERE kind = 'total'"))
        for c in self._categories:
            c["product_count"] = int(totals.get(c["id"], 0))
        depts: dict[int, list[int]] = {}
        for bid, cid in conn.execute("SELECT brand_id, category_id FROM brand_departments ORDER BY 1, 2"):
            depts.setdefault(bid, []).append(cid)
        self._brands = [
            {"id": bid, "name": name, "slug": slug, "department_ids": depts.get(bid, [])}
            for bid, name, slug in conn.execute("SELECT id, name, slug FROM brands ORDER BY id")
        ]
        self._brand_by_id = {b["id"]: b for b in self._brands}
        self._tags: dict[tuple[str, str], tuple[int, int]] = {
            (kind, value): (tid, count)
            for tid, kind, value, count in conn.execute("SELECT id, kind, value, count FROM tags")
        }
        self._tag_dept_counts: dict[tuple[int, int], int] = {
            (tid, dept): count
            for tid, dept, count in conn.execute("SELECT tag_id, department_id, count FROM tag_counts")
        }
        # Whole-catalog facet counts double as selectivity estimates for planning.
        root: dict[str, dict[int, int]] = {}
        for kind, key, count in conn.execute("SELECT kind, key, count FROM facet_counts WHERE category_id = 0"):
            root.setdefault(kind, {})[key] = count
        self._root_brand_counts = root.get("brand", {})
        self._root_price_counts = [root.get("price", {}).get(i, 0) for i in range(len(PRICE_BUCKETS))]
        self._root_rating_counts = [root.get("rating", {}).get(m, 0) for m in RATING_BUCKETS]
        self._root_in_stock = root.get("in_stock", {}).get(0, 0)
        self._product_rows = LRU(16_384)
        self._user_rows = LRU(4_096)
        self._facet_cache: dict[int, dict[str, Any]] = {}
        self._prefix = fulltext.PrefixPolicy("products_fts", PREFIX_COMMON_DF)

    # -- products -------------------------------------------------------------

    def _product_dict(self, row: tuple) -> dict[str, Any]:
        """A product's columns and what a page shows of its brand, category and price."""
        p = PRODUCT_ROWS(row)
        cat = self._category_by_id[p["category_id"]]
        p.update(brand_name=self._brand_by_id[p["brand_id"]]["name"], category_name=cat["name"],
                 department_id=cat["parent_id"], on_sale=p["list_price_cents"] > p["price_cents"],
                 in_stock=p["stock"] > 0)
        return p

    def product(self, pid: int) -> dict[str, Any] | None:
        """One product by id, or None."""
        pid = int(pid)
        row = self._product_rows.get(pid)
        if row is None:
            row = self._conn().execute(PRODUCT_ROWS.select("id = ?"), (int(pid),)).fetchone()
            if row is None:
                return None
            self._product_rows.put(pid, row)
        return self._product_dict(row)

    def product_by_slug(self, slug: str) -> dict[str, Any] | None:
        """One product by slug, or None."""
        row = self._conn().execute(PRODUCT_ROWS.select("slug = ?"), (slug,)).fetchone()
        return None if row is None else self._product_dict(row)

    def products(self, ids: Sequence[int]) -> list[dict[str, Any]]:
        """Products for ``ids`` in the given order; unknown ids are skipped."""
        rows: dict[int, tuple] = {}
        missing = []
        for pid in ids:
            pid = int(pid)
            row = self._product_rows.get(pid)
            if row is None:
                missing.append(pid)
            else:
                rows[pid] = row
        if missing:
            uniq = sorted(set(missing))
            conn = self._conn()
            for i in range(0, len(uniq), 500):
                chunk = uniq[i:i + 500]
                for row in conn.execute(
                        PRODUCT_ROWS.select(f"id IN ({','.join('?' * len(chunk))})"),
                        chunk):
                    rows[row[0]] = row
                    self._product_rows.put(row[0], row)
        return [self._product_dict(rows[int(pid)]) for pid in ids if int(pid) in rows]

    # -- search ---------------------------------------------------------------

    def _filters(self, category: int | None, brand: int | Sequence[int] | None,
                 price_min_cents: int | None, price_max_cents: int | None,
                 rating_min: float | None, in_stock: bool, attrs: dict[str, str] | None,
                 option: dict[str, str] | None) -> list[_Cond] | None:
        """Conditions on ``product_search d`` with selectivity estimates.

        Returns None if nothing can match (unknown category, unknown value).
        """
        n = max(1, self.size)
        conds: list[_Cond] = []
        dept: int | None = None
        if category is not None:
            cat = self._category_by_id.get(int(category))
            if cat is None:
                return None
            dept = cat["parent_id"] or cat["id"]
            sel = cat["product_count"] / n
            if cat["parent_id"] is None:
                conds.append(_Cond("{}d.department_id = ?", [cat["id"]], "department_id", sel))
            else:
                conds.append(_Cond("{}d.category_id = ?", [cat["id"]], "category_id", sel))
        if brand is not None:
            ids = [int(brand)] if isinstance(brand, int) else sorted({int(b) for b in brand})
            if ids:
                sql = "{}d.brand_id = ?" if len(ids) == 1 else f"{{}}d.brand_id IN ({','.join('?' * len(ids))})"
                sel = sum(self._root_brand_counts.get(b, 0) for b in ids) / n
                conds.append(_Cond(sql, ids, "brand_id", sel))
        if price_min_cents is not None or price_max_cents is not None:
            lo = -1 if price_min_cents is None else int(price_min_cents)
            hi = None if price_max_cents is None else int(price_max_cents)
            parts, params = [], []
            if price_min_cents is not None:
                parts.append("{}d.price_cents >= ?")
                params.append(lo)
            if hi is not None:
                parts.append("{}d.price_cents <= ?")
                params.append(hi)
            conds.append(_Cond(" AND ".join(parts), params, "price_cents", self._price_selectivity(lo, hi)))
        if rating_min is not None:
            conds.append(_Cond("{}d.rating >= ?", [float(rating_min)], "rating",
                               self._rating_selectivity(float(rating_min))))
        if in_stock:
            conds.append(_Cond("d.stock > 0", [], None, self._root_in_stock / n))
        for prefix, allowed, given in (("attr:", FILTERABLE_ATTRS, attrs), ("opt:", OPTION_KINDS, option)):
            for key in sorted(given or {}):
                if key not in allowed:
                    raise ValueError(f"cannot filter on {prefix[:-1]} {key!r}; allowed: {allowed}")
                tag = self._tags.get((prefix + key, str(given[key]).lower()))  # type: ignore[index]
                if tag is None:
                    return None
                tid, total = tag
                if dept is None:
                    posting, share = total, total / n
                else:
                    posting = self._tag_dept_counts.get((tid, dept), 0)
                    if posting == 0:
                        return None  # e.g. color=black among books
                    # P(tag | department) stands in for P(tag | category).
                    share = posting / max(1, self._category_by_id[dept]["product_count"])
                conds.append(_Cond(
                    "EXISTS (SELECT 1 FROM product_tags t WHERE t.tag_id = ? AND"
                    " t.department_id = d.department_id AND t.product_id = d.product_id)",
                    [tid], None, min(1.0, share), tag=tid, department=dept,
                    posting=posting))
        return conds

    def _price_selectivity(self, lo: int, hi: int | None) -> float:
        """Share of products priced in [lo, hi], interpolating inside facet buckets."""
        covered = 0.0
        for (b_lo, b_hi), count in zip(PRICE_BUCKETS, self._root_price_counts, strict=True):
            top = b_hi if b_hi is not None else 10 * b_lo
            a, b = max(lo, b_lo), min(top if hi is None else hi, top)
            if b >= a and count:
                covered += count * (b - a + 1) / (top - b_lo + 1)
        return covered / max(1, self.size)

    def _rating_selectivity(self, r: float) -> float:
        """Share of products rated >= r (linear between the "N & up" counts)."""
        at = {m: c for m, c in zip(RATING_BUCKETS, self._root_rating_counts, strict=True)}
        at[5] = 0
        at[0] = self.size
        m = min(5, max(0, int(r)))
        frac = r - m
        upper = at.get(m + 1, 0)
        est = at[m] - (at[m] - upper) * frac if m < 5 else at[4] * 0.05
        return min(1.0, max(0.0, est) / max(1, self.size))

    def search(self, query: str = "", *, category: int | None = None,
               brand: int | list[int] | None = None, price_min_cents: int | None = None,
               price_max_cents: int | None = None, rating_min: float | None = None,
               in_stock: bool = False, attrs: dict[str, str] | None = None,
               option: dict[str, str] | None = None, sort: str = "relevance", page: int = 1,
               per_page: int = 24) -> dict[str, Any]:
        """Search / browse the catalog.

        Returns ``{"total", "page", "pages", "per_page", "capped", "items"}``
        with product dicts as items.

        * ``query``: free text (see :func:`match_expression`: never raises on
          FTS syntax, stopwords dropped, AND semantics, prefix on the last
          word unless that word alone is in :data:`PREFIX_COMMON_DF`+
          products).  Empty or stopwords-only = browse.
        * Filters: ``category`` (includes its descendants; unknown id = no
          results), ``brand`` (one id, or a list = any of; ``[]`` = no
          filter), inclusive price bounds, ``rating_min``, ``in_stock``,
          ``attrs`` (``{name: value}`` over :data:`FILTERABLE_ATTRS`),
          ``option`` (``{kind: value}``: the product offers that value; kinds
          in :data:`OPTION_KINDS`).  Value matching is case-insensitive.
          Unknown attribute/option names raise ValueError; unknown values
          just match nothing.
        * ``sort``: ``relevance`` (bm25 with a query, else popularity),
          ``price_asc``, ``price_desc``, ``rating`` (then popularity),
          ``reviews`` (review_count desc) or ``newest`` (created_day desc);
          ties by product id / popularity rank.  Others raise ValueError.
        * ``total`` is exact up to :data:`COUNT_CAP`; beyond, it is
          ``COUNT_CAP`` and ``capped`` is True.  Pages past the cap are empty.
          Browsing (no query) always sorts the whole filtered catalog.  With a
          query and more than ``COUNT_CAP`` matches, the results are the
          ``COUNT_CAP`` most popular matches (then sorted as asked); with a
          query and more than :data:`RELEVANCE_POOL` matches, relevance order
          ranks the most popular ``RELEVANCE_POOL`` by bm25, followed by the
          rest by popularity.  Below those sizes all of this is exact.
        * ``page`` starts at 1; ``per_page`` is clamped to 1..100.
        """
        if sort not in _BROWSE_ORDER:
            raise ValueError(f"unknown sort {sort!r}; expected one of {SORTS}")
        page = max(1, int(page))
        per_page = max(1, min(MAX_PER_PAGE, int(per_page)))
        offset = (page - 1) * per_page
        f = self._filters(category, brand, price_min_cents, price_max_cents, rating_min,
                          in_stock, attrs, option)
        empty = {"total": 0, "page": page, "pages": 0, "per_page": per_page, "capped": False,
                 "items": []}
        if f is None:
            return empty
        conn = self._conn()
        expr = self._expression(conn, query)
        if expr is None:
            n, ids = self._browse(conn, f, sort, offset, per_page)
            total = min(n, COUNT_CAP)
        else:
            try:
                total, n, ids = self._text_search(conn, expr, f, sort, offset, per_page)
            except sqlite3.OperationalError as exc:  # defensive: malformed MATCH = no results
                if "fts5" not in str(exc):
                    raise
                return empty
        return {"total": total, "page": page, "pages": _pages(total, per_page),
                "per_page": per_page, "capped": n > COUNT_CAP, "items": self.products(ids)}

    def _expression(self, conn: sqlite3.Connection, query: str) -> str | None:
        """:func:`match_expression`, minus the last word's prefix if that word is common.

        Expanding a prefix means merging the postings of every word it starts;
        when the word itself is in :data:`PREFIX_COMMON_DF` or more products
        the user almost surely typed it whole, and the merge would dominate the
        query's cost on big worlds.
        """
        return self._prefix.apply(conn, match_expression(query or ""))

    def _browse(self, conn: sqlite3.Connection, conds: list[_Cond], sort: str, offset: int,
                per_page: int) -> tuple[int, list[int]]:
        """Filtered listing without text: (capped match count, page of product ids).

        SQLite's planner, left alone, tends to collect every row of the most
        selective *indexed* filter and sort them, which is slow for broad
        filters on big worlds.  Using row estimates from the precomputed facet
        and tag counts, pick the cheapest of: walking the sort order's index
        and skipping non-matches ("+col" keeps SQLite off the filters'
        indexes), collecting via an indexed filter and sorting, or letting a
        tag's (tag, department) posting range drive the query.
        """
        n_all = max(1, self.size)
        params = [p for c in conds for p in c.params]
        sel = 1.0
        for c in conds:
            sel *= max(c.selectivity, 1.0 / n_all)
        indexed = [c.selectivity for c in conds if c.column in _INDEXED_FILTERS]
        collect_rows = n_all * (min(indexed) if indexed else 1.0)
        tags = [c for c in conds if c.tag is not None]
        driver = min(tags, key=lambda c: c.posting) if tags else None
        if driver is not None and driver.posting >= collect_rows:
            driver = None
        if driver is not None:
            rest = [c for c in conds if c is not driver]
            dept_sql, dept_params = ("", []) if driver.department is None else \
                (" AND t.department_id = ?", [driver.department])
            # CROSS JOIN pins the posting range as the outer loop.
            src = ("FROM product_tags t CROSS JOIN product_search d ON d.product_id = t.product_id"
                   f" WHERE t.tag_id = ?{dept_sql}" + "".join(" AND " + c.render(True) for c in rest))
            src_params = [driver.tag, *dept_params, *[p for c in rest for p in c.params]]
        if not conds:
            n = self.size
        elif driver is not None:
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 {src} LIMIT {COUNT_CAP + 1})",
                             src_params).fetchone()[0]
        else:
            where = " AND ".join(c.render(False) for c in conds)
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM product_search d WHERE {where}"
                             f" LIMIT {COUNT_CAP + 1})", params).fetchone()[0]
        total = min(n, COUNT_CAP)
        if offset >= total:
            return n, []
        limit = min(per_page, total - offset)
        need = offset + limit
        sort_col = _SORT_COLUMN[sort]
        cat = next((c for c in conds if c.column in ("category_id", "department_id")), None)
        # Expected rows touched by each plan (sorting a collected set counts 1.5x).
        plans: dict[str, float] = {"collect": 1.5 * collect_rows}
        if not (sort_col == "price_cents" and any(c.column in _PRICE_CORRELATED for c in conds)):
            plans["walk"] = need / sel  # independence fails when prices cluster by filter
        if sort_col == "price_cents" and cat is not None:
            # (category|department, price) indexes yield the category in price order.
            plans["range"] = need * max(cat.selectivity, 1.0 / n_all) / sel
        if driver is not None:
            plans["drive"] = 1.5 * driver.posting
        plan = min(plans, key=lambda k: (plans[k], k))
        if plan == "drive":
            sql, args = f"SELECT d.product_id {src}", src_params
        else:
            def plain(c: _Cond) -> bool:
                if plan == "walk":
                    return c.column != sort_col
                if plan == "range":
                    return c is not cat and c.column != "price_cents"
                return False

            where = " AND ".join(c.render(plain(c)) for c in conds) or "1"
            sql, args = f"SELECT d.product_id FROM product_search d WHERE {where}", params
        ids = [r[0] for r in conn.execute(
            f"{sql} ORDER BY {_BROWSE_ORDER_D[sort]} LIMIT ? OFFSET ?", [*args, limit, offset])]
        return n, ids

    def _text_search(self, conn: sqlite3.Connection, expr: str, conds: list[_Cond], sort: str,
                     offset: int, per_page: int) -> tuple[int, int, list[int]]:
        """Text query: (capped total, raw capped count, page of product ids)."""
        fts = "products_fts"
        base = (f"FROM {fts} JOIN product_search d ON d.pop_rank = {fts}.rowid"
                f" WHERE {fts} MATCH ?" + "".join(" AND " + c.render(False) for c in conds))
        bparams = [expr, *[p for c in conds for p in c.params]]
        cap = COUNT_CAP
        if sort != "relevance":
            # One pass: materialize the (at most cap+1) most popular matches,
            # count them, drop the (cap+1)-th, sort the rest as asked.
            sql = (f"WITH r AS MATERIALIZED (SELECT d.product_id AS product_id, d.pop_rank AS pop_rank,"
                   f" d.price_cents AS price_cents, d.rating AS rating, d.created_day AS created_day"
                   f" {base} ORDER BY {fts}.rowid LIMIT {cap + 1}),"
                   f" s AS (SELECT count(*) AS n, max(pop_rank) AS last FROM r)"
                   f" SELECT s.n, r.product_id FROM r, s WHERE s.n <= {cap} OR r.pop_rank < s.last"
                   f" ORDER BY {_BROWSE_ORDER[sort]} LIMIT ? OFFSET ?")
            rows = conn.execute(sql, [*bparams, per_page, offset]).fetchall()
            if rows:
                n = rows[0][0]
            else:  # page past the end: count separately
                n = conn.execute(f"SELECT count(*) FROM (SELECT 1 {base} LIMIT {cap + 1})",
                                 bparams).fetchone()[0]
            return min(n, cap), n, [r[1] for r in rows]
        ranks: list[int] | None = None
        if conds or expr.endswith("*"):
            # One pass gives the count and the pool boundary (a prefix term is
            # expensive to expand, so expand it once here rather than twice).
            src = base if conds else f"FROM {fts} WHERE {fts} MATCH ?"
            ranks = [r[0] for r in conn.execute(
                f"SELECT {fts}.rowid {src} ORDER BY {fts}.rowid LIMIT {cap + 1}", bparams)]
            n = len(ranks)
        else:  # no join needed to count raw matches
            n = conn.execute(f"SELECT count(*) FROM (SELECT 1 FROM {fts} WHERE {fts} MATCH ?"
                             f" LIMIT {cap + 1})", (expr,)).fetchone()[0]
        total = min(n, cap)
        if offset >= total:
            return total, n, []
        end = min(offset + per_page, total)
        pool = min(RELEVANCE_POOL, total)
        cut: int | None = None
        if n > pool:  # popularity rank of the pool's last member
            cut = ranks[pool - 1] if ranks is not None else conn.execute(
                f"SELECT rowid FROM {fts} WHERE {fts} MATCH ? ORDER BY rowid LIMIT 1 OFFSET ?",
                (expr, pool - 1)).fetchone()[0]
        ids: list[int] = []
        if offset < pool:
            extra, eparams = ("", []) if cut is None else (f" AND {fts}.rowid <= ?", [cut])
            ids += [r[0] for r in conn.execute(
                f"SELECT d.product_id {base}{extra} ORDER BY {fts}.rank, {fts}.rowid LIMIT ? OFFSET ?",
                [*bparams, *eparams, min(end, pool) - offset, offset])]
        if end > pool and cut is not None:
            start = max(offset, pool)
            if ranks is not None:
                page_ranks = ranks[start:end]
                found = dict(conn.execute(
                    f"SELECT pop_rank, product_id FROM product_search WHERE pop_rank IN"
                    f" ({','.join('?' * len(page_ranks))})", page_ranks).fetchall())
                ids += [found[r] for r in page_ranks]
            else:
                ids += [r[0] for r in conn.execute(
                    f"SELECT d.product_id {base} AND {fts}.rowid > ? ORDER BY {fts}.rowid LIMIT ? OFFSET ?",
                    [*bparams, cut, end - start, start - pool])]
        return total, n, ids

    def facets(self, query: str = "", category: int | None = None) -> dict[str, Any]:
        """Filter-sidebar counts for a query within a category.

        ``{"total", "approximate", "brands": [{id, name, count}] (top 20 by
        count, then id), "price_ranges": [{min_cents, max_cents, label,
        count}] (all :data:`PRICE_BUCKETS`), "rating": [{min, label, count}]
        ("N stars & up"), "in_stock": int}``.  Each count equals the matching
        ``search(...).total`` with that one extra filter, except when a text
        query has more than :data:`FACET_CAP` matches: then counts cover the
        ``FACET_CAP`` most popular matches and ``approximate`` is True.
        Browsing facets (empty query) are precomputed and always exact.
        """
        expr = self._expression(self._conn(), query)
        if category is not None and int(category) not in _DESCENDANT_LEAVES:
            return self._facet_dict(0, {}, {}, {}, 0, False)
        if expr is None:
            return self._browse_facets(0 if category is None else int(category))
        conds = self._filters(category, None, None, None, None, False, None, None) or []
        fts = "products_fts"
        sql = (f"SELECT d.brand_id, d.price_cents, d.rating, d.stock FROM {fts}"
               f" JOIN product_search d ON d.pop_rank = {fts}.rowid WHERE {fts} MATCH ?"
               + "".join(" AND " + c.render(False) for c in conds)
               + f" ORDER BY {fts}.rowid LIMIT {FACET_CAP + 1}")
        try:
            rows = self._conn().execute(sql, [expr, *[p for c in conds for p in c.params]]).fetchall()
        except sqlite3.OperationalError as exc:
            if "fts5" not in str(exc):
                raise
            rows = []
        approximate = len(rows) > FACET_CAP
        rows = rows[:FACET_CAP]
        brands: dict[int, int] = {}
        prices: dict[int, int] = {}
        ratings: dict[int, int] = {}
        in_stock = 0
        for bid, price, rating, stock in rows:
            brands[bid] = brands.get(bid, 0) + 1
            b = self._price_bucket(price)
            prices[b] = prices.get(b, 0) + 1
            for m in RATING_BUCKETS:
                if rating >= m:
                    ratings[m] = ratings.get(m, 0) + 1
            in_stock += stock > 0
        return self._facet_dict(len(rows), brands, prices, ratings, in_stock, approximate)

    @staticmethod
    def _price_bucket(price: int) -> int:
        for i, (_, hi) in enumerate(PRICE_BUCKETS):
            if hi is None or price <= hi:
                return i
        return len(PRICE_BUCKETS) - 1

    def _browse_facets(self, cid: int) -> dict[str, Any]:
        cached = self._facet_cache.get(cid)
        if cached is None:
            parts: dict[str, dict[int, int]] = {"brand": {}, "price": {}, "rating": {},
                                                "total": {}, "in_stock": {}}
            for kind, key, n in self._conn().execute(
                    "SELECT kind, key, count FROM facet_counts WHERE category_id = ?", (cid,)):
                parts[kind][key] = n
            cached = self._facet_dict(parts["total"].get(0, 0), parts["brand"], parts["price"],
                                      parts["rating"], parts["in_stock"].get(0, 0), False)
            self._facet_cache[cid] = cached
        return orjson.loads(orjson.dumps(cached))  # callers may mutate their copy

    def _facet_dict(self, total: int, brands: dict[int, int], prices: dict[int, int],
                    ratings: dict[int, int], in_stock: int, approximate: bool) -> dict[str, Any]:
        top = sorted(brands.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
        ranges = []
        for i, (lo, hi) in enumerate(PRICE_BUCKETS):
            label = f"${lo // 100} and up" if hi is None else f"${lo // 100} to ${(hi + 1) // 100}"
            if lo == 0:
                label = f"Under ${(hi + 1) // 100}" if hi is not None else "Any price"
            ranges.append({"min_cents": lo, "max_cents": hi, "label": label, "count": prices.get(i, 0)})
        return {
            "total": total,
            "approximate": approximate,
            "brands": [{"id": bid, "name": self._brand_by_id[bid]["name"], "count": n} for bid, n in top],
            "price_ranges": ranges,
            "rating": [{"min": m, "label": f"{m} stars & up", "count": ratings.get(m, 0)}
                       for m in RATING_BUCKETS],
            "in_stock": in_stock,
        }

    # -- catalog structure -------------------------------------------------------

    def attribute_values(self, category: int, *, limit: int = 12) -> dict[str, list[dict[str, Any]]]:
        """Filterable attributes of ``category``'s department and their most common
        values: ``{name: [{value, count}]}`` (values lower-case, as matched; names in
        :data:`FILTERABLE_ATTRS` order; only attributes with two values or more; counts
        are over the whole department). For the filter sidebar."""
        dept = category_ancestors(int(category))[-1:] if category is not None else []
        if not dept:
            return {}
        rows = self._conn().execute(
            "SELECT t.kind, t.value, c.count FROM tag_counts c JOIN tags t ON t.id = c.tag_id"
            " WHERE c.department_id = ? AND t.kind LIKE 'attr:%' ORDER BY t.kind, c.count DESC, t.value",
            (dept[0],)).fetchall()
        out: dict[str, list[dict[str, Any]]] = {}
        for kind, value, count in rows:
            name = kind[5:]
            if name == "author":
                continue   # hundreds of authors: searched by text, not picked from a list
            values = out.setdefault(name, [])
            if len(values) < limit:
                values.append({"value": value, "count": count})
        return {n: out[n] for n in FILTERABLE_ATTRS if len(out.get(n, [])) >= 2}

    def categories(self) -> list[dict[str, Any]]:
        """All categories in tree order (each department followed by its leaves)."""
        return [dict(c) for c in self._categories]

    def category(self, cid: int) -> dict[str, Any] | None:
        """One category by id, or None."""
        c = self._category_by_id.get(int(cid))
        return None if c is None else dict(c)

    def category_by_slug(self, slug: str) -> dict[str, Any] | None:
        """One category by slug, or None."""
        c = self._category_by_slug.get(slug)
        return None if c is None else dict(c)

    def category_path(self, cid: int) -> list[dict[str, Any]]:
        """Breadcrumb: ``[department, ..., category]`` (empty if unknown)."""
        return [dict(self._category_by_id[c]) for c in reversed(category_ancestors(int(cid)))]

    def brands(self) -> list[dict[str, Any]]:
        """All brands by name (then id)."""
        return [dict(b, department_ids=list(b["department_ids"]))
                for b in sorted(self._brands, key=lambda b: (b["name"].lower(), b["id"]))]

    def brand(self, bid: int) -> dict[str, Any] | None:
        """One brand by id, or None."""
        b = self._brand_by_id.get(int(bid))
        return None if b is None else dict(b, department_ids=list(b["department_ids"]))

    # -- reviews ----------------------------------------------------------------

    def reviews(self, pid: int, page: int = 1, per_page: int = 10) -> dict[str, Any]:
        """Stored reviews of a product, newest first (then id desc).

        ``{"total", "page", "pages", "per_page", "review_count", "items"}``;
        ``total`` counts stored reviews, ``review_count`` is the product's
        displayed count (0 for an unknown product).
        """
        page = max(1, int(page))
        per_page = max(1, min(MAX_PER_PAGE, int(per_page)))
        conn = self._conn()
        pid = int(pid)
        total = conn.execute("SELECT count(*) FROM reviews WHERE product_id = ?", (pid,)).fetchone()[0]
        rows = conn.execute(
            "SELECT r.id, r.product_id, r.user_id, u.full_name, r.rating, r.title, r.body, r.day"
            " FROM reviews r JOIN users u ON u.id = r.user_id WHERE r.product_id = ?"
            " ORDER BY r.day DESC, r.id DESC LIMIT ? OFFSET ?",
            (pid, per_page, (page - 1) * per_page)).fetchall()
        p = self.product(pid)
        items = []
        for rid, rpid, uid, full_name, stars, title, body, day in rows:
            first, _, last = full_name.partition(" ")
            items.append({"id": rid, "product_id": rpid, "user_id": uid,
                          "author": f"{first} {last[:1]}." if last else first,
                          "rating": stars, "title": title, "body": body, "day": day})
        return {"total": total, "page": page, "pages": _pages(total, per_page), "per_page": per_page,
                "review_count": p["review_count"] if p else 0, "items": items}

    # -- people -------------------------------------------------------------------

    def user(self, uid: int) -> dict[str, Any] | None:
        """One user by id, or None (includes the synthetic plain-text password)."""
        uid = int(uid)
        row = self._user_rows.get(uid)
        if row is None:
            row = self._conn().execute(USER_ROWS.select("id = ?"), (int(uid),)).fetchone()
            if row is None:
                return None
            self._user_rows.put(uid, row)
        return USER_ROWS(row)

    def user_by_login(self, username_or_email: str) -> dict[str, Any] | None:
        """A user by username or email (case-insensitive, surrounding spaces ignored)."""
        key = (username_or_email or "").strip().lower()
        row = self._conn().execute(
            f"{USER_ROWS.select('username = ?')} UNION ALL {USER_ROWS.select('email = ?')} LIMIT 1",
            (key, key)).fetchone()
        return None if row is None else USER_ROWS(row)

    def addresses(self, uid: int) -> list[dict[str, Any]]:
        """A user's saved addresses, default first (then id)."""
        return ADDRESS_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="is_default DESC, id")

    def address(self, aid: int) -> dict[str, Any] | None:
        """One address by id, or None."""
        return ADDRESS_ROWS.one(self._conn(), "id = ?", (int(aid),))

    def orders(self, uid: int) -> list[dict[str, Any]]:
        """A user's past orders, newest first (day desc, then id desc)."""
        return ORDER_ROWS.rows(self._conn(), "user_id = ?", (int(uid),), order="day DESC, id DESC")

    def order(self, oid: int) -> dict[str, Any] | None:
        """One order by id, or None."""
        return ORDER_ROWS.one(self._conn(), "id = ?", (int(oid),))

    # -- coupons ------------------------------------------------------------------

    def coupon(self, code: str) -> dict[str, Any] | None:
        """A coupon by code (case-insensitive, surrounding spaces ignored), or None.

        Returned whatever its state: callers check ``active`` and
        ``expires_day`` (see :func:`coupon_discount_cents`).
        """
        return COUPON_ROWS.one(self._conn(), "code = ?", ((code or "").strip().upper(),))

    def coupons(self) -> list[dict[str, Any]]:
        """All coupons by id (including expired and disabled ones)."""
        return COUPON_ROWS.rows(self._conn())

    # -- ids for the simulator and task generators ----------------------------------

    def _sample_where(self, table: str, where: dict[str, Any]) -> tuple[str, list[Any]]:
        def flag(sql_true: str, sql_false: str) -> Any:
            return lambda v: (sql_true if v else sql_false, [])

        def eq(col: str) -> Any:
            return lambda v: (f"{col} = ?", [v])

        def ge(col: str) -> Any:
            return lambda v: (f"{col} >= ?", [v])

        def le(col: str) -> Any:
            return lambda v: (f"{col} <= ?", [v])

        def in_category(v: Any) -> tuple[str, list[Any]]:
            leaves = _DESCENDANT_LEAVES.get(int(v), ())
            return (f"category_id IN ({','.join('?' * len(leaves))})" if leaves else "0", list(leaves))

        def option_kind(v: Any) -> tuple[str, list[Any]]:
            if v not in OPTION_KINDS:
                raise ValueError(f"unknown option kind {v!r}")
            return ("json_extract(options, ?) IS NOT NULL", [f"$.{v}"])

        def count_ge(child: str) -> Any:
            return lambda v: (f"(SELECT count(*) FROM {child} c WHERE c.user_id = users.id) >= ?", [int(v)])

        spec: dict[str, dict[str, Any]] = {
            "products": {
                "in_stock": flag("stock > 0", "stock = 0"),
                "on_sale": flag("list_price_cents > price_cents", "list_price_cents = price_cents"),
                "has_options": flag("options != '{}'", "options = '{}'"),
                "has_reviews": flag("review_count > 0", "review_count = 0"),
                "category": in_category, "brand": eq("brand_id"), "option_kind": option_kind,
                "min_reviews": ge("review_count"), "rating_min": ge("rating"),
                "price_min_cents": ge("price_cents"), "price_max_cents": le("price_cents"),
            },
            "users": {
                "has_orders": flag("EXISTS (SELECT 1 FROM orders o WHERE o.user_id = users.id)",
                                   "NOT EXISTS (SELECT 1 FROM orders o WHERE o.user_id = users.id)"),
                "min_orders": count_ge("orders"), "min_addresses": count_ge("addresses"),
            },
            "orders": {"status": eq("status"), "user_id": eq("user_id"),
                       "has_coupon": flag("coupon IS NOT NULL", "coupon IS NULL"),
                       "min_items": lambda v: ("json_array_length(items) >= ?", [int(v)])},
            "reviews": {"product_id": eq("product_id"), "user_id": eq("user_id"), "rating": eq("rating")},
            "addresses": {"user_id": eq("user_id"), "is_default": flag("is_default", "NOT is_default")},
            "coupons": {"active": flag("active", "NOT active"),
                        "expired": flag(f"expires_day < {WORLD_DAY}", f"expires_day >= {WORLD_DAY}"),
                        "kind": eq("kind"),
                        "has_category": flag("category_id IS NOT NULL", "category_id IS NULL"),
                        "one_per_user": flag("one_per_user", "NOT one_per_user")},
            "brands": {"department": lambda v: (
                "EXISTS (SELECT 1 FROM brand_departments x WHERE x.brand_id = brands.id AND x.category_id = ?)",
                [int(v)])},
            "categories": {"leaf": flag("parent_id IS NOT NULL", "parent_id IS NULL"),
                           "parent_id": eq("parent_id")},
        }[table]
        conds, params = [], []
        for key in sorted(where):
            if key not in spec:
                raise ValueError(f"unknown sample filter {key!r} for {table}; expected one of {sorted(spec)}")
            sql, p = spec[key](where[key])
            conds.append(sql)
            params.extend(p)
        return " AND ".join(conds) or "1", params

    def sample_ids(self, table: str, rng_seed: int, k: int,
                   where: dict[str, Any] | None = None) -> list[int]:
        """``min(k, matches)`` distinct ids of ``table`` rows, deterministic in ``rng_seed``.

        ``where`` filters (per table): products: in_stock, on_sale, has_options,
        has_reviews (bools), category, brand, option_kind, min_reviews,
        rating_min, price_min_cents, price_max_cents; users: has_orders,
        min_orders, min_addresses; orders: status, user_id, has_coupon,
        min_items; reviews: product_id, user_id, rating; addresses: user_id,
        is_default; coupons: active, expired, kind, has_category, one_per_user;
        brands: department; categories: leaf, parent_id.  Unknown keys raise
        ValueError.  The result is in draw order (not sorted).
        """
        if table not in self._max_ids:
            raise ValueError(f"unknown table {table!r}; expected one of {_TABLES}")
        rng = Rng.derive(APP, "sample", table, int(rng_seed))
        if not where:
            n = self._max_ids[table]  # ids are dense: 1..max
            return [i + 1 for i in rng.sample_indices(n, int(k))]
        sql, params = self._sample_where(table, where)
        ids = [r[0] for r in self._conn().execute(f"SELECT id FROM {table} WHERE {sql} ORDER BY id", params)]
        return [ids[i] for i in rng.sample_indices(len(ids), int(k))]


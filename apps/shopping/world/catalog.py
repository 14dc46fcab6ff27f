"""The shop's catalog: departments, categories, brands and products, the vocabulary their
names and descriptions come from, the static category tree, and their generation (a
builder mixin that :mod:`.build` combines with the customers' and simweb's WorldBuilder)."""
from __future__ import annotations

import functools
import re
from array import array
from dataclasses import dataclass, field
from typing import Any

from simweb.core.text import tidy_generated
from simweb.core.worlddb import Rng, WorldBuilder, stable_hash64

from .schema import _FTS_DDL, _FTS_RANK, APP

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


_PRODUCT_BATCH = 5_000
_SALE_PERCENTS = (10, 15, 20, 25, 30, 40, 50)


class CatalogBuilder(WorldBuilder):
    """The catalog half of the world's generation: categories, brands, products and
    reviews, then the tables derived from them (tags, search, facets)."""

    # Set by the world's builder (build.py) before generation starts.
    n_users: int
    brand_names: list[str]                 # index = brand id
    dept_brands: list[list[int]]
    tag_ids: dict[tuple[str, str], int]
    postings: list[list[array]]            # [tag id - 1][department index] -> product ids

    # -- plumbing -------------------------------------------------------------

    def _tag(self, kind: str, value: str, pid: int, dept_index: int) -> None:
        key = (kind, value.lower())
        tid = self.tag_ids.get(key)
        if tid is None:
            tid = self.tag_ids[key] = len(self.tag_ids) + 1
            self.postings.append([array("I") for _ in _DEPARTMENTS])
        self.postings[tid - 1][dept_index].append(pid)


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
            name = tidy_generated(pattern.format(**parts))   # "A Orphan", "The the Lighthouse"
            return name, {"noun": "book", "desc": "", "adj": ""}
        noun = r.choice(leaf.nouns)
        desc = r.choice(leaf.descs)
        adj = r.choice(dept.adjs)
        if style == "goods":
            series = r.choice(_SERIES) if r.below(100) < 35 else ""
            # "Corduroy Corduroys" / "Fleece Fleece Jacket" read badly: drop the material.
            shown_desc = "" if noun.split(" ")[0].lower().startswith(desc.split(" ")[-1].lower()) else desc
            words: tuple[str, ...] = (brand, series, adj, shown_desc, noun)
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
            description = tidy_generated(" ".join(sentences))   # "A oversized desk lamp"

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
        counts: dict[tuple[int | None, str, int], int] = {}   # (category or None, kind, key)

        def add(leaf: int, kind: str, key: int, n: int) -> None:
            for cid in (0, _PARENT[leaf], leaf):
                k = (cid, kind, key)
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

"""Behaviour of the shop's generated world data (apps/shopping/world.py).

Worlds are small (a few thousand products) and built in a temporary
``SIMWEB_CACHE`` so the suite stays fast and never touches the user's cache.
"""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import sqlalchemy.exc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simweb.apps.shopping import world as W
from simweb.apps.shopping.world import (
    COUNT_CAP,
    OPTION_KINDS,
    SHIPPING_METHODS,
    SORTS,
    ShopWorld,
    coupon_discount_cents,
    day_to_date,
    match_expression,
    shipping_cents,
)
from simweb.core.worlddb import Rng, forget_open_worlds, seeded_password

SIZE = 2000
TABLES = ("categories", "brands", "brand_departments", "products", "reviews", "users",
          "addresses", "coupons", "orders")


def _load_in(cache: Path, seed: int, size: int) -> ShopWorld:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIMWEB_CACHE", str(cache))
        return ShopWorld.load(seed, size)


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> ShopWorld:
    return _load_in(tmp_path_factory.mktemp("cache"), 0, SIZE)


def _dump(path: str) -> dict[str, list[tuple]]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {t: con.execute(f"SELECT * FROM {t} ORDER BY 1, 2").fetchall() for t in TABLES}
    finally:
        con.close()


def _key(item: dict, sort: str) -> tuple:
    return {
        "price_asc": (item["price_cents"], item["id"]),
        "price_desc": (-item["price_cents"], item["id"]),
        "rating": (-item["rating"], -item["review_count"], item["id"]),
        "reviews": (-item["review_count"], item["id"]),
        "newest": (-item["created_day"], item["id"]),
    }[sort]


def _satisfies(item: dict, world: ShopWorld, f: dict) -> bool:
    if f.get("category") is not None:
        leaves = {c["id"] for c in world.categories()
                  if c["id"] == f["category"] or c["parent_id"] == f["category"]}
        if item["category_id"] not in leaves:
            return False
    brand = f.get("brand")
    if brand is not None and brand != []:
        allowed = {brand} if isinstance(brand, int) else set(brand)
        if item["brand_id"] not in allowed:
            return False
    if f.get("price_min_cents") is not None and item["price_cents"] < f["price_min_cents"]:
        return False
    if f.get("price_max_cents") is not None and item["price_cents"] > f["price_max_cents"]:
        return False
    if f.get("rating_min") is not None and item["rating"] < f["rating_min"]:
        return False
    if f.get("in_stock") and item["stock"] <= 0:
        return False
    for k, v in (f.get("attrs") or {}).items():
        if str(item["attributes"].get(k, "")).lower() != v.lower():
            return False
    for k, v in (f.get("option") or {}).items():
        if v.lower() not in [x.lower() for x in item["options"].get(k, [])]:
            return False
    return True


# ---------------------------------------------------------------------------
# Determinism and the cache
# ---------------------------------------------------------------------------


def test_same_seed_same_hash_and_rows(tmp_path: Path) -> None:
    a = _load_in(tmp_path / "a", 3, 400)
    b = _load_in(tmp_path / "b", 3, 400)
    assert a is not b and a.path != b.path
    assert a.hash == b.hash and len(a.hash) == 64
    assert _dump(a.path) == _dump(b.path)
    assert a.search("sweater", sort="price_asc") == b.search("sweater", sort="price_asc")


def test_different_seed_different_world(tmp_path: Path) -> None:
    a = _load_in(tmp_path, 0, 400)
    b = _load_in(tmp_path, 1, 400)
    c = _load_in(tmp_path, 0, 401)
    assert len({a.hash, b.hash, c.hash}) == 3
    assert [p["name"] for p in a.products(range(1, 30))] != [p["name"] for p in b.products(range(1, 30))]


def test_hash_stable_across_processes_and_hash_seeds(tmp_path: Path) -> None:
    in_process = _load_in(tmp_path / "here", 5, 300).hash
    script = "from simweb.apps.shopping.world import ShopWorld; print(ShopWorld.load(5, 300).hash)"
    for hash_seed in ("0", "1", "4242"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed, SIMWEB_CACHE=str(tmp_path / hash_seed))
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True,
                             text=True, check=True, timeout=120)
        assert out.stdout.strip() == in_process


def test_load_is_memoized_and_files_are_named(world: ShopWorld) -> None:
    cache = Path(world.path).parent
    again = _load_in(cache, 0, SIZE)
    assert again is world
    assert Path(world.path).name == f"shopping-v{W.GENERATOR_VERSION}-seed0-n{SIZE}.sqlite"
    assert not list(cache.glob(".*.tmp"))


def test_concurrent_processes_build_once(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import sys
        from simweb.apps.shopping.world import ShopWorld
        sys.stdin.readline()  # start together
        w = ShopWorld.load(11, 1500)
        print(w.built, w.hash)
    """)
    env = dict(os.environ, SIMWEB_CACHE=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", script], env=env, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True) for _ in range(2)]
    for p in procs:
        assert p.stdin is not None
        p.stdin.write("go\n")
        p.stdin.flush()
    outs = [p.communicate(timeout=180)[0].split() for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert sorted(o[0] for o in outs) == ["False", "True"]  # exactly one built
    assert outs[0][1] == outs[1][1]
    assert [f.name for f in tmp_path.glob("*.sqlite")] == [f"shopping-v{W.GENERATOR_VERSION}-seed11-n1500.sqlite"]
    assert not list(tmp_path.glob(".*tmp*"))


def test_world_file_is_read_only(world: ShopWorld) -> None:
    with pytest.raises(sqlite3.OperationalError):
        world._conn().execute("DELETE FROM products")
    with world.engine.connect() as con, pytest.raises(sqlalchemy.exc.OperationalError):
        con.exec_driver_sql("UPDATE users SET password = 'x'")  # the ORM engine is read-only too


def test_stale_cache_file_is_rebuilt(tmp_path: Path) -> None:
    first = _load_in(tmp_path, 4, 80)
    path = Path(first.path)
    os.chmod(path, 0o644)
    con = sqlite3.connect(path)
    con.execute("UPDATE meta SET value = 'older-layout' WHERE key = 'schema'")
    con.commit()
    con.close()
    forget_open_worlds()  # as in a new process
    again = _load_in(tmp_path, 4, 80)
    assert again.built and again.hash == first.hash
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == W.SCHEMA_FINGERPRINT
    con.close()


def test_progress_build_and_tiny_world(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SIMWEB_CACHE", str(tmp_path))
        tiny = ShopWorld.load(2, 60, progress=True)
    assert tiny.built and tiny.max_id("products") == 60
    assert "products" in capsys.readouterr().err
    assert tiny.search("a b c", sort="newest")["total"] >= 0


def test_orm_models_read_the_world(world: ShopWorld) -> None:
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    with Session(world.engine) as session:
        p = session.get(W.Product, 7)
        assert p is not None and p.name == world.product(7)["name"]
        assert p.options == world.product(7)["options"]  # JSON columns decode
        o = session.scalars(select(W.Order).order_by(W.Order.id).limit(1)).one()
        assert o.items == world.order(o.id)["items"]
        assert session.scalar(select(func.count()).select_from(W.Coupon)) == 30


# ---------------------------------------------------------------------------
# Contents
# ---------------------------------------------------------------------------


def test_catalog_shape(world: ShopWorld) -> None:
    cats = world.categories()
    depts = [c for c in cats if c["parent_id"] is None]
    assert len(depts) == 8
    for d in depts:
        assert 4 <= sum(1 for c in cats if c["parent_id"] == d["id"]) <= 6
        assert world.category_by_slug(d["slug"]) == d
    assert sum(c["product_count"] for c in depts) == SIZE
    brands = world.brands()
    assert len(brands) == 150
    assert all(b["department_ids"] for b in brands)
    assert [b["name"].lower() for b in brands] == sorted(b["name"].lower() for b in brands)
    assert world.brand(brands[0]["id"]) == brands[0]
    assert world.category(10_000) is None and world.brand(0) is None


def test_products_are_plausible(world: ShopWorld) -> None:
    products = world.products(range(1, SIZE + 1))
    assert [p["id"] for p in products] == list(range(1, SIZE + 1))
    leaf_ids = {c["id"] for c in world.categories() if c["parent_id"] is not None}
    names, slugs = set(), set()
    for p in products:
        assert p["sku"] == f"SKU-{p['id']:06d}"
        assert p["category_id"] in leaf_ids
        assert p["list_price_cents"] >= p["price_cents"] > 0
        assert p["on_sale"] == (p["list_price_cents"] > p["price_cents"])
        assert 0.0 <= p["rating"] <= 5.0 and round(p["rating"], 1) == p["rating"]
        assert (p["rating"] == 0.0) == (p["review_count"] == 0)
        assert p["stock"] >= 0 and p["in_stock"] == (p["stock"] > 0)
        assert set(p["options"]) <= set(OPTION_KINDS)
        assert all(isinstance(v, list) and v for v in p["options"].values())
        assert 2 <= p["description"].count(".") and p["created_day"] < 0
        if p["department_id"] == world.category_by_slug("books")["id"]:
            assert p["options"] == {} and "author" in p["attributes"]
        if p["department_id"] == world.category_by_slug("clothing")["id"]:
            assert set(p["options"]) == {"size", "color"} and "material" in p["attributes"]
        names.add(p["name"].lower())
        slugs.add(p["slug"])
    assert len(names) == SIZE and len(slugs) == SIZE  # names and slugs are unique
    out_of_stock = sum(not p["in_stock"] for p in products) / SIZE
    assert 0.02 < out_of_stock < 0.09
    assert 0.1 < sum(p["on_sale"] for p in products) / SIZE < 0.35
    assert world.product(0) is None and world.product(SIZE + 1) is None
    assert world.product_by_slug(products[5]["slug"]) == products[5]


def test_product_dicts_are_fresh_copies(world: ShopWorld) -> None:
    p = world.product(1)
    p["options"]["size"] = ["nope"]
    p["name"] = "changed"
    assert world.product(1)["name"] != "changed"
    assert world.product(1)["options"].get("size") != ["nope"]
    a, b, c = world.products([2, 1, 2, 10 ** 9])   # order kept, unknown ids skipped
    assert (a["id"], b["id"], c["id"]) == (2, 1, 2) and a == c == world.product(2)
    a["options"]["size"] = ["nope"]   # a repeated id is its own dict too
    assert c["options"].get("size") != ["nope"] and world.products([2])[0] == world.product(2)


def test_reviews(world: ShopWorld) -> None:
    n_reviews = world.counts["reviews"]
    assert 1.5 * SIZE <= n_reviews <= 2.5 * SIZE
    pid = world.sample_ids("reviews", 1, 1)[0]
    pid = world._conn().execute("SELECT product_id FROM reviews WHERE id = ?", (pid,)).fetchone()[0]
    everything = world.reviews(pid, per_page=100)
    assert 1 <= everything["total"] <= everything["review_count"]
    days = [(r["day"], r["id"]) for r in everything["items"]]
    assert days == sorted(days, reverse=True)
    paged = [r for page in (1, 2, 3, 4, 5, 6) for r in world.reviews(pid, page, 1)["items"]]
    assert paged == everything["items"]
    product = world.product(pid)
    for r in everything["items"]:
        assert 1 <= r["rating"] <= 5 and r["title"] and r["body"]
        assert product["created_day"] < r["day"] < W.WORLD_DAY
        assert world.user(r["user_id"]) is not None
    assert world.reviews(SIZE + 10)["total"] == 0


def test_users_and_addresses(world: ShopWorld) -> None:
    n = world.max_id("users")
    assert n == min(500 + SIZE // 100, 20_000)
    for uid in world.sample_ids("users", 3, 25):
        u = world.user(uid)
        assert u["password"] == seeded_password("shopping", world.seed, uid)
        assert world.user_by_login(u["username"].upper()) == u
        assert world.user_by_login(f"  {u['email']} ") == u
        addrs = world.addresses(uid)
        assert 1 <= len(addrs) <= 3
        assert addrs[0]["id"] == u["default_address_id"] and addrs[0]["is_default"]
        assert sum(a["is_default"] for a in addrs) == 1
        assert all(a["user_id"] == uid and world.address(a["id"]) == a for a in addrs)
        assert addrs[0]["zip"].isdigit() and len(addrs[0]["zip"]) == 5
    assert world.user_by_login("nobody@nowhere") is None and world.user(n + 1) is None


def test_orders_reference_existing_rows(world: ShopWorld) -> None:
    coupons = {c["code"]: c for c in world.coupons()}
    n_users = world.max_id("users")
    seen_orders = 0
    for uid in range(1, n_users + 1, 7):
        orders = world.orders(uid)
        assert [(o["day"], o["id"]) for o in orders] == sorted(((o["day"], o["id"]) for o in orders), reverse=True)
        own_addresses = {a["id"] for a in world.addresses(uid)}
        for o in orders:
            seen_orders += 1
            assert o["user_id"] == uid and world.order(o["id"]) == o
            assert o["address_id"] in own_addresses
            assert o["status"] in {"delivered", "shipped", "processing", "cancelled"}
            assert o["shipping_method"] in SHIPPING_METHODS
            lines = []
            for it in o["items"]:
                p = world.product(it["product_id"])
                assert p is not None and p["name"] == it["name"] and it["qty"] >= 1
                assert it["price_cents"] == p["price_cents"]
                assert all(v in p["options"][k] for k, v in it["options"].items())
                assert set(it["options"]) == set(p["options"])
                lines.append((p["category_id"], it["price_cents"] * it["qty"]))
            assert o["subtotal_cents"] == sum(t for _, t in lines)
            if o["coupon"] is None:
                assert o["discount_cents"] == 0
            else:
                assert o["discount_cents"] == coupon_discount_cents(coupons[o["coupon"]], lines, day=o["day"]) > 0
            merch = o["subtotal_cents"] - o["discount_cents"]
            assert o["shipping_cents"] == shipping_cents(o["shipping_method"], merch)
            assert o["total_cents"] == merch + o["shipping_cents"]
    assert seen_orders > 100
    ids = [o["id"] for uid in range(1, 60) for o in world.orders(uid)]
    assert len(ids) == len(set(ids))
    assert world.order(world.max_id("orders") + 1) is None


def test_coupons_include_guard_cases(world: ShopWorld) -> None:
    coupons = world.coupons()
    assert len(coupons) == 30 and len({c["code"] for c in coupons}) == 30
    assert any(c["expires_day"] < W.WORLD_DAY and c["active"] for c in coupons)  # expired
    assert any(not c["active"] and c["expires_day"] >= W.WORLD_DAY for c in coupons)  # disabled
    assert any(c["category_id"] is not None for c in coupons)
    assert any(c["one_per_user"] for c in coupons)
    assert {c["kind"] for c in coupons} == {"percent", "fixed"}
    assert any(c["min_subtotal_cents"] > 0 for c in coupons)
    for c in coupons:
        assert world.coupon(c["code"].lower()) == c
        assert world.coupon(f" {c['code']} ") == c
    assert world.coupon("NOPE-NOT-A-CODE") is None
    welcome = world.coupon("welcome10")
    assert welcome["kind"] == "percent" and welcome["value"] == 10 and welcome["one_per_user"]
    expired = next(c for c in coupons if c["expires_day"] < 0)
    disabled = next(c for c in coupons if not c["active"])
    lines = [(world.categories()[1]["id"], 100_000)]
    assert coupon_discount_cents(expired, lines) == 0
    assert coupon_discount_cents(disabled, lines) == 0
    assert coupon_discount_cents(welcome, lines) == 10_000
    fixed = next(c for c in coupons if c["kind"] == "fixed" and c["active"] and c["expires_day"] >= 0)
    assert coupon_discount_cents(fixed, [(2, fixed["min_subtotal_cents"] - 1)]) == 0
    at_minimum = fixed["min_subtotal_cents"]
    assert coupon_discount_cents(fixed, [(2, at_minimum)]) == min(fixed["value"], at_minimum)
    cat = next(c for c in coupons if c["category_id"] and c["active"] and c["expires_day"] >= 0
               and c["min_subtotal_cents"] == 0)
    other = next(x["id"] for x in world.categories()
                 if x["parent_id"] is not None and cat["category_id"] not in W.category_ancestors(x["id"]))
    assert coupon_discount_cents(cat, [(other, 5000)]) == 0
    inside = next(x["id"] for x in world.categories()
                  if x["parent_id"] is not None and cat["category_id"] in W.category_ancestors(x["id"]))
    assert coupon_discount_cents(cat, [(other, 5000), (inside, 2000)]) == 2000 * cat["value"] // 100


def test_days_and_constants() -> None:
    assert W.DAY0 == dt.date(2026, 1, 1)
    assert day_to_date(0) == W.DAY0 and day_to_date(-1) == dt.date(2025, 12, 31)
    assert shipping_cents("standard", W.FREE_SHIPPING_THRESHOLD_CENTS) == 0
    standard = SHIPPING_METHODS["standard"]["price_cents"]
    assert shipping_cents("standard", W.FREE_SHIPPING_THRESHOLD_CENTS - 1) == standard
    assert shipping_cents("overnight", 10**7) == SHIPPING_METHODS["overnight"]["price_cents"]


# ---------------------------------------------------------------------------
# Search
# ---------------------------------------------------------------------------


def test_exact_name_finds_the_product_first(world: ShopWorld) -> None:
    for p in world.products(world.sample_ids("products", 21, 40)):
        res = world.search(p["name"])
        assert res["items"][0]["id"] == p["id"], (p["name"], [i["name"] for i in res["items"][:3]])
        assert world.search(p["name"].upper(), per_page=1)["items"][0]["id"] == p["id"]


def _listed(world: ShopWorld, query: str, pid: int, per_page: int) -> bool:
    return any(i["id"] == pid for i in world.search(query, per_page=per_page)["items"])


def test_on_first_page_is_the_search_page(world: ShopWorld) -> None:
    """The samplers' shortcut answers what the search page shows: for exact names (the
    one-query path), common words (more matches than a page: the full search), other
    products' ids, and queries that browse or raise inside FTS."""
    products = world.products(world.sample_ids("products", 5, 60))
    queries = [p["name"] for p in products] + ["sweater", "classic", "leather boot", "", "the and of", '"', "*",
                                               "zzzqqqxxnotaword"]
    shortcut = full = 0
    for q in queries:
        for per_page in (1, 24):
            hits = [i["id"] for i in world.search(q, per_page=per_page)["items"]]
            for pid in {*hits[:3], *(p["id"] for p in products[:4])}:
                assert world.on_first_page(q, pid, per_page) == _listed(world, q, pid, per_page), (q, pid, per_page)
            many = world.search(q, per_page=1)["total"] > per_page
            full += many
            shortcut += not many
    assert shortcut and full   # both paths ran


def test_query_semantics(world: ShopWorld) -> None:
    res = world.search("sweater", per_page=100)
    assert res["total"] > 0

    def text(i: dict) -> str:
        return f"{i['name']} {i['brand_name']} {i['category_name']} {i['description']}".lower()

    assert all("sweater" in text(i) for i in res["items"])
    both = world.search("merino sweater", per_page=100)
    assert 0 < both["total"] <= res["total"]
    assert all("merino" in text(i) and "sweater" in text(i) for i in both["items"])
    prefix = world.search("sweat")  # prefix match on the last word
    assert prefix["total"] >= res["total"]
    # Stopwords and punctuation are ignored; stopword-only queries browse.
    assert world.search("the sweater!")["total"] == res["total"]
    assert world.search("the and of")["total"] == SIZE
    assert world.search("zzzqqqxxnotaword")["total"] == 0
    assert match_expression('he said "NEAR(a b)" OR x*') == '"said" AND "near" AND "b" AND "x"'
    assert match_expression("Sweaters") == '"sweaters"*'


@pytest.mark.parametrize("query", [
    '"', "'", "*", "sweater*", '"sweater', "AND", "OR", "NOT", "NEAR", "NEAR(", "a OR b",
    "^sweater", "name:sweater", "{name}: tee", "(", ")", "-", "+", "\\", "%", "_", "'; DROP TABLE products; --",
    "col:", "\x00", "💥", "naïve café", "日本語", "ÆØÅ", "  ", "", "a" * 500,
])
def test_fts_syntax_never_raises(world: ShopWorld, query: str) -> None:
    res = world.search(query)
    assert res["total"] >= len(res["items"])
    facets = world.facets(query)
    assert facets["total"] >= 0


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=40))
def test_arbitrary_text_never_raises(world: ShopWorld, query: str) -> None:
    res = world.search(query, per_page=5)
    assert res["total"] >= len(res["items"])


@pytest.mark.parametrize("sort", SORTS)
@pytest.mark.parametrize("query", ["", "classic", "leather boot"])
def test_sorts_are_ordered(world: ShopWorld, sort: str, query: str) -> None:
    items = world.search(query, sort=sort, per_page=100)["items"]
    assert items
    if sort != "relevance":
        assert [_key(i, sort) for i in items] == sorted(_key(i, sort) for i in items)
    elif not query:
        assert [_key(i, "reviews") for i in items] == sorted(_key(i, "reviews") for i in items)
    # Page 2 continues page 1 in the same order.
    first = world.search(query, sort=sort, per_page=50)["items"]
    second = world.search(query, sort=sort, per_page=50, page=2)["items"]
    assert [i["id"] for i in first + second] == [i["id"] for i in items]


def test_sort_orders_are_global(world: ShopWorld) -> None:
    everything = world.products(range(1, SIZE + 1))
    cheapest = min(everything, key=lambda p: (p["price_cents"], p["id"]))
    assert world.search(sort="price_asc")["items"][0]["id"] == cheapest["id"]
    newest = min(everything, key=lambda p: (-p["created_day"], p["id"]))
    assert world.search(sort="newest")["items"][0]["id"] == newest["id"]
    best = min(everything, key=lambda p: (-p["rating"], -p["review_count"], p["id"]))
    assert world.search(sort="rating")["items"][0]["id"] == best["id"]


@pytest.mark.parametrize("kw", [
    {"query": "classic", "sort": "price_desc"},
    {"category": 1, "sort": "newest"},
    {"query": "cotton", "in_stock": True},
    {"sort": "rating", "rating_min": 4.0},
])
def test_pages_partition_results(world: ShopWorld, kw: dict) -> None:
    per_page = 7
    first = world.search(**kw, per_page=per_page)
    total = first["total"]
    assert first["pages"] == -(-total // per_page)
    seen: list[int] = []
    for page in range(1, first["pages"] + 2):
        res = world.search(**kw, per_page=per_page, page=page)
        assert res["total"] == total and res["page"] == page
        assert len(res["items"]) == (min(per_page, total - len(seen)) if page <= first["pages"] else 0)
        seen += [i["id"] for i in res["items"]]
    assert len(seen) == len(set(seen)) == total


def test_filters(world: ShopWorld) -> None:
    shoes = world.category_by_slug("shoes")["id"]
    boots = world.category_by_slug("boots")["id"]
    brand_ids = [b["id"] for b in world.brands() if shoes in b["department_ids"]][:3]
    cases = [
        {"category": shoes},
        {"category": boots, "in_stock": True},
        {"brand": brand_ids},
        {"brand": brand_ids[0], "category": shoes},
        {"price_min_cents": 2000, "price_max_cents": 4999},
        {"rating_min": 4.5, "sort": "price_asc"},
        {"query": "leather", "category": shoes, "price_max_cents": 15000},
        {"attrs": {"material": "leather"}, "category": shoes},
        {"option": {"size": "10.5"}, "in_stock": True},
        {"option": {"color": "BLACK", "size": "M"}, "query": "tee"},
        {"attrs": {"format": "Hardcover"}, "rating_min": 4.0},
    ]
    for f in cases:
        res = world.search(**f, per_page=100)
        assert res["total"] > 0, f
        assert all(_satisfies(i, world, f) for i in res["items"]), f
    # Brute-force check of one total against the full catalog.
    everything = world.products(range(1, SIZE + 1))
    f = {"category": shoes, "price_max_cents": 8000, "in_stock": True, "option": {"color": "Black"}}
    assert world.search(**f)["total"] == sum(_satisfies(p, world, f) for p in everything)
    assert world.search(category=99_999)["total"] == 0
    assert world.search(attrs={"material": "unobtainium"})["total"] == 0
    with pytest.raises(ValueError):
        world.search(attrs={"pages": "300"})
    with pytest.raises(ValueError):
        world.search(option={"flavor": "mint"})
    with pytest.raises(ValueError):
        world.search("x", sort="cheapest")


def test_search_result_shape(world: ShopWorld) -> None:
    res = world.search("sweater", per_page=5)
    assert set(res) == {"total", "page", "pages", "per_page", "capped", "items"}
    assert res["capped"] is False and len(res["items"]) <= 5
    assert world.search(per_page=10_000)["per_page"] == W.MAX_PER_PAGE
    assert world.search(page=0)["page"] == 1
    assert world.search(page=10_000)["items"] == []


@pytest.mark.parametrize("query,category", [("", None), ("", 1), ("", 12), ("leather", None),
                                            ("classic", 7), ("sweater", None), ("nothingmatches", None)])
def test_facets_match_search_totals(world: ShopWorld, query: str, category: int | None) -> None:
    f = world.facets(query, category)
    base = {"query": query, "category": category}
    assert f["approximate"] is False
    assert f["total"] == world.search(**base)["total"]
    assert f["in_stock"] == world.search(**base, in_stock=True)["total"]
    counts = [b["count"] for b in f["brands"]]
    assert counts == sorted(counts, reverse=True) and len(counts) <= 20
    for b in f["brands"]:
        assert b["name"] == world.brand(b["id"])["name"]
        assert b["count"] == world.search(**base, brand=b["id"])["total"]
    assert sum(r["count"] for r in f["price_ranges"]) == f["total"]
    for r in f["price_ranges"]:
        assert r["count"] == world.search(**base, price_min_cents=r["min_cents"],
                                          price_max_cents=r["max_cents"])["total"]
    for r in f["rating"]:
        assert r["count"] == world.search(**base, rating_min=r["min"])["total"]


def test_threads_share_a_world(world: ShopWorld) -> None:
    queries = ["sweater", "leather boot", "", "classic", "wireless", "tent"]
    expected = {q: world.search(q, sort="price_asc") for q in queries}
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(30):
                q = queries[(k + i) % len(queries)]
                assert world.search(q, sort="price_asc") == expected[q]
                assert world.product(1 + (k * 31 + i) % SIZE)["id"] == 1 + (k * 31 + i) % SIZE
        except BaseException as exc:  # reported by the main thread below
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def _child_search(world: ShopWorld, queue: object) -> None:
    queue.put(world.search("classic", sort="newest")["items"][0]["id"])  # type: ignore[attr-defined]


def test_fork_after_open_gets_own_connection(world: ShopWorld) -> None:
    import multiprocessing

    expected = world.search("classic", sort="newest")["items"][0]["id"]  # parent has a connection
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_child_search, args=(world, queue)) for _ in range(2)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert results == [expected, expected]
    assert world.search("classic", sort="newest")["items"][0]["id"] == expected


_WORDS = ["", "sweater", "classic", "leather", "wireless", "oak", "cotton tee", "boot", "serum",
          "the", "puzzle", "linen", "pro", "kitchen", "merino crew"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    query=st.sampled_from(_WORDS),
    category=st.one_of(st.none(), st.integers(1, 47)),
    brand=st.one_of(st.none(), st.integers(1, 150), st.lists(st.integers(1, 150), max_size=4)),
    price_min=st.one_of(st.none(), st.integers(0, 30_000)),
    price_span=st.one_of(st.none(), st.integers(0, 60_000)),
    rating_min=st.one_of(st.none(), st.sampled_from([0, 1, 2.5, 3, 4, 4.5, 5])),
    in_stock=st.booleans(),
    attrs=st.one_of(st.none(), st.fixed_dictionaries({"material": st.sampled_from(["Leather", "cotton", "Oak"])}),
                    st.fixed_dictionaries({"format": st.sampled_from(["Paperback", "hardcover"])})),
    option=st.one_of(st.none(), st.fixed_dictionaries({"color": st.sampled_from(["Black", "white", "Navy"])}),
                     st.fixed_dictionaries({"size": st.sampled_from(["M", "10", "Queen", "32"])})),
    sort=st.sampled_from(SORTS),
    page=st.integers(1, 4),
    per_page=st.integers(1, 40),
)
def test_random_filter_combinations(world: ShopWorld, query, category, brand, price_min, price_span,
                                    rating_min, in_stock, attrs, option, sort, page, per_page) -> None:
    f = {"category": category, "brand": brand, "price_min_cents": price_min,
         "price_max_cents": None if price_span is None else (price_min or 0) + price_span,
         "rating_min": rating_min, "in_stock": in_stock, "attrs": attrs, "option": option}
    res = world.search(query, **f, sort=sort, page=page, per_page=per_page)
    assert res["total"] >= len(res["items"]) and len(res["items"]) <= per_page
    assert res["total"] <= COUNT_CAP and res["pages"] == -(-res["total"] // per_page)
    assert len({i["id"] for i in res["items"]}) == len(res["items"])
    for item in res["items"]:
        assert _satisfies(item, world, f), (item["id"], f)
    if sort != "relevance":
        keys = [_key(i, sort) for i in res["items"]]
        assert keys == sorted(keys)
    expected_on_page = max(0, min(per_page, res["total"] - (page - 1) * per_page))
    assert len(res["items"]) == expected_on_page


# ---------------------------------------------------------------------------
# Ids for the simulator and task generators
# ---------------------------------------------------------------------------


def test_max_id_and_sample_ids(world: ShopWorld) -> None:
    assert world.max_id("products") == SIZE
    assert world.max_id("coupons") == 30
    with pytest.raises(ValueError):
        world.max_id("secrets")
    a = world.sample_ids("products", 7, 25, {"in_stock": True})
    assert a == world.sample_ids("products", 7, 25, {"in_stock": True})
    assert a != world.sample_ids("products", 8, 25, {"in_stock": True})
    assert len(set(a)) == 25 and all(world.product(i)["in_stock"] for i in a)
    shoes = world.category_by_slug("shoes")["id"]
    for pid in world.sample_ids("products", 1, 10, {"category": shoes, "on_sale": True, "option_kind": "size"}):
        p = world.product(pid)
        assert p["department_id"] == shoes and p["on_sale"] and "size" in p["options"]
    for uid in world.sample_ids("users", 2, 10, {"min_orders": 3}):
        assert len(world.orders(uid)) >= 3
    assert all(not world.orders(u) for u in world.sample_ids("users", 2, 5, {"has_orders": False}))
    for oid in world.sample_ids("orders", 4, 5, {"status": "delivered", "has_coupon": True}):
        o = world.order(oid)
        assert o["status"] == "delivered" and o["coupon"]
    codes = [world.coupons()[i - 1] for i in world.sample_ids("coupons", 1, 30, {"expired": True})]
    assert codes and all(c["expires_day"] < 0 for c in codes)
    assert sorted(world.sample_ids("coupons", 3, 100)) == list(range(1, 31))  # k > n: all of them
    assert world.sample_ids("products", 1, 0) == []
    with pytest.raises(ValueError):
        world.sample_ids("products", 1, 3, {"colour": "red"})


def test_rng_is_stable() -> None:
    # Pinned outputs: changing the PRNG silently would change every world.
    r = Rng(0)
    assert [r.next64() for _ in range(3)] == [
        0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4, 0x06C45D188009454F]
    r = Rng.derive("x", 1)
    picks = [r.below(10) for _ in range(1000)]
    assert set(picks) == set(range(10))
    assert Rng(5).sample_indices(10, 10) != list(range(10))
    assert sorted(Rng(5).sample_indices(10, 10)) == list(range(10))


def test_attribute_values_filter_the_catalog(world):
    leaves = [c for c in world.categories() if c["parent_id"] is not None]
    checked = 0
    for cat in leaves:
        for name, values in world.attribute_values(cat["id"]).items():
            assert len(values) >= 2 and all(v["count"] > 0 for v in values)
            res = world.search("", category=cat["id"], attrs={name: values[0]["value"]}, per_page=50)
            for item in res["items"]:
                assert str(item["attributes"][name]).casefold() == values[0]["value"]
            checked += 1
    assert checked > 5
    assert world.attribute_values(10_000) == {}

"""The shopping:oscar pair: live verifiers on crafted Oscar databases, the payload, the
scripts on simweb, and (opt-in, it installs django-oscar) one family end to end.

The live verifiers are attacked as simweb's red team attacks simweb's: zero work, the
wrong entity, the wrong value, the change done twice, and collateral damage must not pay;
Oscar's own bookkeeping (sessions, analytics counters, the empty basket its middleware
makes for a signed-in user) must not count as damage.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pytest

import simweb
from simweb.live.counterparts.oscar import Oscar, build_payload, shop_app
from simweb.live.counterparts.oscar.families import FAMILIES
from simweb.live.counterparts.portable import KINDS

FAM = {f.short: f for f in FAMILIES}

SCHEMA = """
CREATE TABLE auth_user (id INTEGER PRIMARY KEY, username TEXT, email TEXT, password TEXT, last_login TEXT);
CREATE TABLE django_session (session_key TEXT PRIMARY KEY, session_data TEXT);
CREATE TABLE analytics_productrecord (id INTEGER PRIMARY KEY, product_id INTEGER, num_views INTEGER);
CREATE TABLE catalogue_product (id INTEGER PRIMARY KEY, upc TEXT, title TEXT, rating REAL);
CREATE TABLE catalogue_option (id INTEGER PRIMARY KEY, name TEXT, code TEXT);
CREATE TABLE partner_stockrecord (id INTEGER PRIMARY KEY, product_id INTEGER, num_in_stock INTEGER,
                                  num_allocated INTEGER);
CREATE TABLE basket_basket (id INTEGER PRIMARY KEY, owner_id INTEGER, status TEXT, date_submitted TEXT);
CREATE TABLE basket_line (id INTEGER PRIMARY KEY, basket_id INTEGER, product_id INTEGER, quantity INTEGER);
CREATE TABLE basket_lineattribute (id INTEGER PRIMARY KEY, line_id INTEGER, option_id INTEGER, value TEXT);
CREATE TABLE reviews_productreview (id INTEGER PRIMARY KEY, product_id INTEGER, user_id INTEGER, score INTEGER,
                                    title TEXT, body TEXT, status INTEGER);
CREATE TABLE address_useraddress (id INTEGER PRIMARY KEY, user_id INTEGER, line1 TEXT, line4 TEXT,
                                  num_orders_as_shipping_address INTEGER);
CREATE TABLE order_shippingaddress (id INTEGER PRIMARY KEY, line1 TEXT, line4 TEXT);
CREATE TABLE order_order (id INTEGER PRIMARY KEY, number TEXT, user_id INTEGER, status TEXT, shipping_code TEXT,
                          shipping_address_id INTEGER);
CREATE TABLE order_line (id INTEGER PRIMARY KEY, order_id INTEGER, partner_sku TEXT, quantity INTEGER);
CREATE TABLE order_lineattribute (id INTEGER PRIMARY KEY, line_id INTEGER, option_id INTEGER, type TEXT, value TEXT);
"""
USER, OTHER_USER, PRODUCT, OTHER_PRODUCT = 1, 2, 7, 8
SIZE_OPT, COLOR_OPT = 1, 2


class Shop:
    """A crafted Oscar database: the pristine copy and the live file the verifiers read."""

    def __init__(self, home: Path, inst):
        self.cp = Oscar(home)
        self.inst = inst
        p = inst.params
        db = self.cp.pristine_path(self.cp.database())
        db.parent.mkdir(parents=True)
        conn = sqlite3.connect(db)
        conn.executescript(SCHEMA)
        conn.execute("INSERT INTO auth_user VALUES (?, ?, 'u@example.com', 'x', NULL)", (USER, inst.user))
        conn.execute("INSERT INTO auth_user VALUES (?, 'someone.else', 'o@example.com', 'x', NULL)", (OTHER_USER,))
        conn.execute("INSERT INTO catalogue_product VALUES (?, ?, ?, NULL)", (PRODUCT, p.get("sku", "SKU-X"),
                                                                             p.get("name", "x")))
        conn.execute("INSERT INTO catalogue_product VALUES (?, 'SKU-OTHER', 'Other', NULL)", (OTHER_PRODUCT,))
        conn.execute("INSERT INTO catalogue_option VALUES (?, 'Size', 'size-7'), (?, 'Color', 'color-7')",
                     (SIZE_OPT, COLOR_OPT))
        conn.execute("INSERT INTO partner_stockrecord VALUES (1, ?, 50, 0), (2, ?, 50, 0)", (PRODUCT, OTHER_PRODUCT))
        conn.execute("INSERT INTO address_useraddress VALUES (1, ?, ?, ?, 0)", (USER, p.get("street", "1 Main St"),
                                                                            p.get("city", "Town")))
        if "order_id" in p:
            conn.execute("INSERT INTO order_shippingaddress VALUES (1, '1 Main St', 'Town')")
            conn.execute("INSERT INTO order_order VALUES (1, ?, ?, ?, 'standard', 1)",
                         (str(p["order_id"]), USER, p["status"].capitalize()))
        conn.commit()
        conn.close()
        self.cp.database().parent.mkdir(parents=True)
        shutil.copyfile(db, self.cp.database())

    def sql(self, statement: str, *args) -> None:
        conn = sqlite3.connect(self.cp.database())
        conn.execute(statement, args)
        conn.commit()
        conn.close()

    def bookkeeping(self) -> None:
        """What browsing alone writes: a session, a view counter, the empty open basket."""
        self.sql("INSERT INTO django_session VALUES ('k', 'data')")
        self.sql("INSERT INTO analytics_productrecord VALUES (1, ?, 3)", PRODUCT)
        self.sql("UPDATE auth_user SET last_login = '2026-01-01' WHERE id = ?", USER)
        self.sql("INSERT INTO basket_basket VALUES (1, ?, 'Open', NULL)", USER)

    def add_line(self, line: int, product: int, qty: int, size: str | None = None, color: str | None = None,
                 basket: int = 1) -> None:
        self.sql("INSERT INTO basket_line VALUES (?, ?, ?, ?)", line, basket, product, qty)
        for opt, value in ((SIZE_OPT, size), (COLOR_OPT, color)):
            if value is not None:
                self.sql("INSERT INTO basket_lineattribute (line_id, option_id, value) VALUES (?, ?, ?)",
                         line, opt, json.dumps(value))

    def verdict(self, answer: str | None = None, refused: bool = False) -> dict:
        fam = next(f for f in FAMILIES if f.id == self.inst.family)
        return fam.live_verify(self.cp, self.inst, answer, refused)


def shop(tmp_path: Path, family: str) -> Shop:
    return Shop(tmp_path / "home", FAM[family].instances(1)[0])


def paid(v: dict) -> bool:
    return v["success"] and v["clean"]


def failing(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if not c["ok"]]


# ----------------------------------------------------------------------------- the families

def test_families_cover_every_kind_with_simweb_templates():
    app = shop_app()
    assert {f.kind for f in FAMILIES} >= set(KINDS)
    assert len({f.id for f in FAMILIES}) == len(FAMILIES) >= 5
    for fam in FAMILIES:
        assert fam.pair == "shopping:oscar" and fam.sim_task in app.tasks
        insts = fam.instances(3)
        assert [i.index for i in insts] == [0, 1, 2]
        for inst in insts:
            # The goal is the simweb task's own, for that seed.
            assert inst.goal == app.tasks[fam.sim_task].instantiate(app, inst.sim_seed).goal
            assert inst.user is not None and fam.script(inst)


def test_refusal_instances_are_only_orders_that_can_no_longer_be_cancelled():
    for inst in FAM["cancel_shipped"].instances(4):
        assert inst.params["feasible"] is False and inst.params["status"] in ("shipped", "delivered")


def test_the_payload_holds_every_entity_the_instances_use():
    payload = build_payload(shop_app(), "simweb-pass")
    skus = {p["sku"] for p in payload["products"]}
    users = {u["username"] for u in payload["users"]}
    orders = {o["id"]: o for o in payload["orders"]}
    world = shop_app().world
    for fam in FAMILIES:
        for inst in fam.instances(5):
            assert inst.user in users
            if "sku" in inst.params:
                assert inst.params["sku"] in skus
            if "order_id" in inst.params:
                assert orders[inst.params["order_id"]]["status"] == inst.params["status"]
    p = next(p for p in payload["products"] if p["sku"] == FAM["add_with_options"].instances(1)[0].params["sku"])
    w = world.product(p["id"])
    assert (p["name"], p["price_cents"], p["options"]["size"]) == (w["name"], w["price_cents"], w["options"]["size"])
    assert payload == build_payload(shop_app(), "simweb-pass")      # deterministic


# ----------------------------------------------------------------------------- info

def test_price_answer(tmp_path):
    s = shop(tmp_path, "product_price")
    cents = s.inst.params["price_cents"]
    s.bookkeeping()                                           # browsing is not damage
    assert paid(s.verdict(f"${cents / 100:.2f}"))
    assert not s.verdict(None)["success"]                     # zero work
    assert not s.verdict(f"${(cents + 100) / 100:.2f}")["success"]   # wrong value
    s.add_line(1, PRODUCT, 1)                                 # right answer, but it filled the cart
    v = s.verdict(f"${cents / 100:.2f}")
    assert v["success"] and not v["clean"] and "collateral: basket_line.1" in failing(v)


# ----------------------------------------------------------------------------- search: add to cart

def test_add_to_cart_pays_only_for_exactly_one(tmp_path):
    s = shop(tmp_path, "add_to_cart")
    s.bookkeeping()
    v = s.verdict()
    assert not v["success"] and v["progress"] == 0 and v["clean"]          # zero work
    s.add_line(1, OTHER_PRODUCT, 1)                                          # wrong entity
    v = s.verdict()
    assert not v["success"] and "collateral: basket_line.1" in failing(v)
    s.sql("DELETE FROM basket_line")
    s.add_line(2, PRODUCT, 2)                                                # added twice: one line, quantity 2
    v = s.verdict()
    assert not v["success"] and failing(v) == ["quantity 1"] and v["progress"] == 0.5
    s.sql("UPDATE basket_line SET quantity = 1")
    assert paid(s.verdict())


def test_add_to_cart_in_someone_elses_basket_does_not_count(tmp_path):
    s = shop(tmp_path, "add_to_cart")
    s.sql("INSERT INTO basket_basket VALUES (2, ?, 'Open', NULL)", OTHER_USER)
    s.add_line(1, PRODUCT, 1, basket=2)
    v = s.verdict()
    assert not v["success"] and not v["clean"]


def test_a_submitted_basket_is_not_the_cart(tmp_path):
    s = shop(tmp_path, "add_to_cart")
    s.sql("INSERT INTO basket_basket VALUES (1, ?, 'Submitted', '2026-01-01')", USER)
    s.add_line(1, PRODUCT, 1)
    assert not s.verdict()["success"]


# ----------------------------------------------------------------------------- form: options

def test_options_form(tmp_path):
    s = shop(tmp_path, "add_with_options")
    p = s.inst.params
    other_size = next(x for x in shop_app().world.product(p["product_id"])["options"]["size"] if x != p["size"])
    s.bookkeeping()
    assert s.verdict()["progress"] == 0
    s.add_line(1, PRODUCT, p["qty"], other_size, p["color"])                 # wrong value
    v = s.verdict()
    assert not v["success"] and failing(v) == [f"size {p['size']}"]
    s.add_line(2, PRODUCT, p["qty"], p["size"], p["color"])                  # now right, but the wrong line stays
    v = s.verdict()
    assert v["success"] and not v["clean"] and "collateral: basket_line.1" in failing(v)
    s.sql("DELETE FROM basket_lineattribute WHERE line_id = 1")
    s.sql("DELETE FROM basket_line WHERE id = 1")
    assert paid(s.verdict())
    s.sql("UPDATE basket_line SET quantity = ?", p["qty"] * 2)               # done twice
    assert not s.verdict()["success"]


# ----------------------------------------------------------------------------- flow: checkout

def place_order(s: Shop, oid: int, method: str | None = None, size: str | None = None, qty: int | None = None,
                user: int = USER) -> None:
    p = s.inst.params
    s.sql("INSERT INTO order_shippingaddress VALUES (?, ?, ?)", oid, p["street"], p["city"])
    s.sql("INSERT INTO order_order VALUES (?, ?, ?, 'Pending', ?, ?)", oid, str(100000 + oid), user,
          method or p["method"], oid)
    s.sql("INSERT INTO order_line VALUES (?, ?, ?, ?)", oid, oid, p["sku"], qty or p["qty"])
    s.sql("INSERT INTO order_lineattribute (line_id, option_id, type, value) VALUES (?, ?, 'size-7', ?)",
          oid, SIZE_OPT, json.dumps(size or p["size"]))
    s.sql("INSERT INTO order_lineattribute (line_id, option_id, type, value) VALUES (?, ?, 'color-7', ?)",
          oid, COLOR_OPT, json.dumps(p["color"]))
    s.sql("UPDATE partner_stockrecord SET num_allocated = num_allocated + ? WHERE product_id = ?", qty or p["qty"],
          PRODUCT)
    s.sql("UPDATE address_useraddress SET num_orders_as_shipping_address = num_orders_as_shipping_address + 1")


def test_checkout(tmp_path):
    s = shop(tmp_path, "checkout")
    p = s.inst.params
    s.bookkeeping()
    assert s.verdict()["progress"] == 0                                     # zero work
    s.sql("UPDATE basket_basket SET status = 'Submitted', date_submitted = '2026-01-01'")
    s.add_line(1, PRODUCT, p["qty"], p["size"], p["color"])
    s.sql("INSERT INTO basket_basket VALUES (2, ?, 'Open', NULL)", USER)      # Oscar's next basket
    place_order(s, 5)
    v = s.verdict()
    assert paid(v), failing(v)
    place_order(s, 6)                                                       # ordered twice
    v = s.verdict()
    assert not v["success"] and "an order is placed" in failing(v)


@pytest.mark.parametrize("wrong", ["method", "size", "qty", "user"])
def test_checkout_wrong_value_or_entity(tmp_path, wrong):
    s = shop(tmp_path, "checkout")
    p = s.inst.params
    bad = {"method": {"method": next(m for m in ("standard", "express", "overnight") if m != p["method"])},
           "size": {"size": p["size"] + "X"}, "qty": {"qty": p["qty"] + 1}, "user": {"user": OTHER_USER}}[wrong]
    place_order(s, 5, **bad)
    assert not s.verdict()["success"]


# ----------------------------------------------------------------------------- flow: review

def test_review(tmp_path):
    s = shop(tmp_path, "write_review")
    p = s.inst.params
    s.bookkeeping()
    assert s.verdict()["progress"] == 0
    s.sql("INSERT INTO reviews_productreview VALUES (1, ?, ?, ?, ?, ?, 1)", OTHER_PRODUCT, USER, p["rating"],
          p["title"], p["body"])                                           # wrong entity
    v = s.verdict()
    assert not v["success"] and failing(v) == [f"about {p['name']}"]
    s.sql("UPDATE reviews_productreview SET product_id = ?, score = ?", PRODUCT, p["rating"] % 5 + 1)   # wrong value
    assert not s.verdict()["success"]
    s.sql("UPDATE reviews_productreview SET score = ?", p["rating"])
    s.sql("UPDATE catalogue_product SET rating = ? WHERE id = ?", float(p["rating"]), PRODUCT)
    assert paid(s.verdict())
    s.sql("INSERT INTO reviews_productreview VALUES (2, ?, ?, ?, ?, ?, 1)", PRODUCT, USER, p["rating"], p["title"],
          p["body"])                                                       # posted twice
    v = s.verdict()
    assert not v["clean"] and "collateral: reviews_productreview.2" in failing(v)


# ----------------------------------------------------------------------------- refusal

def test_refusal(tmp_path):
    s = shop(tmp_path, "cancel_shipped")
    s.bookkeeping()
    assert not s.verdict()["success"]                                      # zero work: no refusal
    assert s.verdict()["progress"] == 0                                    # nor progress (the status is a guard)
    assert paid(s.verdict(refused=True))
    s.sql("UPDATE order_order SET status = 'Cancelled'")                    # changed it anyway
    v = s.verdict(refused=True)
    assert not v["success"] and not v["clean"]


# ----------------------------------------------------------------------------- end to end (opt-in)

@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("SIMWEB_OSCAR_E2E") != "1",
                    reason="installs django-oscar into a temporary home (2-9 min); set SIMWEB_OSCAR_E2E=1")
def test_end_to_end_install_start_run_stop(tmp_path):
    from simweb.agents.scripted import ScriptedAgent
    from simweb.live.counterparts.base import group_members, port_free
    from simweb.live.web import WebEnv

    cp = Oscar(tmp_path / "oscar")
    cp.install(progress=False)
    assert cp.installed() and cp.database().exists() and cp.index_dir().is_dir()
    port = next(p for p in range(18601, 18700) if port_free(p))
    url = cp.start(port)
    pid = cp.status()["pid"]
    try:
        fam = FAM["add_with_options"]
        inst = fam.instances(1)[0]
        # simweb, in-process
        env = simweb.make("shopping", seed=0)
        obs, _ = env.reset(seed=inst.sim_seed, options={"task": inst.sim_task})
        agent = ScriptedAgent(fam.script(inst))
        agent.reset(env)
        while not agent.done:
            obs, _, term, trunc, info = env.step(agent.act(obs))
        assert info["verdict"]["success"]
        # the counterpart, in Chromium
        live = WebEnv(url + "/")
        try:
            live.reset(options={"url": url + "/", "goal": inst.goal})
            assert inst.user
            cp.sign_in(live, inst.user)                  # not an episode step
            live.page.goto(url + fam.live_start(inst))
            obs, *_ = live.step("noop()")
            agent = ScriptedAgent(fam.script(inst))
            agent.reset(live)
            for _ in range(30):
                if agent.done:
                    break
                obs, *_ = live.step(agent.act(obs))
        finally:
            live.close()
        assert not agent.stuck, agent.log
        v = fam.live_verify(cp, inst, None, False)
        assert paid(v), v
        cp.reset()
        assert fam.live_verify(cp, inst, None, False)["progress"] == 0     # reset restored the pristine shop
        pid = cp.status()["pid"]
    finally:
        cp.stop()
    assert not group_members(pid) and cp.status()["running"] is False

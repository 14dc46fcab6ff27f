"""The booking:pretix pair: live verifiers on crafted pretix databases, the payload, the
scripts on simweb, and (opt-in, it installs pretix) one family end to end.

The live verifiers are attacked as simweb's red team attacks simweb's: zero work, the
wrong entity, the wrong value, the change done twice, and collateral damage must not pay;
pretix's own bookkeeping (sessions, the activity log, the settings it stores on first use)
must not count as damage.
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import simweb
from simweb.live.counterparts import families as pair_families
from simweb.live.counterparts import get
from simweb.live.counterparts.portable import KINDS
from simweb.live.counterparts.pretix import Pretix, booking_app, build_payload
from simweb.live.counterparts.pretix.families import FAMILIES, iso

FAM = {f.short: f for f in FAMILIES}

SCHEMA = """
CREATE TABLE django_session (session_key TEXT PRIMARY KEY, session_data TEXT);
CREATE TABLE pretixbase_logentry (id INTEGER PRIMARY KEY, action_type TEXT);
CREATE TABLE pretixbase_event_settingsstore (id INTEGER PRIMARY KEY, key TEXT, value TEXT, object_id INTEGER);
CREATE TABLE pretixbase_customer (id INTEGER PRIMARY KEY, external_identifier TEXT, email TEXT, last_login TEXT);
CREATE TABLE pretixbase_event (id INTEGER PRIMARY KEY, slug TEXT);
CREATE TABLE pretixbase_item (id INTEGER PRIMARY KEY, event_id INTEGER, name TEXT);
CREATE TABLE pretixbase_subevent (id INTEGER PRIMARY KEY, event_id INTEGER, date_from TEXT);
CREATE TABLE pretixbase_order (id INTEGER PRIMARY KEY, code TEXT, status TEXT, event_id INTEGER, customer_id INTEGER,
                               email TEXT, total TEXT, last_modified TEXT);
CREATE TABLE pretixbase_orderposition (id INTEGER PRIMARY KEY, order_id INTEGER, positionid INTEGER, item_id INTEGER,
                                       subevent_id INTEGER, attendee_name_parts TEXT, price TEXT, canceled INTEGER,
                                       meta_info TEXT);
CREATE TABLE pretixbase_orderfee (id INTEGER PRIMARY KEY, order_id INTEGER, fee_type TEXT, value TEXT,
                                  canceled INTEGER);
CREATE TABLE pretixbase_orderpayment (id INTEGER PRIMARY KEY, order_id INTEGER, state TEXT, amount TEXT);
"""
ME, SOMEONE = 1, 2
EVENT, OTHER_EVENT = 10, 11
ITEM, OTHER_ITEM = 20, 21
NIGHT, OTHER_NIGHT = 30, 31
ORDER = 40


def name_parts(name: str) -> str:
    return json.dumps({"_scheme": "full", "full_name": name})


class Shop:
    """A crafted pretix database: the pristine copy and the live file the verifiers read.

    It holds the instance's customer (and another), the instance's hotel (an event) with
    its room (an item) and night (a date), another hotel, and, for a booking-based
    instance, the booking as a pending order."""

    def __init__(self, home: Path, inst):
        self.cp = Pretix(home)
        self.inst = inst
        p = inst.params
        db = self.cp.pristine_path(self.cp.database())
        db.parent.mkdir(parents=True)
        conn = sqlite3.connect(db)
        conn.executescript(SCHEMA)
        conn.execute("INSERT INTO pretixbase_customer VALUES (?, ?, 'me@example.com', NULL)", (ME, inst.user))
        conn.execute("INSERT INTO pretixbase_customer VALUES (?, 'someone.else', 'o@example.com', NULL)", (SOMEONE,))
        pid = p.get("property_id", 1)
        conn.execute("INSERT INTO pretixbase_event VALUES (?, ?), (?, 'h99999')", (EVENT, f"h{pid}", OTHER_EVENT))
        conn.execute("INSERT INTO pretixbase_item VALUES (?, ?, ?), (?, ?, ?)",
                     (ITEM, EVENT, json.dumps({"en": p.get("room", "Family Room")}), OTHER_ITEM, EVENT,
                      json.dumps({"en": "Broom Cupboard"})))
        day = p.get("checkin", 10)
        conn.execute("INSERT INTO pretixbase_subevent VALUES (?, ?, ?), (?, ?, ?)",
                     (NIGHT, EVENT, f"{iso(day)} 15:00:00", OTHER_NIGHT, EVENT, f"{iso(day + 1)} 15:00:00"))
        if "code" in p:
            conn.execute("INSERT INTO pretixbase_order VALUES (?, ?, 'n', ?, ?, 'me@example.com', '264.00', 't0')",
                         (ORDER, p["code"], EVENT, ME))
            conn.execute("INSERT INTO pretixbase_orderposition VALUES (1, ?, 1, ?, ?, ?, '264.00', 0, '{}')",
                         (ORDER, ITEM, NIGHT, name_parts("Old Guest")))
            conn.execute("INSERT INTO pretixbase_orderpayment VALUES (1, ?, 'created', '264.00')", (ORDER,))
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
        """What browsing and signing in alone write: a session, log entries, settings
        defaults, the customer's last login, the order's last-modified stamp."""
        self.sql("INSERT INTO django_session VALUES ('k', 'data')")
        self.sql("INSERT INTO pretixbase_logentry VALUES (1, 'pretix.customer.login')")
        self.sql("INSERT INTO pretixbase_event_settingsstore VALUES (1, 'payment_free__fee_reverse_calc', 'True', ?)",
                 EVENT)
        self.sql("UPDATE pretixbase_customer SET last_login = '2026-01-01' WHERE id = ?", ME)
        self.sql("UPDATE pretixbase_order SET last_modified = 't1'")

    def place_order(self, oid: int, customer: int = ME, event: int = EVENT, item: int = ITEM, night: int = NIGHT,
                    guest: str | None = None, status: str = "n") -> None:
        guest = self.inst.params.get("guest", "Someone") if guest is None else guest
        self.sql("INSERT INTO pretixbase_order VALUES (?, ?, ?, ?, ?, 'me@example.com', '100.00', 't1')",
                 oid, f"NEW{oid}", status, event, customer)
        self.sql("INSERT INTO pretixbase_orderposition VALUES (?, ?, 1, ?, ?, ?, '100.00', 0, '{}')",
                 oid * 10, oid, item, night, name_parts(guest))
        self.sql("INSERT INTO pretixbase_orderpayment VALUES (?, ?, 'created', '100.00')", oid * 10, oid)

    def verdict(self, answer: str | None = None, refused: bool = False) -> dict:
        fam = next(f for f in FAMILIES if f.id == self.inst.family)
        return fam.live_verify(self.cp, self.inst, answer, refused)


def shop(tmp_path: Path, family: str, index: int = 0) -> Shop:
    return Shop(tmp_path / "home", FAM[family].instances(index + 1)[index])


def paid(v: dict) -> bool:
    return v["success"] and v["clean"]


def failing(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if not c["ok"]]


# ----------------------------------------------------------------------------- the pair

def test_the_pair_is_registered_and_lists_its_families():
    cp = get("pretix", "/nonexistent/pretix-home")
    assert isinstance(cp, Pretix) and cp.app == "booking" and cp.default_port == 8605
    assert [f.id for f in pair_families("pretix")] == [f.id for f in FAMILIES]


def test_families_cover_every_kind_with_simweb_templates():
    app = booking_app()
    assert {f.kind for f in FAMILIES} >= set(KINDS)
    assert len({f.id for f in FAMILIES}) == len(FAMILIES) >= 5
    for fam in FAMILIES:
        assert fam.pair == "booking:pretix" and fam.sim_task in app.tasks
        insts = fam.instances(3)
        assert [i.index for i in insts] == [0, 1, 2]
        for inst in insts:
            assert inst.goal == app.tasks[fam.sim_task].instantiate(app, inst.sim_seed).goal
            assert inst.user is not None and fam.script(inst)


def test_instances_fit_the_mapping():
    # pretix sells a date, not a range: the stay families use one-night stays only.
    for short in ("stay_price", "book_room", "sold_out"):
        assert all(i.params["nights"] == 1 for i in FAM[short].instances(5))
    assert all(not i.params["feasible"] for i in FAM["sold_out"].instances(5))
    assert all(not i.params["feasible"] and i.params["fee"] > 0 for i in FAM["cancel_too_late"].instances(5))


def test_the_payload_holds_every_entity_the_instances_use():
    from simweb.apps.booking.world import night_cents

    app = booking_app()
    w = app.world
    payload = build_payload(app, "simweb-pass")
    props = {p["id"]: p for p in payload["properties"]}
    users = {u["username"] for u in payload["users"]}
    codes = {b["code"]: b for b in payload["bookings"]}
    for fam in FAMILIES:
        for inst in fam.instances(5):
            p = inst.params
            assert inst.user in users
            if "code" in p:
                b = codes[p["code"]]
                assert b["id"] == p["booking_id"] and str(b["checkin_day"]) in props[b["property_id"]]["nights"]
            if "room_type_id" in p and "code" not in p:
                night = props[p["property_id"]]["nights"][str(p["checkin"])][str(p["room_type_id"])]
                rt = w.room_type(p["room_type_id"])
                # Same price and rooms left as the simweb world, on that night.
                assert night["price_cents"] == night_cents(rt, w.property(p["property_id"])["season"], p["checkin"])
                assert night["left"] == int(rt["avail"][p["checkin"]])
                if fam.short == "stay_price":
                    assert night["price_cents"] == p["subtotal"]
                if fam.short == "sold_out":
                    assert night["left"] == 0
    assert payload == build_payload(app, "simweb-pass")      # deterministic


# ----------------------------------------------------------------------------- info and search

def test_price_answer(tmp_path):
    s = shop(tmp_path, "stay_price")
    cents = s.inst.params["subtotal"]
    s.bookkeeping()                                            # browsing is not damage
    assert paid(s.verdict(f"${cents / 100:,.2f}"))
    assert not s.verdict(None)["success"]                      # zero work
    assert not s.verdict(f"${(cents + 100) / 100:,.2f}")["success"]   # wrong value
    s.place_order(50)                                          # right answer, but it booked the room
    v = s.verdict(f"${cents / 100:,.2f}")
    assert v["success"] and not v["clean"] and "collateral: pretixbase_order.50" in failing(v)


def test_confirmation_code_answer(tmp_path):
    s = shop(tmp_path, "confirmation_code")
    code = s.inst.params["code"]
    s.bookkeeping()
    assert paid(s.verdict(code))
    assert not s.verdict(None)["success"]
    assert not s.verdict("ZZZZZZZZ")["success"]                # another booking's code
    s.sql("UPDATE pretixbase_order SET status = 'c' WHERE id = ?", ORDER)      # and it cancelled the booking
    v = s.verdict(code)
    assert not v["clean"] and "collateral: pretixbase_order.40.status" in failing(v)


# ----------------------------------------------------------------------------- form: change the guest

def test_change_guest(tmp_path):
    s = shop(tmp_path, "change_guest")
    guest = s.inst.params["guest"]
    s.bookkeeping()
    v = s.verdict()
    assert not v["success"] and v["progress"] == 0 and v["clean"]            # zero work
    s.sql("UPDATE pretixbase_orderposition SET attendee_name_parts = ? WHERE id = 1", name_parts("Wrong Person"))
    assert not s.verdict()["success"]                                        # wrong value
    s.sql("UPDATE pretixbase_orderposition SET attendee_name_parts = ?, meta_info = '{\"x\": 1}' WHERE id = 1",
          name_parts(guest.lower() + "."))
    assert paid(s.verdict())             # simweb's text match (case, trailing full stop); meta_info is pretix's
    s.sql("UPDATE pretixbase_order SET email = 'new@example.com' WHERE id = ?", ORDER)   # "keep the email"
    v = s.verdict()
    assert v["success"] and not v["clean"] and "collateral: pretixbase_order.40.email" in failing(v)


def test_change_guest_on_another_order_does_not_count(tmp_path):
    s = shop(tmp_path, "change_guest")
    s.place_order(50, guest="Old Guest")
    s.sql("UPDATE pretixbase_orderposition SET attendee_name_parts = ? WHERE id = 500", name_parts(s.inst.params["guest"]))
    v = s.verdict()
    assert not v["success"] and not v["clean"]


# ----------------------------------------------------------------------------- flows

def test_book_room(tmp_path):
    s = shop(tmp_path, "book_room")
    s.bookkeeping()
    v = s.verdict()
    assert not v["success"] and v["progress"] == 0 and v["clean"]            # zero work
    s.place_order(50)
    s.sql("INSERT INTO pretixbase_logentry VALUES (2, 'pretix.event.order.placed')")
    assert paid(s.verdict()), s.verdict()
    s.place_order(51)                                                        # booked twice
    v = s.verdict()
    assert not v["success"] and "one booking is placed" in failing(v)


@pytest.mark.parametrize("wrong", ["customer", "event", "item", "night", "guest", "status"])
def test_book_room_wrong_value_or_entity(tmp_path, wrong):
    s = shop(tmp_path, "book_room")
    cases: dict[str, dict[str, Any]] = {
        "customer": {"customer": SOMEONE}, "event": {"event": OTHER_EVENT}, "item": {"item": OTHER_ITEM},
        "night": {"night": OTHER_NIGHT}, "guest": {"guest": "Nobody Else"}, "status": {"status": "c"}}
    s.place_order(50, **cases[wrong])
    assert not s.verdict()["success"]


def test_cancel_free(tmp_path):
    s = shop(tmp_path, "cancel_free")
    s.bookkeeping()
    v = s.verdict()
    assert not v["success"] and v["progress"] == 0 and v["clean"]            # zero work earns nothing
    s.sql("UPDATE pretixbase_order SET status = 'c' WHERE id = ?", ORDER)
    s.sql("UPDATE pretixbase_orderpayment SET state = 'canceled' WHERE order_id = ?", ORDER)
    assert paid(s.verdict())
    s.sql("INSERT INTO pretixbase_orderfee VALUES (1, ?, 'cancellation', '26.40', 0)", ORDER)   # a fee kept
    assert not s.verdict()["success"]


def test_cancelling_another_booking_does_not_count(tmp_path):
    s = shop(tmp_path, "cancel_free")
    s.place_order(50)
    s.sql("UPDATE pretixbase_order SET status = 'c' WHERE id = 50")
    v = s.verdict()
    assert not v["success"] and not v["clean"]


# ----------------------------------------------------------------------------- refusals

def test_sold_out_refusal(tmp_path):
    s = shop(tmp_path, "sold_out")
    s.bookkeeping()
    assert s.verdict(None)["progress"] == 0 and not s.verdict(None)["success"]   # zero work: nothing (a guard)
    assert paid(s.verdict(refused=True))
    v = s.verdict("I booked it")
    assert not v["success"] and "refused the task" in failing(v)             # no refusal
    s.place_order(50)                                                        # refused, but booked anyway
    assert not s.verdict(refused=True)["success"]


def test_cancel_too_late_refusal(tmp_path):
    s = shop(tmp_path, "cancel_too_late")
    s.bookkeeping()
    assert paid(s.verdict(refused=True))
    assert not s.verdict(None)["success"]                                    # zero work is no refusal
    assert s.verdict(None)["progress"] == 0                                  # nor progress (the order left: a guard)
    s.sql("UPDATE pretixbase_order SET status = 'c' WHERE id = ?", ORDER)    # cancelled it, then refused
    v = s.verdict(refused=True)
    assert not v["success"] and not v["clean"]


# ----------------------------------------------------------------------------- end to end

@pytest.mark.slow
@pytest.mark.browser
@pytest.mark.skipif(os.environ.get("SIMWEB_PRETIX_E2E") != "1",
                    reason="installs pretix into a temporary home (about 4-6 min: pip, a 96 s migrate, "
                           "seeding); set SIMWEB_PRETIX_E2E=1")
def test_end_to_end_install_start_run_stop(tmp_path):
    from simweb.agents.scripted import ScriptedAgent
    from simweb.live.counterparts.base import group_members, port_free
    from simweb.live.web import WebEnv

    cp = Pretix(tmp_path / "pretix")
    cp.install(progress=False)
    assert cp.installed() and cp.database().exists()
    port = next(p for p in range(18605, 18700) if port_free(p))
    url = cp.start(port)
    pid = cp.status()["pid"]
    try:
        fam = FAM["change_guest"]
        inst = fam.instances(1)[0]
        env = simweb.make("booking", seed=0)
        obs, _ = env.reset(seed=inst.sim_seed, options={"task": inst.sim_task})
        agent = ScriptedAgent(fam.script(inst))
        agent.reset(env)
        while not agent.done:
            obs, _, term, trunc, info = env.step(agent.act(obs))
        assert info["verdict"]["success"]
        live = WebEnv(url + "/")
        try:
            live.reset(options={"url": url + fam.live_start(inst), "goal": inst.goal})
            assert inst.user
            cp.sign_in(live, inst.user)
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

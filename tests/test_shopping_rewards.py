"""Simshop's rewards against the attacks an RL policy would find (issue 7): damage that a
table-level allowance hid, over-doing, do-then-undo, wrong or deleted content, refusals
without looking, guessable answers. Each test runs the oracle, then attacks through the
site (or by editing the final state where the site would need many steps) and asserts
the verdict: success, progress, clean and the collateral check that names the damage."""
from __future__ import annotations

import re

import pytest

import simweb
from simweb.core.worlddb import day_to_date


@pytest.fixture(scope="module")
def env():
    return simweb.make("shopping", seed=0)


def _run(env, actions: list[str]) -> dict:
    info: dict = {"verdict": None}
    for a in actions:
        obs, _, terminated, truncated, info = env.step(a)
        assert obs["last_action_error"] == "", f"{a}: {obs['last_action_error']}"
        if terminated or truncated:
            break
    return info["verdict"]


def _solve(env, task: str, seed: int = 0) -> dict:
    env.reset(seed=seed, options={"task": task})
    v = _run(env, env.oracle_plan(final=False))
    assert v["success"] and v["clean"] and v["progress"] == 1.0, v
    return v


def _judge(env, final: dict, answer: str | None = None) -> dict:
    t = env.task
    return env.app.tasks[t.id].verify(env.app, t.params, env.start_state(), final, answer)


def _collateral(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if c["name"].startswith("collateral:")]


def _delivered_orders(env, uid: int, but: int | None = None) -> list[dict]:
    return [o for o in env.app.world.orders(uid) if o["status"] == "delivered" and o["id"] != but]


# ----------------------------------------------------------------------------- orders

def test_filing_returns_on_other_orders_while_buying_is_collateral(env):
    # Under the old allowance (the whole orders table) this was success and clean.
    seed = next(s for s in range(40) if len(_delivered_orders(
        env, env.app.tasks["shopping/buy_product"].instantiate(env.app, s).params["user_id"])) >= 3)
    _solve(env, "shopping/buy_product", seed)
    final = env.snapshot()
    others = _delivered_orders(env, env.task.params["user_id"])[:3]
    for o in others:
        final["runtime"]["entities"]["orders"][str(o["id"])] = dict(o, status="return_requested",
                                                                      return_reason="damaged")
    v = _judge(env, final)
    assert v["success"] and not v["clean"]
    names = _collateral(v)
    for o in others:
        assert f"collateral: runtime.entities.orders.{o['id']}.status" in names


def test_ordering_extra_units_in_other_sizes_and_colours_does_not_count(env):
    env.reset(seed=1, options={"task": "shopping/buy_product"})
    p = env.task.params
    prod = env.app.world.product(p["product_id"])
    other_size = next(s for s in prod["options"]["size"] if s != p["size"])
    plan = env.oracle_plan(final=False)
    at = plan.index("click('nav-cart')")
    extra = [f"select_option('opt-size', {other_size!r})", f"select_option('opt-color', {p['color']!r})",
             "click('add-to-cart')"]
    # Back on the product page after the first add, add the same product in another size.
    plan = plan[:at] + [f"goto('/p/{prod['id']}')"] + extra + plan[at:]
    v = _run(env, plan)
    assert not v["success"] and not v["clean"]
    order = next(c for c in v["checks"] if c["name"] == "the order")
    assert not order["passed"] and "items" in order["detail"]
    assert any(re.fullmatch(r"collateral: runtime\.entities\.orders\.\d+", n) for n in _collateral(v))


def test_a_second_order_is_collateral_and_the_right_one_still_counts(env):
    _solve(env, "shopping/buy_product", 2)
    final = env.snapshot()
    orders = final["runtime"]["entities"]["orders"]
    (oid, row), = [(k, r) for k, r in orders.items() if r]
    orders[str(int(oid) + 1)] = dict(row, id=int(oid) + 1)
    v = _judge(env, final)
    assert v["success"] and not v["clean"]
    assert f"collateral: runtime.entities.orders.{int(oid) + 1}" in _collateral(v)


def test_buying_then_cancelling_the_new_order_earns_nothing(env):
    _solve(env, "shopping/buy_product", 3)
    final = env.snapshot()
    orders = final["runtime"]["entities"]["orders"]
    oid = next(k for k, r in orders.items() if r)
    orders[oid] = dict(orders[oid], status="cancelled")
    v = _judge(env, final)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]


def test_the_coupon_order_needs_the_coupon(env):
    env.reset(seed=0, options={"task": "shopping/buy_with_coupon"})
    plan = env.oracle_plan(final=False)
    plan = [a for a in plan if "coupon" not in a]
    v = _run(env, plan)
    assert not v["success"] and not v["clean"]        # an order, but not the one asked for


def test_cancel_restores_stock_as_bookkeeping_and_other_orders_are_collateral(env):
    _solve(env, "shopping/cancel_order", 0)
    final = env.snapshot()
    assert any(k.isdigit() for k in final["runtime"]["entities"].get("products", {}))   # stock moved back
    uid = env.task.params["user_id"]
    other = next(o for o in env.app.world.orders(uid) if o["id"] != env.task.params["order_id"])
    final["runtime"]["entities"]["orders"][str(other["id"])] = dict(other, total_cents=1)
    v = _judge(env, final)
    assert v["success"] and _collateral(v) == [f"collateral: runtime.entities.orders.{other['id']}.total_cents"]


def test_a_return_with_the_wrong_reason_fails(env):
    env.reset(seed=0, options={"task": "shopping/return_order"})
    reason = env.task.params["reason"]
    wrong = next(r for r in ("damaged", "wrong_item", "other") if r != reason)
    plan = [re.sub(r"'return-reason', '\w+'", f"'return-reason', {wrong!r}", a) for a in env.oracle_plan(final=False)]
    v = _run(env, plan)
    assert not v["success"] and v["clean"]
    assert v["progress"] == pytest.approx(0.5)


# ----------------------------------------------------------------------------- cart and wishlist

def test_adding_ten_units_of_something_else_while_removing_an_item_fails(env):
    _solve(env, "shopping/remove_from_cart", 0)
    final = env.snapshot()
    uid = str(env.task.params["user_id"])
    pid = next(i for i in range(1, 500) if i not in env.task.params["products"] and env.app.world.product(i))
    final["runtime"]["carts"][uid]["items"].append(
        {"line": f"{pid}||", "product_id": pid, "qty": 10, "size": None, "color": None})
    v = _judge(env, final)
    assert not v["success"] and v["progress"] == 0.0


def test_removing_more_than_asked_fails(env):
    env.reset(seed=0, options={"task": "shopping/remove_from_cart"})
    keep = [p for p in env.task.params["products"] if p != env.task.params["remove"]][0]
    plan = env.oracle_plan(final=False)
    v = _run(env, plan[:1] + [f"click('remove-{keep}--')"] + plan[1:])
    assert not v["success"] and v["progress"] == 0.0


@pytest.mark.parametrize("change", ["qty", "colour", "extra"])
def test_add_with_options_over_doing_fails(env, change):
    _solve(env, "shopping/add_with_options", 0)
    final = env.snapshot()
    p = env.task.params
    items = final["runtime"]["carts"][str(p["user_id"])]["items"]
    colours = env.app.world.product(p["product_id"])["options"]["color"]
    if change == "qty":
        items[0]["qty"] += 1
    elif change == "colour":
        other = next(c for c in colours if c != p["color"])
        items.append(dict(items[0], color=other, line=f"{p['product_id']}|{p['size']}|{other}"))
    else:
        items.append({"line": "1||", "product_id": 1, "qty": 1, "size": None, "color": None})
    assert not _judge(env, final)["success"]


def test_cart_and_wishlist_facts_are_each_earned_and_over_doing_fails_them(env):
    env.reset(seed=0, options={"task": "shopping/cart_and_wishlist"})
    plan = env.oracle_plan(final=False)
    # Only the quantity change: a third of the work.
    v = _run(env, plan[:3])
    assert not v["success"] and v["progress"] == pytest.approx(1 / 3, abs=1e-6) and v["clean"]
    v = _run(env, plan[3:])
    assert v["success"] and v["clean"]
    final = env.snapshot()
    c = env.task.params["products"][2]
    for i in final["runtime"]["carts"][str(env.task.params["user_id"])]["items"]:
        if i["product_id"] == c:
            i["qty"] = 5
    v = _judge(env, final)
    assert not v["success"] and v["progress"] == pytest.approx(1 / 3, abs=1e-6)


def test_wishlist_add_then_remove_earns_nothing(env):
    # A state task ends at its success, so the undo is judged on the final state.
    _solve(env, "shopping/wishlist_add", 0)
    final = env.snapshot()
    uid, pid = str(env.task.params["user_id"]), env.task.params["product_id"]
    final["runtime"]["wishlists"][uid] = []
    v = _judge(env, final)
    assert not v["success"] and v["progress"] == 0.0 and v["clean"]
    final["runtime"]["wishlists"][uid] = [pid, pid + 1]
    assert not _judge(env, final)["success"]


def test_leaving_something_in_the_cart_during_an_info_task_is_collateral(env):
    t = env.app.tasks["shopping/product_price"]
    seed = next(s for s in range(40) if not any(env.app.world.product(
        t.instantiate(env.app, s).params["product_id"])["options"].values()))
    env.reset(seed=seed, options={"task": "shopping/product_price"})
    plan = env.oracle_plan(final=False)
    v = _run(env, plan[:-1] + ["click('add-to-cart')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert _collateral(v) == [f"collateral: runtime.carts.{env.task.params['user_id']}.items"]


def test_a_checkout_draft_is_bookkeeping(env):
    # Starting a checkout and choosing an address and method is a form draft, not a change.
    t = env.app.tasks["shopping/remove_from_cart"]
    seed = next(s for s in range(40) if env.app.world.addresses(t.instantiate(env.app, s).params["user_id"]))
    env.reset(seed=seed, options={"task": "shopping/remove_from_cart"})
    uid = env.task.params["user_id"]
    addr = env.app.world.addresses(uid)[0]["id"]
    plan = env.oracle_plan(final=False)
    v = _run(env, ["click('nav-cart')", "click('checkout')", f"click('addr-{addr}')", "click('ship-express')",
                   "click('continue-payment')"] + plan)
    assert v["success"] and v["clean"]
    assert env.snapshot()["runtime"]["checkout"][str(uid)]["shipping"] == "express"


# ----------------------------------------------------------------------------- account

def test_deleting_the_default_address_while_adding_one_is_collateral(env):
    # Under the old allowance (the whole addresses table) this was success and clean.
    t = env.app.tasks["shopping/add_address"]
    seed = next(s for s in range(40) if env.app.world.addresses(t.instantiate(env.app, s).params["user_id"]))
    env.reset(seed=seed, options={"task": "shopping/add_address"})
    default = env.app.world.addresses(env.task.params["user_id"])[0]
    plan = env.oracle_plan(final=False)
    v = _run(env, plan[:2] + [f"click('addr-delete-{default['id']}')"] + plan[2:])
    assert v["success"] and not v["clean"]
    assert f"collateral: runtime.entities.addresses.{default['id']}" in _collateral(v)


def test_make_default_needs_the_new_address_as_default(env):
    seed = next(s for s in range(40) if env.app.tasks["shopping/add_address"].instantiate(env.app, s).params["default"])
    env.reset(seed=seed, options={"task": "shopping/add_address"})
    v = _run(env, [a for a in env.oracle_plan(final=False) if "make-default" not in a])
    assert not v["success"] and v["progress"] == pytest.approx(0.5) and v["clean"]


def test_an_address_with_a_wrong_street_earns_nothing_and_is_collateral(env):
    env.reset(seed=0, options={"task": "shopping/add_address"})
    plan = [re.sub(r"fill\('addr-street', '[^']*'\)", "fill('addr-street', '1 Wrong Way')", a)
            for a in env.oracle_plan(final=False)]
    v = _run(env, plan)
    assert not v["success"] and not v["clean"]
    new = next(c for c in v["checks"] if c["name"] == "the new address")
    assert not new["passed"] and "street" in new["detail"]


def test_profile_field_damage_under_the_users_row_is_collateral(env):
    _solve(env, "shopping/update_profile", 0)
    final = env.snapshot()
    uid = str(env.task.params["user_id"])
    final["runtime"]["entities"]["users"][uid] = dict(final["runtime"]["entities"]["users"][uid],
                                                      full_name="Somebody Else", password="hunter22")
    v = _judge(env, final)
    assert v["success"] and not v["clean"]
    assert set(_collateral(v)) == {f"collateral: runtime.entities.users.{uid}.full_name",
                                   f"collateral: runtime.entities.users.{uid}.password"}


def test_password_task_flags_an_email_change(env):
    _solve(env, "shopping/change_password", 0)
    final = env.snapshot()
    uid = str(env.task.params["user_id"])
    final["runtime"]["entities"]["users"][uid]["email"] = "x@example.com"
    v = _judge(env, final)
    assert v["success"] and _collateral(v) == [f"collateral: runtime.entities.users.{uid}.email"]


def test_review_with_junk_content_earns_nothing(env):
    env.reset(seed=0, options={"task": "shopping/write_review"})
    plan = [re.sub(r"fill\('review-title', '[^']*'\)", "fill('review-title', 'lol')", a) for a in env.oracle_plan(final=False)]
    v = _run(env, plan)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]


def test_registering_with_another_email_earns_nothing(env):
    env.reset(seed=0, options={"task": "shopping/register"})
    plan = [re.sub(r"fill\('reg-email', '[^']*'\)", "fill('reg-email', 'other@mailbox.example')", a)
            for a in env.oracle_plan(final=False)]
    v = _run(env, plan)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]


# ----------------------------------------------------------------------------- refusals

def _cancel_seeds(env, feasible: bool, n: int = 2) -> list[int]:
    t = env.app.tasks["shopping/cancel_shipped_order"]
    return [s for s in range(60) if t.instantiate(env.app, s).params["feasible"] is feasible][:n]


def test_cancel_refusal_template_has_feasible_twins_with_the_same_phrasing(env):
    t = env.app.tasks["shopping/cancel_shipped_order"]
    insts = [t.instantiate(env.app, s) for s in range(60)]
    feasible = [i.params["feasible"] for i in insts]
    assert t.may_refuse and t.kind == "mixed" and 0.3 < sum(feasible) / len(feasible) < 0.7
    shapes = {re.sub(r"#\d+", "#N", i.goal) for i in insts}
    assert len(shapes) == 1


def test_refusing_without_looking_earns_nothing(env):
    for seed in _cancel_seeds(env, feasible=False):
        env.reset(seed=seed, options={"task": "shopping/cancel_shipped_order"})
        v = _run(env, ["report_infeasible('It has shipped.')"])
        assert not v["success"] and v["progress"] == 0.0
        (refusal,) = [c for c in v["checks"] if c["name"].startswith("reported as infeasible after viewing")]
        assert not refusal["passed"] and "never viewed" in refusal["detail"]


def test_refusing_a_feasible_twin_fails_and_cancelling_it_succeeds(env):
    for seed in _cancel_seeds(env, feasible=True):
        env.reset(seed=seed, options={"task": "shopping/cancel_shipped_order"})
        oid = env.task.params["order_id"]
        v = _run(env, ["click('nav-orders')", f"click('order-{oid}')", "report_infeasible('Too late.')"])
        assert not v["success"] and v["progress"] == 0.0
        _solve(env, "shopping/cancel_shipped_order", seed)


def test_refusal_after_reading_the_orders_list_is_paid(env):
    seed = _cancel_seeds(env, feasible=False, n=1)[0]
    env.reset(seed=seed, options={"task": "shopping/cancel_shipped_order"})
    v = _run(env, ["click('nav-orders')", "report_infeasible('It has already shipped.')"])
    assert v["success"] and v["clean"]


# ----------------------------------------------------------------------------- answers

def test_latest_order_status_needs_the_date_too(env):
    _solve(env, "shopping/latest_order_status", 0)
    p = env.task.params
    d = day_to_date(p["day"])
    final = env.snapshot()
    assert not _judge(env, final, p["status"])["success"]
    for form in (f"{p['status']}, {d:%b} {d.day}, {d.year}", f"{p['status'].replace(' ', '_')} on {d.isoformat()}",
                 f"Placed {d:%B} {d.day}, {d.year} - {p['status'].title()}",
                 f"The status is {p['status']} and it was placed on {d:%b} {d.day}, {d.year}."):
        assert _judge(env, final, form)["success"], form
    wrong = next(s for s in ("shipped", "delivered") if s != p["status"])
    assert not _judge(env, final, f"{wrong}, {d:%b} {d.day}, {d.year}")["success"]


def test_compare_ratings_needs_the_name_and_the_rating(env):
    _solve(env, "shopping/compare_ratings", 0)
    p = env.task.params
    final = env.snapshot()
    r = f"{p['rating']:.1f}"
    assert not _judge(env, final, p["answer"])["success"]
    assert not _judge(env, final, f"{p['other']}, {r}")["success"]
    for form in (f"{p['answer']}, {r}", f"{p['answer']} ({r} out of 5)", f"{r} stars: {p['answer']}"):
        assert _judge(env, final, form)["success"], form


@pytest.mark.parametrize("task,field", [("shopping/product_rating", "reviews"),
                                        ("shopping/compare_ratings", "rating"),
                                        ("shopping/latest_order_status", "status")])
def test_no_answer_is_right_on_more_than_a_tenth_of_instances(env, task, field):
    t = env.app.tasks[task]
    values = [t.instantiate(env.app, s).params[field] for s in range(60)]
    top = max(values.count(v) for v in values)
    if task == "shopping/latest_order_status":
        # the status alone is one answer most of the time; the answer needs the date
        days = [t.instantiate(env.app, s).params["day"] for s in range(60)]
        top = max(list(zip(values, days)).count(v) for v in zip(values, days))
    assert top / len(values) <= 0.1, (task, top)


def test_cancelling_a_feasible_twin_and_calling_it_impossible_is_not_paid(env):
    seed = _cancel_seeds(env, feasible=True, n=1)[0]
    # The episode would end at the cancel's success: judge the run that goes on to refuse.
    going_on = simweb.make("shopping", seed=0, end_on_success=False)
    going_on.reset(seed=seed, options={"task": "shopping/cancel_shipped_order"})
    plan = going_on.oracle_plan(final=False)
    v = _run(going_on, plan + ["report_infeasible('It cannot be cancelled.')"])
    # The cancel is done, but the refusal is a false claim: not clean, so neither reward
    # mode pays (a weight-0 fact took success away and left the progress potential).
    assert not v["clean"] and [c["name"] for c in v["checks"] if not c["passed"]] == [
        "collateral: not reported as infeasible"]

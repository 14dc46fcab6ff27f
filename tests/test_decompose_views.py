"""Sub-tasks that are a view of the site (simweb.effects.shows) and the rule that every
decomposable template splits: the check on the page the browser ends on, attacked the ways
a policy would try (more or fewer filters, another page kind, navigating away), the
collateral of giving the parent's answer, and check_app's enforcement."""
from __future__ import annotations

import types

import pytest

import simweb
from simweb.judging.decompose import Part, TaskTable, unsplit_reason, unsplit_templates
from simweb.judging.effects import Check, Effect, evaluate, page_view, shows
from simweb.judging.tasks import FactGroup, TaskTemplate
from simweb.tools.check import check_decomposition


def _at(env, url: str) -> dict:
    """The env's state after a GET of ``url`` in the active tab (the episode untouched)."""
    state = env.snapshot()
    env.app.navigate(state, url)
    return state


def _shows(env, check: Check, state: dict) -> bool:
    return check.test(env.app, env.start_state(), state, None)[0]


@pytest.fixture(scope="module")
def shop():
    env = simweb.make("shopping")
    env.reset(seed=0, options={"task": "shopping/cheapest_in_category.1"})
    p = env.task.params
    return env, p, f"/c/{p['category_slug']}"


def test_page_view_reads_urls_as_the_site_does(shop):
    env, p, base = shop
    clicked = f"{base}?q=&brand={p['brand_id']}&attr=&attr=&min=&max=&rating=&stock=1&sort=price_asc"
    typed = f"{base}?stock=1&sort=price_asc&brand={p['brand_id']}&page=1"
    assert page_view(env.app, clicked) == page_view(env.app, typed)
    assert page_view(env.app, f"{base}?max=56") == page_view(env.app, f"{base}?max=56.00")
    assert page_view(env.app, f"{base}?brand=2&brand=1") == page_view(env.app, f"{base}?brand=1&brand=2")
    assert page_view(env.app, "/no/such/page") is None


def test_the_view_check_pays_only_for_that_view(shop):
    env, p, base = shop
    want = shows(f"{base}?brand={p['brand_id']}&stock=1", free=("sort",))
    ok = [f"{base}?q=&brand={p['brand_id']}&attr=&min=&max=&rating=&stock=1&sort=price_asc",
          f"{base}?stock=on&brand={p['brand_id']}",                   # typed, another order, any sort
          f"{base}?brand={p['brand_id']}&stock=1&sort=rating"]
    for url in ok:
        assert _shows(env, want, _at(env, url)), url
    bad = [f"{base}?brand={p['brand_id']}",                               # a filter fewer
           f"{base}?brand={p['brand_id']}&stock=1&rating=4",              # a filter more
           f"{base}?brand={p['brand_id']}&brand=1&stock=1",               # another brand as well
           f"{base}?brand={p['brand_id']}&stock=1&page=2",                # another page of results
           f"/search?category={p['category_id']}&brand={p['brand_id']}&stock=1",   # another page kind
           f"/c/no-such-category?brand={p['brand_id']}&stock=1",          # a 404 is no view
           "/"]
    for url in bad:
        assert not _shows(env, want, _at(env, url)), url


def test_the_last_page_counts_not_the_way_there(shop):
    env, p, base = shop
    want = shows(f"{base}?brand={p['brand_id']}&stock=1", free=("sort",))
    state = _at(env, f"{base}?brand={p['brand_id']}&stock=1")
    assert _shows(env, want, state)
    env.app.navigate(state, "/cart")                                       # then away
    assert not _shows(env, want, state)
    state = _at(env, f"{base}?brand={p['brand_id']}&stock=1")
    state["browser"]["tabs"].append(dict(state["browser"]["tabs"][0], url="/", page="home", history=["/"], cursor=0))
    state["browser"]["active"] = 1                                         # another tab in front
    assert not _shows(env, want, state)


def test_a_view_sub_task_is_judged_on_every_navigation():
    """The episode's verdict cache is keyed by the page shown when the task reads it."""
    env = simweb.make("shopping", end_on_success=False)
    env.reset(seed=0, options={"task": "shopping/cheapest_in_category.1"})
    verdicts = []
    for action in env.oracle_plan(final=False) + ["click('nav-cart')"]:
        _, _, _, _, info = env.step(action)
        verdicts.append(info["verdict"]["success"])
    assert verdicts[-2:] == [True, False]


def test_a_view_sub_task_ends_when_the_view_is_shown():
    env = simweb.make("forum")
    env.reset(seed=1, options={"task": "forum/keyword_top_year.1"})
    assert env.task.kind == "state" and env.app.tasks["forum/keyword_top_year.1"].kind == "state"
    plan = env.oracle_plan()
    for i, action in enumerate(plan):
        _, reward, terminated, _, info = env.step(action)
        assert terminated == (i == len(plan) - 1)
    assert reward == 1.0 and info["verdict"]["clean"]


def test_giving_the_parents_answer_is_collateral():
    """A part of an information task that does not ask for the answer: answering anyway
    is the rest of the parent done, so the verdict is not clean."""
    env = simweb.make("issues")
    env.reset(seed=0, options={"task": "issues/most_commented_open.1"})
    start, p = env.start_state(), env.task.params
    sub = env.app.tasks["issues/most_commented_open.1"]
    env2 = simweb.make("issues")
    env2.reset(seed=0, options={"task": "issues/most_commented_open", "params": p})
    for action in env2.oracle_plan():
        env2.step(action)
    v = sub.verify(env.app, p, start, env2.state, f"#{p['iid']}")
    assert v["success"] and not v["clean"] and v["progress"] == 1.0
    assert any(c["name"].startswith("collateral: the number of the most commented issue") for c in v["checks"])
    other = sub.verify(env.app, p, start, env2.state, "I have the list open.")
    assert other["success"] and other["clean"]


def test_a_booking_hold_is_a_part_and_the_rest_of_the_form_is_collateral():
    env = simweb.make("booking", end_on_success=False)
    env.reset(seed=0, options={"task": "booking/book_room.1"})
    start, p = env.start_state(), env.task.params
    for action in env.oracle_plan(final=False):   # the work, not "done": the episode goes on
        _, _, _, _, info = env.step(action)
    assert info["verdict"]["success"] and info["verdict"]["clean"]
    env.step(f"fill('guest-name', {p['guest']!r})")
    _, _, _, _, info = env.step("click('guest-submit')")                   # the next step of the form
    assert info["verdict"]["success"] and not info["verdict"]["clean"]
    damage = [c["name"] for c in info["verdict"]["checks"] if c["name"].startswith("collateral")]
    assert any(f"checkout.{p['user_id']}" in name for name in damage)
    # a hold on another room is not the part
    state = env.snapshot()
    state["runtime"]["holds"][str(p["user_id"])]["room_type_id"] += 1
    sub = env.app.tasks["booking/book_room.1"]
    assert not evaluate(env.app, sub.effect_for(env.app, p, start), start, state)["success"]


# ----------------------------------------------------------------------------- the rule, enforced

class _Splittable(TaskTemplate):
    id = "x/splittable"

    def sample(self, app, rng):
        return {}

    def goal(self, app, p):
        return "Do three things and one more."

    def facts(self, app, p):
        return [FactGroup("a", "", ("1", "2", "3")), FactGroup("b", "", ("4",))]


class _Split(_Splittable):
    id = "x/split"

    def parts(self, app, p):
        return [Part(("a",), ("answer",), ("noop()",))]


class _Declared(_Splittable):
    id = "x/declared"
    splits = False
    split_reason = "one form submit does all of it"


class _Undeclared(_Splittable):
    id = "x/undeclared"
    splits = False


def _app(*templates: TaskTemplate) -> types.SimpleNamespace:
    app = types.SimpleNamespace()
    app.tasks = TaskTable(app, templates)
    return app


def test_a_decomposable_template_must_split_or_say_why():
    app = _app(_Splittable(), _Split(), _Declared(), _Undeclared())
    problems = unsplit_templates(app, seeds=range(2))
    assert [p.split()[0] for p in problems] == ["x/splittable", "x/undeclared"]
    assert "yields no sub-tasks" in problems[0] and "without a split_reason" in problems[1]
    assert unsplit_reason(_Declared()) == "one form submit does all of it" and unsplit_reason(_Split()) == ""


@pytest.mark.parametrize("app", ["shopping", "forum", "issues", "cms", "booking"])
def test_every_decomposable_template_of_every_app_splits(app):
    env = simweb.make(app)
    assert check_decomposition(env) == []


def test_a_view_check_on_an_unknown_page_is_an_error(shop):
    env, _, _ = shop
    with pytest.raises(ValueError, match="no page"):
        evaluate(env.app, Effect(checks=(shows("/no/such/page"),)), env.start_state(), env.state)


@pytest.mark.parametrize("app", ["shopping", "forum", "issues", "cms", "booking"])
def test_a_random_agent_almost_never_solves_a_sub_task(app):
    """check_app's random agent, on every sub-task (the views included: a random walk
    rarely lands on a page with exactly the asked filters)."""
    from simweb.tools.check import check_random_agent

    env = simweb.make(app)
    ids = [s.id for _, subs in env.app.tasks.with_sub_tasks() for s in subs]
    assert ids and check_random_agent(env, (0,), ids) == []

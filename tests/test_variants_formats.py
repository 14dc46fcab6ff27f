"""Price and date formats of site variants (simweb.variants, docs/variants.md): the page
writes prices and dates in the variant's format, never in a form value or a URL; an
answer read off the variant's page is judged the same (verdicts judge the value)."""
from __future__ import annotations

import datetime
import re

import pytest

import simweb
from simweb.core.worlddb import day_to_date
from simweb.runtime.variants import DATE_FORMATS, MONEY_FORMATS, catalogue


def _with(app: str, **want: str | None) -> int:
    cat = catalogue(app)
    # with today's policies: these tests replay today's plan on the variant (a policy changes
    # what the site does and which instance a task draws; tests/test_variants_policies.py)
    # and signed in at the start as today (a signed-out start adds a sign-in to the plan:
    # tests/test_variants_login.py)
    want.setdefault("sign_in", "signed-in")
    want.setdefault("menu", "bar")   # (a menu to open adds a click to the plan: tests/test_variants_menu.py)
    want = {f: v for f, v in want.items() if v is not None}   # (None: any value)
    return next(k for k in range(1, cat.count) if all(cat.values(k)[f] == v for f, v in want.items())
                and cat.policies(k) == cat.policy_defaults)


def test_apps_declare_their_price_and_date_writers():
    want = {"shopping": {"price_format", "date_format"}, "booking": {"price_format", "date_format"},
            "forum": {"date_format"}, "issues": {"date_format"}, "cms": {"date_format"}}
    for app, factors in want.items():
        names = {f.name for f in catalogue(app).factors}
        assert factors <= names and not ({"price_format", "date_format"} - factors) & names, app


@pytest.mark.parametrize("fmt", list(MONEY_FORMATS))
def test_a_product_price_in_the_variants_format_is_the_right_answer(fmt):
    k = _with("shopping", price_format=fmt)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=4, options={"task": "shopping/product_price"})
    plan = env.oracle_plan()
    for a in plan[:-1]:
        obs, *_ = env.step(a)
    cents = env.episode.task.params["price_cents"]
    shown = MONEY_FORMATS[fmt].format(sign="", amount=f"{cents // 100:,}.{cents % 100:02d}")
    today = f"${cents // 100:,}.{cents % 100:02d}"
    assert shown in obs["axtree"] and not re.search(r"(?<!US)" + re.escape(today), obs["axtree"])
    *_, info = env.step(f"send_msg_to_user({'It costs ' + shown!r})")
    assert info["verdict"]["success"] and info["verdict"]["clean"]


@pytest.mark.parametrize("fmt", list(DATE_FORMATS))
def test_an_order_date_in_the_variants_format_is_the_right_answer(fmt):
    k = _with("shopping", date_format=fmt)
    env = simweb.make("shopping", variant=k)
    env.reset(seed=2, options={"task": "shopping/latest_order_status"})
    obs, *_ = env.step("click('nav-orders')")
    p = env.episode.task.params
    d = day_to_date(p["day"])
    shown = DATE_FORMATS[fmt].format(y=d.year, m=d.month, d=d.day, month=f"{d:%B}", wd=f"{d:%a}")
    assert shown in obs["axtree"] and f"{d:%b} {d.day}, {d.year}" not in obs["axtree"]
    *_, info = env.step(f"send_msg_to_user({p['status'] + ', placed ' + shown!r})")
    assert info["verdict"]["success"] and info["verdict"]["clean"]


@pytest.mark.parametrize("fmt", [None, *DATE_FORMATS])
def test_a_date_written_with_its_weekday_names_the_weekday_once(fmt):
    """Booking's stay summary writes each day with its weekday ("Wed May 6, 2026"): a
    format that names the weekday names it once ("Wed, 6 May 2026", not "Wed Wed, 6 May
    2026"), a format that does not keeps it before the date ("Wed 2026-05-06")."""
    today_urls = next(f for f in catalogue("booking").factors if f.name == "url_scheme").options[0].label
    env = simweb.make("booking", variant=_with("booking", date_format=fmt, url_scheme=today_urls) if fmt else 0)
    env.reset(seed=1, options={"task": None})
    obs, *_ = env.step("goto('/hotels/137?checkin=2026-05-06&checkout=2026-05-09&guests=2')")
    found = re.search(r"StaticText '(\d nights: [^']*)'", obs["axtree"])
    assert found is not None, obs["axtree"]
    summary = found.group(1)
    want = []
    for d in (datetime.date(2026, 5, 6), datetime.date(2026, 5, 9)):
        shown = DATE_FORMATS[fmt].format(y=d.year, m=d.month, d=d.day, month=f"{d:%B}", wd=f"{d:%a}") if fmt \
            else f"{d:%b} {d.day}, {d.year}"
        want.append(shown if fmt and "{wd}" in DATE_FORMATS[fmt] else f"{d:%a} {shown}")
    assert summary == f"3 nights: {want[0]} – {want[1]}, 2 guests", summary
    assert len(re.findall(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)\b", summary)) == 2


def test_formats_never_touch_values_or_urls(app_name):
    """Every element the format variant shares with today's site has the same link, field
    name, value and options, along every template's oracle run."""
    cat = catalogue(app_name)
    kinds = [f for f in cat.factors if f.name in ("price_format", "date_format")]
    want: dict[str, str | None] = {f.name: f.options[len(f.options) - 1].label for f in kinds}
    want["url_scheme"] = next(f for f in cat.factors if f.name == "url_scheme").options[0].label   # links compared as they are
    want["confirm_step"] = "none"   # today's plan, action for action (a confirmation page would add a click)
    want["form_steps"] = "one-step"   # (and a multi-step form would move a plan's second-page actions)
    want["menu"] = None   # any: a menu to open is opened on the variant's page (no such variant of booking has none)
    want["pagination"] = "pager"   # today's pager (a numbered one adds links; "Show more results" is a form)
    k = _with(app_name, **want)
    env0, env = simweb.make(app_name), simweb.make(app_name, variant=k)
    changed = 0
    for i, tid in enumerate(env.app.tasks):
        env0.reset(seed=i, options={"task": tid})
        env.reset(seed=i, options={"task": tid})
        for a in env0.oracle_plan():
            target = re.match(r"\w+\('([^']*)'", a)
            for summary in (env.browser.summaries_to_show(target.group(1)) or []) if target else []:
                env.step(f"click({summary!r})")   # the menu that hides the element, opened first
            o0, *_ = env0.step(a)
            o, *_ = env.step(a)
            p0, p = env0.browser.page(), env.browser.page()
            for bid in set(p0.elements) & set(p.elements):
                e0, e = p0.elements[bid], p.elements[bid]
                assert (e0.href, e0.field_name, e0.value, [o[0] for o in e0.options]) == \
                       (e.href, e.field_name, e.value, [o[0] for o in e.options]), (tid, bid)
            changed += o["axtree"] != o0["axtree"]
        assert env.snapshot()["runtime"] == env0.snapshot()["runtime"], tid
    assert changed, "the formats changed no page"

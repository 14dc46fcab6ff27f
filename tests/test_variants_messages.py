"""Site variants: the messages a spec writes in the variant's words, and complete
singular/plural lexicons (docs/variants.md, simweb/runtime/variant_messages.py).

Variants are asked of the catalogue by factor value (adding a factor remaps ids)."""
from __future__ import annotations

import html as html_lib
import re
from collections.abc import Callable, Iterator
from typing import Any

import markupsafe
import pytest
from conftest import APPS, run_plan

import simweb
from simweb.runtime import variants
from simweb.runtime.variant_messages import message_shapes
from simweb.runtime.variants import MENU_SUMMARIES, catalogue, jinja_for
from simweb.runtime.variants import message_shapes as shapes_of


def _variant(app: str, **want: str) -> int:
    """The first variant (id >= 1) with the factor values ``want``."""
    cat = catalogue(app)
    for k in range(1, 20000):
        values = cat.values(k)
        if all(values[f] == v for f, v in want.items()):
            return k
    raise AssertionError(f"{app}: no variant with {want}")


def _flashed(env: Any, message: str, level: str = "success") -> str:
    """The active page's HTML with ``message`` as its flash (the state keeps it as is)."""
    u = env.unwrapped
    tab = u.state["browser"]["tabs"][u.state["browser"]["active"]]
    tab["flash"] = {"level": level, "message": message}
    return u.app.render(u.state)


# ----------------------------------------------------------------------------- the split
def test_shapes_read_the_spec_words_of_conditionals() -> None:
    """A message's shapes: its text, and the string constants its expressions spell out
    (one shape per branch); what an expression reads is a hole."""
    assert message_shapes("Issue #{n} was created.") == [("Issue #", None, " was created.")]
    assert message_shapes("{('Due date set to ' + params.due) if d is not None else 'Due date removed'}.") == [
        ("Due date set to ", None, "."), ("Due date removed.",)]
    assert message_shapes("{st.error or 'Enter your dates.'}") == [(None,), ("Enter your dates.",)]
    assert message_shapes("Literal {{braces}}") == [("Literal {braces}",)]


def test_values_written_into_a_message_are_not_the_spec_words() -> None:
    """The split of a kept message: the spec's pieces, and the values (world data, typed
    text, a field's allowed values) as they were written."""
    issues = simweb.make("issues", seed=0).unwrapped.app
    cms = simweb.make("cms", seed=0).unwrapped.app
    assert shapes_of(issues).segments("Milestone set to Issue tracker v2.") == (
        (True, "Milestone set to "), (False, "Issue tracker v2"), (True, "."))
    assert shapes_of(issues).segments("Title is required.") == ((True, "Title is required."),)
    assert shapes_of(cms).segments("Kind must be one of: post, page.") == (
        (True, "Kind must be one of: "), (False, "post, page"), (True, "."))
    assert shapes_of(cms).segments("not a message of the spec") == ((False, "not a message of the spec"),)


# ----------------------------------------------------------------------------- on the page
def test_a_flash_is_shown_in_the_variant_words_and_kept_in_today_s() -> None:
    """issues on a "tickets" site with "workspace" words: the spec's "Issue #7 was
    created." shows as "Ticket #7 was created.", a milestone named "Issue tracker v2" is
    not rewritten while the spec's "Milestone" is; a value is escaped as today. The state
    keeps today's text (the same on every variant), and variant 0 shows it as is."""
    k = _variant("issues", item_words="tickets", nav_words="workspace")
    env = simweb.make("issues", variant=k)
    env.reset(seed=1, options={"task": "issues/create_issue"})
    page = _flashed(env, "Issue #7 was created.")
    assert ">Ticket #7 was created.<" in page and "Issue #7" not in page
    page = _flashed(env, "Milestone set to Issue tracker v2.")
    assert "Release set to Issue tracker v2." in page
    page = _flashed(env, "Milestone set to <b>Issue</b>.")
    assert "Release set to &lt;b&gt;Issue&lt;/b&gt;." in page
    tab = env.unwrapped.state["browser"]["tabs"][0]
    assert tab["flash"]["message"] == "Milestone set to <b>Issue</b>."
    today = simweb.make("issues", variant=0)
    today.reset(seed=1, options={"task": "issues/create_issue"})
    assert ">Issue #7 was created.<" in _flashed(today, "Issue #7 was created.")


def test_an_event_s_flash_in_the_variant_words() -> None:
    """shopping on a "basket" site: adding to the cart (the oracle's own step) flashes
    "... to your basket." on the page while the state keeps "... to your cart."; a product
    named with the replaced word keeps its name."""
    k = _variant("shopping", cart_words="basket")
    env = simweb.make("shopping", variant=k)
    env.reset(seed=2, options={"task": "shopping/add_to_cart"})
    u = env.unwrapped
    seen = False
    for a in u.oracle_plan():
        env.step(a)
        flash = u.state["browser"]["tabs"][u.state["browser"]["active"]]["flash"]
        if flash and flash["message"].startswith("Added "):
            assert flash["message"].endswith(" to your cart.")
            shown = markupsafe.escape(flash["message"][:-len(" to your cart.")] + " to your basket.")
            assert str(shown) in u.app.render(u.state)
            seen = True
    assert seen
    page = _flashed(env, "Removed Cart holder from your cart.")
    assert "Removed Cart holder from your basket." in page


def test_a_refusal_and_site_error_in_the_variant_words() -> None:
    """cms on a "dashboard" site (comments are "responses"): a comment too long is refused
    with the spec's "Comment must be at most 5000 characters."; the page and
    ``info["site_error"]`` say "Response must be ...", the state keeps today's text."""
    k = _variant("cms", admin_nav_words="dashboard")
    env = simweb.make("cms", variant=k)
    env.reset(seed=1, options={"task": "cms/comment_and_publish"})
    u = env.unwrapped
    for a in u.oracle_plan():
        env.step(a)
        if u.state["browser"]["tabs"][u.state["browser"]["active"]]["page"] == "public_post":
            break
    else:
        raise AssertionError("the oracle never opened a post's public page")
    env.step("fill('comment-name', 'Ann')")
    env.step("fill('comment-email', 'ann@example.test')")
    env.step(f"fill('comment-body', {'x' * 5001!r})")
    obs, _, _, _, info = env.step("click('comment-submit')")
    tab = u.state["browser"]["tabs"][u.state["browser"]["active"]]
    assert tab["flash"]["message"] == "Comment must be at most 5000 characters."
    assert info["site_error"] == "Response must be at most 5000 characters."
    assert "Response must be at most 5000 characters." in u.app.render(u.state)


# ----------------------------------------------------------------------------- lexicons
#: The nouns of every app's lexicons, each with the forms a page can write it in: a
#: variant that replaces the noun replaces every one of them (a verb key, "Search",
#: "Reply", "Post comment", is not one: its other forms are other words).
NOUNS: dict[str, dict[str, tuple[str, ...]]] = {
    "issues": {"Issues": ("Issue", "Issues", "issue", "issues"),
               "Projects": ("Project", "Projects", "project", "projects"),
               "Members": ("Member", "Members", "member", "members"),
               "Milestones": ("Milestone", "Milestones", "milestone", "milestones"),
               "Labels": ("Label", "Labels", "label", "labels"),
               "Notifications": ("Notification", "Notifications", "notification", "notifications")},
    "shopping": {"Cart": ("Cart", "cart"), "Orders": ("Order", "Orders", "order", "orders"),
                 "Wishlist": ("Wishlist", "wishlist")},
    "forum": {"Communities": ("Community", "Communities", "community", "communities"),
              "Comments": ("Comment", "Comments", "comment", "comments"),
              "Moderators": ("Moderator", "Moderators", "moderator", "moderators"),
              "Subscribers": ("Subscriber", "Subscribers", "subscriber", "subscribers")},
    "cms": {"Posts": ("Posts", "post", "posts"), "Menus": ("Menu", "Menus", "menu", "menus"),
            "Users": ("User", "Users", "user", "users"),
            "Comments": ("Comment", "Comments", "comment", "comments"),
            "Categories": ("Category", "Categories", "category", "categories")},
    "booking": {"My bookings": ("My bookings", "my bookings"), "Saved hotels": ("Saved hotels", "saved hotels")},
}

_OPEN, _CLOSE = "\x01", "\x02"
_TAG = re.compile(r"<script\b.*?</script>|<style\b.*?</style>|<[^>]*>", re.S)
_ATTR = re.compile(r'\s(?:placeholder|aria-label|title)="([^"]*)"')


def _cover(app: str) -> list[int]:
    """Variants that between them take every option of every factor that replaces a noun
    (the first such variant for each option still missing, in id order)."""
    cat = catalogue(app)
    nouns = NOUNS[app]
    want = {(f.name, o.label) for f in cat.factors for o in f.options if set(o.text) & set(nouns)}
    out: list[int] = []
    for k in range(1, 20000):
        if not want:
            return out
        got = {(f, v) for f, v in cat.values(k).items()} & want
        if got:
            out.append(k)
            want -= got
    raise AssertionError(f"{app}: options never taken: {sorted(want)}")


def _marking(app: Any, k: int) -> Callable[[dict], str]:
    """A render of ``app``'s variant ``k`` whose expression values (world data, typed text,
    titles) are marked: what is left is the template's own text, plus the spec's own words
    of the page's message and of its breadcrumb trail (their values marked too)."""
    site = catalogue(app.name).site(k)
    shapes = shapes_of(app)
    shown: dict[str, markupsafe.Markup] = {}

    def finalize(value: Any) -> Any:
        if isinstance(value, markupsafe.Markup) or not isinstance(value, str):
            return value
        if value in shown:
            return shown[value]
        return markupsafe.Markup(_OPEN) + value + markupsafe.Markup(_CLOSE)

    marked = jinja_for(app, k).overlay(finalize=finalize)
    marked.cache = {}

    def render(state: dict) -> str:
        shown.clear()
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        if tab["flash"] is not None:   # the message as the page shows it, its values marked
            segs = shapes.segments(tab["flash"]["message"])
            words = "".join(site.words(p) if mine else p for mine, p in segs)
            shown[words] = markupsafe.Markup("".join(
                str(markupsafe.escape(site.words(p))) if mine else _OPEN + str(markupsafe.escape(p)) + _CLOSE
                for mine, p in segs))
        envs = app.__dict__["_variant_jinja"]
        real, crumb_value = envs[k], variants._crumb_value
        envs[k] = marked
        variants._crumb_value = lambda value: _OPEN + crumb_value(value) + _CLOSE   # a title's value in the trail
        # the page context kept for (page, title) holds the trail as the site writes it: the
        # marked render makes its own (and leaves the site's as it was)
        kept = variants._site_of(app, k).__dict__.pop("_context_memo", None)
        try:
            page = app.render(state)
        finally:
            envs[k], variants._crumb_value = real, crumb_value
            if kept is not None:
                variants._site_of(app, k).__dict__["_context_memo"] = kept
            else:
                variants._site_of(app, k).__dict__.pop("_context_memo", None)
        # the decoy banner (an advert) and the menu's button are the engine's, not the app's words
        for engine in (site.banner, MENU_SUMMARIES.get(site.menu, "")):
            page = page.replace(engine, "") if engine else page
        return page

    return render


def _shown_text(page: str) -> Iterator[str]:
    """The template's own text of a marked page: between tags, and the shown attributes."""
    page = re.sub(f"{_OPEN}.*?{_CLOSE}", " ", page, flags=re.S)
    for m in _ATTR.finditer(page):
        yield html_lib.unescape(m.group(1))
    for piece in _TAG.split(page):
        if piece.strip():
            yield html_lib.unescape(piece)


def _stale(app: str, k: int, text: str) -> list[str]:
    """The forms of the nouns ``k`` replaces that ``text`` (a page's own text) still
    shows as whole words, the variant's own phrases aside."""
    lexicon = catalogue(app).site(k).text
    for value in sorted(set(lexicon.values()), key=len, reverse=True):
        text = re.sub(r"(?<!\w)" + re.escape(value) + r"(?!\w)", " ", text)
    out = []
    for key, forms in NOUNS[app].items():
        if key not in lexicon:
            continue
        kept = {w.lower() for w in re.findall(r"\w+", lexicon[key])}
        kept |= {w[:-1] for w in kept if w.endswith("s")} | {w + "s" for w in kept}
        for form in forms:
            if form.split()[-1].lower() in kept:   # "My orders" keeps "order": one vocabulary
                continue
            if re.search(r"(?<!\w)" + re.escape(form) + r"(?!\w)", text):
                out.append(form)
    return out


@pytest.mark.parametrize("app", APPS)
def test_no_page_mixes_a_replaced_noun_with_today_s(app: str) -> None:
    """Every page of every template's oracle run, on variants that take every option of
    every factor replacing a noun: no form of a replaced noun (singular or plural, upper
    or lower case) is left in the page's own text or its message's own words (world data
    and typed text aside), and every oracle still succeeds."""
    checked = 0
    for k in _cover(app):
        env = simweb.make(app, variant=k)
        u = env.unwrapped
        render = _marking(u.app, k)
        for i, tid in enumerate(u.app.tasks):
            env.reset(seed=k + i, options={"task": tid})
            verdict: dict = {}
            for a in [None, *u.oracle_plan()]:
                if a is not None:
                    verdict = run_plan(env, [a], (app, k, tid))
                text = "\n".join(_shown_text(render(u.state)))
                stale = _stale(app, k, text)
                assert not stale, (app, k, tid, u.state["browser"]["tabs"][0]["url"], stale,
                                   [ln for ln in text.splitlines() if any(s in ln for s in stale)][:3])
                checked += 1
            assert verdict["success"] and verdict["clean"], (app, k, tid, verdict)
    assert checked

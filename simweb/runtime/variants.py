"""Site variants: many sites per app from one variant id, with held-out factor values.

A variant id ``K`` (an integer, 0 = today's site) selects one value of every *factor*:
the engine's own (``skin``: a CSS palette; ``banner``: a decoy promotional banner with a
link) and the app's, declared as data in ``apps/<app>/variants.yaml``, the same shape for
every app::

    factors:
      site_name:                      # a factor: a list of options
        held_out: [4]                 # option indexes only the test split uses
        options:
          - {label: Simshop}          # option 0 is always today's site: no changes
          - {label: Cartwheel, text: {Simshop: Cartwheel}}

An option's ``text`` maps a phrase of today's pages to the variant's phrase. Phrases are
replaced in the templates' *source*, only in what a page shows (text between tags,
``placeholder``, ``aria-label`` and ``title`` attributes), whole words only, in one pass,
never inside Jinja expressions, tags, ``value`` attributes, ``bid``s or URLs, so forms
submit the same data and oracles (which act by ``bid``) find the same elements through
the variant's page. Page titles and the site title pass through the same replacement.
Tasks, effects and verdicts are untouched: they are judged on state, never on wording.

Which options a variant gets: the factors' option counts form a mixed radix of ``N``
combinations; ``K`` maps to combination ``K * A mod N`` (``A`` the first integer from
``N`` times the golden ratio's fraction that is coprime to ``N``: consecutive ids land far
apart, so every factor, the last ones too, varies among the first ids), so ``K -> factors`` is a bijection on ``0 <= K < N`` (no two ids share a site),
deterministic across processes (no hashing, no global random), and variant 0 is the
all-defaults combination. The *test* split is every variant that takes at least one
held-out option; *train* is the rest, so held-out values never appear in a train variant.

An option may also set *policies* (``policies: {min_stay_nights: 2}``; option 0 gives
today's values): named values that change what the site does (a minimum stay, a free
cancellation window, a moderation queue). They are read only through :func:`policy`
(``App.policy``, the spec's ``site_policy('name')``); task templates draw their instances
under them (simweb.judging.tasks, ``TaskTemplate.policies``). docs/variants.md, "Policies".

Flow options change what a site does, not only how it looks: where its messages go, how
its forms mark required or optional fields and whether a refused form's message goes
beside its field (:mod:`variant_flows`) and, for an app whose variants file has a ``confirm`` section
naming the forms a real site confirms, a confirmation page before them (the
``confirm_step`` factor, :mod:`variant_confirm`), and for one whose ``steps`` section names
long forms, those forms over two pages (the ``form_steps`` factor, :mod:`variant_steps`),
and for one whose ``sign_in`` section names the pages a login wall leaves open, when the
site asks to sign in (the ``sign_in`` factor, :mod:`variant_login`: a task starts signed
in, or signed out with its account in its goal, before or behind a login wall). Every app's
paged lists go from page to page as the ``pagination`` factor says (:mod:`variant_pages`:
Previous / Next, numbered pages, or "Load more", whose page n lists pages 1..n).

Layout factors move what a page shows without changing what it does: the top bar beside
or below the page or behind a menu to open, a breadcrumb trail, and, for an app whose
variants file has a ``lists`` section naming its result lists, those lists as rows, cards,
a table or a summary list (the ``list_style`` factor, :mod:`variant_lists`), and for one
whose ``sections`` section names groups of a page's sections, those sections in another
order (the ``section_order`` factor, :mod:`variant_sections`).

The variant is part of the state (``meta.variant``, absent for variant 0 so today's states
are byte-for-byte unchanged): snapshot, fork, restore and served sessions carry it, and
``App.render`` draws the page with that variant's templates, compiled once per process.
"""
from __future__ import annotations

import datetime
import hashlib
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from importlib import resources
from typing import Any

import jinja2
import markupsafe
import yaml

from ..core.kits import TEMPLATES as KIT_TEMPLATES
from . import (
    template_tokens,
    url_schemes,
    variant_confirm,
    variant_filters,
    variant_flows,
    variant_lists,
    variant_login,
    variant_messages,
    variant_pages,
    variant_sections,
    variant_steps,
)
from .memo import memoised

#: The fraction of the combination count the id -> combination multiplier starts from
#: (the golden ratio's, as an exact integer ratio: no float in the mapping).
_GOLDEN = (6_180_339_887, 10_000_000_000)
#: Every option of every factor is taken by some variant among ids 0 to COVER - 1.
COVER = 40
#: Variant ids are ``0 <= K < min(combinations, MAX_VARIANTS)``.
MAX_VARIANTS = 1_000_000
_UNSET = object()   # a memo's "not there" where None is a value
_NEAR, _JUMPS = 4096, 65_537   # the multiplier search (Catalogue.__init__)


class VariantError(ValueError):
    """A variant id that the app does not have, or a malformed variants file."""


@dataclass(frozen=True)
class Option:
    """One value of a factor: a label, phrase replacements, CSS and HTML to add."""

    label: str
    text: dict[str, str] = field(default_factory=dict)
    css: str = ""
    banner: str = ""
    #: Layout (engine factors only): where the site's top bar goes ("", "left", "right",
    #: "bottom"), the breadcrumb separator ("": no trail) and the page title's format
    #: (("", "") today; else a "{site}"/"{page}" pattern and the joint of the page's parts).
    nav: str = ""
    crumbs: str = ""
    title: tuple[str, str] = ("", "")
    #: How prices and dates are written (format factors: "" is today's "$1,234.50" and
    #: "Mar 4, 2026"; see :data:`MONEY_FORMATS` and :data:`DATE_FORMATS`).
    money: str = ""
    date: str = ""
    #: URL scheme (an app's ``urls``: canonical route prefix -> the variant's form;
    #: simweb.runtime.url_schemes).
    urls: tuple[tuple[str, str], ...] = ()
    #: Where the site's messages go ("": above the page's content; simweb.runtime.variant_flows).
    messages: str = ""
    #: The site's policies this option sets (an app's ``policies``: name -> a JSON scalar;
    #: option 0 gives today's values). Read through :func:`policy`; see "Policies" below.
    policies: dict[str, Any] = field(default_factory=dict)
    #: The confirmation step's style ("": none; simweb.runtime.variant_confirm.STYLES).
    confirm: str = ""
    #: Multi-step forms' style ("": one step; simweb.runtime.variant_steps.STYLES).
    steps: str = ""
    #: Form flow settings (engine factors; simweb.runtime.variant_flows): ("markers",
    #: "asterisk"), ("field_errors", "inline")...; none on today's options.
    flow: tuple[tuple[str, str], ...] = ()
    #: When the site asks to sign in ("": a task starts signed in, today's; "late" or
    #: "early": it starts signed out; simweb.runtime.variant_login).
    login: str = ""
    #: The top bar's navigation collapsed behind a menu to open ("": shown, today's;
    #: a key of :data:`MENU_SUMMARIES`: "menu", "icon-menu", "browse", "icon").
    menu: str = ""
    #: How paged lists go from page to page ("": Previous / Next, today's; else a style of
    #: simweb.runtime.variant_pages.OPTIONS: "numbered", "load-more", "show-more").
    pagination: str = ""
    #: Where a results page's filter form goes ("": above the results, today's; a key of
    #: :data:`FILTER_PLACES`: "sidebar", "collapsed", "below", "dropdowns", "refine").
    filters: str = ""
    #: How the site's declared result lists are shown ("": rows, today's; "cards", "table",
    #: "summary": simweb.runtime.variant_lists).
    lists: str = ""
    #: The order of the sections of the site's declared pages ("": today's; "reversed",
    #: "rotated", "interleaved": simweb.runtime.variant_sections).
    sections: str = ""


@dataclass(frozen=True)
class Factor:
    name: str
    options: tuple[Option, ...]
    held_out: frozenset[int] = frozenset()
    doc: str = ""


# ----------------------------------------------------------------------------- engine factors
# Palettes for the skin factor: (page background, text, accent, header background). The
# header stays dark in every palette, since every app's header text is white.
_PALETTES: list[tuple[str, str, str, str, str]] = [
    ("default", "", "", "", ""),
    ("slate", "#f4f6f8", "#1f2933", "#2563eb", "#1e293b"),
    ("forest", "#f3f8f2", "#1b2b1f", "#2f7d32", "#1f3d2a"),
    ("plum", "#faf5fb", "#2a1830", "#8e3fa6", "#3b1f47"),
    ("sand", "#fbf7ef", "#2d2516", "#b45309", "#433422"),
    ("night", "#16181d", "#e6e6e6", "#7aa2f7", "#0b0c10"),
    ("ocean", "#eef7fa", "#0f2a36", "#0e7490", "#0c3547"),
    ("rose", "#fff5f6", "#33161c", "#c2185b", "#4a1526"),
]


def _skin_css(bg: str, fg: str, accent: str, header: str) -> str:
    return (f"body{{background:{bg};color:{fg};font-family:Georgia,serif}}"
            f"header,header.top{{background:{header}!important}}"
            f"main a,aside a,footer a{{color:{accent}}}"
            f"button,input[type=submit]{{background:{accent};color:#fff;border:1px solid {accent};border-radius:3px}}"
            f".card,table{{border-color:{accent}33}}"
            # light text needs a dark panel: cards and dialogs follow the page's background
            + (f".card,[role=dialog],input,select,textarea{{background:{header};color:{fg}}}" if fg.startswith("#e") else ""))


def _engine_factors() -> list[Factor]:
    skins = tuple(Option(name) if not bg else Option(name, css=_skin_css(bg, fg, acc, hd))
                  for name, bg, fg, acc, hd in _PALETTES)
    banners = (
        Option("none"),
        Option("sale", css=_banner_css("sale", "#fff3c4", "#e0c060"),
               banner='<aside class="promo promo-sale" role="complementary" aria-label="Promotion">'
               'Limited-time offer: new members get exclusive perks. <a bid="promo-more" href="/">Learn more</a></aside>'),
        Option("notice", css=_banner_css("notice", "#e7f0ff", "#9db8e8"),
               banner='<aside class="promo promo-notice" role="complementary" aria-label="Site notice">'
               'We have updated our privacy notice. <a bid="promo-notice" href="/">Read the notice</a> '
               '<a bid="promo-dismiss" href="/">Dismiss</a></aside>'),
        Option("survey", css=_banner_css("survey", "#efe7ff", "#b9a2e8"),
               banner='<aside class="promo promo-survey" role="complementary" aria-label="Feedback">'
               'Help us improve: take a two-minute survey. <a bid="promo-survey" href="/">Start the survey</a></aside>'),
    )
    navs = (Option("top"), Option("sidebar", nav="left", css=_NAV_CSS), Option("bottom", nav="bottom", css=_NAV_CSS),
            Option("right-sidebar", nav="right", css=_NAV_CSS))
    crumbs = (Option("none"), Option("slash", crumbs="/", css=_CRUMB_CSS), Option("chevron", crumbs="›", css=_CRUMB_CSS),
              Option("arrow", crumbs="→", css=_CRUMB_CSS))
    titles = (Option("page-site"), Option("site-page", title=("{site} | {page}", " | ")),
              Option("page-pipe", title=("{page} | {site}", " | ")), Option("page-only", title=("{page}", " · ")),
              Option("site-colon", title=("{site}: {page}", " - ")))
    menus = (Option("bar"), Option("menu", menu="menu", css=_MENU_CSS), Option("icon-menu", menu="icon-menu", css=_MENU_CSS),
             Option("browse", menu="browse", css=_MENU_CSS), Option("icon", menu="icon", css=_MENU_CSS))
    return [Factor("skin", skins, frozenset({7}), "CSS palette and font (what screenshots show)"),
            Factor("banner", banners, frozenset({3}), "a decoy banner with links above the page"),
            Factor("nav_position", navs, frozenset({3}), "where the site's top bar goes: top, a sidebar, the bottom"),
            Factor("menu", menus, frozenset({4}), "the top bar's navigation shown, or collapsed behind a menu to open"),
            Factor("list_style", tuple(Option(s, lists=s if i else "", css=variant_lists.CSS.get(s, ""))
                                       for i, s in enumerate(variant_lists.OPTIONS)),
                   frozenset({variant_lists.HELD_OUT}), "the site's result lists as rows, cards, a table or terms"),
            Factor("breadcrumbs", crumbs, frozenset({3}), "a breadcrumb trail at the top of the page, or none"),
            Factor("title_format", titles, frozenset({4}), "the page title's format (\"Page — Site\", \"Site | Page\"...)"),
            Factor("message_position", tuple(Option(p, messages=p if i else "") for i, p in enumerate(variant_flows.POSITIONS)),
                   frozenset({2}), "where the site's messages (a refused form's error, a confirmation) are shown"),
            Factor("field_markers", tuple(Option(m, flow=(("markers", m),) if i else (), css=_MARKER_CSS if i else "")
                                          for i, m in enumerate(variant_flows.MARKERS)),
                   frozenset({2}), "how a form's labels mark required fields (\"*\", \"(required)\") or optional ones"),
            Factor("field_errors", tuple(Option(e, flow=(("field_errors", e),) if i else (), css=_ERROR_CSS if i else "")
                                         for i, e in enumerate(variant_flows.FIELD_ERRORS)),
                   frozenset({2}), "a refused form's message beside the field it is about, or where the messages go"),
            Factor("pagination", tuple(Option(p, pagination=p if i else "", css=_PAGER_CSS if i else "")
                                       for i, p in enumerate(variant_pages.OPTIONS)),
                   frozenset({variant_pages.HELD_OUT}),
                   "paged lists: Previous / Next, numbered pages, or \"Load more\" (pages 1..n listed together)"),
            Factor("filters", (Option("above"), *(Option(p, filters=p, css=_FILTERS_CSS) for p in FILTER_PLACES)),
                   frozenset({len(FILTER_PLACES)}),
                   "where a results page's filter form goes: above the results, in a sidebar, behind a disclosure, "
                   "as a bar of dropdowns"),
            Factor("section_order", tuple(Option(s, sections=s if i else "") for i, s in enumerate(variant_sections.OPTIONS)),
                   frozenset({variant_sections.HELD_OUT}),
                   "the order of the sections of the pages the app declares (today's, reversed, rotated, interleaved)")]


#: Price formats: today's "$1,234.50" rewritten as a variant writes it. Every one is
#: read back by the answer checkers (simweb.judging.verify.match_money) as the same amount;
#: a decimal comma ("1.234,50 $") is not offered: "12,50" reads as two numbers there.
MONEY_FORMATS = {"usd-after": "{sign}{amount} USD", "usd-before": "USD {sign}{amount}", "us-dollar": "{sign}US${amount}"}
#: Date formats: today's "Mar 4, 2026" / "March 4, 2026" as a variant writes it; every one
#: names the same date to match_date (a numeric day-first "04/03/2026" would read as April 3).
DATE_FORMATS = {"iso": "{y:04d}-{m:02d}-{d:02d}", "day-month": "{d} {month} {y}", "weekday": "{wd}, {d} {month} {y}"}
_MONTH_NAMES = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
                "November", "December")
_MONTH_OF = {n[:3]: i + 1 for i, n in enumerate(_MONTH_NAMES)}
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")
_MONEY = re.compile(r"(-?)\$(\d[\d,]*\.\d\d)")
#: Today's date, with the weekday a page may write before it ("Wed May 6, 2026": a
#: variant's format that names the weekday names it once)
_DAY = re.compile(r"\b(?:(" + "|".join(_WEEKDAYS) + r") )?("
                  + "|".join(f"{m[:3]}(?:{m[3:]})?" if len(m) > 3 else m for m in _MONTH_NAMES)
                  + r") (\d{1,2}), (\d{4})\b")


def _format_factors(kinds: dict[str, tuple[str, ...]]) -> list[Factor]:
    """The price and date format factors, for an app whose variants file names the template
    filters and functions that write prices (``money``) or dates (``date``)."""
    out = []
    if kinds.get("money"):
        out.append(Factor("price_format", (Option("dollar-sign"), *(Option(n, money=n) for n in MONEY_FORMATS)),
                          frozenset({3}), 'how prices are written: "$12.00", "12.00 USD", "USD 12.00"'))
    if kinds.get("date"):
        out.append(Factor("date_format", (Option("month-day"), *(Option(n, date=n) for n in DATE_FORMATS)),
                          frozenset({3}), 'how dates are written: "Mar 4, 2026", "2026-03-04", "4 March 2026"'))
    return out


# The moved top bar: a column beside the page (its links stacked), or a bar below it. The
# bar keeps its elements and bids; its role becomes a named navigation landmark.
_NAV_CSS = (".vframe{display:flex;gap:1rem;align-items:flex-start;flex:1;min-width:0}"
            ".vframe>main{flex:1;min-width:0}"
            ".vframe>header.top{flex:none;width:14rem;flex-direction:column;align-items:stretch;flex-wrap:nowrap}"
            ".vframe>header.top nav,.vframe>header.top form{display:flex;flex-direction:column;gap:.4rem}"
            ".vframe>header.top>*{margin-left:0!important}"
            "header.top.vnav-bottom{flex-wrap:wrap;margin-top:1rem;order:1;flex:1 0 100%}"
            # a page whose main landmark is a flex item (cms's public layout): the bar below
            # it goes on a line of its own instead of squeezing the main landmark to nothing
            ":has(>header.top.vnav-bottom){flex-wrap:wrap}")
# The decoy banner takes a line of its own where it lands in a flex row (cms's admin
# layout): as a flex item beside the page's columns it took half the row and left the main
# landmark 167 px wide (first in the row: the columns stay side by side below it).
_BANNER_CSS = "aside.promo{flex:1 0 100%;box-sizing:border-box;order:-1}:has(>aside.promo){flex-wrap:wrap}"


def _banner_css(kind: str, background: str, border: str) -> str:
    """A banner's look, in the variant's stylesheet (not in the page: its HTML stays small)."""
    return (_BANNER_CSS + f"aside.promo-{kind}{{padding:.5rem 1rem;color:#222;background:{background};"
            f"border-bottom:1px solid {border}}}")
# The collapsed menu (the menu factor): the summary as a button, the navigation below it
# when open, stacked.
_MENU_CSS = ("details.vmenu>summary{cursor:pointer;padding:.2rem .6rem;border:1px solid currentColor;border-radius:3px}"
             "details.vmenu[open]>nav{display:flex;flex-direction:column;gap:.4rem;margin-top:.4rem}")
#: The menu factor's summaries: what the collapsed menu's ``<summary>`` (bid ``site-menu``,
#: in a ``<details class="vmenu">`` of bid ``site-menu-box``) shows, by option.
MENU_SUMMARIES = {"menu": '<summary bid="site-menu">Menu</summary>',
                  "icon-menu": '<summary bid="site-menu">\u2630 Menu</summary>',
                  "browse": '<summary bid="site-menu">Browse</summary>',
                  "icon": '<summary bid="site-menu" aria-label="Open menu">\u2630</summary>'}
# A navigation landmark of the top bar (they are not nested).
_BAR_NAV = re.compile(r"[ \t]*<nav\b[^>]*>.*?</nav>[ \t]*\n?", re.S)
#: The filters factor's places for a results page's filter form (``<form class="filters">``),
#: in option order after today's "above": a sidebar (a complementary landmark "Filters")
#: left of the results; above them behind a closed "Filters" disclosure; below them; and
#: (held out) a sidebar right of the results, named "Refine", whose form is behind a closed
#: "Refine results" disclosure. The disclosure is ``<details bid="filters-box">`` opened by
#: its ``<summary bid="filters-toggle">``; the sidebar is ``<aside bid="filters-side">``.
#: ``dropdowns``: above the results, a bar of closed dropdowns, one per field group of the
#: form (simweb.runtime.variant_filters).
FILTER_PLACES = ("sidebar", "collapsed", "below", "dropdowns", "refine")
#: The filters factor's disclosure summaries, by place.
FILTER_SUMMARIES = {"collapsed": '<summary bid="filters-toggle">Filters</summary>',
                    "refine": '<summary bid="filters-toggle">Refine results</summary>'}
#: The places whose form fields are behind disclosures to open (the form's, or its dropdowns).
FILTER_DISCLOSED = frozenset({*FILTER_SUMMARIES, "dropdowns"})
# The frame the filter form and the results go in spans a grid layout's columns (shopping's
# and forum's results pages put the form in a grid column of its own); the sidebars are
# flex columns beside the results.
_FILTERS_CSS = (".vfilters{grid-column:1/-1;min-width:0}"
                ".vfilters-sidebar,.vfilters-refine{display:flex;gap:1rem;align-items:flex-start}"
                ".vfilters>aside{flex:none;width:16rem}.vfilters-results{flex:1;min-width:0}"
                ".vfilters-below>form.filters{margin-top:1rem}"
                "details.vfilters-box>summary{cursor:pointer;padding:.2rem .6rem;border:1px solid currentColor;"
                "border-radius:3px;display:inline-block}" + variant_filters.CSS)
# The filter form of a results page (forms are not nested).
_FILTER_FORM = re.compile(r'[ \t]*<form\b[^>]*\sclass="(?:[^"]*\s)?filters(?:\s[^"]*)?"[^>]*>.*?</form>[ \t]*\n?', re.S)
_MARKER_CSS = ".field-marker{color:#b00020;font-weight:bold}"
_ERROR_CSS = ".field-error{display:block;color:#b00020;font-size:.9rem;margin:.2rem 0}[aria-invalid=true]{border-color:#b00020}"
_PAGER_CSS = (".pager-numbered a,.pager-numbered span{margin:0 .25rem}.pager-numbered [aria-current]{font-weight:bold}"
              ".pager-more{margin:1rem 0;text-align:center}")
_CRUMB_CSS = "nav.crumbs{padding:.4rem 0;font-size:.9rem}nav.crumbs span.sep{margin:0 .4rem;color:#888}"


# ----------------------------------------------------------------------------- the catalogue
def _parse_factor(app: str, name: str, raw: Any) -> Factor:
    if not isinstance(raw, dict) or not isinstance(raw.get("options"), list) or len(raw["options"]) < 2:
        raise VariantError(f"{app} variants: factor {name!r} needs a list of at least two options")
    options = []
    for i, opt in enumerate(raw["options"]):
        if not isinstance(opt, dict) or not isinstance(opt.get("label"), str):
            raise VariantError(f"{app} variants: factor {name!r} option {i} needs a label")
        text = opt.get("text") or {}
        if i == 0 and (text or opt.get("css") or opt.get("banner") or opt.get("urls")):
            raise VariantError(f"{app} variants: factor {name!r} option 0 must be today's site (no changes)")
        if not all(isinstance(k, str) and isinstance(v, str) and k and v for k, v in text.items()):
            raise VariantError(f"{app} variants: factor {name!r} option {i}: text maps phrases to phrases")
        try:
            urls = url_schemes.parse_urls(app, name, i, opt.get("urls"))
        except url_schemes.UrlSchemeError as exc:
            raise VariantError(str(exc)) from None
        options.append(Option(opt["label"], dict(text), str(opt.get("css") or ""), str(opt.get("banner") or ""),
                              urls=urls, policies=_parse_policies(app, name, i, opt.get("policies"))))
    named = {tuple(sorted(o.policies)) for o in options}
    if len(named) > 1:
        raise VariantError(f"{app} variants: factor {name!r}: every option sets the same policies "
                           f"(option 0 with today's values)")
    held = raw.get("held_out") or []
    if not all(isinstance(h, int) and 0 < h < len(options) for h in held):
        raise VariantError(f"{app} variants: factor {name!r}: held_out lists option indexes other than 0")
    if len(held) >= len(options) - 1:
        raise VariantError(f"{app} variants: factor {name!r} holds out every non-default option")
    return Factor(name, tuple(options), frozenset(held), str(raw.get("doc") or ""))


def _parse_policies(app: str, factor: str, i: int, raw: Any) -> dict[str, Any]:
    """An option's ``policies: {name: value}``: names are identifiers, values JSON scalars
    (a number, a string, a boolean, or null for "none")."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not all(
            isinstance(k, str) and k.isidentifier() and (v is None or isinstance(v, (bool, int, float, str)))
            for k, v in raw.items()):
        raise VariantError(f"{app} variants: factor {factor!r} option {i}: policies maps names to numbers, strings, "
                           f"booleans or null")
    return dict(raw)


class Catalogue:
    """An app's factors and the id -> factor values mapping (see the module docstring)."""

    def __init__(self, app: str, factors: list[Factor], formats: dict[str, tuple[str, ...]] | None = None,
                 confirmables: dict[str, variant_confirm.Confirmable] | None = None,
                 steppables: dict[str, variant_steps.Steppable] | None = None,
                 login_open: frozenset[str] | None = None):
        self.app = app
        self.factors = tuple(factors)
        #: Every policy the app declares and its value on today's site (option 0's).
        self.policy_defaults: dict[str, Any] = {}
        for f in self.factors:
            for pname, value in f.options[0].policies.items():
                if pname in self.policy_defaults:
                    raise VariantError(f"{app} variants: policy {pname!r} is set by two factors")
                self.policy_defaults[pname] = value
        #: The events a variant with a confirmation step asks to confirm (the app's
        #: ``confirm`` section; simweb.runtime.variant_confirm).
        self.confirmables = dict(confirmables or {})
        #: The forms a variant with multi-step forms splits (the app's ``steps`` section;
        #: simweb.runtime.variant_steps).
        self.steppables = dict(steppables or {})
        #: The pages a login wall leaves open besides sign-in and registration (the app's
        #: ``sign_in`` section; None: no ``sign_in`` factor; simweb.runtime.variant_login).
        self.login_open = login_open
        #: Policy values a site behind the login wall takes whatever their factor says (the
        #: ``sign_in`` section's ``wall_policies``; simweb.runtime.variant_login).
        self.wall_policies: dict[str, Any] = {}
        #: The result lists the ``list_style`` factor restyles (the app's ``lists`` section;
        #: simweb.runtime.variant_lists).
        self.lists: tuple[variant_lists.ListDecl, ...] = ()
        #: The page sections the ``section_order`` factor reorders (the app's ``sections``
        #: section; simweb.runtime.variant_sections).
        self.sections: tuple[variant_sections.Group, ...] = ()
        #: The template filters and functions whose output is a price ("money") or a date
        #: ("date"): a variant's format factors rewrite what they return.
        self.formats = dict(formats or {})
        n = 1
        for f in self.factors:
            n *= len(f.options)
        self.combinations = n
        self.count = min(n, MAX_VARIANTS)
        a = max(1, n * _GOLDEN[0] // _GOLDEN[1])
        # coprime, so K -> K * a mod n is a bijection; and every option of every factor
        # among the first COVER ids (a multiplier near a multiple of a factor's place value
        # would leave that factor at one or two options for hundreds of ids)
        # The neighbours of the golden start first (every app's multiplier before issues'
        # were within a few of it); past _NEAR tries, strides of about n / _JUMPS: a run of
        # neighbours can all miss a factor (issues' missed for 3.4 million, 90 s a process).
        # The stride is coprime to n: a stride sharing a prime with n and the start (issues'
        # with the section_order factor: both even) gives no coprime multiplier at all.
        start, tries, stride = a, 0, n // _JUMPS + 1
        while math.gcd(stride, n) != 1:
            stride += 1
        while math.gcd(a, n) != 1 or not self._covers(a):
            tries += 1
            a = start + tries if tries < _NEAR else (start + tries * stride) % n or 1
        self.multiplier = a

    def _covers(self, a: int) -> bool:
        seen: list[set[int]] = [set() for _ in self.factors]
        for k in range(min(COVER, self.combinations)):
            c = k * a % self.combinations
            for f, s in zip(self.factors, seen):
                c, digit = divmod(c, len(f.options))
                s.add(digit)
        return all(len(s) == len(f.options) for f, s in zip(self.factors, seen)) or self.combinations <= COVER

    def check(self, variant: Any) -> int:
        """``variant`` as a valid id of this app, else VariantError (one line)."""
        if isinstance(variant, bool) or not isinstance(variant, int):
            if isinstance(variant, str) and variant.strip().isdigit():
                variant = int(variant.strip())
            else:
                raise VariantError(f"variant must be an integer id, not {variant!r}")
        if not 0 <= variant < self.count:
            raise VariantError(f"{self.app} has variants 0-{self.count - 1}, not {variant}")
        return variant

    def choice(self, variant: int) -> tuple[int, ...]:
        """The option index of every factor for ``variant``."""
        c = (self.check(variant) * self.multiplier) % self.combinations
        out = []
        for f in self.factors:
            c, digit = divmod(c, len(f.options))
            out.append(digit)
        return tuple(out)

    def split(self, variant: int) -> str:
        """'test' when the variant takes any held-out option, else 'train'."""
        held = any(i in f.held_out for f, i in zip(self.factors, self.choice(variant)))
        return "test" if held else "train"

    def values(self, variant: int) -> dict[str, str]:
        """Factor name -> option label for ``variant``."""
        return {f.name: f.options[i].label for f, i in zip(self.factors, self.choice(variant))}

    def policies(self, variant: int) -> dict[str, Any]:
        """Every policy of the app -> its value on ``variant`` (today's on variant 0)."""
        return dict(self.site(variant).policies) if variant else dict(self.policy_defaults)

    def listing(self, split: str | None = None, limit: int = 200, start: int = 0) -> list[dict[str, Any]]:
        """The first ``limit`` variants from ``start`` (of a split, when given)."""
        out: list[dict[str, Any]] = []
        k = start
        while len(out) < limit and k < self.count:
            s = self.split(k)
            if split is None or s == split:
                out.append({"variant": k, "split": s, "factors": self.values(k)})
            k += 1
        return out

    @cached_property
    def stylesheets(self) -> dict[str, str]:
        """Every option's CSS by its name (:func:`stylesheet_name`): what
        ``/static/variants/NAME-NAME.css`` serves (a variant's page links its options' CSS
        there, in factor order, instead of carrying it). Two different CSS texts never share
        a name: that is checked here."""
        out: dict[str, str] = {}
        for f in self.factors:
            for o in f.options:
                if o.css:
                    name = stylesheet_name(o.css)
                    if out.setdefault(name, o.css) != o.css:
                        raise VariantError(f"{self.app} variants: two stylesheets are named {name}")
        return out

    def stylesheet(self, href: str) -> str | None:
        """The CSS a variant page's stylesheet link ``href`` names (its options' CSS,
        joined in the link's order), or None for a link no variant of this app makes."""
        m = _SHEET_HREF.fullmatch(href)
        if m is None:
            return None
        pieces = [self.stylesheets.get(name) for name in m.group(1).split("-")]
        return None if None in pieces else "".join(pieces)   # type: ignore[arg-type]

    def site(self, variant: int) -> Site:
        """The variant's rendering recipe (memoised; a built site's id, an int, is one
        lookup: policies, flows and the title's words ask on every step)."""
        sites: dict[int, Site] | None = self.__dict__.get("_sites")
        if sites is None:
            sites = self.__dict__["_sites"] = {}
        if type(variant) is int:   # (not a bool: True would find site 1, and check() refuses it)
            hit = sites.get(variant)
            if hit is not None:
                return hit
        v = self.check(variant)
        hit = sites.get(v)
        if hit is None:
            opts = [f.options[i] for f, i in zip(self.factors, self.choice(v))]
            text: dict[str, str] = {}
            for o in opts:
                text.update(o.text)
            policies = {k: v for o in opts for k, v in o.policies.items()}
            login = next((o.login for o in opts if o.login), "")
            if login == variant_login.WALL:
                policies.update(self.wall_policies)
            hit = sites[v] = Site(v, text, stylesheet_href([o.css for o in opts]), "".join(o.banner for o in opts),
                                  next((o.nav for o in opts if o.nav), ""), next((o.crumbs for o in opts if o.crumbs), ""),
                                  next((o.title for o in opts if o.title[0]), ("", "")),
                                  next((o.money for o in opts if o.money), ""), next((o.date for o in opts if o.date), ""),
                                  url_schemes.scheme(tuple(r for o in opts for r in o.urls)),
                                  next((o.messages for o in opts if o.messages), ""),
                                  policies,
                                  next((o.confirm for o in opts if o.confirm), ""),
                                  next((o.steps for o in opts if o.steps), ""),
                                  flow={k: v for o in opts for k, v in o.flow},
                                  login=login, menu=next((o.menu for o in opts if o.menu), ""),
                                  pagination=next((o.pagination for o in opts if o.pagination), ""),
                                  filters=next((o.filters for o in opts if o.filters), ""),
                                  lists=next((o.lists for o in opts if o.lists), ""), list_decls=self.lists,
                                  sections=next((o.sections for o in opts if o.sections), ""),
                                  section_groups=self.sections)
        return hit


_CATALOGUES: dict[str, Catalogue] = {}

#: Where a variant page links its CSS: ``/static/variants/`` and the names of its options'
#: stylesheets (:func:`stylesheet_name`) joined by ``-``.
SHEETS_PATH = "/static/variants/"
_SHEET_HREF = re.compile(re.escape(SHEETS_PATH) + r"([0-9a-f]{10}(?:-[0-9a-f]{10})*)\.css")


def stylesheet_name(css: str) -> str:
    """The name an option's CSS is served under: ten hex digits of its SHA-1 (a name of
    the content, so a browser may keep it: the same name is the same text)."""
    return hashlib.sha1(css.encode("utf-8")).hexdigest()[:10]


def stylesheet_href(css_parts: list[str]) -> str:
    """The link of a page whose options carry ``css_parts`` (in factor order; "" when none)."""
    names = [stylesheet_name(c) for c in css_parts if c]
    return SHEETS_PATH + "-".join(names) + ".css" if names else ""


def catalogue(app: Any) -> Catalogue:
    """The variant catalogue of an app (an App, or its name), loaded once per process."""
    name = app if isinstance(app, str) else app.name
    hit = _CATALOGUES.get(name)
    if hit is not None:
        return hit
    from .registry import definition

    package = definition(name).package
    factors = _engine_factors()
    try:
        source = (resources.files(package) / "variants.yaml").read_text(encoding="utf-8")
    except FileNotFoundError:
        source = ""
    raw = yaml.safe_load(source) if source else {}
    for fname, fraw in ((raw or {}).get("factors") or {}).items():
        factors.append(_parse_factor(name, str(fname), fraw))
    formats = _parse_formats(name, (raw or {}).get("formats"))
    factors.extend(_format_factors(formats))
    try:
        confirmables = variant_confirm.parse(name, (raw or {}).get("confirm"))
    except variant_confirm.ConfirmError as exc:
        raise VariantError(str(exc)) from None
    if confirmables:   # a flow factor for an app that names the forms a real site confirms
        factors.append(Factor("confirm_step", tuple(Option(label, confirm=label if i else "")
                                                    for i, label in enumerate(variant_confirm.OPTIONS)),
                              frozenset({variant_confirm.HELD_OUT}),
                              "a review-and-confirm page before the forms a real site confirms (an order, a deletion)"))
    try:
        steppables = variant_steps.parse(name, (raw or {}).get("steps"))
    except variant_steps.StepsError as exc:
        raise VariantError(str(exc)) from None
    if steppables:   # a flow factor for an app that names the forms a real site splits over pages
        factors.append(Factor("form_steps", tuple(Option(label, steps=label if i else "")
                                                  for i, label in enumerate(variant_steps.OPTIONS)),
                              frozenset({variant_steps.HELD_OUT}),
                              "long forms over two pages: the first fields and Continue, then the rest"))
    try:
        login_open = variant_login.parse(name, (raw or {}).get("sign_in"))
    except variant_login.LoginError as exc:
        raise VariantError(str(exc)) from None
    if login_open is not None:   # a flow factor for an app with accounts: when the site asks to sign in
        factors.append(Factor("sign_in", tuple(Option(label, login=label if i else "")
                                               for i, label in enumerate(variant_login.OPTIONS)),
                              frozenset({variant_login.HELD_OUT}),
                              "when the site asks to sign in: a task starts signed in, or signed out (late: "
                              "an action that needs an account asks; early: a login wall)"))
    hit = Catalogue(name, factors, formats, confirmables, steppables, login_open)
    try:
        hit.wall_policies = variant_login.parse_wall_policies(name, (raw or {}).get("sign_in"), hit.policy_defaults)
    except variant_login.LoginError as exc:
        raise VariantError(str(exc)) from None
    try:
        hit.lists = variant_lists.parse(name, (raw or {}).get("lists"))
        if any(d.columns for d in hit.lists):   # a table's header row: as many columns as an item's parts
            variant_lists.check_columns(name, hit.lists, _template_sources(resources.files(package) / "templates"))
    except variant_lists.ListsError as exc:
        raise VariantError(str(exc)) from None
    try:
        hit.sections = variant_sections.parse(name, (raw or {}).get("sections"))
        variant_sections.check(name, hit.sections, lambda t: _template_text(package, t))
    except variant_sections.SectionsError as exc:
        raise VariantError(str(exc)) from None
    _CATALOGUES[name] = hit
    return hit


def _template_text(package: str, name: str) -> str | None:
    """The source of an app's template ``name`` (its own, else a kit's, as the app's
    Jinja loader finds it); None when neither has it."""
    for folder in (resources.files(package) / "templates", KIT_TEMPLATES):
        path = folder / name
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _template_sources(root: Any, prefix: str = "") -> dict[str, str]:
    """The ``.html`` templates under ``root`` (a Traversable), by their path below it."""
    out: dict[str, str] = {}
    if not root.is_dir():
        return out
    for entry in root.iterdir():
        if entry.is_dir():
            out.update(_template_sources(entry, f"{prefix}{entry.name}/"))
        elif entry.name.endswith(".html"):
            out[prefix + entry.name] = entry.read_text(encoding="utf-8")
    return out


def _parse_formats(app: str, raw: Any) -> dict[str, tuple[str, ...]]:
    """``formats: {money: [filter or function names], date: [...]}`` of a variants file."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or set(raw) - {"money", "date"} or not all(
            isinstance(v, list) and all(isinstance(n, str) and n for n in v) for v in raw.values()):
        raise VariantError(f"{app} variants: formats maps money and date to lists of filter or function names")
    return {k: tuple(v) for k, v in raw.items()}


# ----------------------------------------------------------------------------- rendering
# Jinja blocks and HTML tags are copied as they are; text between them is rewritten.
_SEGMENTS = re.compile(r"({\{.*?\}\}|{%.*?%\}|{#.*?#\}|<script\b.*?</script>|<style\b.*?</style>|<[^>]*>)", re.S)
# Attributes whose text is shown (or read by assistive tech), outside Jinja expressions.
# (A value may hold Jinja expressions, ``aria-label="Remove label {{ lab.name }}"``: only
# the text between them is the template's words.)
_SHOWN_ATTRS = re.compile(r'(\s(?:placeholder|aria-label|title)=")((?:[^"{}]|{{[^"{}]*}})*)(")')
_ATTR_EXPR = re.compile(r"({{[^\"{}]*}})")
#: A word whose ending an expression picks (``comment{{ '' if n == 1 else 's' }}``, the
#: templates' plural idiom): written out as both forms (:func:`_both_forms`) so that a
#: variant's lexicon replaces each as a word (an irregular plural included).
_ENDING = re.compile(r"(?<![\w{}%])(\w+){{\s*'(\w*)'\s+if\s+([^{}'\"]+?)\s+else\s+'(\w*)'\s*}}")


def _both_forms(source: str) -> str:
    """``source`` with every plural idiom written as an ``{% if %}`` of its two whole
    words (the same output on every value of its condition)."""
    if "else '" not in source:
        return source
    return _ENDING.sub(lambda m: f"{{% if {m.group(3)} %}}{m.group(1)}{m.group(2)}{{% else %}}{m.group(1)}{m.group(4)}"
                                 "{% endif +%}", source)


# The site's top bar (every app's base templates have one) and the main landmark.
_TOP_BAR = re.compile(r'<header class="top([^"]*)"([^>]*)>(.*?)</header>\n?', re.S)
_WORDS = re.compile(r"\w+")
#: Separators of today's page titles ("Cart — Simshop", "Issues · acme/web · Simtracker").
_TITLE_SEP = re.compile(r" [—·] ")
_TITLE_SEP_KEPT = re.compile(r"( [—·] )")
#: markupsafe.escape's five replacements as a str.translate table (the same text).
_HTML_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&#34;", "'": "&#39;"})


@dataclass
class Site:
    """What a variant changes in rendering: phrase replacements, CSS, a banner, and the
    layout (where the top bar goes, a breadcrumb trail, the page title's format)."""

    variant: int
    text: dict[str, str]
    stylesheet: str                              # the link to its options' CSS ("": none; stylesheet_href)
    banner: str
    nav: str = ""
    crumbs: str = ""
    title: tuple[str, str] = ("", "")
    money: str = ""
    date: str = ""
    urls: url_schemes.UrlScheme | None = None   # None: today's URLs
    messages: str = ""                           # "": the messages above the page's content
    policies: dict[str, Any] = field(default_factory=dict)   # every policy's value on this site
    confirm: str = ""                            # "": no confirmation step (variant_confirm.STYLES)
    steps: str = ""                              # "": one-step forms (variant_steps.STYLES)
    flow: dict[str, str] = field(default_factory=dict)   # form flow settings (variant_flows): markers, field_errors
    login: str = ""                              # "": tasks start signed in (variant_login.OPTIONS)
    menu: str = ""                               # "": the top bar's navigation shown (MENU_SUMMARIES)
    pagination: str = ""                         # "": Previous / Next pagers (variant_pages.OPTIONS)
    filters: str = ""                            # "": a filter form above the results (FILTER_PLACES)
    lists: str = ""                              # "": result lists as rows (variant_lists.OPTIONS)
    list_decls: tuple[variant_lists.ListDecl, ...] = ()   # the app's declared result lists
    sections: str = ""                           # "": today's section order (variant_sections.OPTIONS)
    section_groups: tuple[variant_sections.Group, ...] = ()   # the app's declared page sections

    def prices(self, s: str) -> str:
        """Today's prices in ``s`` ("$1,234.50", "-$5.00") written in this variant's format."""
        fmt = MONEY_FORMATS.get(self.money)
        if fmt is None or "$" not in s:
            return s
        m = _MONEY.fullmatch(s)   # the usual case, a price alone: no substitution pass
        if m is not None:
            return fmt.format(sign=m.group(1), amount=m.group(2))
        return _MONEY.sub(lambda m: fmt.format(sign=m.group(1), amount=m.group(2)), s)

    def dates(self, s: str) -> str:
        """Today's dates in ``s`` ("Mar 4, 2026", "March 4, 2026") in this variant's format."""
        fmt = DATE_FORMATS.get(self.date)
        if fmt is None:
            return s

        def one(m: re.Match[str]) -> str:
            month = _MONTH_OF[m.group(2)[:3]]
            y, d = int(m.group(4)), int(m.group(3))
            if "{wd}" not in fmt:   # a weekday the page wrote before the date stays before it
                out = fmt.format(y=y, m=month, d=d, month=_MONTH_NAMES[month - 1], wd="")
                return f"{m.group(1)} {out}" if m.group(1) else out
            wd = _WEEKDAYS[datetime.date(y, month, d).weekday()]
            return fmt.format(y=y, m=month, d=d, month=_MONTH_NAMES[month - 1], wd=wd)

        m = _DAY.fullmatch(s)   # the usual case, a date alone
        return one(m) if m is not None else _DAY.sub(one, s)

    @cached_property
    def _pattern(self) -> re.Pattern[str] | None:
        if not self.text:
            return None
        phrases = sorted(self.text, key=len, reverse=True)   # longest first: "Add to cart" before "cart"
        return re.compile(r"(?<![\w])(" + "|".join(re.escape(p) for p in phrases) + r")(?![\w])")

    @cached_property
    def _first_words(self) -> frozenset[str] | None:
        """The first word of every phrase: a text with none of them has no phrase (None
        when a phrase has no word, so the quick test cannot be made)."""
        firsts = [_WORDS.search(p) for p in self.text]
        return None if None in firsts else frozenset(m.group(0) for m in firsts if m is not None)

    def words(self, s: str) -> str:
        """``s`` with the variant's phrases (one pass: a replacement is never replaced again)."""
        pat = self._pattern
        if pat is None or not s:
            return s
        first = self._first_words
        if first is not None and first.isdisjoint(_WORDS.findall(s)):
            return s   # the quick case (world data in a title): the phrase pattern is slow
        return pat.sub(lambda m: self.text[m.group(1)], s)

    def message(self, text: str, shapes: variant_messages.Shapes) -> str:
        """A message the spec wrote (kept in the state as today's text) in this variant's
        words: only the spec's own words (``shapes``' split), never the values written
        into it (simweb.runtime.variant_messages). Memoised by text (bounded)."""
        memo: dict[str, str] | None = self.__dict__.get("_message_memo")
        if memo is None:
            memo = self.__dict__["_message_memo"] = {}
        hit = memo.get(text)
        if hit is None:
            hit = memoised(memo, text, lambda t: "".join(
                self.words(piece) if spec else piece for spec, piece in shapes.segments(t)))
        return hit

    def title_parts(self, title: str, site_title: str) -> tuple[list[str], list[str]] | None:
        """Today's page title as (page parts, site parts), most specific first; None for a
        title that does not name the site (then no format applies to it)."""
        # one kind of separator (the usual title): str.split, the regex only for both
        if " · " in title:
            parts = _TITLE_SEP.split(title) if " — " in title else title.split(" · ")
        else:
            parts = title.split(" — ")
        if len(parts) == 1:
            return None
        site = [p for p in parts if p == site_title or p.startswith(site_title + " ")]
        page = [p for p in parts if p not in site]
        return (page, site) if site and page else None

    def page_context(self, ctx: dict[str, Any], site_title: str) -> None:
        """The render context's title, site title and breadcrumb trail in this variant's
        format and words (``ctx["title"]`` is today's title on entry). Memoised by title
        (pages repeat their titles; the memo is bounded and a pure function of its key)."""
        memo: dict[tuple[str, str], dict[str, Any]] | None = self.__dict__.get("_page_memo")
        if memo is None:   # (not setdefault: that would build a dict on every page)
            memo = self.__dict__["_page_memo"] = {}
        key = (ctx["title"], site_title)
        entry = memo.get(key)   # the hit inline (a revisited title): memoised() on a miss
        if entry is None:
            entry = memoised(memo, key, self._page_entry, 4096)
        ctx.update(entry)

    def _page_entry(self, key: tuple[str, str]) -> dict[str, Any]:
        """What :meth:`page_context` sets for a (title, site title)."""
        entry: dict[str, Any] = {"title": key[0]}
        self._page_context(entry, key[1])
        return entry

    @cached_property
    def _parts_apart(self) -> bool:
        """No phrase holds a title separator or a title format's joint: then a title's
        words are its parts' words, joined (a phrase never spans two parts)."""
        return not any(c in p for p in self.text for c in ("—", "·", "|", ":", " - "))

    def _words_of(self, s: str) -> str:
        """:meth:`words`, memoised (a title's parts repeat: the site's name, "Search",
        "Your cart"; only its world-data part is new on a new instance's page). Bounded."""
        memo: dict[str, str] | None = self.__dict__.get("_words_memo")
        if memo is None:
            memo = self.__dict__["_words_memo"] = {}
        hit = memo.get(s)
        return hit if hit is not None else memoised(memo, s, self.words)

    def _page_context(self, ctx: dict[str, Any], site_title: str) -> None:
        title = ctx["title"]
        split = self.title_parts(title, site_title) if (self.title[0] or self.crumbs) else None
        if split is not None and self._parts_apart:
            # each part's words once (the title and the trail share them), the same text
            # as the whole title's words (no phrase spans a separator: _parts_apart)
            w = self._words_of
            known = self.__dict__.get("_words_memo") or {}
            page = [known.get(p) or w(p) for p in split[0]]
            if self.title[0]:
                pattern, joint = self.title
                ctx["title"] = pattern.replace("{site}", w(" ".join(split[1]))).replace("{page}", joint.join(page))
            else:
                ctx["title"] = "".join(piece if i % 2 else w(piece) for i, piece in enumerate(_TITLE_SEP_KEPT.split(title)))
            ctx["spec_title"] = w(site_title)
        else:
            if split is not None and self.title[0]:
                pattern, joint = self.title
                title = pattern.replace("{site}", " ".join(split[1])).replace("{page}", joint.join(split[0]))
            ctx["title"] = self.words(title)
            ctx["spec_title"] = self.words(site_title)
            page = [self.words(p) for p in split[0]] if split is not None and self.crumbs else []
        if self.crumbs:   # the trail after "Home", the page itself last (markup built here: no loop in Jinja)
            sep = self._crumb_sep
            if split is None or not page:
                ctx["variant_crumbs"] = markupsafe.Markup("")
            else:
                # plain str assembly, one Markup at the end (markupsafe's escape, as a table)
                parts = [p.translate(_HTML_ESCAPES) for p in reversed(page)]
                last = parts.pop()
                ctx["variant_crumbs"] = markupsafe.Markup(
                    "".join([sep + "<span>" + p + "</span>" for p in parts])
                    + sep + '<span aria-current="page">' + last + "</span>")

    @cached_property
    def _crumb_sep(self) -> str:
        """The markup between two parts of the breadcrumb trail."""
        return f' <span class="sep" aria-hidden="true">{self.crumbs}</span> '

    def template_source(self, source: str, name: str = "") -> str:
        """A template's source (the template ``name``'s) rewritten for this variant (see
        the module docstring)."""
        if self.sections:   # first: the declared sections are found by today's markup
            source = variant_sections.rewrite(source, name, self.sections, self.section_groups)
        if self.lists:   # first: a list's declared name is shown text, in the variant's words
            source = variant_lists.rewrite(source, self.lists, self.list_decls, name)
        out = self.shown_text(_both_forms(source) if self.text else source)
        if self.urls is not None:
            out = self.urls.rewrite_source(out)
        if self.stylesheet and "</head>" in out:
            # A link, as a real site's theme is: the page's HTML (what an agent reading it
            # pays for, what the parse reads) carries no stylesheet text (SHEETS_PATH).
            out = out.replace("</head>", f'<link rel="stylesheet" id="variant-skin" href="{self.stylesheet}">\n</head>', 1)
        if self.banner and "<main>" in out:
            out = out.replace("<main>", self.banner + "\n<main>", 1)
        if self.menu:
            out = self._collapse_menu(out)
        if self.filters and "filters" in out:
            out = self._place_filters(out)
        if self.nav and "<main>" in out and "</main>" in out:
            out = self._move_top_bar(out)
        if self.messages:
            out = variant_flows.move_messages(out, self.messages)
        if self.confirm == variant_confirm.INLINE and "<main>" in out:   # the inline confirmation panel
            out = out.replace("<main>", "<main>\n{{ variant_confirm_panel }}", 1)
        if self.login:   # sign-in links back to the page they are on (after the URL scheme: an expression)
            out = variant_login.rewrite_links(out)
        if self.crumbs and "<main>" in out:
            trail = ('<nav bid="site-crumbs" class="crumbs" aria-label="You are here"><a bid="site-crumb-home" href="/">Home</a>'
                     '{{ variant_crumbs }}</nav>')
            out = out.replace("<main>", "<main>\n" + trail, 1)
        return out

    def _collapse_menu(self, source: str) -> str:
        """The top bar's navigation landmarks (its ``<nav>`` elements; the logo, the search
        form and any other link stay) moved, in their order, into a closed
        ``<details class="vmenu">`` at the end of the bar, whose ``<summary>`` opens it
        (:data:`MENU_SUMMARIES`): the same elements and bids, shown once the menu is open.
        Before the bar moves (:meth:`_move_top_bar`): the menu goes with it."""
        m = _TOP_BAR.search(source)
        if m is None:
            return source
        navs = [n.group(0).strip() for n in _BAR_NAV.finditer(m.group(3))]
        if not navs:
            return source
        rest = _BAR_NAV.sub("", m.group(3)).rstrip() + "\n"
        menu = (f'  <details bid="site-menu-box" class="vmenu">{MENU_SUMMARIES[self.menu]}\n'
                + "\n".join(navs) + "\n  </details>\n")
        bar = f'<header class="top{m.group(1)}"{m.group(2)}>{rest}{menu}</header>\n'
        return source[:m.start()] + bar + source[m.end():]

    def _place_filters(self, source: str) -> str:
        """A results page's filter form (``<form class="filters">``, with its elements and
        bids) moved for the filters factor (:data:`FILTER_PLACES`): the form and what
        follows it in its parent element (the results: up to the parent's end tag or the
        end of the Jinja block around the form) go in a frame ``<div class="vfilters">``,
        the form in a sidebar left of the results (``<aside bid="filters-side">``, a
        complementary landmark "Filters"), above them behind a closed disclosure
        (``<details bid="filters-box">`` opened by its summary ``filters-toggle``), below
        them, above them as a bar of dropdowns (:func:`variant_filters.dropdowns`), or
        (refine) in a sidebar right of them behind a disclosure."""
        m = _FILTER_FORM.search(source)
        if m is None:
            return source
        end = _siblings_end(source, m.end())
        form, rest = m.group(0).strip(), source[m.end():end]
        place = self.filters
        if place in FILTER_SUMMARIES:
            form = (f'<details bid="filters-box" class="vfilters-box">{FILTER_SUMMARIES[place]}\n'
                    f'{form}\n</details>')
        elif place == "dropdowns":
            form = variant_filters.dropdowns(form)
        if place == "sidebar":
            body = (f'<aside bid="filters-side" role="complementary" aria-label="Filters">\n{form}\n</aside>\n'
                    f'<div class="vfilters-results">{rest}</div>')
        elif place == "refine":
            body = (f'<div class="vfilters-results">{rest}</div>\n'
                    f'<aside bid="filters-side" role="complementary" aria-label="Refine">\n{form}\n</aside>')
        elif place == "below":
            body = f"{rest}\n{form}"
        else:   # collapsed, dropdowns: where it was
            body = f"{form}\n{rest}"
        return source[:m.start()] + f'<div class="vfilters vfilters-{place}">\n{body}\n</div>\n' + source[end:]

    def _move_top_bar(self, source: str) -> str:
        """The top bar moved beside the main landmark (a sidebar, left or right) or below
        it, as a navigation landmark named "Site": the same elements, in a new place."""
        m = _TOP_BAR.search(source)
        if m is None:
            return source
        bar = (f'<header class="top{m.group(1)} vnav-{self.nav}" role="navigation" aria-label="Site"{m.group(2)}>'
               f'{m.group(3)}</header>\n')
        out = source[:m.start()] + source[m.end():]
        if self.nav == "bottom":
            return out.replace("</main>", "</main>\n" + bar.rstrip("\n"), 1)
        frame = f'<div class="vframe vframe-{self.nav}">\n'
        if self.nav == "left":
            out = out.replace("<main>", frame + bar + "<main>", 1)
            return out.replace("</main>", "</main>\n</div>", 1)
        out = out.replace("<main>", frame + "<main>", 1)
        return out.replace("</main>", "</main>\n" + bar + "</div>", 1)

    def _attr_words(self, value: str) -> str:
        """A shown attribute's value in this variant's words (its expressions kept)."""
        if "{{" not in value:
            return self.words(value)
        return "".join(p if i % 2 else self.words(p) for i, p in enumerate(_ATTR_EXPR.split(value)))

    def shown_text(self, source: str) -> str:
        """A template's source with this variant's phrases in what the page shows."""
        parts = _SEGMENTS.split(source)
        for i, part in enumerate(parts):
            if i % 2 == 0:
                parts[i] = self.words(part)
            elif part.startswith("<") and not part.startswith(("<script", "<style")):
                parts[i] = _SHOWN_ATTRS.sub(lambda m: m.group(1) + self._attr_words(m.group(2)) + m.group(3), part)
        return "".join(parts)


def _siblings_end(source: str, pos: int) -> int:
    """Where the elements that follow position ``pos`` in the same parent end in a
    template's source: at the first end tag (HTML) or block end (Jinja: ``{% endif %}``,
    ``{% else %}``, ``{% endblock %}``) that closes something opened before ``pos``; the
    end of the source when none does. Elements and blocks are counted apart: an end tag
    inside a block still open after ``pos`` closes an element opened before it."""
    tags = blocks = 0
    for tok in template_tokens.tokens(source, pos):
        jinja = tok.name == template_tokens.JINJA
        if tok.kind == template_tokens.OPEN:
            if jinja:
                blocks += 1
            else:
                tags += 1
        elif tok.kind == template_tokens.CLOSE or (tok.kind == template_tokens.BRANCH and not blocks):
            if not (blocks if jinja else tags):
                return tok.match.start()
            if jinja:
                blocks -= 1
            else:
                tags -= 1
    return len(source)


class _VariantLoader(jinja2.BaseLoader):
    """Wraps the app's loader: the same templates, rewritten for one variant."""

    def __init__(self, inner: Any, site: Site, spec: Any = None):
        self.inner = inner
        self.site = site
        self.spec = spec   # the app's spec: which form fields its events require (field markers)

    def get_source(self, environment: Any, template: str) -> tuple[str, str | None, Any]:
        source, filename, uptodate = self.inner.get_source(environment, template)
        markers = self.site.flow.get("markers")
        if markers and self.spec is not None:   # before the URL scheme: actions in today's form
            source = variant_flows.mark_fields(source, markers, self._event_params)
        return self.site.template_source(source, template), filename, uptodate

    def _event_params(self, action: str) -> dict[str, bool] | None:
        """The parameters (and whether each is required) of the spec's event that a form
        posting to ``action`` (its source: a Jinja expression stands for one segment) runs."""
        path = re.sub(r"{{.*?}}", "1", action, flags=re.S).partition("?")[0]
        hit = self.spec.match_event(path) if path.startswith("/") and "{" not in path else None
        return None if hit is None else {n: p.required for n, p in hit[0].params.items()}

    def list_templates(self) -> list[str]:
        return list(self.inner.list_templates())


def _reformatting(fn: Any, rewrite: Any, pure: bool = False) -> Any:
    """``fn`` whose text result goes through ``rewrite`` (other results pass unchanged).
    Rewrites are memoised per variant (a page writes the same few prices and dates again
    and again), by the text, and for a ``pure`` filter by its arguments too; the memos are
    bounded, and pure functions of their keys."""
    memo: dict[str, str] = {}
    by_args: dict[Any, Any] = {}

    def once(text: str) -> str:
        hit = memo.get(text)
        return hit if hit is not None else memoised(memo, text, rewrite)

    def call(*args: Any, **kwargs: Any) -> Any:
        out = fn(*args, **kwargs)
        if isinstance(out, markupsafe.Markup):
            return markupsafe.Markup(once(str(out)))
        return once(out) if isinstance(out, str) else out

    if not pure:
        call.__name__ = getattr(fn, "__name__", "call")
        return call

    def filter_call(*args: Any, **kwargs: Any) -> Any:
        if kwargs:
            return call(*args, **kwargs)
        # 1, 1.0 and True are one key to a dict but write differently: the types are keyed too
        key = (args[0], type(args[0])) if len(args) == 1 else (args, tuple(map(type, args)))
        try:
            return by_args[key]
        except KeyError:
            pass
        except TypeError:   # an unhashable argument
            return call(*args)
        if len(by_args) >= 8192:
            by_args.clear()
        out = by_args[key] = call(*args)
        return out

    filter_call.__name__ = getattr(fn, "__name__", "call")
    return filter_call


def _message_filter(app: Any, site: Site) -> Callable[[Any], Any]:
    """The ``site_message`` filter of a variant's templates: a message an app wrote (kept as
    today's text) in ``site``'s words, its values as they are (:meth:`Site.message`);
    anything that is not a text (None, an undefined value) as it is."""
    def site_message(text: Any) -> Any:
        return site.message(text, message_shapes(app)) if isinstance(text, str) and text else text
    return site_message


def jinja_for(app: Any, variant: int) -> Any:
    """The app's Jinja environment for ``variant`` (today's for 0), built and compiled once
    per process and app."""
    if not variant:
        return app.jinja
    envs: dict[int, Any] | None = app.__dict__.get("_variant_jinja")
    if envs is None:   # (not setdefault: that would build a dict on every render)
        envs = app.__dict__["_variant_jinja"] = {}
    env = envs.get(variant)
    if env is None:
        site = catalogue(app).site(variant)
        env = app.jinja.overlay(loader=_VariantLoader(app.jinja.loader, site, app.spec))
        env.cache = {}   # an overlay copies its parent's compiled templates: compile ours
        # An overlay shares its parent's filters and globals: the variant's own copies, with
        # the app's price and date writers (its variants file names them) reformatted.
        env.filters, env.globals = dict(env.filters), dict(env.globals)
        scheme = url_scheme(app, variant)
        if scheme is not None:   # links whose URL is an expression (a menu item's), slugs
            env.filters.update(url_schemes.template_filters(scheme))
        formats = catalogue(app).formats
        for kind, rewrite in (("money", site.prices if site.money else None), ("date", site.dates if site.date else None)):
            for fname in formats.get(kind, ()) if rewrite else ():
                for table in (env.filters, env.globals):
                    if fname in table:   # filters are pure (simweb.core.functions): memo by argument
                        table[fname] = _reformatting(table[fname], rewrite, pure=table is env.filters)
        # a message an app's function wrote, shown by a template (``{{ st.error|site_message }}``)
        env.filters["site_message"] = _message_filter(app, site)
        if site.pagination:   # the kit's pager draws the variant's style (simweb.runtime.variant_pages)
            env.globals["pagination"] = site.pagination
        if "kits" in env.globals:   # a kit's words are options, not template text
            env.globals["kits"] = _kit_words(env.globals["kits"], site)
        for name in app.jinja.list_templates(extensions=["html"]):
            env.get_template(name)
        envs[variant] = env
    return env


#: The options of a kit that its templates show as words (a heading, a button, a label):
#: a variant's phrases apply to them as to the template's own text. Every other option is
#: a name, an expression or a route, and stays as it is.
_KIT_SHOWN = frozenset({"heading", "action", "field_label", "prompt", "link", "login_prompt", "password_label", "label"})


def _kit_words(kits: Any, site: Site) -> Any:
    """The apps' kit options with the words they show in ``site``'s phrases."""
    if isinstance(kits, dict):
        return {k: site.words(v) if k in _KIT_SHOWN and isinstance(v, str) else _kit_words(v, site)
                for k, v in kits.items()}
    if isinstance(kits, list):
        return [_kit_words(v, site) for v in kits]
    return kits


def url_scheme(app: Any, variant: int) -> url_schemes.UrlScheme | None:
    """The URL scheme of ``variant`` (None when it uses today's URLs). For an App, the
    scheme of its world (slug rules read their slugs from it; kept on the app); for an
    app's name, the catalogue's, which knows no slug (a slug segment is the id alone)."""
    if not variant:
        return None
    if isinstance(app, str):
        return catalogue(app).site(variant).urls
    schemes: dict[int, url_schemes.UrlScheme | None] | None = app.__dict__.get("_variant_schemes")
    if schemes is None:
        schemes = app.__dict__["_variant_schemes"] = {}
    hit = schemes.get(variant, _UNSET)   # one lookup (the browser asks on every URL it shows)
    if hit is not _UNSET:
        return hit   # type: ignore[return-value]
    urls = catalogue(app).site(variant).urls
    if urls is not None and urls.slugged:
        try:
            urls = urls.bind(app.world)
        except url_schemes.UrlSchemeError as exc:
            raise VariantError(f"{app.name} variant {variant}: {exc}") from None
    schemes[variant] = urls
    return urls


def shown_url(app: Any, state: dict, url: str) -> str:
    """A URL ``state`` keeps (today's form) as the browser shows it on the state's variant."""
    variant = state["meta"].get("variant", 0)
    return _wire_url(app, variant, url) if variant else url


def state_variant(state: dict) -> int:
    """The variant a state renders as (0 when it carries none)."""
    return int(state["meta"].get("variant", 0))


def words(app: Any, variant: int, s: str) -> str:
    """A page title or site title in ``variant``'s words."""
    return catalogue(app).site(variant).words(s) if variant else s


def shown_message(app: Any, state: dict, text: str) -> str:
    """A message the spec wrote (a flash, a refusal, an error page's message; kept in the
    state as today's text) as ``state``'s variant shows it: the spec's own words in the
    variant's phrases, the values written into it as they are (Site.message)."""
    variant = state["meta"].get("variant", 0)
    if not variant or not text:
        return text
    return _site_of(app, variant).message(text, message_shapes(app))


def message_shapes(app: Any) -> variant_messages.Shapes:
    """The shapes of the messages an App writes (its spec's, its confirmation step's
    summaries, and the messages its functions declare: ``FunctionTable.message``), built
    once and kept on the app."""
    hit: variant_messages.Shapes | None = app.__dict__.get("_message_shapes")
    if hit is None:
        extra = [d.summary for d in catalogue(app).confirmables.values()]
        extra += [m.source for m in app.function_table.messages]
        hit = app.__dict__["_message_shapes"] = variant_messages.Shapes(app.spec, extra)
    return hit


def page_context(app: Any, variant: int, ctx: dict[str, Any], page: Any = None) -> None:
    """A page's render context for ``variant``: its title, site title and breadcrumbs
    (:meth:`Site.page_context`); nothing for today's site. Every page of a variant's site
    renders through here: the Site is kept on the app (a checked id's lookup in the
    catalogue costs more than the memoised rewrite itself).

    The title of ``page`` (a PageSpec, whose ``title`` wrote ``ctx["title"]``) is split by
    its shapes (simweb.runtime.variant_messages) into the spec's words and the values its
    expressions wrote (a product's name, a typed query): only the spec's words go through
    the variant's phrases, format and trail; each value stands in as one private-use
    character meanwhile and is put back as it was (escaped in the trail)."""
    if not variant:
        return
    site = _site_of(app, variant)
    # What a (page, title) sets, once: a pure function of them on this site (bounded memo)
    memo: dict[tuple[tuple[str, str] | None, str], dict[str, Any]] | None = site.__dict__.get("_context_memo")
    if memo is None:
        memo = site.__dict__["_context_memo"] = {}
    # (the page by its name and its title's source: the engine's pages, a form's second
    # page, share one name over every page they stand for)
    key = ((page.name, page.title.source) if page is not None and page.title is not None else None, ctx["title"])
    entry = memo.get(key)
    if entry is None:
        entry = memoised(memo, key, lambda k: _page_entry(app, site, page if k[0] is not None else None, k[1]), 4096)
    ctx.update(entry)


def _page_entry(app: Any, site: Site, page: Any, title: str) -> dict[str, Any]:
    """What :func:`page_context` sets for a page (or None: a title without values) and its
    title as the spec wrote it."""
    entry: dict[str, Any] = {"title": title}
    values = _title_values(app, page, title) if page is not None else None
    if not values:
        site.page_context(entry, app.spec.title)
        return entry
    entry["title"] = "".join(piece if spec else chr(_HOLD + i) for i, (spec, piece) in enumerate(values))
    site.page_context(entry, app.spec.title)
    title, crumbs = entry["title"], entry.get("variant_crumbs")
    for i, (spec, piece) in enumerate(values):
        if not spec:
            title = title.replace(chr(_HOLD + i), piece)
            if crumbs:
                crumbs = markupsafe.Markup(str(crumbs).replace(chr(_HOLD + i), _crumb_value(piece)))
    entry["title"] = title
    if crumbs is not None:
        entry["variant_crumbs"] = crumbs
    return entry


def _crumb_value(value: str) -> str:
    """A title's value as the breadcrumb trail writes it (escaped)."""
    return str(markupsafe.escape(value))


#: The first private-use character (U+E000): a title's values stand in as these while its
#: words are rewritten (page_context).
_HOLD = 0xE000
_PRIVATE = re.compile("[\ue000-\uf8ff]")


def _title_values(app: Any, page: Any, title: str) -> tuple[variant_messages.Segment, ...] | None:
    """``title`` split by the shapes of ``page``'s title (kept on the app, per page), or
    None when it has no value (or no shape matches it, or it holds a private-use
    character: then it is rewritten whole, as a title without values)."""
    shapes_of: dict[tuple[str, str], variant_messages.Shapes] | None = app.__dict__.get("_title_shapes")
    if shapes_of is None:
        shapes_of = app.__dict__["_title_shapes"] = {}
    key = (page.name, page.title.source)   # (a form's second page has one name for every form's page)
    shapes = shapes_of.get(key)
    if shapes is None:
        enums = {f"query.{n}": tuple(p.values) for n, p in page.query.items() if p.type == "enum" and p.values}
        shapes = shapes_of[key] = variant_messages.Shapes(None, [page.title.source], enums)
    segments = shapes.segments(title)
    if all(spec for spec, _ in segments) or len(segments) == 1 or _PRIVATE.search(title):
        return None
    return segments


def policy(app: Any, variant: int, name: str) -> Any:
    """The value of the app's policy ``name`` on site ``variant`` (today's on variant 0):
    the one accessor through which spec expressions (``site_policy('name')``), an app's
    functions and task templates read a policy. VariantError for a name the app does not
    declare."""
    if variant and not isinstance(app, str):   # a declared name on a built site: one lookup
        policies = _site_of(app, variant).policies
        if name in policies:
            return policies[name]
    cat = catalogue(app)
    if name not in cat.policy_defaults:
        known = ", ".join(sorted(cat.policy_defaults)) or "none"
        raise VariantError(f"{cat.app} declares no policy {name!r} (its policies: {known})")
    return cat.site(variant).policies[name] if variant else cat.policy_defaults[name]


def _site_of(app: Any, variant: int) -> Site:
    """The Site of ``variant``, kept on the app (a checked catalogue lookup costs more)."""
    sites: dict[int, Site] | None = app.__dict__.get("_variant_sites")
    site = sites.get(variant) if sites is not None else None
    if site is None:
        site = app.__dict__.setdefault("_variant_sites", {})[variant] = catalogue(app).site(variant)
    return site


def field_errors(app: Any, state: dict) -> str:
    """How ``state``'s variant shows a refused form's message about one field ("" where the
    site's messages go, today's; "inline" or "inline-summary": simweb.runtime.variant_flows)."""
    variant = state["meta"].get("variant", 0)
    return _site_of(app, variant).flow.get("field_errors", "") if variant else ""


def _flow_style(app: Any, variant: int, attr: str, check: Callable[[], None], error: type[Exception]) -> str:
    """The style (the :class:`Site` field ``attr``) of a flow whose forms the app declares,
    on site ``variant`` (not 0). The first time an app uses the flow, ``check`` validates
    its declarations against the spec; its ``error`` becomes a VariantError. The style is
    then kept on the app by (variant, attr): :func:`confirm_step` and :func:`form_steps`,
    asked several times a step, answer a kept style with one lookup."""
    style: str = getattr(_site_of(app, variant), attr)
    flag = f"_{attr}_checked"
    if style and not app.__dict__.get(flag):
        try:
            check()
        except error as exc:
            raise VariantError(str(exc)) from None
        app.__dict__[flag] = True
    styles: dict[tuple[int, str], str] | None = app.__dict__.get("_flow_styles")
    if styles is None:
        styles = app.__dict__["_flow_styles"] = {}
    styles[(variant, attr)] = style
    return style


def _kept_style(app: Any, variant: int, attr: str) -> str | None:
    """A flow style :func:`_flow_style` has checked and kept (None: not yet)."""
    styles: dict[tuple[int, str], str] | None = app.__dict__.get("_flow_styles")
    return None if styles is None else styles.get((variant, attr))


def confirm_step(app: Any, state: dict) -> str:
    """The confirmation step's style on ``state``'s variant ("" when it has none: today's
    site, or a variant that does not take the factor; simweb.runtime.variant_confirm).
    The app's declared events are checked against its spec on first use (VariantError)."""
    variant = state["meta"].get("variant", 0)
    if not variant:
        return ""
    kept = _kept_style(app, variant, "confirm")
    if kept is not None:
        return kept
    return _flow_style(app, variant, "confirm", lambda: variant_confirm.check_events(app, catalogue(app).confirmables),
                       variant_confirm.ConfirmError)


def form_steps(app: Any, state: dict) -> str:
    """The multi-step forms' style on ``state``'s variant ("" when its forms are one page:
    today's site, or a variant that does not take the factor; simweb.runtime.variant_steps).
    The app's declared forms are checked against its spec on first use (VariantError)."""
    variant = state["meta"].get("variant", 0)
    if not variant:
        return ""
    kept = _kept_style(app, variant, "steps")
    if kept is not None:
        return kept
    return _flow_style(app, variant, "steps", lambda: variant_steps.check_events(
        app, catalogue(app).steppables, catalogue(app).confirmables), variant_steps.StepsError)


def sign_in(app: Any, variant: int) -> str:
    """When site ``variant`` asks to sign in ("" on today's site and on a variant where a
    task starts signed in; "late" or "early": simweb.runtime.variant_login)."""
    return _site_of(app, variant).login if variant else ""


def sign_in_href(app: Any, variant: int, page: str, url: str) -> str:
    """Where the sign-in link points on ``page`` at ``url`` (today's form) on site
    ``variant``, as the browser shows it: back to the page (:func:`variant_login.link_target`),
    in the variant's URL scheme. Asked on every page a variant that asks to sign in renders;
    a pure function of the three, memoised per app (bounded)."""
    memo: dict[tuple[int, str, str], str] | None = app.__dict__.get("_sign_in_hrefs")
    if memo is None:
        memo = app.__dict__["_sign_in_hrefs"] = {}
    key = (variant, page, url)
    hit = memo.get(key)
    if hit is None:
        hit = memoised(memo, key, lambda k: _wire_url(app, k[0], variant_login.link_target(k[1], k[2])))
    return hit


def _wire_url(app: Any, variant: int, url: str) -> str:
    scheme = url_scheme(app, variant)
    return url if scheme is None else scheme.to_wire(url)


def collapsed_menu(app: Any, state: dict) -> str:
    """Whether ``state``'s variant shows the top bar's navigation behind a menu to open
    ("": no, today's site; else the menu factor's option: "menu", "icon")."""
    variant = state["meta"].get("variant", 0)
    return _site_of(app, variant).menu if variant else ""


def pagination(app: Any, state: dict) -> str:
    """How ``state``'s variant pages its lists ("": Previous / Next, today's site; else a
    style of simweb.runtime.variant_pages.OPTIONS)."""
    variant = state["meta"].get("variant", 0)
    return _site_of(app, variant).pagination if variant else ""


def collapsed_filters(app: Any, state: dict) -> str:
    """Whether ``state``'s variant shows a results page's filter fields behind disclosures to
    open ("": no, today's site and the places that show them; else the filters factor's
    option: "collapsed", "dropdowns", "refine")."""
    variant = state["meta"].get("variant", 0)
    place = _site_of(app, variant).filters if variant else ""
    return place if place in FILTER_DISCLOSED else ""


def login_wall(app: Any, state: dict) -> frozenset[str] | None:
    """The pages the login wall of ``state``'s variant leaves open besides sign-in and
    registration (None: no wall, today's site and every variant but ``early``). The
    app's declared pages are checked against its spec on first use (VariantError)."""
    variant = state["meta"].get("variant", 0)
    if not variant:
        return None
    style = _kept_style(app, variant, "login")
    if style is None:
        style = _flow_style(app, variant, "login", lambda: variant_login.check_pages(
            app, catalogue(app).login_open or frozenset()), variant_login.LoginError)
    return catalogue(app).login_open if style == variant_login.WALL else None


def parse_ids(text: str, app: Any) -> list[int]:
    """'0-49', '3,17,903', '5', or 'test:10' / 'train:10' (the first ten variants of that
    split, in id order), or a list of these, as checked variant ids of ``app``
    (VariantError otherwise)."""
    cat = catalogue(app)
    out: list[int] = []
    for part in str(text).split(","):
        part = part.strip()
        split, colon, n = part.partition(":")
        if colon:
            if split.strip() not in ("train", "test") or not n.strip().isdigit() or int(n) < 1:
                raise VariantError(f"bad variant ids {text!r}: a split is train:N or test:N with N >= 1")
            out.extend(r["variant"] for r in cat.listing(split.strip(), int(n)))
            continue
        lo, dash, hi = part.partition("-")
        if not lo.strip().isdigit() or (dash and not hi.strip().isdigit()):
            raise VariantError(f"bad variant ids {text!r}: use N, N-M, train:N, test:N or a comma-separated list")
        a = cat.check(int(lo))
        b = cat.check(int(hi)) if dash else a
        if b < a:
            raise VariantError(f"bad variant range {part!r}: {b} < {a}")
        out.extend(range(a, b + 1))
    return out


__all__ = ["Catalogue", "Factor", "Option", "Site", "VariantError", "catalogue", "collapsed_filters", "confirm_step",
           "field_errors",
           "form_steps", "jinja_for", "login_wall",
           "page_context", "pagination", "parse_ids", "policy", "shown_url", "sign_in", "sign_in_href", "state_variant", "url_scheme",
           "words"]

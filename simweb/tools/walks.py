"""Random walks in-process and in Chromium: does the same action do the same thing?

An exploring policy does not follow oracle plans: it clicks containers, types words into
date fields, picks options a select does not have, presses keys on links. This module
draws such walks -- BrowserGym action strings over every bid the AX tree offers -- from
varied restored states, runs each walk in-process (:class:`simweb.env.SimEnv`) and in
Chromium (:class:`simweb.browser.BrowserEnv`) with the same strings, and compares the two
after every step: the URL (path and query), the runtime and meta layers of the state, and
the class of the action's error (:func:`error_class`). A walk stops at its first
divergence (what follows compares different states); the report counts the walks that
never diverged (the parity rate) and groups the first divergences into classes, each
with a count and an example.

    report = run_walks("shopping", walks=20, steps=25, seed=0)
    report["parity"], report["classes"]

Both envs are driven from the in-process side: the action is drawn from the in-process
observation, and a step where the two already disagree on the page ends the walk.
"""
from __future__ import annotations

import random
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from ..web.actions import ActionError, parse_action
from ..web.axtree import Page, parse_page

__all__ = ["DECLARED", "declared", "redeclare", "ERROR_CLASSES", "TEXTS", "KEYS", "error_class", "random_action", "start_state", "run_walk",
           "run_walks", "summarize"]

#: Error classes, from the message an action gave (in-process or in Chromium):
#: ``none``; ``syntax`` (the action string itself); ``not-found`` (no element with that
#: bid); ``not-actionable`` (the element exists but cannot be acted on: hidden, disabled,
#: read-only, zero-size, an option the select does not have -- BrowserGym reports
#: Playwright's timeout); ``wrong-element`` (the action does not apply to that kind of
#: element, or the text to that input type); ``navigation`` (a URL that cannot be
#: opened); ``other``.
ERROR_CLASSES = ("none", "syntax", "not-found", "not-actionable", "wrong-element", "navigation", "other")

_CLASS_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("not-found", re.compile(r"Could not find element|No node found|No tab at index", re.I)),
    ("not-actionable", re.compile(r"Timeout (?:\d+ms )?exceeded|is disabled|is not editable|is not visible|"
                                  r"not found in select|did not find some options|outside of the viewport|"
                                  r"not stable|intercepts pointer events", re.I)),
    ("wrong-element", re.compile(r"is not an <input|Not a checkbox|is not a checkbox|cannot be filled|"
                                 r"Cannot type text|is not a <select>|Malformed value", re.I)),
    ("navigation", re.compile(r"net::ERR_", re.I)),
    ("syntax", re.compile(r"Invalid action|Unknown action|takes \d|must be|unexpected keyword|Empty action", re.I)),
)


def error_class(message: str | None) -> str:
    """The class (one of :data:`ERROR_CLASSES`) of an action's error message."""
    if not message:
        return "none"
    for name, pattern in _CLASS_PATTERNS:
        if pattern.search(message):
            return name
    return "other"


#: Texts a walk types: words, numbers valid and not, dates valid and not, an email,
#: whitespace around a value, an empty string, a long text.
TEXTS = ("desk lamp", "hello world", "42", "-3.5", "1e3", "abc", "1,5", " 7 ", "0", "2026-12-24",
         "2027-01-03", "10", "2026-13-45", "24/12/2026", "not a date", "a@b.c", "someone@example.com", "",
         "x" * 300, "O'Brien \"quoted\"")
#: Keys a walk presses on an element.
KEYS = ("Enter", "Enter", "Tab", "Space", "ArrowDown", "ArrowUp", "ArrowLeft", "ArrowRight", "Escape",
        "Backspace")
_FILL_ROLES = {"textbox", "searchbox", "spinbutton", "combobox"}
_CHECK_ROLES = {"checkbox", "radio"}
_ELEMENT_LINE = re.compile(r"^\s*\[([^\]]+)\]\s+([A-Za-z][\w-]*)")


#: Divergences that cannot be modelled, by name, with the reason. (A link to another host
#: and the form state Chromium restores after go_back/go_forward were declared here until
#: the in-process browser modelled them: its network-error page, its per-entry fields.)
DECLARED = {
    "date-picker": "Space on a date, time, month, week or datetime-local field opens Chromium's picker "
                   "popup, whose arrow keys then pick a value counted from the machine's real today when the "
                   "field is empty; the simulator has no wall clock (its runs are deterministic), so the dates "
                   "Chromium picks cannot be known",
    "late-timeout": "Chromium performed the action (its tab moved to the same URL, with the same state, as "
                    "in-process) but Playwright's wait after it outlasted the walk's action timeout on a "
                    "loaded machine, so BrowserGym reports a timeout: a timing artifact of the harness, "
                    "not a transition",
}


def declared(divergence: dict[str, Any]) -> str | None:
    """The :data:`DECLARED` class of a walk's divergence record, or None."""
    chromium = divergence.get("chromium", {})
    if divergence.get("after_date_picker") and divergence.get("chromium_only_dates") and \
            "error" not in divergence.get("differs", ()):
        return "date-picker"
    if divergence.get("differs") == ["error"] and divergence.get("chromium_moved") and \
            divergence.get("sim", {}).get("error_class") == "none" and \
            chromium.get("error_class") == "not-actionable" and "Timeout" in chromium.get("error", ""):
        return "late-timeout"
    return None


def redeclare(result: dict[str, Any], start_url: str | None = None) -> dict[str, Any]:
    """A :func:`run_walk` result recorded before a class was declared, its divergence
    classified again by :func:`declared` (``chromium_moved`` filled in from the steps when
    the record lacks it; ``start_url``: the path the walk started on, if known)."""
    d = result.get("divergence")
    if d is None or d["class"].startswith("declared "):
        return result
    steps = result["steps"]
    if "chromium_moved" not in d:
        prev = steps[-2]["chromium"]["url"] if len(steps) > 1 else start_url
        d["chromium_moved"] = prev is not None and d["chromium"]["url"] != prev
    why = declared(d)
    if why is not None:
        d["class"] = f"declared {why}: {d['class']}"
    return result


def _bids(axtree: str) -> list[tuple[str, str]]:
    """(bid, role) of every AX-tree line with a bid, in order."""
    out = []
    for line in axtree.splitlines():
        m = _ELEMENT_LINE.match(line)
        if m:
            out.append((m.group(1), m.group(2)))
    return out


def random_action(rng: random.Random, axtree: str, page: Page | None = None) -> str:
    """One BrowserGym action string drawn over the bids of ``axtree`` (any bid, or one
    whose role suits the action), with ``page`` (the parsed HTML) for select options and
    hidden bids. Deterministic for a given ``rng`` state."""
    bids = _bids(axtree)
    if not bids:
        return rng.choice(["go_back()", "go_forward()", "noop()"])

    def pick(roles: set[str] | None = None) -> str:
        pool = [b for b, r in bids if roles is None or r in roles] if rng.random() < 0.5 else []
        return rng.choice(pool or [b for b, _ in bids])

    roll = rng.random()
    if roll < 0.36:
        return f"click({pick({'link', 'button'})!r})"
    if roll < 0.56:
        return f"fill({pick(_FILL_ROLES)!r}, {rng.choice(TEXTS)!r})"
    if roll < 0.66:
        bid = pick({"combobox", "listbox"})
        options: list[str] = ["no such option"]
        el = page.elements.get(bid) if page is not None else None
        if el is not None and el.options:
            options += [v for v, _, _ in el.options] + [label for _, label, _ in el.options]
        return f"select_option({bid!r}, {rng.choice(options)!r})"
    if roll < 0.73:
        return f"{rng.choice(['check', 'uncheck'])}({pick(_CHECK_ROLES)!r})"
    if roll < 0.86:
        return f"press({pick()!r}, {rng.choice(KEYS)!r})"
    if roll < 0.89:
        return f"{rng.choice(['hover', 'focus'])}({pick()!r})"
    if roll < 0.92 and page is not None:
        hidden = [b for b, el in page.elements.items() if el.hidden]
        if hidden:   # an element Chromium cannot act on (an input type=hidden with a bid, say)
            return f"{rng.choice(['click', 'fill'])}({rng.choice(hidden)!r}{', ' + repr('1') if rng.random() < .5 else ''})"
    if roll < 0.97:
        return "go_back()"
    return "go_forward()"


def start_state(sim: Any, rng: random.Random) -> dict:
    """A varied start state: a task drawn at random, reset with a random seed, then a
    random prefix of its oracle plan run in-process. Each tab's history is cut to its
    current entry: a restored Chromium tab has no earlier entries to go back to."""
    tasks = sorted(sim.app.tasks)
    task = rng.choice(tasks)
    sim.reset(seed=rng.randrange(1000), options={"task": task})
    plan = sim.oracle_plan()
    for action in plan[: rng.randint(0, len(plan))]:
        _, _, terminated, truncated, _ = sim.step(action)
        if terminated or truncated:
            break
    state = sim.snapshot()
    for tab in state["browser"]["tabs"]:
        tab["history"] = [tab["url"]]
        tab["cursor"] = 0
        tab.pop("saved_fields", None)   # the entries it held are gone
    return state


def _path(url: str) -> str:
    parts = urlsplit(url or "")
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "") if parts.scheme != "about" else url


def _role_of(action: str, axtree: str) -> str:
    try:
        parsed = parse_action(action)
    except ActionError:
        return "-"
    if parsed.name not in {"click", "dblclick", "fill", "select_option", "check", "uncheck", "press", "hover",
                           "focus", "clear"}:
        return "-"
    bid = str(parsed.args[0])
    return next((r for b, r in _bids(axtree) if b == bid), "hidden")


def _step_key(action: str, axtree: str) -> str:
    """``<action name> <target role>`` of an action, for its divergence class."""
    name = action.split("(", 1)[0]
    role = _role_of(action, axtree)
    return name if role == "-" else f"{name} {role}"


def _fields(state: dict) -> dict:
    b = state["browser"]
    return {k: v for k, v in b["tabs"][b["active"]]["fields"].items() if v not in ("", False)}


_PICKER_TYPES = {"date", "time", "month", "week", "datetime-local"}
_DATE_TEXT = re.compile(r"\d{4}-\d\d(?:-\d\d)?|\d\d:\d\d|\d{4}-W\d\d")


def _dates(state: dict, url: str) -> set[str]:
    """The date-like texts in a step's URL, active tab's fields and last requests."""
    text = url + repr(sorted(_fields(state).items())) + "".join(state["meta"]["history"]["log"][-3:])
    return set(_DATE_TEXT.findall(text))


def run_walk(sim: Any, web: Any, state: dict, rng: random.Random, steps: int) -> dict[str, Any]:
    """One walk of ``steps`` random actions from ``state`` in both envs; stops at the first
    step where the URL, the runtime/meta state or the error class differ. Returns
    ``{"steps": [...], "diverged_at": step or None, "divergence": {...} or None}``."""
    sim.restore(state)
    web.restore(state)
    records: list[dict[str, Any]] = []
    axtree = sim.browser.axtree()
    web_url = _path(state["browser"]["tabs"][state["browser"]["active"]]["url"])
    restored = False   # a history step after which the fields differ (form state restored otherwise)
    picker = False     # Space went to a date-like field: Chromium opened its picker popup
    for i in range(1, steps + 1):
        page = parse_page(sim.browser.html())
        action = random_action(rng, axtree, page)
        key = _step_key(action, axtree)
        so, _, _, _, _ = sim.step(action)
        wo, _, _, _, _ = web.step(action)
        s_state, w_state = sim.snapshot(), web.snapshot()
        rec: dict[str, Any] = {
            "step": i, "action": action, "kind": key,
            "sim": {"url": _path(so["url"]), "error": so["last_action_error"],
                    "error_class": error_class(so["last_action_error"])},
            "chromium": {"url": _path(wo["url"]), "error": wo["last_action_error"],
                         "error_class": error_class(wo["last_action_error"])},
        }
        rec["chromium_moved"] = rec["chromium"]["url"] != web_url   # Chromium's tab went somewhere
        web_url = rec["chromium"]["url"]
        differs = []
        if rec["sim"]["url"] != rec["chromium"]["url"]:
            differs.append("url")
        if s_state["runtime"] != w_state["runtime"] or s_state["meta"] != w_state["meta"]:
            differs.append("state")
        if rec["sim"]["error_class"] != rec["chromium"]["error_class"]:
            differs.append("error")
        rec["differs"] = differs
        if action in ("go_back()", "go_forward()"):
            # Chromium filled the page's fields back in from its history entry.
            restored = _fields(w_state) != _fields(s_state)
        rec["after_history_with_fields"] = restored
        focused = page.elements.get(sim.browser.tab["focus"] or "")
        if action.endswith(", 'Space')") and focused is not None and focused.input_type in _PICKER_TYPES:
            picker = True
        rec["after_date_picker"] = picker
        if differs and picker:
            rec["chromium_only_dates"] = bool(_dates(w_state, rec["chromium"]["url"]) - _dates(s_state, rec["sim"]["url"]))
        records.append(rec)
        if differs:
            cls = f"{key}: {'+'.join(differs)} differ"
            if "error" in differs:
                cls += f" ({rec['sim']['error_class']} in-process, {rec['chromium']['error_class']} in Chromium)"
            why = declared(rec)
            if why is not None:
                cls = f"declared {why}: {cls}"
            return {"steps": records, "diverged_at": i, "divergence": {"class": cls, **rec}}
        axtree = so["axtree"]
    return {"steps": records, "diverged_at": None, "divergence": None}


def summarize(app: str, walks: list[dict[str, Any]], steps: int) -> dict[str, Any]:
    """The report of a list of :func:`run_walk` results: parity rate, step agreement and
    divergence classes (count and first example each), most frequent first."""
    classes: dict[str, dict[str, Any]] = {}
    for w in walks:
        d = w["divergence"]
        if d is None:
            continue
        entry = classes.setdefault(d["class"], {"count": 0, "example": {k: d[k] for k in (
            "action", "sim", "chromium", "differs")} | {"walk": w["walk"], "step": d["step"]}})
        entry["count"] += 1
    agreed = sum(1 for w in walks if w["divergence"] is None)
    excused = sum(1 for w in walks if w["divergence"] is not None and w["divergence"]["class"].startswith("declared "))
    stepped = sum(len(w["steps"]) for w in walks)
    steps_agreeing = sum(sum(1 for r in w["steps"] if not r["differs"]) for w in walks)
    return {
        "app": app, "walks": len(walks), "steps_per_walk": steps,
        "parity": round(agreed / len(walks), 4) if walks else None,
        "walks_agreeing": agreed,
        # the share of walks that agree or end at a declared class (simweb.walks.DECLARED)
        "parity_but_declared": round((agreed + excused) / len(walks), 4) if walks else None,
        "walks_declared": excused,
        "steps_run": stepped, "steps_agreeing": steps_agreeing,
        "classes": dict(sorted(classes.items(), key=lambda kv: -kv[1]["count"])),
    }


def run_walks(app: str, walks: int, steps: int = 25, seed: int = 0, *, world_seed: int = 0, sim: Any = None,
              web: Any = None, timeout_ms: int = 1000,
              progress: Callable[[int, dict[str, Any]], None] | None = None, keep_steps: bool = False) -> dict[str, Any]:
    """``walks`` random walks of ``steps`` actions on ``app``, in-process and in Chromium
    (envs made here unless given; ``timeout_ms`` is Chromium's per-action timeout),
    summarised by :func:`summarize`. Walk ``k`` draws from ``random.Random(f"{seed}:{k}")``,
    so a report is reproducible and walks can be rerun one by one."""
    from ..episodes.env import SimEnv
    from ..serving.browser import make_browser_env

    own_sim, own_web = sim is None, web is None
    sim = sim if sim is not None else SimEnv(app, seed=world_seed, max_steps=100_000)
    if web is None:
        web = make_browser_env(app, world_seed, screenshots=False, timeout_ms=timeout_ms, max_steps=100_000)
    results = []
    try:
        for k in range(walks):
            rng = random.Random(f"{seed}:{k}")
            state = start_state(sim, rng)
            result = run_walk(sim, web, state, rng, steps)
            result["walk"] = k
            results.append(result)
            if progress is not None:
                progress(k, result)
    finally:
        if own_web:
            web.close()
        if own_sim:
            sim.close()
    report = summarize(app, results, steps)
    if keep_steps:
        report["runs"] = results
    return report

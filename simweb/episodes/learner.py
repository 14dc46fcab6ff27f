"""A small policy that learns: a log-linear softmax over candidate actions, in numpy.

The policy reads only what an observation shows a BrowserGym agent: the goal text, the
AX-tree text (roles, accessible names, values, properties; bids only as the handles the
actions name), ``last_action_error`` and the URL. It never reads simweb's state, ids or
task. So the same checkpoint can act on any site whose pages come as an AX tree.

Each step it lists candidate actions, element x action kind x argument:

- ``click(bid)`` on links, buttons, checkboxes, radios, tabs, menu items;
- ``fill(bid, text)`` on text inputs, ``text`` taken from the goal: its quoted spans
  (“...” or "...") and the text after its last colon;
- ``select_option(bid, option)`` for every option of a combobox;
- ``send_msg_to_user(text)``: the final message, ``done`` for a task that changes
  something, or an answer drawn from the page text (numbers, headings, links);
- ``go_back()``.

Every candidate gets a feature vector (:data:`FEATURES`, all names stored in the
checkpoint) that transfers across sites: the action kind, the element's role, the token
overlap of its name with the goal and with the goal's quoted spans, whether the element
was acted on already in this episode, whether it is pressed or checked, whether the last
action failed. The policy is ``p(a | obs) = softmax(X @ w + b(a))``: the fixed log-prior
``b(a)`` (:func:`kind_offsets`: kind, then for a click its role group and what points at
it, then the candidate, each uniformly) balances the kinds, so a page with 150 links and one final-message candidate does not give the
message 1/150 of the mass: with all weights 0 the policy picks a kind uniformly, then an
element of that kind uniformly (kind then argument). The offset does not depend on the
weights, so ``grad log p(a) = x_a - E_p[x]`` is unchanged. It samples from a generator
seeded by the rollout's seed (:meth:`LearnedPolicy.reset`), so the same seed gives the
same actions in any process.

Training (:mod:`simweb.train`) is a policy gradient with group-normalised advantages:
``grad log p(a) = x_a - E_p[x]``, computed by replaying each trajectory's observations.
"""
from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit

import numpy as np

from ..agents.axtext import AXNode, parse_axtree
from .policy import Action

__all__ = ["FEATURES", "FORMAT", "CheckpointError", "LearnedPolicy", "load_checkpoint", "save_checkpoint"]

FORMAT = "simweb-learned-policy"
FORMAT_VERSION = 5
CHECKPOINT_FILE = "policy.json"

KINDS = ("click", "fill", "select", "done", "answer", "back")
ROLE_GROUPS = ("link", "button", "text", "select", "check", "other")
CLICK_ROLES = {"link": "link", "button": "button", "checkbox": "check", "radio": "check", "switch": "check",
               "tab": "other", "menuitem": "other", "menuitemcheckbox": "check", "menuitemradio": "check",
               "treeitem": "other", "gridcell": "other", "row": "other"}
TEXT_ROLES = {"textbox", "searchbox", "spinbutton"}
MAX_FILL_TEXTS = 6
MAX_ANSWERS = 24

STOP = frozenset("a an the of in on to for and or my me i is it its that this with from by at as be do "
                 "so can there their them they you your so all any".split())

#: the feature names, in the order of the weight vector
FEATURES: tuple[str, ...] = (
    *(f"kind:{k}" for k in KINDS),
    *(f"click:role:{r}" for r in ROLE_GROUPS),
    # name tokens found in the goal (share of the name), per role group that is clicked
    "click:link:name_in_goal", "click:button:name_in_goal", "click:other:name_in_goal",
    # a quoted span of the goal found in the name (share of the span), and an exact match
    "click:link:span_in_name", "click:button:span_in_name", "click:link:name_is_span",
    # a link named exactly as a reference of the goal (c/python, u/name, #12): the place
    # the goal's thing lives in, not the thing (its title), so a weight of its own
    "click:link:name_is_ref",
    # name tokens found in the goal outside its quoted spans (the instruction's words)
    "click:link:name_in_instruction", "click:button:name_in_instruction",
    # ... a link the instruction names, on a page that shows the goal's quoted thing (the
    # search results with the product: act on it, do not leave for the cart the goal names)
    "click:link:name_in_instruction_shown",
    # the element's neighbourhood (the row or card it sits in) names what the goal quotes:
    # the Upvote button of the post the goal names, not of any post
    "click:button:context_span", "click:button:instruction_x_context", "click:button:instruction_no_context",
    # the page is the quoted thing's own page (its title, before " — Site", is the span):
    # the first button of its name there (the thing's own), or a later one (a comment's)
    "click:button:instruction_x_title", "click:button:instruction_x_title_repeat",
    # ... and, there, its name is in the words before the goal's first quote (the verb of
    # "Lock the post “X” so nobody can add comments": Lock, not Add comment)
    "click:button:lead_x_title",
    "click:link:to_current_page",
    "click:empty_name", "click:acted", "click:pressed", "click:after_fill", "click:button:after_fill",
    # the button submits the form (or search region) of the field filled last step
    "click:button:submits_filled",
    "click:last_error_same",
    "fill:quoted", "fill:colon_tail", "fill:field_in_context", "fill:searchbox", "fill:has_value",
    "fill:acted", "fill:same_text_twice",
    # the same, for a text the page does not show (seeking it: the search box on a page
    # without the goal's post), a family of its own: a fill of a text already in view
    # (searching again on the results page) teaches nothing about a fill that looks for it
    *(f"fill:absent{s}" for s in ("", "_quoted", "_colon_tail", "_field_in_context", "_searchbox",
                                  "_has_value", "_acted", "_same_text_twice")),
    "select:option_in_goal", "select:option_is_selected", "select:acted",
    "done:question", "done:acted_goal_button", "done:steps_used", "done:acted_any",
    "answer:question", "answer:number_asked_digit", "answer:near_span", "answer:heading",
    "answer:name_in_goal", "answer:acted_goal_button",
    "back:last_error",
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}


class CheckpointError(ValueError):
    """A checkpoint that cannot be used (missing, corrupt, another format or app): one line."""


# ----------------------------------------------------------------------------- text

_TOKEN = re.compile(r"[a-z0-9]+")
_QUOTED = re.compile(r"“([^”]+)”|\"([^\"]+)\"")
_DIGIT = re.compile(r"\d")
#: words a goal names things by besides its quotes: c/python, u/name, owner/repo, #123
_REF = re.compile(r"(?<![\w/])(?:[A-Za-z][\w.-]*/[\w.-]*\w|#\d+)")
CONTEXT = 24   # an element's context: its largest ancestor (up to 3 levels) of at most this many nodes


def _stem(t: str) -> str:
    """A plural's singular, crudely ("bookings" -> "booking", "issues" -> "issue"), so that
    a goal's "my booking" meets a link's "My bookings"."""
    return t[:-1] if len(t) > 3 and t.endswith("s") and not t.endswith("ss") else t


def tokens(text: str) -> list[str]:
    """Lower-case word tokens of ``text``, plurals stemmed, without stop words and single
    letters (the c of c/x)."""
    return [_stem(t) for t in _TOKEN.findall(text.lower()) if t not in STOP and (len(t) > 1 or t.isdigit())]


@dataclass(frozen=True)
class Goal:
    """What the policy reads from the goal text (parsed once per episode)."""

    text: str
    words: frozenset[str]
    instruction: frozenset[str]          # words outside the quoted spans
    lead: frozenset[str]                 # words before the first quoted span (empty without one)
    spans: tuple[str, ...]               # quoted spans and named references (c/x, u/y, #12), in order
    quoted: frozenset[str]               # the quoted spans alone, normalised (:func:`_norm`)
    span_words: tuple[frozenset[str], ...]
    fills: tuple[tuple[str, str, frozenset[str]], ...]   # (text, source, context words before it)
    question: bool
    asks_number: bool


def read_goal(text: str) -> Goal:
    spans, fills = [], []
    outside = text
    for m in _QUOTED.finditer(text):
        span = (m.group(1) or m.group(2) or "").strip()
        if not span:
            continue
        spans.append(span)
        before = tokens(text[max(0, m.start() - 40):m.start()])[-3:]
        fills.append((span, "quoted", frozenset(before)))
        outside = outside.replace(m.group(0), " ")
    for m in _REF.finditer(outside):
        if m.group(0) not in spans:
            spans.append(m.group(0))
    colon = text.rfind(": ")
    if colon >= 0:
        tail = text[colon + 2:].strip().rstrip(".").strip()
        if tail and not any(tail == f[0] for f in fills):
            fills.append((tail, "colon_tail", frozenset(tokens(text[max(0, colon - 40):colon])[-3:])))
    low = text.lower()
    first = _QUOTED.search(text)
    return Goal(text, frozenset(tokens(text)), frozenset(tokens(outside)),
                frozenset(tokens(text[:first.start()])) if first else frozenset(), tuple(spans),
                frozenset(_norm(f[0]) for f in fills if f[1] == "quoted"),
                tuple(frozenset(tokens(s)) for s in spans), tuple(fills[:MAX_FILL_TEXTS]),
                question="?" in text or "answer with" in low,
                asks_number=any(k in low for k in ("how many", "how much", "number", "amount", "price")))


def _share(part: set[str] | frozenset[str], whole: frozenset[str]) -> float:
    return len(part & whole) / len(part) if part else 0.0


def _norm(text: str) -> str:
    return " ".join(_TOKEN.findall(text.lower()))


def _quote(text: str) -> str:
    """A Python string literal of ``text`` (what BrowserGym's action parser reads)."""
    return repr(text)


# ----------------------------------------------------------------------------- candidates

#: what an action does to the policy's memory: (kind, bid, a click on a button the goal's
#: instruction names, the text filled / option selected / answer sent)
Effect = tuple[str, str, bool, str]


@dataclass
class Memory:
    """What the policy remembers of its own episode: the actions it took."""

    clicked: dict[str, int]
    filled: dict[str, str]
    selected: set[str]
    last_kind: str = ""
    last_bid: str = ""
    last_goal_button: bool = False
    steps: int = 0

    @classmethod
    def fresh(cls) -> Memory:
        return cls({}, {}, set())


def candidates(obs: dict[str, Any], goal: Goal, memory: Memory, budget: int = 30
               ) -> tuple[list[str], list[Effect], np.ndarray]:
    """The candidate actions of ``obs``, what each does to memory (kind, bid, whether it is
    a click on a button named by the goal's instruction) and their feature matrix."""
    nodes = parse_axtree(obs.get("axtree") or "")
    error = bool(obs.get("last_action_error"))
    acts: list[str] = []
    effects: list[Effect] = []
    rows: list[dict[str, float]] = []

    def add(action: str, feats: dict[str, float], effect: Effect) -> None:
        acts.append(action)
        rows.append(feats)
        effects.append(effect)

    span_match_at: list[int] = []
    node_words = [frozenset(tokens(n.name)) for n in nodes]
    shown_cache: dict[str, bool] = {}

    def shown(text: str) -> bool:
        """Whether the page shows ``text`` (its words in order, in some element's name)."""
        if text not in shown_cache:
            want = _norm(text)
            shown_cache[text] = bool(want) and any(want in _norm(n.name) for n in nodes)
        return shown_cache[text]

    def size(i: int) -> int:
        end = i + 1
        while end < len(nodes) and nodes[end].depth > nodes[i].depth:
            end += 1
        return end - i

    def context_span(i: int) -> float:
        """The mean share of the goal's quoted spans' (and references') words found in the
        names of the element's row or card (its largest ancestor, up to 3 levels up, of at
        most CONTEXT nodes): the mean, not the best, so that the row of a post with the
        goal's title in another community than the goal's is not the goal's row."""
        if not goal.span_words:
            return 0.0
        top, p, levels = i, nodes[i].parent, 0
        while p is not None and levels < 3:
            if size(p) > CONTEXT:
                break
            top, p, levels = p, nodes[p].parent, levels + 1
        around: set[str] = set()
        for j in range(top, top + size(top)):
            if j != i:
                around |= node_words[j]
        return sum(_share(set(sw), frozenset(around)) for sw in goal.span_words) / len(goal.span_words)

    here = urlsplit(obs.get("url") or "")
    quoted_shown = any(shown(s) for s in goal.spans if _norm(s) in goal.quoted)
    title = page_title_span(nodes, goal)
    options: dict[int, list[AXNode]] = {}
    for n in nodes:
        if n.role == "option" and n.parent is not None:
            options.setdefault(n.parent, []).append(n)
    # on a thing's own page its button comes first; the same name again is a part's (a
    # comment's Upvote under the post's), which the instruction names just as well
    first_button: dict[str, int] = {}
    for n in nodes:
        if n.bid and not n.disabled and CLICK_ROLES.get(n.role) == "button":
            first_button.setdefault(_norm(n.name), n.index)
    # the form (or search region) holding the field filled last step: its buttons submit it
    filled_form = -1
    if memory.last_kind == "fill":
        at = next((n for n in nodes if n.bid == memory.last_bid), None)
        p = at.parent if at is not None else None
        while p is not None and nodes[p].role not in ("form", "search"):
            p = nodes[p].parent
        filled_form = -1 if p is None else p
    for n in nodes:
        name_words = set(tokens(n.name))
        if n.bid and goal.spans and _norm(n.name) in {_norm(s) for s in goal.spans}:
            span_match_at.append(n.index)
        if not n.bid or n.disabled:
            continue
        if n.role in CLICK_ROLES:
            group = CLICK_ROLES[n.role]
            f = {"kind:click": 1.0, f"click:role:{group}": 1.0}
            in_goal = _share(name_words, goal.words)
            in_instr = _share(name_words, goal.instruction)
            span_in = max((_share(set(sw), frozenset(name_words)) for sw in goal.span_words), default=0.0)
            if group == "link":
                f.update({"click:link:name_in_goal": in_goal, "click:link:span_in_name": span_in,
                          "click:link:name_is_span": float(_norm(n.name) in goal.quoted),
                          "click:link:name_is_ref": float(_norm(n.name) in {_norm(s) for s in goal.spans}
                                                          and _norm(n.name) not in goal.quoted),
                          "click:link:name_in_instruction" if not quoted_shown
                          else "click:link:name_in_instruction_shown": in_instr})
                url = str(n.props.get("url", ""))
                f["click:link:to_current_page"] = float(bool(url) and urlsplit(urljoin(obs.get("url") or "", url))[2:4]
                                                        == here[2:4])
            elif group == "button":
                ctx = context_span(n.index)
                f.update({"click:button:span_in_name": span_in, "click:button:context_span": ctx,
                          "click:button:after_fill": float(memory.last_kind == "fill"),
                          "click:button:submits_filled": float(filled_form >= 0
                                                               and filled_form <= n.index < filled_form + size(filled_form))})
                if goal.span_words:
                    # a goal that names its object: the instruction's button counts in one of
                    # three exclusive places, so no weight is shared between the right button
                    # and the same button elsewhere (spam): in the object's row or card (all
                    # the goal's spans around it), on the object's own page, or elsewhere
                    full = float(ctx >= 0.99)
                    first = float(first_button.get(_norm(n.name)) == n.index)
                    f.update({"click:button:instruction_x_context": in_instr * full,
                              "click:button:instruction_x_title": in_instr * (1.0 - full) * title * first,
                              "click:button:instruction_x_title_repeat": in_instr * (1.0 - full) * title * (1 - first),
                              "click:button:lead_x_title": _share(name_words, goal.lead) * (1.0 - full) * title * first,
                              "click:button:instruction_no_context": in_instr * (1.0 - full) * (1.0 - title)})
                else:
                    f.update({"click:button:name_in_goal": in_goal, "click:button:name_in_instruction": in_instr})
            else:
                f["click:other:name_in_goal"] = in_goal
            f["click:empty_name"] = float(not name_words)
            f["click:acted"] = float(n.bid in memory.clicked)
            f["click:pressed"] = float(str(n.props.get("pressed", "")).lower() == "true"
                                       or str(n.props.get("checked", "")).lower() == "true")
            f["click:after_fill"] = float(memory.last_kind == "fill")
            f["click:last_error_same"] = float(error and memory.last_bid == n.bid)
            goal_button = group == "button" and in_instr > 0 and not f.get("click:button:instruction_x_title_repeat")
            add(f"click({_quote(n.bid)})", f, ("click", n.bid, goal_button, ""))
        elif n.role in TEXT_ROLES or (n.role == "combobox" and n.index not in options):
            field_words = frozenset(tokens(n.name))
            for text, source, context in goal.fills:
                f = {"kind:fill": 1.0, f"fill:{source}": 1.0,
                     "fill:field_in_context": _share(set(field_words), context) if field_words else 0.0,
                     "fill:searchbox": float(n.role == "searchbox"),
                     "fill:has_value": float((n.value or "") == text),
                     "fill:acted": float(n.bid in memory.filled),
                     "fill:same_text_twice": float(text in memory.filled.values())}
                if not shown(text):
                    f = {("fill:absent" if k == "kind:fill" else "fill:absent_" + k.split(":", 1)[1]): v
                         for k, v in f.items()}
                add(f"fill({_quote(n.bid)}, {_quote(text)})", f, ("fill", n.bid, False, text))
        elif n.role in ("combobox", "listbox"):
            for o in options.get(n.index, []):
                if not o.name:
                    continue
                f = {"kind:select": 1.0, "select:option_in_goal": _share(set(tokens(o.name)), goal.words),
                     "select:option_is_selected": float((n.value or "") == o.name
                                                        or str(o.props.get("selected")).lower() == "true"),
                     "select:acted": float(n.bid in memory.selected)}
                add(f"select_option({_quote(n.bid)}, {_quote(o.name)})", f, ("select", n.bid, False, o.name))
    acted_any = float(bool(memory.clicked or memory.filled or memory.selected))
    add("send_msg_to_user('done')", {"kind:done": 1.0, "done:question": float(goal.question),
                                      "done:acted_goal_button": float(memory.last_goal_button),
                                      "done:steps_used": min(1.0, memory.steps / max(1, budget)),
                                      "done:acted_any": acted_any}, ("done", "", False, ""))
    # answers: page text a question may be answered with (numbers, headings, link names)
    seen: set[str] = set()
    for n in nodes if goal.question else ():
        if len(seen) >= MAX_ANSWERS:
            break
        text = n.name.strip()
        if not text or text in seen or len(text) > 120:
            continue
        digit = bool(_DIGIT.search(text))
        if not (digit and n.role == "StaticText") and n.role not in ("heading", "link"):
            continue
        seen.add(text)
        near = float(any(abs(n.index - i) <= 4 for i in span_match_at))
        f = {"kind:answer": 1.0, "answer:question": float(goal.question),
             "answer:number_asked_digit": float(goal.asks_number and digit),
             "answer:near_span": near, "answer:heading": float(n.role == "heading"),
             "answer:name_in_goal": _share(set(tokens(text)), goal.words),
             "answer:acted_goal_button": float(memory.last_goal_button)}
        add(f"send_msg_to_user({_quote(text)})", f, ("answer", "", False, text))
    add("go_back()", {"kind:back": 1.0, "back:last_error": float(error)}, ("back", "", False, ""))
    x = np.zeros((len(rows), len(FEATURES)), dtype=np.float64)
    for i, feats in enumerate(rows):
        for k, v in feats.items():
            if v:
                x[i, _INDEX[k]] = v
    return acts, effects, x


#: features that say a clicked element's name matches the goal: with any of them non-zero a
#: click is in its role group's "named by the goal" bucket (see :func:`kind_offsets`)
_GOAL_MATCH = tuple(i for i, name in enumerate(FEATURES) if name.startswith("click:") and any(
    k in name for k in ("name_in_goal", "span_in_name", "name_is_span", "name_is_ref", "name_in_instruction", "instruction_")))
_SUBMITS = _INDEX["click:button:submits_filled"]
_ROLE_AT = tuple(_INDEX[f"click:role:{r}"] for r in ROLE_GROUPS)


def _bucket(effect: Effect, row: np.ndarray) -> tuple[str, int, int]:
    """A candidate's bucket: its kind and, for a click, its role group and what points at
    the element: 2 it submits the field just filled, 1 the goal names it (any goal-match
    feature non-zero), 0 nothing."""
    if effect[0] != "click":
        return (effect[0], -1, 0)
    role = next((g for g, i in enumerate(_ROLE_AT) if row[i]), -1)
    return ("click", role, 2 if row[_SUBMITS] else int(bool(row[list(_GOAL_MATCH)].any())))


def kind_offsets(effects: Sequence[Effect], x: np.ndarray | None = None) -> np.ndarray:
    """The fixed log-prior of each candidate: with all weights 0 the policy chooses a kind
    uniformly (the final message is one kind among five, not one action among 150), then,
    for a click, one of the page's (role group, what points at it) buckets
    uniformly, then one candidate of it: ``-log(buckets of the kind) - log(size of the
    bucket)``. Without the buckets a post page's Lock button is one click among 60 and a
    group of 16 almost never presses it; with them it is one of the few buttons the goal
    names. ``x`` (the features) gives the buckets; without it, kinds only."""
    keys = [_bucket(e, x[i]) if x is not None else (e[0], -1, 0) for i, e in enumerate(effects)]
    size: dict[tuple[str, int, int], int] = {}
    for k in keys:
        size[k] = size.get(k, 0) + 1
    per_kind: dict[str, int] = {}
    for k in size:
        per_kind[k[0]] = per_kind.get(k[0], 0) + 1
    return -np.log(np.array([size[k] * per_kind[k[0]] for k in keys], dtype=np.float64))


_TITLE_SEP = re.compile(r"\s+[—–|·-]\s+")


def page_title_span(nodes: Sequence[AXNode], goal: Goal) -> float:
    """How much the page is the page of a thing the goal quotes: the best Jaccard overlap
    of a quoted span's words with the words of the page's title (the root's name, up to
    its first " — Site" separator). A listing or a search page for the span scores
    below its own page."""
    if not nodes or not goal.span_words:
        return 0.0
    head = _TITLE_SEP.split(nodes[0].name.strip(), maxsplit=1)[0] if nodes[0].role == "RootWebArea" else ""
    words = frozenset(tokens(head))
    if not words:
        return 0.0
    return max((len(sw & words) / len(sw | words) for sw in goal.span_words if sw), default=0.0)


def softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max()
    e = np.exp(z)
    return e / e.sum()


# ----------------------------------------------------------------------------- the policy

class LearnedPolicy:
    """The bundled learned policy (a :class:`simweb.policy.Policy`): ``weights`` over
    :data:`FEATURES`; ``app`` the app it was trained for (None: any)."""

    name = "learned"

    def __init__(self, weights: Sequence[float] | np.ndarray | None = None, *, app: str | None = None,
                 version: int = 0, greedy: bool = False):
        w = np.zeros(len(FEATURES), dtype=np.float64) if weights is None else np.asarray(weights, dtype=np.float64)
        if w.shape != (len(FEATURES),):
            raise CheckpointError(f"weights have shape {w.shape}, the features need ({len(FEATURES)},)")
        self.weights = w
        self.app = app
        self.version = version
        self.greedy = greedy
        self._rng = np.random.default_rng(0)
        self._goal: Goal | None = None
        self.memory = Memory.fresh()
        self.budget = 30

    def reset(self, env: Any, seed: int) -> None:
        """A rollout starts: a fresh memory and a generator seeded by ``seed`` alone."""
        self._rng = np.random.default_rng(int(seed) & (2**63 - 1))
        self._goal = None
        self.memory = Memory.fresh()
        self.budget = int(getattr(env, "max_steps", 30) or 30)

    def goal(self, obs: dict[str, Any]) -> Goal:
        text = obs.get("goal") or ""
        if self._goal is None or self._goal.text != text:
            self._goal = read_goal(text)
        return self._goal

    def scores(self, obs: dict[str, Any]) -> tuple[list[str], list[Effect], np.ndarray, np.ndarray]:
        """(actions, their effects on memory, features, probabilities) for ``obs``."""
        acts, effects, x = candidates(obs, self.goal(obs), self.memory, self.budget)
        return acts, effects, x, softmax(x @ self.weights + kind_offsets(effects, x))

    def remember(self, effect: Effect) -> None:
        """Update the episode memory with the action taken (its kind, element)."""
        kind, bid, goal_button, text = effect
        m = self.memory
        m.steps += 1
        if kind == "click":
            m.clicked[bid] = m.clicked.get(bid, 0) + 1
        elif kind == "fill":
            m.filled[bid] = text
        elif kind == "select":
            m.selected.add(bid)
        m.last_kind, m.last_bid = kind, bid
        m.last_goal_button = goal_button or (m.last_goal_button and kind not in ("click", "fill", "select"))

    def choose(self, probs: np.ndarray) -> int:
        if self.greedy:
            return int(np.argmax(probs))
        # inverse-CDF on one uniform draw: the same draw gives the same index everywhere
        u = self._rng.random()
        i = int(np.searchsorted(np.cumsum(probs), u * probs.sum(), side="right"))
        return min(i, len(probs) - 1)

    def act(self, obs: dict[str, Any]) -> Action:
        acts, effects, _x, probs = self.scores(obs)
        i = self.choose(probs)
        self.remember(effects[i])
        return Action(acts[i], math.log(max(float(probs[i]), 1e-300)))

    # ------------------------------------------------------------------ checkpoints
    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION, "app": self.app, "features": list(FEATURES),
                "weights": [float(v) for v in self.weights], "version": self.version}


def save_checkpoint(path: str | Path, policy: LearnedPolicy, extra: dict[str, Any] | None = None) -> Path:
    """Write ``policy`` (and training state in ``extra``) to ``path`` (a folder: its
    ``policy.json``), atomically. Floats are written with Python's shortest round-trip
    repr, so the weights read back bit for bit."""
    from .rollout import write_atomic

    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    doc = policy.to_dict()
    doc.update(extra or {})
    write_atomic(str(p / CHECKPOINT_FILE), [json.dumps(doc, indent=1, sort_keys=True).encode()])
    return p / CHECKPOINT_FILE


def read_checkpoint(path: str | Path) -> dict[str, Any]:
    """The checkpoint document at ``path`` (a folder with ``policy.json``, or the file)."""
    p = Path(path)
    f = p / CHECKPOINT_FILE if p.is_dir() else p
    if not f.exists():
        raise CheckpointError(f"no checkpoint at {path} (expected a training folder with {CHECKPOINT_FILE}, "
                              f"or its init/ folder)")
    try:
        doc = json.loads(f.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CheckpointError(f"{f} is not a readable checkpoint: {type(exc).__name__}: "
                              f"{str(exc).splitlines()[0] if str(exc) else ''}") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise CheckpointError(f"{f} is not a simweb learned-policy checkpoint")
    if doc.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{f} has format version {doc.get('format_version')!r}; this simweb reads "
                              f"{FORMAT_VERSION}")
    if doc.get("features") != list(FEATURES):
        raise CheckpointError(f"{f} was trained on another feature set than this simweb's")
    w = doc.get("weights")
    if not isinstance(w, list) or len(w) != len(FEATURES) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in w):
        raise CheckpointError(f"{f}: the weights are not {len(FEATURES)} finite numbers")
    return doc


def load_checkpoint(path: str | Path, app: str | None = None, *, greedy: bool = False) -> LearnedPolicy:
    """The policy saved at ``path``; ``app`` given, a checkpoint trained for another app
    is refused (:class:`CheckpointError`)."""
    doc = read_checkpoint(path)
    if app is not None and doc.get("app") not in (None, app):
        raise CheckpointError(f"the checkpoint at {path} was trained for app '{doc.get('app')}', not '{app}'")
    return LearnedPolicy(doc["weights"], app=doc.get("app"), version=int(doc.get("version") or 0), greedy=greedy)

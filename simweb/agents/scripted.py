"""A scripted agent that acts only from the observation: semantic steps found by role and
accessible name in ``obs["axtree"]``, never by a simweb id.

    from simweb.agents.scripted import Click, Fill, Select, Check, Press, Answer, Refuse, ScriptedAgent

    steps = [Fill(role="textbox", name=re.compile("search", re.I), text="merino"),
             Press(role="textbox", name=re.compile("search", re.I), key="Enter"),
             Click(role="link", name="Merino sweater"),
             Select(role="combobox", name="Size", option="M"),
             Click(role="button", name=re.compile(r"add to (cart|basket)", re.I))]
    agent = ScriptedAgent(steps)
    agent.reset(env)
    action = agent.act(obs)        # "fill('search-q', 'merino')": a BrowserGym action string

Each step is resolved against the page it meets: the agent parses the flattened AX tree
(BrowserGym's ``[bid] role 'name'`` lines, :mod:`simweb.agents.axtext`), finds the
element and emits the action on that element's bid. So one script runs unchanged on a
simweb app in-process, on the same app served to Chromium, and on a real site behind
:class:`simweb.live.web.WebEnv`, where the bids are whatever that page carries.

Matching:

- ``role`` is a role name or a tuple of them; a role also matches its ARIA subclass
  roles as Chromium reports them (``textbox`` matches ``searchbox``, ``checkbox``
  matches ``switch`` and ``menuitemcheckbox``, ``combobox`` matches ``listbox``,
  ``radio`` matches ``menuitemradio``): two sites rarely agree on ``type=search``.
- ``name`` is a ``str`` (equal to the accessible name, case and runs of white space
  ignored), a compiled regular expression (``search()`` on the name), or None (any).
- ``nth`` picks among several matches (document order, 0 first); enabled elements come
  before disabled ones.
- ``near=(role, name)`` keeps the matches nearest an anchor element: the target is looked
  for under the anchor's parent, then its grandparent..., so ``Click("button", "Add to
  basket", near=("link", "Merino sweater"))`` picks that product's button on a listing.
- ``optional=True``: when the element is missing the step is skipped (logged) instead of
  stopping the agent: a control one site has and the other lacks.

:class:`ScriptedAgent` logs every step in ``agent.log`` as ``{"step", "what", "found",
"bid", "action", "url", "matches"}`` (and ``"error"``, the ``last_action_error`` the step
got back). A step whose element is missing stops the agent: it is logged with
``found=False``, ``agent.stuck`` becomes True and every later action is ``noop()``
(after ``patience`` observations of waiting, for pages that build themselves with
JavaScript). When every step has run, ``agent.done`` is True and the agent idles.

A script that does not end with :class:`Answer` or :class:`Refuse` gets a last
``Answer("Done.")`` (``finish=False`` leaves it out): an episode ends when the agent says
it is done, not when the site's state happens to be right (docs/rewards.md).
"""
from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass
from typing import Any

from .axtext import AXNode, parse_axtree, subtree

__all__ = ["Answer", "Check", "DONE_MESSAGE", "Click", "Fill", "Goto", "Press", "Refuse", "ScriptedAgent", "Select", "Step",
           "find", "name_matches"]

NameMatch = str | re.Pattern[str] | None
RoleMatch = str | tuple[str, ...]

#: A role also matches the roles ARIA derives from it (what a browser may report instead).
ROLE_FAMILIES: dict[str, frozenset[str]] = {
    "textbox": frozenset({"textbox", "searchbox"}),
    "checkbox": frozenset({"checkbox", "switch", "menuitemcheckbox"}),
    "combobox": frozenset({"combobox", "listbox"}),
    "radio": frozenset({"radio", "menuitemradio"}),
    "button": frozenset({"button"}),
    "link": frozenset({"link"}),
}


def _fold(text: str) -> str:
    return " ".join(text.split()).casefold()


def name_matches(name: NameMatch, actual: str) -> bool:
    """Whether an accessible name matches a step's ``name`` (see the module doc)."""
    if name is None:
        return True
    if isinstance(name, str):
        return _fold(name) == _fold(actual)
    return name.search(actual) is not None


def _roles(role: RoleMatch) -> frozenset[str]:
    names = (role,) if isinstance(role, str) else tuple(role)
    out: set[str] = set()
    for r in names:
        out |= ROLE_FAMILIES.get(r, frozenset({r}))
    return frozenset(out)


def _show_name(name: NameMatch) -> str:
    if name is None:
        return "*"
    if isinstance(name, str):
        return repr(name)
    return f"/{name.pattern}/" + ("i" if name.flags & re.IGNORECASE else "")


def _candidates(nodes: list[AXNode], role: RoleMatch, name: NameMatch) -> list[AXNode]:
    roles = _roles(role)
    return [n for n in nodes if n.bid is not None and n.role in roles and name_matches(name, n.name)]


def find(nodes: list[AXNode] | str, role: RoleMatch, name: NameMatch = None, *, nth: int = 0,
         near: tuple[RoleMatch, NameMatch] | None = None) -> tuple[AXNode | None, int]:
    """The element a step means, and how many elements matched.

    ``nodes`` is :func:`parse_axtree`'s output or the AX-tree text itself."""
    if isinstance(nodes, str):
        nodes = parse_axtree(nodes)
    pool = _candidates(nodes, role, name)
    if near is not None and pool:
        anchors = [n for n in nodes if n.role in _roles(near[0]) and name_matches(near[1], n.name)]
        if not anchors:
            return None, 0
        anchor = anchors[0]
        scoped: list[AXNode] = []
        up = anchor.parent
        while up is not None and not scoped:   # the nearest ancestor holding a match
            inside = {n.index for n in subtree(nodes, nodes[up])}
            scoped = [n for n in pool if n.index in inside]
            up = nodes[up].parent
        pool = scoped
    pool = [n for n in pool if not n.disabled] + [n for n in pool if n.disabled]
    return (pool[nth] if nth < len(pool) else None), len(pool)


# ----------------------------------------------------------------------------- steps

@dataclass(frozen=True)
class Step:
    """A step on one element, found by ``role`` and accessible ``name``."""

    role: RoleMatch
    name: NameMatch = None
    _: KW_ONLY
    nth: int = 0
    near: tuple[RoleMatch, NameMatch] | None = None
    optional: bool = False

    verb = "act"

    def describe(self) -> str:
        role = self.role if isinstance(self.role, str) else "|".join(self.role)
        extra = f" #{self.nth}" if self.nth else ""
        if self.near is not None:
            near_role = self.near[0] if isinstance(self.near[0], str) else "|".join(self.near[0])
            extra += f" near {near_role} {_show_name(self.near[1])}"
        return f"{self.verb} {role} {_show_name(self.name)}{extra}{self._args()}"

    def _args(self) -> str:
        return ""

    def action(self, node: AXNode, nodes: list[AXNode]) -> str | None:
        """The BrowserGym action string for the found element (None: cannot act on it)."""
        raise NotImplementedError


@dataclass(frozen=True)
class Click(Step):
    """Click a link, button, tab... (``click(bid)``)."""

    verb = "click"

    def action(self, node: AXNode, nodes: list[AXNode]) -> str:
        return f"click({node.bid!r})"


@dataclass(frozen=True)
class Fill(Step):
    """Replace a text field's content (``fill(bid, text)``)."""

    text: str = ""
    verb = "fill"

    def _args(self) -> str:
        return f" with {self.text!r}"

    def action(self, node: AXNode, nodes: list[AXNode]) -> str:
        return f"fill({node.bid!r}, {self.text!r})"


@dataclass(frozen=True)
class Select(Step):
    """Choose an option of a select (``select_option(bid, label)``). ``option`` is matched
    like a name against the select's option lines and the exact label is sent; a select
    that lists no options gets ``option`` as written (when it is a string)."""

    option: NameMatch = None
    verb = "select"

    def _args(self) -> str:
        return f" option {_show_name(self.option)}"

    def action(self, node: AXNode, nodes: list[AXNode]) -> str | None:
        options = [n for n in subtree(nodes, node)[1:] if n.role == "option"]
        for opt in options:
            if name_matches(self.option, opt.name):
                return f"select_option({node.bid!r}, {opt.name!r})"
        if not options and isinstance(self.option, str):
            return f"select_option({node.bid!r}, {self.option!r})"
        return None


@dataclass(frozen=True)
class Check(Step):
    """Tick a checkbox or a radio button (``check(bid)``; ticking a ticked box keeps it)."""

    verb = "check"

    def action(self, node: AXNode, nodes: list[AXNode]) -> str:
        return f"check({node.bid!r})"


@dataclass(frozen=True)
class Press(Step):
    """Focus an element and press a key combination (``press(bid, key)``)."""

    key: str = "Enter"
    verb = "press"

    def _args(self) -> str:
        return f" key {self.key!r}"

    def action(self, node: AXNode, nodes: list[AXNode]) -> str:
        return f"press({node.bid!r}, {self.key!r})"


@dataclass(frozen=True)
class Answer:
    """Send the answer to the user (``send_msg_to_user(text)``); ends the episode."""

    text: str
    optional = False

    def describe(self) -> str:
        return f"answer {self.text!r}"


@dataclass(frozen=True)
class Refuse:
    """Decline the task (``report_infeasible(reason)``); ends the episode."""

    reason: str = "This cannot be done."
    optional = False

    def describe(self) -> str:
        return f"refuse {self.reason!r}"


@dataclass(frozen=True)
class Goto:
    """Open a URL (``goto(url)``; a path is resolved against the current page)."""

    url: str
    optional = False

    def describe(self) -> str:
        return f"goto {self.url!r}"


AnyStep = Step | Answer | Refuse | Goto

#: What a script that only changes the site says at its end (``finish``): the episode
#: ends when the agent says it is done (docs/rewards.md).
DONE_MESSAGE = "Done."


# ----------------------------------------------------------------------------- the agent

class ScriptedAgent:
    """Runs a list of steps, one action per observation (see the module doc)."""

    name = "scripted"

    def __init__(self, steps: list[AnyStep], *, patience: int = 0, finish: bool = True):
        for s in steps:
            if not isinstance(s, (Step, Answer, Refuse, Goto)):
                raise TypeError(f"not a scripted step: {s!r}")
        self.steps = list(steps)
        if finish and not (self.steps and isinstance(self.steps[-1], (Answer, Refuse))):
            # the agent says it is done: that, not the site's success, ends an episode
            self.steps.append(Answer(DONE_MESSAGE))
        self.patience = int(patience)
        self.reset(None)

    def reset(self, env: Any) -> None:
        """Start the script again (the env is not used: everything comes from observations)."""
        self.i = 0
        self.waited = 0
        self.stuck = False
        self.log: list[dict[str, Any]] = []

    @property
    def done(self) -> bool:
        """Every step has been acted on (or the agent is stuck)."""
        return self.stuck or self.i >= len(self.steps)

    def record(self, obs: dict[str, Any]) -> None:
        """Note the ``last_action_error`` the previous step got (``act`` does it too; call
        it after the episode's last step)."""
        if self.log and "error" not in self.log[-1]:
            self.log[-1]["error"] = obs.get("last_action_error") or ""

    def act(self, obs: dict[str, Any]) -> str:
        """The next action for this observation: BrowserGym's action string."""
        self.record(obs)
        nodes: list[AXNode] | None = None
        while not self.done:
            step = self.steps[self.i]
            entry: dict[str, Any] = {"step": self.i, "what": step.describe(), "found": True, "bid": None,
                                     "action": "", "url": obs.get("url", ""), "matches": 0}
            if isinstance(step, Answer):
                entry["action"] = f"send_msg_to_user({step.text!r})"
            elif isinstance(step, Refuse):
                entry["action"] = f"report_infeasible({step.reason!r})"
            elif isinstance(step, Goto):
                entry["action"] = f"goto({step.url!r})"
            else:
                if nodes is None:
                    nodes = parse_axtree(obs.get("axtree", ""))
                node, count = find(nodes, step.role, step.name, nth=step.nth, near=step.near)
                action = step.action(node, nodes) if node is not None else None
                entry.update(matches=count, bid=node.bid if node is not None else None)
                if action is None:
                    if self.waited < self.patience and not step.optional:
                        self.waited += 1
                        return "noop()"
                    entry.update(found=False, error="")
                    self.log.append(entry)
                    self.i += 1
                    self.waited = 0
                    if step.optional:
                        entry["skipped"] = True
                        continue
                    self.stuck = True
                    break
                entry["action"] = action
            self.log.append(entry)
            self.i += 1
            self.waited = 0
            return entry["action"]
        return "noop()"

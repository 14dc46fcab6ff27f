"""The two prompt formats of :class:`simweb.agents.llm.LLMAgent`, each with its reply parser.

``browsergym`` follows the structure of BrowserGym's demo agent (``demo_agent/agent.py``):
a system message of instructions, then one user message with the goal, the open tabs,
the page's flattened AX tree, the action space (BrowserGym's default high-level subsets
``chat``, ``infeas``, ``bid``, ``nav``, ``tab`` plus ``noop``, one signature a line with
an example), the history of past replies, the last action's error, and a request for
the next action. The reply is read as BrowserGym's non-strict, single-action parser
reads it (``HighLevelActionSet.to_python_code``): every ``name(literal, ...)`` call
anywhere in the text is found; none is "Received an empty action.", two or more are a
multi-action, an unknown name is an invalid action type.

``webgym`` follows WebGym's Qwen conversation (``webgym/models/qwen/conversation_builder.py``,
the "complete" response format): a system message declaring the ``web_interaction``
tool and the reply format (Memory, Progress, Intention, Action, then one
``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``); a first user message with
the task and the start page; then the last four rounds as user observation / assistant
reply pairs, older rounds summarised in the first message as "Step n on [page]: action
-> effect". WebGym shows screenshots with set-of-marks labels; here the observation is
the AX tree, and an ``element_id`` is the ``[bid]`` of its line. The tool call is read with
:mod:`simweb.webgym_actions` (the env maps it: ``type`` is fill then Enter, ``answer``
ends the episode).

The prose of both prompts is simweb's own; only the structure and the action formats
follow the two projects.
"""
from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from typing import Any

from ..web.actions import ACTIONS, MAX_ACTION_CHARS, ActionError, parse_action
from ..web.webgym_actions import WebGymActionError, normalise, parse_tool_call
from .axtext import read_quoted

__all__ = ["BROWSERGYM_ACTIONS", "BrowserGymPrompt", "Reply", "WebGymPrompt", "extract_calls", "page_title", "read_reply",
           "unreadable_action"]

#: BrowserGym's default action subsets (noop, chat, infeas, bid, nav, tab), in its order.
BROWSERGYM_ACTIONS = ("noop", "send_msg_to_user", "report_infeasible", "scroll", "fill", "select_option", "click",
                      "dblclick", "hover", "press", "focus", "clear", "drag_and_drop", "upload_file", "go_back",
                      "go_forward", "goto", "tab_close", "tab_focus", "new_tab")
_EXAMPLES = {
    "noop": "noop(500)", "send_msg_to_user": "send_msg_to_user('The order ships on Monday.')",
    "report_infeasible": "report_infeasible('The site has no such product.')", "scroll": "scroll(0, 300)",
    "fill": "fill('237', 'blue running shoes')", "select_option": "select_option('48', 'Large')",
    "click": "click('51')", "dblclick": "dblclick('12')", "hover": "hover('b8')", "press": "press('88', 'Enter')",
    "focus": "focus('b455')", "clear": "clear('996')", "drag_and_drop": "drag_and_drop('56', '498')",
    "upload_file": "upload_file('572', '/tmp/report.pdf')", "go_back": "go_back()", "go_forward": "go_forward()",
    "goto": "goto('http://www.example.com')", "tab_close": "tab_close()", "tab_focus": "tab_focus(2)",
    "new_tab": "new_tab()", "check": "check('b31')", "uncheck": "uncheck('b31')",
}
#: Characters of AX tree put into one prompt (a huge page is cut, with a note).
MAX_AXTREE_CHARS = 40_000


@dataclass
class Reply:
    """What a prompt format made of the model's reply: the action for the env (None
    when the reply cannot be read), the reading error, and the format's extra fields."""

    action: str | None
    error: str = ""
    fields: dict[str, Any] | None = None


def page_title(axtree: str) -> str:
    """The page title: the name of the tree's ``RootWebArea`` line."""
    first = axtree.split("\n", 1)[0]
    if first.startswith("RootWebArea "):
        got = read_quoted(first, len("RootWebArea "))
        if got is not None:
            return got[0]
    return ""


def _cut(axtree: str, limit: int) -> str:
    if len(axtree) <= limit:
        return axtree
    cut = axtree.rfind("\n", 0, limit)
    cut = cut if cut > 0 else limit
    return axtree[:cut] + f"\n(the rest of the page, {len(axtree) - cut} characters, is cut)"


# ----------------------------------------------------------------------------- BrowserGym

_CALL_HEAD = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\s*\(")


def _call_end(text: str, start: int) -> int | None:
    """Index after the ``)`` closing the call whose ``(`` is at ``start``."""
    depth = 0
    i = start
    while i < len(text):
        c = text[i]
        if c in "'\"":
            got = read_quoted(text, i)
            if got is None:
                return None
            i = got[1]
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1 if c == ")" else None
        i += 1
    return None


def _is_literal_call(code: str) -> bool:
    try:
        node = ast.parse(code, mode="eval").body
    except SyntaxError:
        return False
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return False
    try:
        for arg in [*node.args, *(k.value for k in node.keywords)]:
            ast.literal_eval(arg)
    except (ValueError, SyntaxError, TypeError):
        return False
    return all(k.arg is not None for k in node.keywords) and not any(isinstance(a, ast.Starred) for a in node.args)


def extract_calls(text: str) -> list[tuple[str, str]]:
    """Every ``name(literal, ...)`` call in free text, as ``(name, call text)``, left to right."""
    calls: list[tuple[str, str]] = []
    pos = 0
    while True:
        m = _CALL_HEAD.search(text, pos)
        if m is None:
            return calls
        end = _call_end(text, m.end() - 1)
        if end is not None and _is_literal_call(text[m.start():end]):
            calls.append((m.group(1), text[m.start():end]))
            pos = end
        else:
            pos = m.start() + 1


class BrowserGymPrompt:
    """BrowserGym's axtree text prompt (see the module doc)."""

    name = "browsergym"

    def __init__(self, max_axtree_chars: int = MAX_AXTREE_CHARS):
        self.max_axtree_chars = max_axtree_chars
        self.history: list[str] = []

    def reset(self) -> None:
        self.history = []

    def action_space(self, actions: tuple[str, ...] = BROWSERGYM_ACTIONS) -> str:
        lines = [f"{len(actions)} kinds of action can be used:", ""]
        for name in actions:
            spec = ACTIONS[name]
            lines += [spec.signature, f"    Does: {spec.doc}", f"    Example: {_EXAMPLES[name]}", ""]
        lines.append("Give exactly one action per reply. Example:\nclick('51')")
        return "\n".join(lines)

    def messages(self, goal: str, obs: dict[str, Any], error: str) -> list[dict[str, Any]]:
        system = ("# Instructions\n\n"
                  "You operate a web browser to reach a goal. Read the goal, the page and what you did so "
                  "far, then choose the single best next action. A program executes your reply, so write "
                  "the action exactly in the format described below. The task ends when you send the user "
                  "a message: your answer, or that the work is done.\n")
        parts = ["# Goal\n", f"{goal}\n", "# Currently open tabs\n"]
        urls = list(obs.get("open_pages_urls") or [obs.get("url", "")])
        active = obs.get("active_page_index", 0)
        active = active[0] if isinstance(active, (list, tuple)) and active else active
        for i, url in enumerate(urls):
            title = page_title(obs.get("axtree", "")) if i == active else ""
            parts.append(f"Tab {i}{' (active tab)' if i == active else ''}\n  Title: {title}\n  URL: {url}\n")
        parts.append(f"# Current page Accessibility Tree\n\n{_cut(obs.get('axtree', ''), self.max_axtree_chars)}\n")
        parts.append(f"# Action Space\n\n{self.action_space()}\n\n"
                     "Two examples of a reply that reasons first and then acts:\n\n"
                     "The search box has bid 237; I type the product name into it.\n"
                     "```fill('237', 'blue running shoes')```\n\n"
                     "The page shows the price the user asked for, so I report it.\n"
                     "```send_msg_to_user('It costs $24.99.')```\n")
        if self.history:
            parts.append("# History of past actions\n")
            parts += [f"\n{h}\n" for h in self.history]
            if error:
                parts.append(f"# Error message from last action\n\n{error}\n")
        parts.append("# Next action\n\nThink step by step, then give your next action. Take your past actions, "
                     "any error they caused and the current page into account.\n")
        return [{"role": "system", "content": system}, {"role": "user", "content": "\n".join(parts)}]

    def read(self, text: str) -> Reply:
        """The reply's one action, read as BrowserGym's non-strict single-action parser does."""
        self.history.append(text)
        return read_reply(text)


def read_reply(text: str, actions: tuple[str, ...] = BROWSERGYM_ACTIONS) -> Reply:
    """A reply's one action, read as BrowserGym's non-strict single-action parser reads it
    (the module doc), the action's name one of ``actions``: the one reader of LLM replies
    in simweb, shared by :class:`BrowserGymPrompt` and :mod:`simweb.textenv`. Never raises."""
    calls = extract_calls(text)
    if not calls:
        return Reply(None, "ValueError: Received an empty action.")
    if len(calls) > 1:
        return Reply(None, "ValueError: Received a multi-action, only single-actions are allowed.")
    name, code = calls[0]
    if name not in actions:
        return Reply(None, f"NameError: Invalid action type '{name}'.")
    try:
        parse_action(code)
    except ActionError as exc:
        return Reply(None, f"ValueError: {exc}")
    return Reply(code)


def unreadable_action(text: str) -> str:
    """What the env gets for a reply that could not be read: the reply itself, which the
    env refuses with ``last_action_error``; a reply that the env would still run (an action
    outside the format's action set) is marked so that it is refused too."""
    text = text.strip()[: MAX_ACTION_CHARS - 20]
    try:
        parse_action(text)
    except ActionError:
        return text
    return "unreadable reply: " + text


# ----------------------------------------------------------------------------- WebGym

#: The ``web_interaction`` tool (WebGym's set-of-marks tool; the element ids are bids here).
WEB_INTERACTION_TOOL = {
    "name": "web_interaction",
    "description": "Act on the page's elements, named by the id in square brackets at the start of "
                   "their line in the page text.\n* Files cannot be downloaded and videos cannot be played.",
    "parameters": {
        "type": "object",
        "properties": {
            "action": {
                "type": "string",
                "description": "What to do:\n* `click`: click the element `element_id`.\n"
                               "* `type`: type `text` into the element `element_id`; the field is filled and "
                               "Enter is pressed for you.\n* `hover`: move the mouse over `element_id`.\n"
                               "* `scroll`: scroll the page `direction` up or down by one screen.\n"
                               "* `wait`: wait `time` seconds.\n* `go_back`: go to the previous page.\n"
                               "* `navigate`: open `url`.\n* `answer`: finish the task, with `text` as the answer.",
                "enum": ["click", "type", "hover", "scroll", "wait", "go_back", "navigate", "answer"],
            },
            "element_id": {"type": "string", "description": "The element's id. Needed by click, type and hover."},
            "text": {"type": "string", "description": "The text to type, or the answer. Needed by type and answer."},
            "direction": {"type": "string", "enum": ["up", "down"], "description": "Needed by scroll."},
            "time": {"type": "number", "description": "Seconds. Needed by wait."},
            "url": {"type": "string", "description": "The address to open. Needed by navigate."},
        },
        "required": ["action"],
    },
}
_SECTION = re.compile(r"(?im)^\s*(?:\d\)\s*)?\**(Memory|Progress|Intention|Action)\**\s*:\s*")
HISTORY_WINDOW = 4


def _sections(text: str) -> dict[str, str]:
    """The Memory / Progress / Intention / Action parts of a reply (before the tool call)."""
    head = text.split("<tool_call>", 1)[0]
    marks = list(_SECTION.finditer(head))
    out: dict[str, str] = {}
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(head)
        out.setdefault(m.group(1).lower(), head[m.end():end].strip())
    return out


class WebGymPrompt:
    """WebGym's memory / progress / intention / action conversation (see the module doc).
    Call :meth:`messages` then :meth:`read` once per step: the conversation keeps its rounds."""

    name = "webgym"

    def __init__(self, max_axtree_chars: int = MAX_AXTREE_CHARS, window: int = HISTORY_WINDOW):
        self.max_axtree_chars = max_axtree_chars
        self.window = window
        self.rounds: list[dict[str, Any]] = []    # {"obs", "title", "reply", "action", "effect"}
        self.website = ""

    def reset(self) -> None:
        self.rounds = []
        self.website = ""

    def system(self) -> str:
        return ("You are a helpful assistant that uses a web browser.\n\n# Tools\n\n"
                "You may call one function per step to act on the page.\n\n"
                "The function signature is inside <tools></tools> XML tags:\n<tools>\n"
                f"{json.dumps(WEB_INTERACTION_TOOL, indent=2)}\n</tools>\n\n"
                "Call it with a JSON object holding the function name and its arguments inside "
                "<tool_call></tool_call> XML tags:\n<tool_call>\n"
                '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>\n\n'
                "# Response format\n\n"
                "Every reply has these five parts, in this order:\n"
                "1) Memory: the facts worth keeping for later steps, as JSON, including this step's.\n"
                "2) Progress: the task split into subtasks, each \"finished\" or \"not finished\", as JSON.\n"
                "3) Intention: the key of the subtask this step works on.\n"
                "4) Action: one short sentence saying what you do on the page now.\n"
                "5) One <tool_call>...</tool_call> block with only the JSON of the call.\n\n"
                "Rules:\n"
                "- Memory and Progress are JSON objects. For \"Compare the prices of two lamps\": Memory "
                "{\"Price of lamp 1\": \"19.00\"}, Progress {\"Find lamp 1\": \"finished\", \"Find lamp 2\": "
                "\"not finished\", \"Compare\": \"not finished\"}, Intention \"Find lamp 2\".\n"
                "- Memory only grows: keep what earlier replies stored and add to it.\n"
                "- Progress may be refined: split a subtask into smaller ones when that guides the next step.\n"
                "- Write nothing outside the five parts.")

    def _observation(self, obs: dict[str, Any], error: str) -> str:
        text = f"Page: {page_title(obs.get('axtree', ''))} ({obs.get('url', '')})\n"
        if error:
            text += f"The last action failed: {error}\n"
        return text + "Page text (element ids in square brackets):\n" + _cut(obs.get("axtree", ""),
                                                                             self.max_axtree_chars)

    def _summary(self, rounds: list[dict[str, Any]]) -> str:
        lines = []
        for i, r in enumerate(rounds):
            lines.append(f"Step {i + 1} on [{r['title'] or 'page'}]: {r['action'] or 'no action'} → {r['effect']}")
        return "\n".join(lines)

    def messages(self, goal: str, obs: dict[str, Any], error: str) -> list[dict[str, Any]]:
        if not self.rounds and not self.website:
            self.website = obs.get("url", "")
        # the effect of the previous round's action, judged from this observation
        if self.rounds and "effect" not in self.rounds[-1]:
            prev = self.rounds[-1]
            prev["effect"] = (f"error: {error}" if error else
                              "page unchanged" if prev["obs_text"] == obs.get("axtree", "") else "page changed")
        current = {"obs": self._observation(obs, error), "obs_text": obs.get("axtree", ""),
                   "title": page_title(obs.get("axtree", ""))}
        rounds = self.rounds + [current]
        keep = rounds[-(self.window + 1):]
        older = rounds[: len(rounds) - len(keep)]
        first = f"Choose the next action from the page and the task.\n\nTask: {goal}\n\n"
        if self.website:
            first += f"Start page: {self.website}\n\n"
        if older:
            first += f"Summary of the earlier steps:\n{self._summary(older)}\n\n"
        first += "Give the next action that moves the task forward."
        messages: list[dict[str, Any]] = [{"role": "system", "content": self.system()}]
        for i, r in enumerate(keep):
            content = (first + "\n\n" + r["obs"]) if i == 0 else r["obs"]
            messages.append({"role": "user", "content": content})
            if "reply" in r:
                messages.append({"role": "assistant", "content": r["reply"]})
        self.rounds.append(current)
        return messages

    def read(self, text: str) -> Reply:
        """The reply's tool call as the env's action (``<tool_call>{json}</tool_call>``)."""
        fields = _sections(text)
        r = self.rounds[-1] if self.rounds else {}
        r["reply"] = text
        r["action"] = " ".join(fields.get("action", "").split())[:120]
        try:
            call = parse_tool_call(text)
            normalise(call)
        except WebGymActionError as exc:
            return Reply(None, str(exc), fields)
        return Reply("<tool_call>" + json.dumps(call, ensure_ascii=False) + "</tool_call>", "", fields)

"""WebGym's action formats, mapped onto simweb's action strings and onto Omniboxes commands.

WebGym's agents answer in three forms (see ``docs/webgym.md``):

- a Qwen tool call, as a dict ``{"name": "computer_use" | "web_interaction",
  "arguments": {"action": ..., ...}}`` or as model text holding
  ``<tool_call>{...}</tool_call>``; ``computer_use`` points with ``coordinate`` on a
  0-1000 scale of each axis, ``web_interaction`` with the ``element_id`` of a
  set-of-marks label;
- WebGym's internal action dict ``{"key": ..., "arguments": {...}}`` (what its parsers
  produce and its context manager turns into browser commands).

:func:`normalise` reads any of them into a :class:`WebGymAction` (the internal dict),
mapping Qwen's names as WebGym does (``left_click`` -> ``click``, ``go_back`` ->
``goback``, a tool call's ``text`` -> ``content`` for set-of-marks ``type`` and
``answer``...).  Then:

- :func:`to_browsergym` gives the BrowserGym action strings simweb's backends execute:
  ``type`` is click, select all, delete, type, Enter (with an element id: ``fill`` then
  ``press(bid, 'Enter')``); ``scroll`` is one viewport height minus 50 px of wheel;
  ``answer`` is ``send_msg_to_user`` and ends the episode.  An element id is the
  backend's bid.
- :func:`to_command` gives the Omniboxes command WebGym's context manager sends for it.

Nothing here evaluates text: a tool call is read with :func:`json.loads`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_VIEWPORT",
    "WebGymAction",
    "WebGymActionError",
    "is_webgym_action",
    "normalise",
    "parse_tool_call",
    "scale",
    "to_browsergym",
    "to_command",
]

DEFAULT_VIEWPORT = (1280, 768)
#: What a page of scrolling is: the viewport height minus this many pixels of wheel.
SCROLL_OVERLAP_PX = 50
#: WebGym's internal action keys.
KEYS = frozenset({"click", "type", "hover", "hover_and_scroll", "scroll", "goback", "navigate", "wait",
                  "tabandenter", "answer"})
_TOOL_CALL = re.compile(r"<tool_call>\s*(\{.*?\})\s*</tool_call>", re.DOTALL)
#: Qwen tool actions -> internal keys (coordinates and set-of-marks modes).
_QWEN = {"left_click": "click", "click": "click", "type": "type", "hover": "hover", "scroll": "scroll",
         "answer": "answer", "wait": "wait", "go_back": "goback", "navigate": "navigate"}


class WebGymActionError(ValueError):
    """A WebGym action that cannot be read (one-line message)."""


@dataclass(frozen=True)
class WebGymAction:
    """One action in WebGym's internal form: ``key`` and ``arguments``."""

    key: str
    arguments: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"key": self.key, "arguments": dict(self.arguments)}


def _short(value: Any, limit: int = 80) -> str:
    text = " ".join(str(value).split())
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def parse_tool_call(text: str) -> dict[str, Any]:
    """The JSON object of the first ``<tool_call>...</tool_call>`` block of model text."""
    match = _TOOL_CALL.search(text)
    if match is None:
        raise WebGymActionError(f"no <tool_call>{{...}}</tool_call> block in {_short(text)}")
    try:
        value = json.loads(match.group(1))
    except ValueError as exc:
        raise WebGymActionError(f"the <tool_call> block is not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise WebGymActionError("the <tool_call> block must hold a JSON object")
    return value


def is_webgym_action(action: Any) -> bool:
    """Whether ``action`` is in one of WebGym's forms (a dict, or text with a tool call)."""
    if isinstance(action, Mapping):
        return True
    return isinstance(action, str) and "<tool_call>" in action


def normalise(action: Any) -> WebGymAction:
    """Read a Qwen tool call (dict or text) or an internal dict into a :class:`WebGymAction`."""
    if isinstance(action, WebGymAction):
        return action
    if isinstance(action, str):
        action = parse_tool_call(action)
    if not isinstance(action, Mapping):
        raise WebGymActionError(f"a WebGym action is a dict or <tool_call> text, not {type(action).__name__}")
    if "key" in action:
        key = action["key"]
        args = action.get("arguments", {})
        if not isinstance(key, str) or key not in KEYS:
            raise WebGymActionError(f"unknown WebGym action key {_short(key)}; expected one of {', '.join(sorted(KEYS))}")
        if not isinstance(args, Mapping):
            raise WebGymActionError(f"{key}: 'arguments' must be an object")
        return WebGymAction(key, dict(args))
    args = action.get("arguments")
    if isinstance(args, str):   # some servers send the arguments as a JSON string
        try:
            args = json.loads(args)
        except ValueError:
            raise WebGymActionError("the tool call's arguments are not JSON") from None
    if not isinstance(args, Mapping) or "action" not in args:
        raise WebGymActionError("a tool call needs {\"name\", \"arguments\": {\"action\": ...}}")
    name = action.get("name", "")
    qwen = args["action"]
    if not isinstance(qwen, str) or qwen not in _QWEN:
        raise WebGymActionError(f"unknown tool action {_short(qwen)}; expected one of {', '.join(sorted(_QWEN))}")
    marks = name == "web_interaction" or (name != "computer_use" and "element_id" in args)
    return _from_qwen(_QWEN[qwen], args, marks)


def _from_qwen(key: str, a: Mapping[str, Any], marks: bool) -> WebGymAction:
    """Qwen's tool arguments -> WebGym's internal arguments (as its Qwen interface maps them)."""
    if key in ("click", "hover") and marks:
        return WebGymAction(key, {"element_id": a.get("element_id", "1")})
    if key == "click":
        return WebGymAction(key, {"coordinates": a.get("coordinate", [500, 500])})
    if key == "hover":   # not in Qwen's coordinate tool; read like a click
        return WebGymAction(key, {"coordinates": a.get("coordinate", [500, 500])})
    if key == "type":
        if marks:
            return WebGymAction(key, {"element_id": a.get("element_id", "1"), "content": a.get("text", "")})
        return WebGymAction(key, {"coordinates": a.get("coordinate", [500, 500]), "text": a.get("text", "")})
    if key == "scroll":
        return WebGymAction(key, {"direction": a.get("direction", "down")})
    if key == "answer":
        return WebGymAction(key, {"content": a.get("text", "")})
    if key == "wait":
        return WebGymAction(key, {"time": a.get("time", 2.0)})
    if key == "goback":
        return WebGymAction(key, {"goback_to": "last_page"})
    url = a.get("url", "")   # navigate
    return WebGymAction(key, {"url": url})


# ----------------------------------------------------------------------------- arguments

def scale(point: Any, viewport: Sequence[int] = DEFAULT_VIEWPORT) -> tuple[int, int]:
    """A 0-1000 point (or a 4-number box, whose centre is used) in viewport pixels.

    ``x = round(W * nx / 1000)`` clamped to ``[0, W - 1]``, likewise ``y``.
    """
    if isinstance(point, str):
        point = [float(n) for n in re.findall(r"-?\d+(?:\.\d+)?", point)]
    if (not isinstance(point, (list, tuple)) or len(point) not in (2, 4)
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in point)):
        raise WebGymActionError(f"coordinates must be [x, y] on a 0-1000 scale, not {_short(point)}")
    if len(point) == 4:
        nx, ny = (point[0] + point[2]) // 2, (point[1] + point[3]) // 2
    else:
        nx, ny = point
    width, height = int(viewport[0]), int(viewport[1])
    x = min(max(round(width * float(nx) / 1000.0), 0), width - 1)
    y = min(max(round(height * float(ny) / 1000.0), 0), height - 1)
    return x, y


def _element(a: Mapping[str, Any], key: str) -> str:
    value = a.get("element_id")
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise WebGymActionError(f"{key}: element_id must be a label, not {_short(value)}")
    return str(value).strip()


def _str(a: Mapping[str, Any], name: str, key: str) -> str:
    value = a.get(name, "")
    if not isinstance(value, str):
        raise WebGymActionError(f"{key}: {name} must be a string, not {_short(value)}")
    return value


def _seconds(a: Mapping[str, Any]) -> float:
    value = a.get("time", 2.0)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or value != value:
        raise WebGymActionError(f"wait: time must be a number of seconds, not {_short(value)}")
    return float(value)


def _url(a: Mapping[str, Any]) -> str:
    url = _str(a, "url", "navigate").strip()
    if url and not re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", url):
        url = "https://" + url   # WebGym's navigate wants https://; a URL with a scheme is kept
    return url


def _direction(a: Mapping[str, Any], key: str) -> str:
    direction = str(a.get("direction", "down")).lower()
    if direction not in ("up", "down"):
        raise WebGymActionError(f"{key}: direction must be 'up' or 'down', not {_short(direction)}")
    return direction


def _q(text: str) -> str:
    """A Python string literal (what simweb's action parser reads back)."""
    return repr(str(text))


# ----------------------------------------------------------------------------- BrowserGym strings

def to_browsergym(action: Any, viewport: Sequence[int] = DEFAULT_VIEWPORT) -> tuple[tuple[str, ...], str, str | None]:
    """``(leading actions, final action, error)``: the BrowserGym action strings that do
    what WebGym does for ``action``.

    A backend runs the leading actions, stopping at the first error, then the final one
    (the step's ``last_action``).  ``error`` is set when the action cannot be read; the
    final string is then only a label (nothing is to run).  It never raises.
    """
    try:
        act = normalise(action)
        steps = _browsergym(act, viewport)
    except WebGymActionError as exc:
        label = action if isinstance(action, str) else json.dumps(action, default=str, sort_keys=True)
        return (), label, str(exc)
    return tuple(steps[:-1]), steps[-1], None


def _browsergym(act: WebGymAction, viewport: Sequence[int]) -> list[str]:
    key, a = act.key, act.arguments
    if key in ("click", "hover", "type") and "element_id" in a and "coordinates" not in a:
        bid = _q(_element(a, key))
        if key == "click":
            return [f"click({bid})"]
        if key == "hover":
            return [f"hover({bid})"]
        return [f"fill({bid}, {_q(_str(a, 'content', key))})", f"press({bid}, 'Enter')"]
    if key in ("click", "hover", "type", "hover_and_scroll"):
        x, y = scale(a.get("coordinates", [500, 500]), viewport)
        if key == "click":
            return [f"mouse_click({x}, {y})"]
        if key == "hover":
            return [f"mouse_move({x}, {y})"]
        if key == "hover_and_scroll":
            dy = 100 if _direction(a, key) == "down" else -100
            return [f"mouse_move({x}, {y})", f"scroll(0, {dy})"]
        text = a.get("text", a.get("content", ""))
        if not isinstance(text, str):
            raise WebGymActionError(f"type: text must be a string, not {_short(text)}")
        return [f"mouse_click({x}, {y})", "keyboard_press('ControlOrMeta+a')", "keyboard_press('Backspace')",
                f"keyboard_type({_q(text)})", "keyboard_press('Enter')"]
    if key == "scroll":
        page = int(viewport[1]) - SCROLL_OVERLAP_PX
        return [f"scroll(0, {page if _direction(a, key) == 'down' else -page})"]
    if key == "goback":
        return ["go_back()"]
    if key == "navigate":
        url = _url(a)
        return [f"goto({_q(url)})"] if url else ["noop(500)"]
    if key == "wait":
        return [f"noop({round(_seconds(a) * 1000)})"]
    if key == "tabandenter":
        return ["keyboard_press('Tab')", "keyboard_press('Enter')"]
    # answer
    return [f"send_msg_to_user({_q(_str(a, 'content', key))})"]


# ----------------------------------------------------------------------------- Omniboxes commands

def to_command(action: Any, viewport: Sequence[int] = DEFAULT_VIEWPORT,
               homepage_url: str | None = None) -> dict[str, Any]:
    """The Omniboxes command WebGym's context manager sends for ``action``
    (``{"command": {args}}``); an answer is ``{"sleep": {"duration": 0.1}}`` as there.
    Raises :class:`WebGymActionError`."""
    act = normalise(action)
    key, a = act.key, act.arguments
    by_id = "element_id" in a and "coordinates" not in a
    if key in ("click", "hover") and by_id:
        return {f"{key}_id": {"id": _element(a, key)}}
    if key == "type" and by_id:
        return {"fill_id": {"id": _element(a, key), "value": _str(a, "content", key), "press_enter": True,
                            "delete_existing": True}}
    if key in ("click", "hover", "type", "hover_and_scroll"):
        x, y = scale(a.get("coordinates", [500, 500]), viewport)
        if key == "click":
            return {"click_coords": {"x": x, "y": y}}
        if key == "hover":
            return {"hover_coords": {"x": x, "y": y}}
        if key == "hover_and_scroll":
            return {"hover_and_scroll_coords": {"x": x, "y": y, "direction": _direction(a, key)}}
        text = a.get("text", a.get("content", ""))
        if not isinstance(text, str):
            raise WebGymActionError(f"type: text must be a string, not {_short(text)}")
        return {"fill_coords": {"x": x, "y": y, "value": text, "press_enter": True, "delete_existing": True}}
    if key == "scroll":
        return {"page_up" if _direction(a, key) == "up" else "page_down": {"full_page": True}}
    if key == "goback":
        if a.get("goback_to") == "homepage" and homepage_url:
            return {"visit_page": {"url": homepage_url}}
        return {"back": {}}
    if key == "navigate":
        url = _url(a)
        return {"visit_page": {"url": url}} if url else {"sleep": {"duration": 0.5}}
    if key == "wait":
        return {"sleep": {"duration": _seconds(a)}}
    if key == "tabandenter":
        return {"tab_and_enter": {}}
    return {"sleep": {"duration": 0.1}}   # answer: the episode ends; nothing to do on the page

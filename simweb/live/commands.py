"""Agent actions -> Omniboxes commands.

Two action languages are accepted:

- BrowserGym's action strings (``click('12')``, ``fill('3', 'hello')``...), see
  :func:`browsergym_to_command`;
- WebGym's coordinate actions (``left_click(coordinate=[500, 300])``, ``type(text=...)``,
  ``scroll(direction='down')``, ``wait``, ``go_back``, ``navigate(url=...)``,
  ``answer(text=...)``), as call strings or as dicts ``{"key"|"name"|"action": name,
  "arguments": {...}}``, see :func:`webgym_to_command`.  Their coordinates are
  normalised to 0-1000 on each axis and scaled to the viewport.

Strings are parsed with ``ast`` and ``ast.literal_eval`` (never ``eval``); when
``simweb.actions`` is installed its ``parse_action`` is used for BrowserGym strings.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .omnibox import Element, _one_line

try:  # the engine's parser, when present
    from simweb.actions import ActionError, parse_action as _engine_parse
except ImportError:  # pragma: no cover - depends on the engine being installed
    _engine_parse = None

    class ActionError(ValueError):  # type: ignore[no-redef]
        """A malformed or unsupported action."""

__all__ = [
    "ActionError",
    "Command",
    "UNSUPPORTED",
    "WEBGYM_ACTIONS",
    "browsergym_to_command",
    "is_webgym_action",
    "parse_call",
    "scale_coordinate",
    "translate",
    "webgym_to_command",
]

DEFAULT_VIEWPORT = (1280, 768)

#: BrowserGym actions the Omniboxes protocol cannot perform.
UNSUPPORTED = frozenset({
    "go_forward", "new_tab", "tab_close", "tab_focus", "dblclick", "focus", "drag_and_drop",
    "upload_file", "keyboard_type", "keyboard_down", "keyboard_up", "keyboard_insert_text",
    "mouse_dblclick", "mouse_down", "mouse_up", "mouse_drag_and_drop", "mouse_upload_file",
})
#: WebGym action names (coordinate and set-of-marks modes).
WEBGYM_ACTIONS = frozenset({
    "left_click", "type", "scroll", "wait", "go_back", "goback", "navigate", "answer", "hover", "tabandenter",
})
_WEBGYM_ONLY = WEBGYM_ACTIONS - {"scroll", "go_back", "hover"}


@dataclass(frozen=True)
class Command:
    """What one agent action becomes.

    ``name``/``args`` is the Omniboxes command to execute (``name`` None: nothing to
    execute); ``terminal`` ends the episode with ``answer`` (None for an infeasibility
    report, then ``infeasible`` holds the reason); ``click_point`` is the viewport
    point the action clicked, remembered for WebGym's ``type``.
    """

    name: str | None
    args: Mapping[str, Any] = field(default_factory=dict)
    terminal: bool = False
    answer: str | None = None
    infeasible: str | None = None
    click_point: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any] | None:
        """The command as it goes into the ``/execute`` body: ``{name: args}``."""
        return None if self.name is None else {self.name: dict(self.args)}


# ----------------------------------------------------------------------------- parsing

def _literal_call(text: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except SyntaxError as exc:
        raise ActionError(f"cannot parse action {_short(text)}: {exc.msg}") from None
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ActionError(f"an action must be one call like click('12'), not {_short(text)}")
    try:
        if any(k.arg is None for k in node.keywords):  # **mapping
            raise ValueError
        args = tuple(ast.literal_eval(a) for a in node.args)
        kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords}
    except (ValueError, TypeError, SyntaxError):
        raise ActionError(f"action arguments must be literals in {_short(text)}") from None
    return node.func.id, args, kwargs


def _short(text: str) -> str:
    return repr(_one_line(str(text), 80))


def parse_call(text: str) -> tuple[str, tuple[Any, ...], dict[str, Any]]:
    """Parse ``name(args...)`` into ``(name, positional args, keyword args)``.

    Uses ``simweb.actions.parse_action`` when available; names it rejects that are
    WebGym actions are parsed here.  Raises :class:`ActionError`.
    """
    if not isinstance(text, str) or not text.strip():
        raise ActionError("empty action")
    if _engine_parse is not None:
        try:
            action = _engine_parse(text)
        except ActionError:
            match = re.match(r"\s*([A-Za-z_]\w*)\s*\(", text)
            if not match or match.group(1) not in WEBGYM_ACTIONS:
                raise
        else:
            args = getattr(action, "args", ())
            kwargs = getattr(action, "kwargs", {}) or {}
            if isinstance(args, Mapping):  # a parser that binds every argument by name
                return action.name, (), dict(args, **kwargs)
            return action.name, tuple(args or ()), dict(kwargs)
    return _literal_call(text)


def _bind(name: str, params: Sequence[str], args: tuple[Any, ...], kwargs: Mapping[str, Any],
          defaults: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Bind call arguments to parameter names, as Python would."""
    defaults = defaults or {}
    if len(args) > len(params):
        raise ActionError(f"{name}() takes at most {len(params)} arguments, got {len(args)}")
    bound = dict(zip(params, args))
    for key, value in kwargs.items():
        if key not in params:
            raise ActionError(f"{name}() got an unexpected argument {key!r}")
        if key in bound:
            raise ActionError(f"{name}() got two values for {key!r}")
        bound[key] = value
    for key in params:
        if key not in bound:
            if key not in defaults:
                raise ActionError(f"{name}() is missing the argument {key!r}")
            bound[key] = defaults[key]
    return bound


def _bid(name: str, value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value).strip() == "":
        raise ActionError(f"{name}(): the element id must be a non-empty string, not {value!r}")
    return str(value)


def _text(name: str, key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise ActionError(f"{name}(): {key} must be a string, not {value!r}")
    return value


def _number(name: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ActionError(f"{name}(): {key} must be a number, not {value!r}")
    return float(value)


def _keys(key_comb: str) -> list[str]:
    """Playwright's ``Control+Shift+a`` as a key list (a trailing ``+`` is the plus key)."""
    parts = key_comb.split("+")
    keys = [p for p in parts if p]
    if key_comb.endswith("+"):
        keys.append("+")
    return keys


# ----------------------------------------------------------------------------- BrowserGym

_BG_PARAMS: dict[str, tuple[tuple[str, ...], dict[str, Any]]] = {
    "click": (("bid", "button", "modifiers"), {"button": "left", "modifiers": ()}),
    "fill": (("bid", "value"), {}),
    "clear": (("bid",), {}),
    "check": (("bid",), {}),
    "uncheck": (("bid",), {}),
    "select_option": (("bid", "options"), {}),
    "hover": (("bid",), {}),
    "press": (("bid", "key_comb"), {}),
    "scroll": (("delta_x", "delta_y"), {}),
    "goto": (("url",), {}),
    "go_back": ((), {}),
    "mouse_click": (("x", "y", "button"), {"button": "left"}),
    "mouse_move": (("x", "y"), {}),
    "keyboard_press": (("key",), {}),
    "noop": (("wait_ms",), {"wait_ms": 1000}),
    "send_msg_to_user": (("text",), {}),
    "report_infeasible": (("reason",), {}),
}


def browsergym_to_command(
    name: str,
    args: tuple[Any, ...] = (),
    kwargs: Mapping[str, Any] | None = None,
    *,
    elements: Iterable[Element] = (),
) -> Command:
    """Translate one BrowserGym action into an Omniboxes command.

    click -> click_id; fill -> fill_id (delete_existing, no Enter); clear -> fill_id with
    ""; check/uncheck -> click_id (the protocol has no checked state: they toggle);
    select_option -> select_option on the matching option element of ``elements`` when
    there is one, else ``{id: bid, value: option}``; hover -> hover_id; press ->
    keypress (to the focused element: the protocol cannot focus ``bid`` first);
    scroll(dx, dy) -> page_down/page_up by ``|dy|`` pixels (vertical only); goto ->
    visit_page; go_back -> back; mouse_click -> click_coords; mouse_move -> hover_coords;
    keyboard_press -> keypress; noop -> sleep; send_msg_to_user / report_infeasible end
    the episode.  Others raise :class:`ActionError`.
    """
    kwargs = dict(kwargs or {})
    if name in UNSUPPORTED:
        raise ActionError(f"{name}() is not supported by the live browser server")
    if name not in _BG_PARAMS:
        raise ActionError(f"unknown action {name}()")
    params, defaults = _BG_PARAMS[name]
    a = _bind(name, params, args, kwargs, defaults)
    if name == "click":
        if a["button"] != "left" or list(a["modifiers"]):
            raise ActionError("click(): only a plain left click is supported by the live browser server")
        return Command("click_id", {"id": _bid(name, a["bid"])})
    if name in ("check", "uncheck"):
        return Command("click_id", {"id": _bid(name, a["bid"])})
    if name == "fill":
        return Command("fill_id", {"id": _bid(name, a["bid"]), "value": _text(name, "value", a["value"]),
                                   "press_enter": False, "delete_existing": True})
    if name == "clear":
        return Command("fill_id", {"id": _bid(name, a["bid"]), "value": "", "press_enter": False,
                                   "delete_existing": True})
    if name == "select_option":
        return _select_option(_bid(name, a["bid"]), a["options"], elements)
    if name == "hover":
        return Command("hover_id", {"id": _bid(name, a["bid"])})
    if name == "press":
        _bid(name, a["bid"])
        return Command("keypress", {"keys": _keys(_text(name, "key_comb", a["key_comb"]))})
    if name == "keyboard_press":
        return Command("keypress", {"keys": _keys(_text(name, "key", a["key"]))})
    if name == "scroll":
        dx, dy = _number(name, "delta_x", a["delta_x"]), _number(name, "delta_y", a["delta_y"])
        if dx and not dy:
            raise ActionError("scroll(): horizontal scrolling is not supported by the live browser server")
        if not dy:
            return Command(None)
        return Command("page_down" if dy > 0 else "page_up", {"amount": round(abs(dy)), "full_page": False})
    if name == "goto":
        return Command("visit_page", {"url": _text(name, "url", a["url"])})
    if name == "go_back":
        return Command("back", {})
    if name in ("mouse_click", "mouse_move"):
        x, y = round(_number(name, "x", a["x"])), round(_number(name, "y", a["y"]))
        if name == "mouse_move":
            return Command("hover_coords", {"x": x, "y": y})
        if a["button"] != "left":
            raise ActionError("mouse_click(): only the left button is supported by the live browser server")
        return Command("click_coords", {"x": x, "y": y}, click_point=(x, y))
    if name == "noop":
        return Command("sleep", {"duration": max(0.0, _number(name, "wait_ms", a["wait_ms"])) / 1000})
    if name == "send_msg_to_user":
        return Command(None, terminal=True, answer=_text(name, "text", a["text"]))
    # report_infeasible
    return Command(None, terminal=True, infeasible=_text(name, "reason", a["reason"]))


def _select_option(bid: str, options: Any, elements: Iterable[Element]) -> Command:
    if isinstance(options, (list, tuple)):
        if len(options) != 1:
            raise ActionError("select_option(): the live browser server selects exactly one option")
        options = options[0]
    option = _text("select_option", "options", options)
    matches = [e for e in elements if e.role == "option" and option in (e.name, e.value)]
    if matches:
        # Prefer an option that names bid as its parent select, when the server says so.
        owned = [e for e in matches if str(e.raw.get("parent_id", e.raw.get("select_id", ""))) == bid]
        return Command("select_option", {"id": (owned or matches)[0].id})
    return Command("select_option", {"id": bid, "value": option})


# ----------------------------------------------------------------------------- WebGym

def scale_coordinate(nx: float, ny: float, viewport: tuple[int, int] = DEFAULT_VIEWPORT) -> tuple[int, int]:
    """Scale a 0-1000 normalised point to viewport pixels, clamped into the viewport.

    ``x = round(W * nx / 1000)`` clamped to ``[0, W - 1]``, likewise ``y`` with ``H``.
    """
    width, height = viewport
    x = min(max(round(width * float(nx) / 1000), 0), width - 1)
    y = min(max(round(height * float(ny) / 1000), 0), height - 1)
    return x, y


def _point(name: str, value: Any) -> tuple[float, float]:
    if isinstance(value, str):
        numbers = re.findall(r"-?\d+(?:\.\d+)?", value)
        value = [float(n) for n in numbers]
    if (not isinstance(value, (list, tuple)) or len(value) != 2
            or any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in value)):
        raise ActionError(f"{name}(): coordinate must be [x, y] on a 0-1000 scale, not {value!r}")
    return float(value[0]), float(value[1])


def _pick(a: Mapping[str, Any], *keys: str) -> Any:
    for key in keys:
        if a.get(key) is not None:
            return a[key]
    return None


def webgym_to_command(
    action: str | Mapping[str, Any],
    *,
    viewport: tuple[int, int] = DEFAULT_VIEWPORT,
    last_click: tuple[int, int] | None = None,
) -> Command:
    """Translate one WebGym action into an Omniboxes command.

    ``action`` is a call string (``left_click(coordinate=[500, 300])``) or a dict
    ``{"key"|"name"|"action": name, "arguments": {...}}`` (arguments may also sit at the
    top level).  Mapping: left_click -> click_coords (or click_id with ``element_id``);
    type(text) -> fill_coords at ``coordinate`` or at ``last_click`` with
    delete_existing and press_enter (default True; or fill_id with ``element_id``);
    scroll(direction) -> page_down/page_up by one viewport minus 50 px (scroll_id with
    ``element_id``, hover_and_scroll_coords with ``coordinate``); wait(time=2) -> sleep;
    go_back -> back; navigate(url) -> visit_page; answer(text) ends the episode;
    hover -> hover_coords/hover_id; tabandenter -> tab_and_enter.  Set-of-marks
    dicts' ``click`` and ``goback`` are read as ``left_click`` and ``go_back``.
    """
    name, a = _webgym_parts(action)
    name = _WEBGYM_ALIASES.get(name, name)
    height = viewport[1]
    element_id = _pick(a, "element_id", "id", "bid")
    by_id = element_id is not None and _pick(a, "coordinate", "coords") is None
    if name == "left_click":
        if by_id:
            return Command("click_id", {"id": _bid(name, element_id)})
        x, y = scale_coordinate(*_xy(name, a), viewport)
        return Command("click_coords", {"x": x, "y": y}, click_point=(x, y))
    if name == "hover":
        if by_id:
            return Command("hover_id", {"id": _bid(name, element_id)})
        x, y = scale_coordinate(*_xy(name, a), viewport)
        return Command("hover_coords", {"x": x, "y": y})
    if name == "type":
        text = _text(name, "text", _pick(a, "text", "content", "value"))
        press_enter = a.get("press_enter", True)
        delete = a.get("delete_existing", True)
        if not isinstance(press_enter, bool) or not isinstance(delete, bool):
            raise ActionError("type(): press_enter and delete_existing must be true or false")
        if by_id:
            return Command("fill_id", {"id": _bid(name, element_id), "value": text,
                                       "press_enter": press_enter, "delete_existing": delete})
        if _pick(a, "coordinate", "coords", "x") is not None:
            point = scale_coordinate(*_xy(name, a), viewport)
        elif last_click is not None:
            point = last_click
        else:
            raise ActionError("type(): no coordinate given and nothing clicked yet")
        return Command("fill_coords", {"x": point[0], "y": point[1], "value": text,
                                       "press_enter": press_enter, "delete_existing": delete},
                       click_point=point)
    if name == "scroll":
        direction = str(_pick(a, "direction") or "down").lower()
        if direction not in ("up", "down"):
            raise ActionError(f"scroll(): direction must be 'up' or 'down', not {direction!r}")
        if element_id is not None and str(element_id).upper() != "WINDOW":
            return Command("scroll_id", {"id": _bid(name, element_id), "direction": direction})
        if _pick(a, "coordinate", "coords") is not None:
            x, y = scale_coordinate(*_xy(name, a), viewport)
            return Command("hover_and_scroll_coords", {"x": x, "y": y, "direction": direction})
        return Command("page_down" if direction == "down" else "page_up",
                       {"amount": max(height - 50, 1), "full_page": False})
    if name == "wait":
        duration = _pick(a, "time", "duration", "seconds")
        return Command("sleep", {"duration": 2.0 if duration is None else max(0.0, _number(name, "time", duration))})
    if name == "go_back":
        return Command("back", {})
    if name == "tabandenter":
        return Command("tab_and_enter", {})
    if name == "navigate":
        return Command("visit_page", {"url": _text(name, "url", _pick(a, "url"))})
    if name == "answer":
        return Command(None, terminal=True, answer=_text(name, "text", _pick(a, "text", "content", "answer") or ""))
    raise ActionError(f"unknown WebGym action {name!r}")


def _xy(name: str, a: Mapping[str, Any]) -> tuple[float, float]:
    coordinate = _pick(a, "coordinate", "coords")
    if coordinate is None and "x" in a and "y" in a:
        coordinate = [a["x"], a["y"]]
    if coordinate is None:
        raise ActionError(f"{name}() needs a coordinate [x, y] on a 0-1000 scale")
    return _point(name, coordinate)


# Set-of-marks mode's names (its dicts say "click", "goback").
_WEBGYM_ALIASES = {"click": "left_click", "goback": "go_back"}
_WEBGYM_POSITIONAL = {
    "left_click": ("coordinate",), "hover": ("coordinate",), "type": ("text",),
    "scroll": ("direction",), "wait": ("time",), "navigate": ("url",), "answer": ("text",),
}


def _webgym_parts(action: str | Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    if isinstance(action, Mapping):
        name = _pick(action, "key", "name", "action", "action_type")
        if not isinstance(name, str):
            raise ActionError("a WebGym action dict needs a 'key' (or 'name'/'action') naming the action")
        arguments = action.get("arguments", action.get("args", {}))
        if isinstance(arguments, str):
            try:
                arguments = ast.literal_eval(arguments)
            except (ValueError, SyntaxError):
                raise ActionError(f"{name}(): arguments must be an object") from None
        if not isinstance(arguments, Mapping):
            raise ActionError(f"{name}(): arguments must be an object")
        top = {k: v for k, v in action.items() if k not in ("key", "name", "action", "action_type", "arguments", "args")}
        return name.lower(), {**top, **arguments}
    name, args, kwargs = parse_call(action)
    params = _WEBGYM_POSITIONAL.get(name, ())
    if len(args) > len(params):
        if name in ("left_click", "hover") and len(args) == 2:  # left_click(500, 300)
            return name, {"coordinate": list(args), **kwargs}
        raise ActionError(f"{name}() takes at most {len(params)} positional arguments, got {len(args)}")
    return name, {**dict(zip(params, args)), **kwargs}


def is_webgym_action(action: str | Mapping[str, Any]) -> bool:
    """Whether ``action`` is in WebGym's format rather than BrowserGym's.

    Dicts are WebGym's; a string is when it names a WebGym-only action, or is
    ``scroll`` with a direction rather than deltas.
    """
    if isinstance(action, Mapping):
        return True
    match = re.match(r"\s*([A-Za-z_]\w*)\s*(\()?", action)
    if not match:
        return False
    name = match.group(1)
    if name in _WEBGYM_ONLY or (name in WEBGYM_ACTIONS and not match.group(2)):
        return True
    if name == "scroll":
        return bool(re.search(r"direction\s*=|\(\s*['\"]", action))
    if name == "hover":
        return bool(re.search(r"coordinate\s*=|element_id\s*=|\(\s*\[", action))
    return False


def translate(
    action: str | Mapping[str, Any],
    *,
    viewport: tuple[int, int] = DEFAULT_VIEWPORT,
    last_click: tuple[int, int] | None = None,
    elements: Iterable[Element] = (),
) -> Command:
    """Translate a BrowserGym or WebGym action (detected by :func:`is_webgym_action`)."""
    if isinstance(action, Mapping) or (isinstance(action, str) and is_webgym_action(action)):
        if isinstance(action, str) and "(" not in action:
            action = action.strip() + "()"  # bare `wait`, `go_back`
        return webgym_to_command(action, viewport=viewport, last_click=last_click)
    if not isinstance(action, str):
        raise ActionError(f"an action must be a string or a WebGym dict, not {type(action).__name__}")
    name, args, kwargs = parse_call(action)
    return browsergym_to_command(name, args, kwargs, elements=elements)

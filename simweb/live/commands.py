"""Agent actions -> Omniboxes commands.

Two action languages are accepted:

- BrowserGym's action strings (``click('12')``, ``fill('3', 'hello')``...), parsed by
  :func:`simweb.actions.parse_action` (never evaluated);
- WebGym's own forms (Qwen ``computer_use`` / ``web_interaction`` tool calls as dicts or
  ``<tool_call>`` text, and its internal ``{"key", "arguments"}`` dicts), mapped to the
  command WebGym's context manager sends (:func:`simweb.webgym_actions.to_command`).

An action on an element comes back as a :class:`Command` with ``element`` set (the
bid) and ``verb`` (``click``, ``fill``, ``hover``, ``select``, ``press``): which id or
point reaches that element depends on the server's current set-of-marks numbering,
so :class:`~simweb.live.env.LiveEnv` turns it into ``*_id`` or ``*_coords`` commands.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..web.actions import ActionError, parse_action
from ..web.webgym_actions import DEFAULT_VIEWPORT, WebGymActionError, is_webgym_action, normalise, scale, to_command

__all__ = ["DEFAULT_VIEWPORT", "UNSUPPORTED", "ActionError", "Command", "browsergym_to_command",
           "scale_coordinate", "translate", "webgym_to_command"]

#: BrowserGym actions the Omniboxes protocol cannot perform.
UNSUPPORTED = frozenset({
    "go_forward", "new_tab", "tab_close", "tab_focus", "dblclick", "focus", "drag_and_drop",
    "upload_file", "keyboard_type", "keyboard_insert_text", "mouse_dblclick", "mouse_down", "mouse_up",
    "mouse_drag_and_drop", "mouse_upload_file", "keyboard_down", "keyboard_up",
})


@dataclass(frozen=True)
class Command:
    """What one agent action becomes.

    ``name``/``args`` is the Omniboxes command to execute (``name`` None: nothing to
    execute, or an element command still to be resolved: then ``element`` is the bid
    and ``verb`` what to do with it, ``args`` its parameters); ``terminal`` ends the
    episode with ``answer`` (None for an infeasibility report, then ``infeasible``
    holds the reason).
    """

    name: str | None
    args: Mapping[str, Any] = field(default_factory=dict)
    terminal: bool = False
    answer: str | None = None
    infeasible: str | None = None
    element: str | None = None
    verb: str | None = None

    def as_dict(self) -> dict[str, Any] | None:
        """The command as it goes into the ``/execute`` body: ``{name: args}``."""
        return None if self.name is None else {self.name: dict(self.args)}


def scale_coordinate(nx: float, ny: float, viewport: Sequence[int] = DEFAULT_VIEWPORT) -> tuple[int, int]:
    """A 0-1000 normalised point in viewport pixels, clamped into the viewport."""
    return scale([nx, ny], viewport)


def _keys(key_comb: str) -> list[str]:
    """Playwright's ``Control+Shift+a`` as a key list (a trailing ``+`` is the plus key)."""
    keys = [p for p in key_comb.split("+") if p]
    if key_comb.endswith("+"):
        keys.append("+")
    return keys


def browsergym_to_command(text: str) -> Command:
    """Translate one BrowserGym action string; raises :class:`ActionError`.

    click/check/uncheck -> a click on the element (the protocol has no checked state:
    they toggle); fill/clear -> fill the element (select all and replace, no Enter);
    select_option -> select the option with that label; hover; press -> the key on the
    element; scroll(dx, dy) -> page_down/page_up by ``|dy|`` px; goto -> visit_page;
    go_back -> back; mouse_click -> click_coords; mouse_move -> hover_coords;
    keyboard_press -> keypress; noop -> sleep; send_msg_to_user / report_infeasible end
    the episode.
    """
    action = parse_action(text)
    name, a = action.name, dict(action.arguments)
    if name in UNSUPPORTED:
        raise ActionError(f"{name}() is not supported by the live browser server")
    if name in ("click", "check", "uncheck"):
        if name == "click" and (a.get("button", "left") != "left" or list(a.get("modifiers", ()))):
            raise ActionError("click(): only a plain left click is supported by the live browser server")
        return Command(None, element=str(a["bid"]), verb="click")
    if name in ("fill", "clear"):
        value = a.get("value", "") if name == "fill" else ""
        return Command(None, {"value": value, "press_enter": False, "delete_existing": True},
                       element=str(a["bid"]), verb="fill")
    if name == "select_option":
        options = a["options"]
        if isinstance(options, (list, tuple)):
            if len(options) != 1:
                raise ActionError("select_option(): the live browser server selects exactly one option")
            options = options[0]
        return Command(None, {"option": str(options)}, element=str(a["bid"]), verb="select")
    if name == "hover":
        return Command(None, element=str(a["bid"]), verb="hover")
    if name == "press":
        return Command(None, {"keys": _keys(a["key_comb"])}, element=str(a["bid"]), verb="press")
    if name == "keyboard_press":
        return Command("keypress", {"keys": _keys(a["key"])})
    if name == "scroll":
        dx, dy = float(a["delta_x"]), float(a["delta_y"])
        if dx and not dy:
            raise ActionError("scroll(): horizontal scrolling is not supported by the live browser server")
        if not dy:
            return Command(None)
        return Command("page_down" if dy > 0 else "page_up", {"amount": round(abs(dy)), "full_page": False})
    if name == "goto":
        return Command("visit_page", {"url": a["url"]})
    if name == "go_back":
        return Command("back", {})
    if name == "mouse_click":
        if a.get("button", "left") != "left":
            raise ActionError("mouse_click(): only the left button is supported by the live browser server")
        return Command("click_coords", {"x": float(a["x"]), "y": float(a["y"])})
    if name == "mouse_move":
        return Command("hover_coords", {"x": float(a["x"]), "y": float(a["y"])})
    if name == "noop":
        return Command("sleep", {"duration": float(a["wait_ms"]) / 1000})
    if name == "send_msg_to_user":
        return Command(None, terminal=True, answer=str(a["text"]))
    if name == "report_infeasible":
        return Command(None, terminal=True, infeasible=str(a["reason"]))
    raise ActionError(f"{name}() is not supported by the live browser server")


_ID_VERBS = {"click_id": "click", "hover_id": "hover", "fill_id": "fill"}


def webgym_to_command(action: Any, *, viewport: Sequence[int] = DEFAULT_VIEWPORT,
                      homepage_url: str | None = None) -> Command:
    """Translate one WebGym action as WebGym's context manager does; raises :class:`ActionError`.

    Element ids (set-of-marks ``element_id``) become element commands on that bid;
    ``answer`` ends the episode.
    """
    try:
        act = normalise(action)
        command = to_command(act, viewport, homepage_url)
    except WebGymActionError as exc:
        raise ActionError(str(exc)) from None
    if act.key == "answer":
        content = act.arguments.get("content", "")
        return Command(None, terminal=True, answer=str(content))
    (name, args), = command.items()
    if name in _ID_VERBS:
        rest = {k: v for k, v in args.items() if k != "id"}
        return Command(None, rest, element=str(args["id"]), verb=_ID_VERBS[name])
    return Command(name, args)


def translate(action: Any, *, viewport: Sequence[int] = DEFAULT_VIEWPORT, homepage_url: str | None = None) -> Command:
    """Translate a BrowserGym action string or a WebGym action; raises :class:`ActionError`."""
    if is_webgym_action(action):
        return webgym_to_command(action, viewport=viewport, homepage_url=homepage_url)
    if not isinstance(action, str):
        raise ActionError(f"an action is a BrowserGym string or a WebGym action, not {type(action).__name__}")
    return browsergym_to_command(action)

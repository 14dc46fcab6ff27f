"""The commands of ``POST /execute``, read exactly as WebGym's browser instance reads them.

A command body holds one command: ``{"<name>": {args}}``. Arguments are looked up the
way the real instance looks them up (``args["id"]``, ``args.get("press_enter", True)``...),
so a missing or mistyped argument fails the same way, as an HTTP 500 whose message starts
with ``Error executing command:``. Element ids go through the ``id_mapping`` of the last
set-of-marks screenshot first (a display id becomes the page id; an unknown id is used as
it is), in every ``*_id`` command and in ``select_option``.

=========================  ============================================  =======================
command                    arguments                                     result
=========================  ============================================  =======================
visit_page                 url                                           {"status": "success"}
back                       (none)                                        {"status": "success"}
click_coords               x, y                                          {"status": "success"}
click_id                   id                                            {"status": "success"}
fill_coords                x, y, value, press_enter=True,                {"status": "success"}
                           delete_existing=False
fill_id                    id, value, press_enter=True,                  {"status": "success"}
                           delete_existing=False
select_option              id (of the option)                            {"status": "success"}
hover_id                   id                                            {"status": "success"}
hover_coords               x, y                                          {"status": "success"}
hover_and_scroll_coords    x, y, direction="down"                        {"status": "success"}
keypress                   keys (list, e.g. ["ctrl", "a"])               {"status": "success"}
page_down / page_up        amount=200, full_page=False                   {"status": "success"}
scroll_id                  id, direction (up/down/left/right)            {"status": "success"}
sleep                      duration (seconds)                            {"status": "success"}
tab_and_enter              (none)                                        {"status": "success"}
get_webpage_text           n_lines=100                                   {"text": ...}
get_page_metadata          (none)                                        {"title", "url", ...}
get_interactive_rects      (none)                                        {id: region}
get_screenshot_info        (none)                                        last set-of-marks info,
                                                                         or {"error": ...}
screenshot                 interaction_mode="set_of_marks"               {"status":
                                                                         "screenshot_taken"}
=========================  ============================================  =======================

Any other command name fails as on the real instance (``Unsupported command: <name>``),
and so does a body with no command or more than one (``Only one command per request is
supported``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .instance import VIEWPORT, BrowserInstance, PageDriver

NO_SCREENSHOT_INFO = {"error": "No screenshot info available"}
SUCCESS = {"status": "success"}


class CommandError(Exception):
    """A command that failed; ``str()`` is the message after ``Error executing command:``."""


def display_to_page_id(instance: BrowserInstance, displayed: Any) -> Any:
    """A display id of the last set-of-marks screenshot mapped to its page id (an id the
    mapping does not know, or of another type than str, is returned unchanged)."""
    info = instance.screenshot_info
    if info and "id_mapping" in info:
        try:
            return info["id_mapping"].get(displayed, displayed)
        except TypeError:   # an unhashable id (a list...): no mapping applies
            return displayed
    return displayed


def _xy(args: Any) -> tuple[float, float]:
    return float(args["x"]), float(args["y"])


def _visit_page(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    if i.episode is None:   # WebGym's client opens the task's website first: that binds the episode
        from .start import episode_of

        i.episode = episode_of(str(args["url"]))
    d.visit_page(args["url"])


def _back(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.back()


def _click_coords(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.click_coords(*_xy(args))


def _click_id(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.click_id(display_to_page_id(i, args["id"]))


def _fill_coords(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    x, y = _xy(args)
    d.fill_coords(x, y, args["value"], args.get("press_enter", True), args.get("delete_existing", False))


def _fill_id(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    displayed, value = args["id"], args["value"]
    press_enter, delete_existing = args.get("press_enter", True), args.get("delete_existing", False)
    d.fill_id(display_to_page_id(i, displayed), value, press_enter, delete_existing)


def _select_option(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.select_option(display_to_page_id(i, args["id"]))


def _hover_id(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.hover_id(display_to_page_id(i, args["id"]))


def _keypress(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.keypress(args["keys"])


def _page_scroll(sign: int) -> Callable[[BrowserInstance, PageDriver, Any], None]:
    def scroll(i: BrowserInstance, d: PageDriver, args: Any) -> None:
        amount, full_page = args.get("amount", 200), args.get("full_page", False)
        d.page_scroll(sign * ((VIEWPORT[1] - 50) if full_page else amount))

    return scroll


def _scroll_id(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    displayed, direction = args["id"], args["direction"].lower()
    d.scroll_id(display_to_page_id(i, displayed), direction)


def _hover_coords(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.hover_coords(*_xy(args))


def _hover_and_scroll_coords(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    x, y = _xy(args)
    d.hover_and_scroll_coords(x, y, args.get("direction", "down").lower())


def _sleep(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.sleep(float(args["duration"]))


def _tab_and_enter(i: BrowserInstance, d: PageDriver, args: Any) -> None:
    d.tab_and_enter()


def _get_webpage_text(i: BrowserInstance, d: PageDriver, args: Any) -> dict:
    return {"text": d.webpage_text(args.get("n_lines", 100))}


def _get_page_metadata(i: BrowserInstance, d: PageDriver, args: Any) -> dict:
    return d.page_metadata()


def _get_interactive_rects(i: BrowserInstance, d: PageDriver, args: Any) -> dict:
    return d.interactive_regions()


def _get_screenshot_info(i: BrowserInstance, d: PageDriver, args: Any) -> dict:
    return i.screenshot_info if i.screenshot_info else dict(NO_SCREENSHOT_INFO)


def _screenshot(i: BrowserInstance, d: PageDriver, args: Any) -> dict:
    d.screenshot(args.get("interaction_mode", "set_of_marks"))
    return {"status": "screenshot_taken"}


#: Command name -> handler(instance, driver, args); a handler returning None means success.
COMMANDS: dict[str, Callable[[BrowserInstance, PageDriver, Any], Any]] = {
    "visit_page": _visit_page,
    "back": _back,
    "click_coords": _click_coords,
    "click_id": _click_id,
    "fill_coords": _fill_coords,
    "fill_id": _fill_id,
    "select_option": _select_option,
    "hover_id": _hover_id,
    "keypress": _keypress,
    "page_down": _page_scroll(+1),
    "page_up": _page_scroll(-1),
    "scroll_id": _scroll_id,
    "hover_coords": _hover_coords,
    "hover_and_scroll_coords": _hover_and_scroll_coords,
    "sleep": _sleep,
    "tab_and_enter": _tab_and_enter,
    "get_webpage_text": _get_webpage_text,
    "get_page_metadata": _get_page_metadata,
    "get_interactive_rects": _get_interactive_rects,
    "get_screenshot_info": _get_screenshot_info,
    "screenshot": _screenshot,
}


def execute(instance: BrowserInstance, command_data: dict) -> Any:
    """Run one command body on ``instance`` (on its worker thread); raises CommandError."""
    try:
        if len(command_data) != 1:
            raise ValueError("Only one command per request is supported")
        name, args = next(iter(command_data.items()))
        handler = COMMANDS.get(name)
        if handler is None:
            raise ValueError(f"Unsupported command: {name}")
        result = handler(instance, instance.driver, args)
        return SUCCESS if result is None else result
    except Exception as exc:
        raise CommandError(str(exc)) from None

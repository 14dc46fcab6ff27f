"""Tests for simweb.actions: parsing BrowserGym action strings."""

from __future__ import annotations

import ast
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simweb.web.actions import ACTIONS, MAX_ACTION_CHARS, Action, ActionError, parse_action

# One minimal call per action and the full argument tuple it binds to.
MINIMAL = {
    "send_msg_to_user": ("send_msg_to_user('done')", ("done",)),
    "report_infeasible": ("report_infeasible('no such item')", ("no such item",)),
    "fill": ("fill('a1', 'lamp')", ("a1", "lamp")),
    "click": ("click('a1')", ("a1", "left", ())),
    "dblclick": ("dblclick('a1')", ("a1", "left", ())),
    "hover": ("hover('a1')", ("a1",)),
    "press": ("press('a1', 'Enter')", ("a1", "Enter")),
    "focus": ("focus('a1')", ("a1",)),
    "clear": ("clear('a1')", ("a1",)),
    "select_option": ("select_option('s', 'Express')", ("s", "Express")),
    "check": ("check('c')", ("c",)),
    "uncheck": ("uncheck('c')", ("c",)),
    "drag_and_drop": ("drag_and_drop('x', 'y')", ("x", "y")),
    "upload_file": ("upload_file('f', 'a.txt')", ("f", "a.txt")),
    "scroll": ("scroll(0, 200)", (0, 200)),
    "mouse_click": ("mouse_click(10, 20.5)", (10, 20.5, "left")),
    "mouse_move": ("mouse_move(1, 2)", (1, 2)),
    "mouse_dblclick": ("mouse_dblclick(1, 2)", (1, 2, "left")),
    "keyboard_type": ("keyboard_type('hello')", ("hello",)),
    "keyboard_press": ("keyboard_press('Control+a')", ("Control+a",)),
    "goto": ("goto('http://localhost/cart')", ("http://localhost/cart",)),
    "go_back": ("go_back()", ()),
    "go_forward": ("go_forward()", ()),
    "new_tab": ("new_tab()", ()),
    "tab_close": ("tab_close()", ()),
    "tab_focus": ("tab_focus(1)", (1,)),
    "noop": ("noop()", (1000,)),
}


def test_every_action_is_covered() -> None:
    assert set(MINIMAL) == set(ACTIONS)


@pytest.mark.parametrize("name", sorted(MINIMAL))
def test_each_action_parses_with_defaults(name: str) -> None:
    text, args = MINIMAL[name]
    a = parse_action(text)
    assert (a.name, a.args, a.text) == (name, args, text)
    assert dict(a.arguments) == {p.name: v for p, v in zip(ACTIONS[name].params, args)}
    assert dict(a.kwargs) == {}
    assert parse_action(a.to_code()) == a
    hash(a)


def test_signatures() -> None:
    assert ACTIONS["click"].signature == "click(bid, button='left', modifiers=[])"
    assert ACTIONS["noop"].signature == "noop(wait_ms=1000)"
    assert ACTIONS["go_back"].signature == "go_back()"
    assert ACTIONS["select_option"].signature == "select_option(bid, options)"


def test_keywords_conversions_and_fences() -> None:
    a = parse_action("click(12, button='right', modifiers=['Shift', 'ControlOrMeta'])")
    assert a.args == ("12", "right", ("Shift", "ControlOrMeta"))
    assert a.arguments["modifiers"] == ("Shift", "ControlOrMeta") and not a.kwargs
    assert a.to_code() == "click('12', button='right', modifiers=['Shift', 'ControlOrMeta'])"
    assert parse_action("fill(bid='q', value='x')").args == ("q", "x")
    assert parse_action("drag_and_drop(3, to_bid=4)").args == ("3", "4")
    assert parse_action("select_option('s', ['a', 'b'])").arguments["options"] == ("a", "b")
    # Keyword arguments are bound into args too: a handler can take *args.
    a = parse_action("click(modifiers=['Alt'], bid='x')")
    assert a.args == ("x", "left", ("Alt",)) and dict(a.kwargs) == {}

    def handler(bid: str, button: str = "left", modifiers: tuple = ()) -> tuple:
        return bid, button, modifiers

    assert handler(*a.args) == handler(*a.args, **a.kwargs) == ("x", "left", ("Alt",))
    assert parse_action("upload_file('f', ('a', 'b'))").args[1] == ("a", "b")
    assert parse_action("noop(wait_ms=0.5)").args == (0.5,)
    fenced = "```python\nfill('q', 'desk lamp')\n```"
    a = parse_action(f"  {fenced}\n")
    assert a.args == ("q", "desk lamp") and a.text == fenced
    assert parse_action("```\nclick('a')\n```").args[0] == "a"
    assert parse_action("```click('a')```").args[0] == "a"
    assert parse_action("`click('a')`").args[0] == "a"
    assert parse_action("click('a')  # the login button").args[0] == "a"
    assert parse_action("fill('q', 'it\\'s \"x\"\\n')").args[1] == "it's \"x\"\n"
    # equality ignores the original text
    assert parse_action("click(12)") == parse_action('click("12")')


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "Empty action; expected one call such as click('a12')"),
        ("   \n\t", "Empty action; expected one call such as click('a12')"),
        ("```\n```", "Empty action; expected one call such as click('a12')"),
        ("# thinking...", "Empty action; expected one call such as click('a12')"),
        ("click(", "Invalid action syntax: '(' was never closed (line 1, column 6)"),
        ("I will click the button", "Invalid action syntax: invalid syntax"),
        ("x = click('a')", "Invalid action syntax: expected a single call like click('a12'), "
                           "got `x = click('a')`"),
        ("page.click('a')", "Invalid action syntax: expected a single call like click('a12')"),
        ("'click'", "Invalid action syntax: expected a single call like click('a12')"),
        ("click('a')\nfill('b', 'c')", "Only one action per step is supported; got 2"),
        ("click('a'); click('b'); noop()", "Only one action per step is supported; got 3"),
        ("clik('a')", "Unknown action 'clik'. Did you mean: click, dblclick? Known actions: "
                      "send_msg_to_user, "),
        ("Fill('a', 'b')", "Unknown action 'Fill'. Did you mean: fill?"),
        ("open_browser()", "Unknown action 'open_browser'. Known actions: send_msg_to_user"),
        ("fill('a')", "fill() takes 2 arguments (bid, value); got 1"),
        ("fill('a', 'b', 'c')", "fill() takes 2 arguments (bid, value); got 3"),
        ("click()", "click() takes 1 to 3 arguments (bid, button='left', modifiers=[]); got 0"),
        ("hover()", "hover() takes 1 argument (bid); got 0"),
        ("go_back(1)", "go_back() takes no arguments; got 1"),
        ("noop(1, 2)", "noop() takes 0 to 1 arguments (wait_ms=1000); got 2"),
        ("click('a', foo=1)", "click() got an unexpected keyword argument 'foo'; "
                              "parameters: bid, button, modifiers"),
        ("click('a', bid='b')", "click() got multiple values for argument 'bid'"),
        ("click(bid)", "Argument 1 of click() must be a literal (string, number, list...), "
                       "got `bid`"),
        ("fill('a', value=input())", "Argument 'value' of fill() must be a literal"),
        ("fill('a', 'b' + 'c')", "Argument 2 of fill() must be a literal"),
        ("click(*args)", "click(): *-unpacking is not supported"),
        ("click(**kw)", "click(): **-unpacking is not supported"),
        ("click(1.5)", "click() argument 'bid' must be an element bid such as '12', "
                       "got 1.5 (float)"),
        ("click(True)", "click() argument 'bid' must be an element bid"),
        ("click('')", "click() argument 'bid' must be an element bid"),
        ("click('a', button='top')", "click() argument 'button' must be one of 'left', "
                                     "'middle', 'right', got 'top' (str)"),
        ("click('a', modifiers='Shift')", "click() argument 'modifiers' must be a list"),
        ("click('a', modifiers=['Hyper'])", "click() argument 'modifiers': unknown modifier "
                                            "'Hyper' (str); use Alt, Control, ControlOrMeta, "
                                            "Meta, Shift"),
        ("fill('a', 42)", "fill() argument 'value' must be a string, got 42 (int)"),
        ("select_option('s', ['a', 1])", "select_option() argument 'options' must be a string "
                                         "or a list of strings"),
        ("scroll('0', 100)", "scroll() argument 'delta_x' must be a number, got '0' (str)"),
        ("scroll(0, 1e999)", "scroll() argument 'delta_y' must be a number, got inf (float)"),
        ("mouse_click(None, 1)", "mouse_click() argument 'x' must be a number"),
        ("tab_focus(1.0)", "tab_focus() argument 'index' must be a non-negative integer"),
        ("tab_focus(-1)", "tab_focus() argument 'index' must be a non-negative integer"),
        ("noop(-5)", "noop() argument 'wait_ms' must not be negative"),
        ("press('a', '')", "press() argument 'key_comb' must not be empty"),
        ("click('\x00')", "Invalid action syntax: source code string cannot contain null bytes"),
        ("click(" + "9" * 5000 + ")", "Invalid action syntax: Exceeds the limit"),
        ("[" * 300, "Invalid action syntax: too many nested parentheses"),
        (42, "Action must be a string, got int"),
    ],
)
def test_errors(text: Any, message: str) -> None:   # Any: one case is not a string
    with pytest.raises(ActionError) as info:
        parse_action(text)
    msg = str(info.value)
    assert msg.startswith(message), msg
    assert "\n" not in msg
    assert isinstance(info.value, ValueError)


def test_too_long() -> None:
    text = "send_msg_to_user('" + "x" * MAX_ACTION_CHARS + "')"
    with pytest.raises(ActionError, match=r"^Action is too long: 10020 characters \(at most "
                                          r"10000\)$"):
        parse_action(text)
    ok = "send_msg_to_user('" + "x" * (MAX_ACTION_CHARS - 20) + "')"
    assert len(parse_action(ok).args[0]) == MAX_ACTION_CHARS - 20


def test_result_does_not_depend_on_warning_filters() -> None:
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert parse_action(r"fill('a', '\d+')").args == ("a", "\\d+")


def test_action_pickles() -> None:
    import pickle

    a = parse_action("click('a', modifiers=['Shift'])")
    b = pickle.loads(pickle.dumps(a))
    assert b == a and b.text == a.text and dict(b.arguments) == dict(a.arguments)


def test_action_is_immutable() -> None:
    a = parse_action("click('a')")
    with pytest.raises(AttributeError):
        a.name = "hover"  # type: ignore[misc]
    with pytest.raises(TypeError):
        a.arguments["bid"] = "b"  # type: ignore[index]


# --------------------------------------------------------------------------
# Property-based
# --------------------------------------------------------------------------

_ACTIONISH = st.one_of(
    st.text(max_size=80),
    st.builds(lambda name, body: f"{name}({body})", st.sampled_from(sorted(ACTIONS) + ["clik"]),
              st.text(alphabet="'\"0123456789.,=[]()ab_ -+eE*\\\n#`", max_size=40)),
    st.builds(lambda s: f"```python\n{s}\n```", st.text(max_size=40)),
)


@settings(max_examples=400, deadline=None)
@given(_ACTIONISH)
def test_fuzz_only_action_error(text: str) -> None:
    try:
        a = parse_action(text)
    except ActionError as e:
        assert "\n" not in str(e)
    else:
        assert isinstance(a, Action) and a.name in ACTIONS
        assert len(a.args) == len(ACTIONS[a.name].params)


_BIDS = st.one_of(st.text(min_size=1, max_size=6), st.integers(0, 10**6))
_NUM = st.one_of(st.integers(-10**6, 10**6),
                 st.floats(allow_nan=False, allow_infinity=False, width=32))
_KIND_VALUES = {
    "bid": _BIDS,
    "text": st.text(max_size=20),
    "str": st.text(min_size=1, max_size=20),
    "strs": st.one_of(st.text(max_size=8), st.lists(st.text(max_size=8), max_size=3)),
    "number": _NUM,
    "wait": st.one_of(st.integers(0, 10**6), st.floats(0, 1e6)),
    "index": st.integers(0, 50),
    "button": st.sampled_from(["left", "middle", "right"]),
    "modifiers": st.lists(st.sampled_from(["Alt", "Control", "ControlOrMeta", "Meta", "Shift"]),
                          max_size=3),
}


@st.composite
def valid_calls(draw: st.DrawFn) -> tuple[str, str, dict]:
    name = draw(st.sampled_from(sorted(ACTIONS)))
    params = ACTIONS[name].params
    values = {}
    parts = []
    keyword = False
    for p in params:
        if not p.required and draw(st.booleans()):
            keyword = True  # skipped: later ones must be passed by keyword
            continue
        v = draw(_KIND_VALUES[p.kind])
        values[p.name] = v
        keyword = keyword or draw(st.booleans())
        parts.append(f"{p.name}={v!r}" if keyword else repr(v))
    ws = draw(st.sampled_from(["", " ", "\n", "  \n\t"]))
    text = f"{ws}{name}({', '.join(parts)}){ws}"
    if draw(st.booleans()):
        text = f"```python\n{text}\n```"
    return text, name, values


def _norm(kind: str, v: object) -> object:
    if kind == "bid" and isinstance(v, int):
        return str(v)
    if isinstance(v, list):
        return tuple(v)
    return v


@settings(max_examples=300, deadline=None)
@given(valid_calls())
def test_round_trip_valid_actions(call: tuple[str, str, dict]) -> None:
    text, name, values = call
    a = parse_action(text)
    assert a.name == name
    for p, v in zip(ACTIONS[name].params, a.args):
        expected = _norm(p.kind, values[p.name]) if p.name in values else p.default
        if isinstance(expected, float) and math.isnan(expected):  # pragma: no cover
            continue
        assert v == expected and type(v) is type(expected), (p.name, v, expected)
    # The canonical text parses back to the same action, and is valid Python.
    code = a.to_code()
    ast.parse(code, mode="eval")
    assert parse_action(code) == a

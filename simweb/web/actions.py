"""Parse BrowserGym high-level action strings such as ``click('a12')``.

Agents answer with one Python-looking call per step.  :func:`parse_action`
turns that text into an :class:`Action` without ever evaluating it: the text
is parsed with :mod:`ast`, must be a single call of a known action name, and
every argument must be a literal (read with :func:`ast.literal_eval`).  The
arguments are bound to the action's parameters (defaults filled in) and
type-checked.  Anything wrong raises :class:`ActionError` with a one-line
message meant to be shown to the agent as ``last_action_error``.

>>> parse_action("click(12)")
Action(name='click', args=('12', 'left', ()), text='click(12)')
>>> parse_action("```python\\nfill('q', value='desk lamp')\\n```").arguments["value"]
'desk lamp'
"""

from __future__ import annotations

import ast
import difflib
import math
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["ACTIONS", "MAX_ACTION_CHARS", "Action", "ActionError", "ActionSpec", "Param",
           "parse_action"]

#: Longest action text accepted (characters, before stripping).
MAX_ACTION_CHARS = 10_000


class ActionError(ValueError):
    """An action string that cannot be executed; the message is one line."""


_REQUIRED: Any = object()  # marks a parameter without default


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of an action.

    ``kind`` names the check applied to its value:

    * ``bid`` -- a non-empty string; an int is accepted and converted
      (models often write ``click(12)``).
    * ``str`` -- a string; ``text`` -- a string (may be empty).
    * ``strs`` -- a string or a list of strings (a list becomes a tuple).
    * ``number`` -- a finite int or float; ``index`` -- an int >= 0;
      ``wait`` -- a finite number >= 0.
    * ``button`` -- ``'left'``, ``'middle'`` or ``'right'``.
    * ``modifiers`` -- a list of ``Alt``/``Control``/``ControlOrMeta``/
      ``Meta``/``Shift`` (becomes a tuple).
    """

    name: str
    kind: str
    default: Any = _REQUIRED

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED

    def __str__(self) -> str:
        if self.required:
            return self.name
        default = list(self.default) if isinstance(self.default, tuple) else self.default
        return f"{self.name}={default!r}"


@dataclass(frozen=True, slots=True)
class ActionSpec:
    """An action's name, parameters and one-line description."""

    name: str
    params: tuple[Param, ...]
    doc: str

    @property
    def signature(self) -> str:
        """E.g. ``click(bid, button='left', modifiers=[])``."""
        return f"{self.name}({', '.join(map(str, self.params))})"

    @property
    def n_required(self) -> int:
        return sum(1 for p in self.params if p.required)


def _spec(name: str, doc: str, *params: Param) -> tuple[str, ActionSpec]:
    return name, ActionSpec(name, params, doc)


_BID = Param("bid", "bid")
_BUTTON = Param("button", "button", "left")
_MODIFIERS = Param("modifiers", "modifiers", ())

#: The known actions (BrowserGym's high-level action set), by name.
ACTIONS: Mapping[str, ActionSpec] = MappingProxyType(dict([
    _spec("send_msg_to_user", "Send a message to the user.", Param("text", "text")),
    _spec("report_infeasible", "Report that the task cannot be done.", Param("reason", "text")),
    _spec("fill", "Fill a text field with a value (replaces its content).", _BID,
          Param("value", "text")),
    _spec("click", "Click an element.", _BID, _BUTTON, _MODIFIERS),
    _spec("dblclick", "Double-click an element.", _BID, _BUTTON, _MODIFIERS),
    _spec("hover", "Move the mouse over an element.", _BID),
    _spec("press", "Focus an element and press a key combination, e.g. 'Enter'.", _BID,
          Param("key_comb", "str")),
    _spec("focus", "Focus an element.", _BID),
    _spec("clear", "Clear a text field.", _BID),
    _spec("select_option", "Select option(s) of a select by value or label.", _BID,
          Param("options", "strs")),
    _spec("check", "Check a checkbox or radio button.", _BID),
    _spec("uncheck", "Uncheck a checkbox.", _BID),
    _spec("drag_and_drop", "Drag an element onto another.", Param("from_bid", "bid"),
          Param("to_bid", "bid")),
    _spec("upload_file", "Set the file(s) of a file input.", _BID, Param("file", "strs")),
    _spec("scroll", "Scroll by pixels.", Param("delta_x", "number"), Param("delta_y", "number")),
    _spec("mouse_click", "Click at page coordinates.", Param("x", "number"),
          Param("y", "number"), _BUTTON),
    _spec("mouse_move", "Move the mouse to page coordinates.", Param("x", "number"),
          Param("y", "number")),
    _spec("mouse_dblclick", "Double-click at page coordinates.", Param("x", "number"),
          Param("y", "number"), _BUTTON),
    _spec("keyboard_type", "Type text into the focused element.", Param("text", "text")),
    _spec("keyboard_press", "Press a key combination on the focused element.",
          Param("key", "str")),
    _spec("goto", "Navigate to a URL.", Param("url", "str")),
    _spec("go_back", "Go back in history."),
    _spec("go_forward", "Go forward in history."),
    _spec("new_tab", "Open a new tab."),
    _spec("tab_close", "Close the current tab."),
    _spec("tab_focus", "Switch to the tab with this index.", Param("index", "index")),
    _spec("noop", "Do nothing (wait).", Param("wait_ms", "wait", 1000)),
]))

_NO_KWARGS: Mapping[str, Any] = MappingProxyType({})
_BUTTONS = ("left", "middle", "right")
_MODIFIER_KEYS = ("Alt", "Control", "ControlOrMeta", "Meta", "Shift")


@dataclass(frozen=True, slots=True)
class Action:
    """A parsed, bound and type-checked action.

    ``args`` holds the value of every parameter in declaration order, with
    defaults filled in, however the text passed them (positionally or by
    keyword).  ``kwargs`` is therefore always empty (a read-only mapping):
    ``handler(*action.args, **action.kwargs)`` and ``handler(*action.args)``
    both call a handler with the action's parameters.  ``arguments`` gives
    the same values by parameter name.

    Lists (``modifiers``, a list of ``options`` or ``file``) are stored as
    tuples so that an Action is hashable.  Equality and hash look at ``name``
    and ``args`` only, not at the original ``text``.
    """

    name: str
    args: tuple
    kwargs: Mapping[str, Any] = field(default_factory=lambda: _NO_KWARGS, repr=False,
                                      compare=False, hash=False)
    text: str = field(default="", compare=False)

    @property
    def spec(self) -> ActionSpec:
        return ACTIONS[self.name]

    @property
    def arguments(self) -> Mapping[str, Any]:
        """Parameter name -> value (defaults included), read-only."""
        return MappingProxyType({p.name: v for p, v in zip(self.spec.params, self.args)})

    def __reduce__(self) -> tuple:
        # A mappingproxy cannot be pickled (and kwargs is always empty).
        return (_unpickle_action, (self.name, self.args, self.text))

    def to_code(self) -> str:
        """Canonical action text: required arguments positional, others by keyword
        when they differ from the default (tuples written as lists)."""
        parts = []
        for p, v in zip(self.spec.params, self.args):
            if p.required:
                parts.append(_literal(v))
            elif v != p.default:
                parts.append(f"{p.name}={_literal(v)}")
        return f"{self.name}({', '.join(parts)})"


def _unpickle_action(name: str, args: tuple, text: str) -> Action:
    return Action(name, args, _NO_KWARGS, text)


def _literal(v: Any) -> str:
    if isinstance(v, tuple):
        return "[" + ", ".join(map(_literal, v)) + "]"
    return repr(v)


_EMPTY = "Empty action; expected one call such as click('a12')"
_FENCE_RE = re.compile(r"^```(?:[A-Za-z0-9_+.-]*[ \t]*\r?\n)?(.*?)```$", re.DOTALL)


def _snippet(text: str, limit: int = 60) -> str:
    """A short single-line rendering of user text for an error message."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unfence(text: str) -> str:
    m = _FENCE_RE.match(text)
    if m:
        return m.group(1).strip()
    # Inline code: `click('a1')`
    if len(text) >= 2 and text[0] == "`" and text[-1] == "`" and "`" not in text[1:-1]:
        return text[1:-1].strip()
    return text


def _ast_parse(code: str, mode: str) -> ast.AST:
    # Silence SyntaxWarning/DeprecationWarning (e.g. "invalid escape
    # sequence '\d'") so that the result does not depend on the warning
    # filters in effect (`-W error` would turn them into SyntaxErrors).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ast.parse(code, mode=mode)


def _parse_call(code: str) -> ast.Call:
    """The single call expression of `code` (raises ActionError otherwise)."""
    try:
        tree = _ast_parse(code, "eval")
    except SyntaxError as e:
        # Several statements parse as a module but not as one expression.
        try:
            module = _ast_parse(code, "exec")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            raise ActionError(f"Invalid action syntax: {_syntax_msg(e)}") from None
        if not module.body:  # type: ignore[attr-defined]
            raise ActionError(_EMPTY) from None  # only comments
        if len(module.body) > 1:  # type: ignore[attr-defined]
            raise ActionError("Only one action per step is supported; "
                              f"got {len(module.body)}") from None  # type: ignore[attr-defined]
        raise ActionError("Invalid action syntax: expected a single call like click('a12'), "
                          f"got `{_snippet(code)}`") from None
    except (ValueError, RecursionError, MemoryError) as e:
        # ValueError: null bytes, too-long int literals; the others: absurd nesting.
        raise ActionError(f"Invalid action syntax: {_snippet(str(e) or type(e).__name__)}"
                          ) from None
    node = tree.body  # type: ignore[attr-defined]
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        raise ActionError("Invalid action syntax: expected a single call like click('a12'), "
                          f"got `{_snippet(code)}`")
    return node


def _syntax_msg(e: SyntaxError) -> str:
    msg = _snippet(e.msg or "invalid syntax")
    return f"{msg} (line {e.lineno}, column {e.offset})" if e.lineno and e.offset else msg


def _unknown(name: str) -> ActionError:
    close = difflib.get_close_matches(name.lower(), ACTIONS, n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(close)}?" if close else ""
    return ActionError(f"Unknown action {_snippet(name, 40)!r}.{hint} "
                       f"Known actions: {', '.join(ACTIONS)}")


def _literal_arg(code: str, node: ast.expr, what: str, spec: ActionSpec) -> Any:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        src = ast.get_source_segment(code, node) or type(node).__name__
        raise ActionError(f"{what} of {spec.name}() must be a literal (string, number, "
                          f"list...), got `{_snippet(src, 40)}`") from None


def _arity_error(spec: ActionSpec, got: int) -> ActionError:
    n_req, n_all = spec.n_required, len(spec.params)
    if n_req == n_all:
        takes = f"{n_all} argument{'s' if n_all != 1 else ''}" if n_all else "no arguments"
    else:
        takes = f"{n_req} to {n_all} arguments"
    params = f" ({', '.join(map(str, spec.params))})" if spec.params else ""
    return ActionError(f"{spec.name}() takes {takes}{params}; got {got}")


def _check(spec: ActionSpec, p: Param, v: Any) -> Any:
    """Type-check (and normalize) the value of parameter `p`."""
    kind = p.kind
    where = f"{spec.name}() argument {p.name!r}"
    if kind == "bid":
        if isinstance(v, int) and not isinstance(v, bool):
            v = str(v)
        if not isinstance(v, str) or not v:
            raise ActionError(f"{where} must be an element bid such as '12', got {_show(v)}")
        return v
    if kind == "text" or kind == "str":
        if not isinstance(v, str):
            raise ActionError(f"{where} must be a string, got {_show(v)}")
        if kind == "str" and not v:
            raise ActionError(f"{where} must not be empty")
        return v
    if kind == "strs":
        if isinstance(v, str):
            return v
        if isinstance(v, (list, tuple)) and all(isinstance(x, str) for x in v):
            return tuple(v)
        raise ActionError(f"{where} must be a string or a list of strings, got {_show(v)}")
    if kind in ("number", "wait"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise ActionError(f"{where} must be a number, got {_show(v)}")
        if kind == "wait" and v < 0:
            raise ActionError(f"{where} must not be negative, got {_show(v)}")
        return v
    if kind == "index":
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ActionError(f"{where} must be a non-negative integer, got {_show(v)}")
        return v
    if kind == "button":
        if v not in _BUTTONS or not isinstance(v, str):
            raise ActionError(f"{where} must be one of 'left', 'middle', 'right', got {_show(v)}")
        return v
    if kind == "modifiers":
        if not isinstance(v, (list, tuple)):
            raise ActionError(f"{where} must be a list such as ['Shift'], got {_show(v)}")
        for m in v:
            if not isinstance(m, str) or m not in _MODIFIER_KEYS:
                raise ActionError(f"{where}: unknown modifier {_show(m)}; use "
                                  f"{', '.join(_MODIFIER_KEYS)}")
        return tuple(v)
    raise AssertionError(kind)  # pragma: no cover - every kind is handled above


def _show(v: Any) -> str:
    """repr() of a user value for a message: short, one line, with its type."""
    r = repr(v)
    if len(r) > 40:
        r = r[:37] + "..."
    return f"{r} ({type(v).__name__})"


def parse_action(text: str) -> Action:
    """Parse one action string into an :class:`Action`.

    Surrounding whitespace and a markdown code fence (```` ```python ... ``` ````)
    or inline backticks are ignored.  Raises :class:`ActionError` -- and
    nothing else -- for anything that is not exactly one known action call
    with literal, well-typed arguments.
    """
    if not isinstance(text, str):
        raise ActionError(f"Action must be a string, got {type(text).__name__}")
    if len(text) > MAX_ACTION_CHARS:
        raise ActionError(f"Action is too long: {len(text)} characters "
                          f"(at most {MAX_ACTION_CHARS})")
    stripped = text.strip()
    code = _unfence(stripped)
    if not code:
        raise ActionError(_EMPTY)
    call = _parse_call(code)
    name = call.func.id  # type: ignore[attr-defined]
    spec = ACTIONS.get(name)
    if spec is None:
        raise _unknown(name)

    params = spec.params
    if len(call.args) > len(params):
        raise _arity_error(spec, len(call.args) + len(call.keywords))
    values: dict[str, Any] = {}
    for i, (p, node) in enumerate(zip(params, call.args)):
        if isinstance(node, ast.Starred):
            raise ActionError(f"{name}(): *-unpacking is not supported")
        values[p.name] = _literal_arg(code, node, f"Argument {i + 1}", spec)
    by_name = {p.name: p for p in params}
    for kw in call.keywords:
        if kw.arg is None:
            raise ActionError(f"{name}(): **-unpacking is not supported")
        if kw.arg not in by_name:
            names = ", ".join(p.name for p in params) or "none"
            raise ActionError(f"{name}() got an unexpected keyword argument {kw.arg!r}; "
                              f"parameters: {names}")
        if kw.arg in values:
            raise ActionError(f"{name}() got multiple values for argument {kw.arg!r}")
        values[kw.arg] = _literal_arg(code, kw.value, f"Argument {kw.arg!r}", spec)
    missing = [p for p in params if p.required and p.name not in values]
    if missing:
        raise _arity_error(spec, len(values))
    args = tuple(_check(spec, p, values[p.name]) if p.name in values else p.default
                 for p in params)
    return Action(name, args, _NO_KWARGS, stripped)


def _css_bid(bid: str) -> str:
    """The CSS selector of the element whose bid attribute is ``bid`` (Playwright's, in
    Chromium's env and for a trajectory's element boxes)."""
    escaped = str(bid).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\a ")
    return f'[bid="{escaped}"]'

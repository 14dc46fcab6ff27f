"""Parse server-rendered HTML once and render BrowserGym's flattened AX-tree text.

The simulator never runs a browser for observations: it parses the HTML that a
page handler rendered and prints the accessibility tree that Chromium plus
BrowserGym's ``flatten_axtree_to_str`` would have shown for it.  The work is
split in two so that the per-step cost stays small:

* :func:`parse_page` walks the DOM exactly once (selectolax/lexbor) and
  produces a :class:`Page`: the page title, the ``bid``-addressable
  :class:`Element` records, the :class:`Form` records, and a pre-formatted list
  of AX-tree lines.
* :meth:`Page.axtree` joins those lines, re-formatting only the few lines that
  the UI-state overlays (typed text, toggled checkboxes, chosen options, focus)
  touch.

Output format (as produced by BrowserGym from Chromium's AX tree)::

    RootWebArea 'Shop', focused
    \t[nav-1] navigation ''
    \t\t[nav-home] link 'Home', url='/'
    \t[q] searchbox 'Search products' value='lamp', focused
    \t[ship] combobox 'Shipping' value='Standard', hasPopup='menu', expanded=False
    \t\t[o1] option 'Standard', selected=True
    \t\t[o2] option 'Express', selected=False
    \t[agree] checkbox 'I agree', checked='false'
    \tStaticText 'Subtotal: $12.00'

* One TAB per depth level; the root's children are at depth 1.
* ``[bid] `` prefix only for nodes whose element carries a ``bid`` attribute.
* Names and values are printed with Python's ``repr()`` -- exactly what
  BrowserGym does.  That means single quotes normally, double quotes when the
  text contains a single quote but no double quote (``"O'Brien"``), and
  backslash escapes for anything else (``'a\\'b"c'``, ``'line1\\nline2'``).
* As in BrowserGym, ``value=...`` follows the name after a plain space (it is
  not part of the comma-separated property list) and is omitted when empty;
  the properties follow as ``, prop`` items in this fixed order: a live
  region's ``live``, ``atomic`` and ``relevant`` (an alert, a status, a log, an
  output or an element with ``aria-live``: Chromium's values, see ``_live``), ``disabled``,
  ``focused``, ``hasPopup``, ``required``, ``checked``, ``expanded``,
  ``pressed``, ``selected``, ``multiselectable``, ``url``; a form control's
  ``describedby`` (its ``aria-describedby`` as written) comes last.

Roles and names follow Chromium where the two could differ: ``<img>`` is
``image``; a ``<label>`` is ``LabelText ''`` with its text as ``StaticText``
below it; ``<thead>``/``<tbody>``/``<tfoot>`` (including the ``<tbody>`` the
parser inserts) are ``rowgroup``; a ``<select>`` is a ``combobox`` whose value
is the selected option's label, with ``hasPopup='menu', expanded=False`` and
one ``option`` line per option marked ``selected=True``/``selected=False``
(``listbox`` with ``multiselectable=True`` for ``multiple``); a password
field shows bullets as its value; ``header``/``footer`` are landmarks only
outside ``article``/``aside``/``main``/``nav``/``section``.  Deliberately
unlike Chromium, ``<strong>``, ``<em>`` and the other inline elements are
transparent (no ``strong ''`` lines), and cells, rows and paragraphs are
named ``''`` (their text shows as ``StaticText`` below them instead).

Text handling: every DOM text node becomes one ``StaticText`` line (inline
neighbours are not merged -- Chromium does not merge them either) with ASCII
and Unicode whitespace collapsed to single spaces and trimmed.  A text is
dropped when it is a substring of the name of the nearest ancestor that has a
line of its own (so a link's or a button's label is not repeated under it).
Generic containers are transparent for that check; the root is not a
candidate.

Hidden: ``<script>``/``<style>``/``<template>``/``<noscript>``/``<head>``,
elements with ``hidden``, ``aria-hidden="true"`` or an inline
``display:none``/``visibility:hidden`` style, ``<input type=hidden>``, a
``<dialog>`` without ``open``, the content of a closed ``<details>`` (its
``<summary>`` excepted), decorative images (``alt=""``), ``<svg>``
internals, embedded content (``<iframe>``, ``<video>``...).

Known simplifications: ``url=`` shows ``href`` as written (Chromium shows it
absolute); no other CSS is evaluated; ``<pre>`` text is collapsed like any
other text; a ``<fieldset disabled>`` disables its whole subtree (its first
``<legend>`` included).
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import selectolax.lexbor
from selectolax.lexbor import LexborHTMLParser, LexborNode

__all__ = ["COMPILED_WALK", "DuplicateBidError", "Element", "Form", "Page", "parse_page"]


class DuplicateBidError(ValueError):
    """Two elements of one page carry the same ``bid`` attribute."""


@dataclass(frozen=True, slots=True)
class Element:
    """One element of the page that an action can address.

    Every element with a ``bid`` attribute gets one (whatever its tag), and so
    does every form control, with or without a bid (those only appear in
    :attr:`Form.controls`).

    ``value`` is the value the control contributes to form data by default:
    the ``value`` attribute of an ``<input>`` (``''`` when missing, ``'on'``
    for a checkbox or radio without one), the text of a ``<textarea>``, the
    value of the selected option of a ``<select>`` (``None`` when nothing is
    selected), the ``value`` attribute of a ``<button>`` (``''`` when
    missing), the value of an ``<option>``; ``None`` for everything else.

    ``options`` lists a select's options as ``(value, label, selected)`` where
    ``selected`` is the *effective* default selectedness (a single-choice
    select without a ``selected`` option selects its first enabled option).

    ``checked`` is the default state of a checkbox or radio (only the last
    ``checked`` radio of a group counts) and the default selectedness of an
    ``<option>``.

    ``hidden`` is true when the element is excluded from the AX tree because
    it or an ancestor is hidden or not rendered (see the module docstring).
    A visible element can still have no line: generic containers never get
    one.

    Instances are immutable; ``attrs`` is a fresh dict per element (boolean
    attributes map to ``''``) and must not be mutated.
    """

    bid: str | None
    tag: str
    role: str
    name: str
    attrs: dict[str, str] = field(hash=False, compare=True)
    form: int | None = None
    input_type: str | None = None
    field_name: str | None = None
    value: str | None = None
    checked: bool = False
    options: tuple[tuple[str, str, bool], ...] = ()
    href: str | None = None
    disabled: bool = False
    multiple: bool = False
    hidden: bool = False

    @property
    def button_type(self) -> str | None:
        """``'submit'``/``'reset'``/``'button'``/``'image'`` for buttons, else ``None``.

        ``<button>`` defaults to (and falls back to, for an unknown type)
        ``'submit'`` as browsers do.
        """
        if self.tag == "button":
            t = (self.attrs.get("type") or "submit").strip().lower()
            return t if t in ("submit", "reset", "button") else "submit"
        if self.tag == "input" and self.input_type in ("submit", "reset", "button", "image"):
            return self.input_type
        return None


@dataclass(slots=True)
class Form:
    """A ``<form>`` element and the controls it owns, in document order.

    ``action`` is the attribute as written (``''`` when missing, meaning "the
    current URL" -- resolving it is the caller's job).  ``method`` is
    ``'post'`` or ``'get'`` (the default, also for unknown methods).
    ``controls`` holds every ``input``/``select``/``textarea``/``button`` whose
    form owner this form is -- including hidden inputs, disabled controls,
    controls without bid and controls placed elsewhere with ``form="id"``.
    """

    index: int
    bid: str | None
    action: str
    method: str
    controls: list[Element]


# --------------------------------------------------------------------------
# Static tables
# --------------------------------------------------------------------------

# Subtrees that never produce anything (not rendered, or not part of the DOM
# that an agent sees).
_SKIP_TAGS = frozenset(
    {
        "-comment", "-doctype", "script", "style", "template", "noscript", "head",
        "title", "meta", "link", "base", "br", "wbr",
    }
)
# Embedded content: no lines (nothing inside is rendered from this HTML), but
# bids on or in it are still registered, as hidden elements.
_OPAQUE_TAGS = frozenset(
    {"iframe", "object", "embed", "canvas", "audio", "video", "source", "track", "param",
     "datalist"}
)

# Elements that do not break the line: their text joins their neighbours'
# text without a space when an accessible name is computed from content.
_INLINE_TAGS = frozenset(
    {
        "a", "abbr", "b", "bdi", "bdo", "cite", "code", "data", "dfn", "em", "font",
        "i", "kbd", "label", "mark", "q", "s", "samp", "small", "span", "strong",
        "sub", "sup", "time", "u", "var", "del", "ins",
    }
)

# Tag -> role for tags whose role does not depend on attributes or context.
_TAG_ROLES = {
    "nav": "navigation",
    "main": "main",
    "article": "article",
    "aside": "complementary",
    "form": "form",
    "ul": "list",
    "ol": "list",
    "menu": "list",
    "li": "listitem",
    "p": "paragraph",
    "table": "table",
    "thead": "rowgroup",
    "tbody": "rowgroup",
    "tfoot": "rowgroup",
    "tr": "row",
    "td": "cell",
    "dl": "list",
    "dt": "term",
    "dd": "definition",
    "blockquote": "blockquote",
    "figure": "figure",
    "hr": "separator",
    "fieldset": "group",
    "details": "group",
    "dialog": "dialog",
    "label": "LabelText",
    "progress": "progressbar",
    "meter": "meter",
    "output": "status",
    "search": "search",
    "h1": "heading",
    "h2": "heading",
    "h3": "heading",
    "h4": "heading",
    "h5": "heading",
    "h6": "heading",
}

# Roles whose accessible name comes from their content (when no aria-label).
_NAME_FROM_CONTENT = frozenset(
    {
        "link", "button", "heading", "columnheader", "rowheader", "option", "tab",
        "menuitem", "menuitemcheckbox", "menuitemradio", "treeitem", "switch",
        "tooltip", "DisclosureTriangle", "checkbox", "radio",
    }
)

# Values accepted in an explicit role="..." attribute (ARIA 1.2); anything
# else is ignored, like browsers do.  "img" prints as Chromium's "image".
_ARIA_ROLES = frozenset(
    """alert alertdialog application article banner blockquote button caption cell
    checkbox code columnheader combobox complementary contentinfo definition deletion
    dialog directory document emphasis feed figure form generic grid gridcell group
    heading img image insertion link list listbox listitem log main marquee math menu
    menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option
    paragraph presentation progressbar radio radiogroup region row rowgroup rowheader
    scrollbar search searchbox separator slider spinbutton status strong subscript
    superscript switch tab table tablist tabpanel term textbox time timer toolbar
    tooltip tree treegrid treeitem""".split()
)

_TEXT_INPUTS = {
    "text": "textbox",
    "email": "textbox",
    "password": "textbox",
    "tel": "textbox",
    "url": "textbox",
    "search": "searchbox",
    "number": "spinbutton",
    "range": "slider",
}
_BUTTON_INPUTS = frozenset({"submit", "reset", "button", "image", "file"})
_DEFAULT_BUTTON_LABEL = {"submit": "Submit", "reset": "Reset", "image": "Submit"}
_CONTROL_TAGS = frozenset({"input", "select", "textarea", "button"})

# Record kinds: how a line reacts to the overlays of Page.axtree.
_K_TEXT = 0  # StaticText
_K_PLAIN = 1  # element line; only `focused` can change it
_K_FIELD = 2  # textbox-like: `values` replaces value=
_K_CHECK = 3  # checkbox/radio: `checked` replaces checked=
_K_SELECT = 4  # combobox/listbox: `values` picks the option
_K_OPTION = 5  # option of a select: follows its select's overlay

# Record layout.  One plain list per AX line, appended in document order
# (lists are several times cheaper to create than objects, and the walk
# creates thousands of them on a big page).  Text records stop at _R_NAME
# (the compiled walk makes a text record the str alone, its depth and parent
# kept aside: see simweb/_axwalk.pyx).  A Page keeps, frozen, only the records
# an overlay can re-format (see _format_lines).
_R_KIND, _R_DEPTH, _R_PARENT, _R_BID, _R_ROLE, _R_NAME = 0, 1, 2, 3, 4, 5
# value shown (None: no value=), property strings split around the dynamic
# part: PRE (disabled) | focused | POST1 (hasPopup, required) | DYN (checked
# or selected) | POST2 (expanded, pressed, multiselectable, url)
_R_VALUE, _R_PRE, _R_POST1, _R_DYN, _R_POST2 = 6, 7, 8, 9, 10
_R_EXTRA = 11  # kind-specific data for re-formatting
_R_HEAD = 12  # "<tabs>[bid] role 'name'", set when the lines are built
_R_LINE = 13  # index of the record's line, set when the lines are built

_TABS = ["\t" * i for i in range(64)]

#: Whether parse_page freezes its line records into tuples (benchmarks/bench_gc.py turns
#: it off to measure what that saves the garbage collector).
FREEZE_RECORDS = True


def _tabs(depth: int) -> str:
    return _TABS[depth] if depth < 64 else "\t" * depth


def _collapse(text: str) -> str:
    # str.split() also splits on NBSP and other Unicode spaces, which
    # Chromium keeps; agents read 'Qty: 2' more easily than 'Qty:\xa02'.
    return " ".join(text.split())


def _hidden(tag: str, attrs: dict[str, str | None]) -> bool:
    """Whether the element (and so its subtree) is not rendered / not exposed."""
    if "hidden" in attrs:
        return True
    ah = attrs.get("aria-hidden")
    if ah is not None and ah.strip().lower() == "true":
        return True
    style = attrs.get("style")
    if style:
        s = style.replace(" ", "").lower()
        if "display:none" in s or "visibility:hidden" in s:
            return True
    if tag == "dialog" and "open" not in attrs:
        return True
    if tag == "input":
        t = attrs.get("type")
        if t is not None and t.strip().lower() == "hidden":
            return True
    return False


def _explicit_role(attrs: dict[str, str | None]) -> str | None:
    """The first valid token of role="..." ('generic' for presentation/none)."""
    raw = attrs.get("role")
    if not raw:
        return None
    for token in raw.split():
        token = token.lower()
        if token in _ARIA_ROLES:
            if token in ("presentation", "none"):
                return "generic"
            return "image" if token == "img" else token
    return None


def _href(tag: str, attrs: dict[str, str | None]) -> str | None:
    """The href of an <a> ('' for a bare attribute, which lexbor reports as None)."""
    if tag != "a" or "href" not in attrs:
        return None
    return attrs["href"] or ""


def _attr_str(attrs: dict[str, str | None]) -> dict[str, str]:
    return {k: ("" if v is None else v) for k, v in attrs.items()}


def _tristate(v: str | None) -> str:
    v = (v or "").strip().lower()
    return v if v in ("true", "false", "mixed") else "false"


def _described(attrs: dict[str, str | None] | None) -> str:
    """A form control's ``describedby`` property: Chromium gives the ``aria-describedby``
    attribute as written (an idref list), and BrowserGym prints it after the others."""
    d = attrs.get("aria-describedby") if attrs else None
    return f", describedby={d!r}" if d else ""


#: Roles Chromium makes live regions of, with their defaults (aria-live, aria-atomic).
_LIVE_ROLES: dict[str, tuple[str, bool]] = {"alert": ("assertive", True), "status": ("polite", True),
                                            "log": ("polite", False), "marquee": ("off", False),
                                            "timer": ("off", False)}


def _live(role: str, attrs: dict[str, str | None] | None) -> str:
    """A live region's properties, as Chromium gives them and BrowserGym prints them
    first: ``live`` (aria-live as written, else the role's), ``atomic`` (aria-atomic, else
    the role's) and ``relevant`` (aria-relevant as written, else 'additions text'); none
    where the region is off. Only the region's own line has them, not its descendants."""
    live, atomic = _LIVE_ROLES.get(role, ("", False))
    relevant: str | None = None
    if attrs:
        v = attrs.get("aria-live")
        if v:
            live = v
        a = attrs.get("aria-atomic")
        if a:
            atomic = a.lower() == "true"
        relevant = attrs.get("aria-relevant")
    if not live or live == "off":
        return ""
    return f", live={live!r}" + (", atomic" if atomic else "") + f", relevant={relevant or 'additions text'!r}"


def _aria_props(attrs: dict[str, str | None]) -> tuple[str, str, str]:
    """(pre, post1, post2) property strings from ARIA state attributes."""
    pre = ", disabled=True" if attrs.get("aria-disabled") == "true" else ""
    post1 = ""
    hp = attrs.get("aria-haspopup")
    if hp:
        hp = hp.strip().lower()
        if hp and hp != "false":
            post1 = f", hasPopup={'menu' if hp == 'true' else hp!r}"
            if hp == "true":
                post1 = ", hasPopup='menu'"
    if attrs.get("aria-required") == "true":
        post1 += ", required"
    post2 = ""
    ex = attrs.get("aria-expanded")
    if ex == "true" or ex == "false":
        post2 = f", expanded={ex == 'true'}"
    pr = attrs.get("aria-pressed")
    if pr == "true" or pr == "false" or pr == "mixed":
        post2 += f", pressed={pr!r}"
    return pre, post1, post2


class _Pending:
    """Mutable per-element data gathered during the walk; becomes an Element.

    Deliberately a plain class with class-level defaults: the walk creates
    one per bid, and setting only the fields that differ keeps that cheap.
    """

    name = ""
    form: int | None = None
    form_attr: str | None = None  # form="..." (resolved after the walk)
    input_type: str | None = None
    field_name: str | None = None
    value: str | None = None
    checked = False
    options: tuple[tuple[str, str, bool], ...] = ()
    href: str | None = None
    disabled = False
    multiple = False
    rec: list | tuple | None = None  # the AX line record, if any (a tuple once frozen)
    label: list[str] | None = None  # text pieces of a wrapping <label>
    labelable = False  # a control that <label> can name
    content: str | None = None  # <button> text, for its name
    element: Element | None = None

    def __init__(self, bid: str | None, tag: str, role: str, attrs: dict[str, str | None],
                 hidden: bool) -> None:
        self.bid = bid
        self.tag = tag
        self.role = role
        self.attrs = attrs
        self.hidden = hidden

    def build(self) -> Element:
        el = self.element
        if el is None:
            el = self.element = Element(
                self.bid, self.tag, self.role, self.name, _attr_str(self.attrs),
                self.form, self.input_type, self.field_name, self.value, self.checked,
                self.options, self.href, self.disabled, self.multiple, self.hidden,
            )
        return el


class _Ctx:
    """Walk context that changes rarely (replaced when it does, never copied per node)."""

    __slots__ = ("form", "label", "in_section", "fs_disabled")

    def __init__(self, form: int | None = None, label: list | None = None,
                 in_section: bool = False, fs_disabled: bool = False) -> None:
        self.form = form  # index of the enclosing <form>
        self.label = label  # [pieces, used] of the innermost wrapping <label>
        self.in_section = in_section  # inside article/aside/main/nav/section
        self.fs_disabled = fs_disabled  # inside <fieldset disabled>

    def with_form(self, form: int) -> _Ctx:
        return _Ctx(form, self.label, self.in_section, self.fs_disabled)

    def with_label(self, label: list | None) -> _Ctx:
        return _Ctx(self.form, label, self.in_section, self.fs_disabled)

    def with_section(self) -> _Ctx:
        return self if self.in_section else _Ctx(self.form, self.label, True, self.fs_disabled)

    def with_fs_disabled(self) -> _Ctx:
        return _Ctx(self.form, self.label, self.in_section, True)


_PendingEntry = _Pending | tuple | Element


class _ElementMap(Mapping[str, Element]):
    """Read-only ``bid -> Element`` mapping that builds Elements on first access.

    Building every Element up front would cost about as much as the rest of
    the parse on a large page, while a step typically looks up one or two.
    """

    __slots__ = ("_pending",)

    def __init__(self, pending: dict[str, _PendingEntry]) -> None:
        # Values: _Pending, a (tag, attrs, role, name, disabled) tuple for a
        # plain element with a line, or the Element once built.
        self._pending = pending

    def __getitem__(self, bid: str) -> Element:
        v = self._pending[bid]
        if isinstance(v, Element):
            return v
        if isinstance(v, tuple):
            tag, attrs, role, name, disabled = v
            el = Element(bid, tag, role, name, _attr_str(attrs), href=_href(tag, attrs), disabled=disabled)
        else:
            el = v.build()
        self._pending[bid] = el
        return el

    def __contains__(self, bid: object) -> bool:
        return bid in self._pending

    def __iter__(self) -> Iterator[str]:
        return iter(self._pending)

    def __len__(self) -> int:
        return len(self._pending)

    def __repr__(self) -> str:
        return f"<Page.elements: {len(self._pending)} bids>"


class Page:
    """A parsed page: title, addressable elements, forms, and the AX tree.

    Create it with :func:`parse_page`.  A Page is read-only and may be cached
    and shared (e.g. keyed by the HTML) as long as callers do not mutate what
    it returns.
    """

    __slots__ = (
        "title", "_elements", "_forms_raw", "_controls", "_forms", "_lines",
        "_recs", "_bid_line", "_default_text", "_selects", "_groups", "_form_cache",
    )

    def __init__(self) -> None:
        self.title: str = ""
        self._elements = _ElementMap({})
        self._forms_raw: list[tuple[str | None, str, str]] = []
        self._controls: list[_Pending] = []
        self._forms: list[Form] | None = None
        self._form_cache: dict[int, Form] = {}   # forms built one by one (see form())
        self._lines: list[str] = []
        self._recs: list[tuple] = []  # records of the lines an overlay can change, frozen
        self._bid_line: dict[str, int] = {}  # bid -> index of its record in _recs
        self._default_text: str | None = None
        # select bid -> [(option record, option value, option label), ...]
        self._selects: dict[str, list[tuple[tuple, str, str]]] = {}
        # radio bid -> bids of its radio group (itself included)
        self._groups: dict[str, tuple[str, ...]] = {}

    @property
    def elements(self) -> Mapping[str, Element]:
        """Every element that has a bid (any tag, hidden ones included), by bid."""
        return self._elements

    @property
    def forms(self) -> list[Form]:
        """The page's forms in document order (``Element.form`` indexes this)."""
        if self._forms is None:
            if self._form_cache:
                self._forms = [self.form(i) for i in range(len(self._forms_raw))]
            else:
                forms = [Form(i, bid, action, method, [])
                         for i, (bid, action, method) in enumerate(self._forms_raw)]
                for p in self._controls:
                    if p.form is not None:
                        forms[p.form].controls.append(p.build())
                self._forms = forms
        return self._forms

    def form(self, index: int) -> Form:
        """``forms[index]``, building only that form's controls (a forum thread has dozens
        of forms; a submit reads one)."""
        if self._forms is not None:
            return self._forms[index]
        built = self._form_cache.get(index)
        if built is None:
            bid, action, method = self._forms_raw[index]
            built = Form(index, bid, action, method, [p.build() for p in self._controls if p.form == index])
            self._form_cache[index] = built
        return built

    def axtree(
        self,
        values: Mapping[str, str | Sequence[str]] | None = None,
        checked: Mapping[str, bool] | None = None,
        focused: str | None = None,
    ) -> str:
        """Render the flattened AX tree with the browser's UI state applied.

        ``values`` maps a bid to the text currently in that textbox /
        searchbox / spinbutton / textarea, or to the chosen option *value* of
        a select (for a ``multiple`` select: a sequence of values, or one
        string of values joined by ``"\x1f"``; a value matching no option
        leaves a select with no selection).  ``checked``
        maps a checkbox/radio bid to its state; checking one radio shows the
        other radios of its group (those without their own entry) unchecked.
        ``focused`` is the bid of the focused element: its line gets
        ``, focused`` and the root line loses it.  Bids that are unknown or do
        not fit the overlay are ignored.  The HTML defaults show otherwise.
        """
        if not values and not checked and focused is None:
            if self._default_text is None:
                self._default_text = "\n".join(self._lines)
            return self._default_text
        values = values or {}
        checked = checked or {}
        recs = self._recs
        bid_line = self._bid_line
        dirty: dict[int, Sequence[Any]] = {}  # line index -> record to re-format
        if focused is not None:
            r = bid_line.get(focused)
            if r is not None:
                dirty[recs[r][_R_LINE]] = recs[r]
        for bid in values:
            r = bid_line.get(bid)
            if r is None:
                continue
            rec = recs[r]
            kind = rec[_R_KIND]
            if kind == _K_FIELD:
                dirty[rec[_R_LINE]] = rec
            elif kind == _K_SELECT:
                dirty[rec[_R_LINE]] = rec
                for orec, _, _ in self._selects[bid]:
                    dirty[orec[_R_LINE]] = orec
        groups = self._groups
        for bid in checked:
            for member in groups.get(bid, (bid,)):
                r = bid_line.get(member)
                if r is not None and recs[r][_R_KIND] == _K_CHECK:
                    dirty[recs[r][_R_LINE]] = recs[r]
        lines = self._lines.copy()
        if focused is not None:
            lines[0] = lines[0][: -len(", focused")]
        chosen: dict[str, set[int] | None] = {}   # a select's chosen options, once per select
        for i, drec in dirty.items():
            lines[i] = self._format(drec, values, checked, focused, chosen)
        return "\n".join(lines)

    # -- line formatting ---------------------------------------------------

    def _selection(self, bid: str, values: Mapping[str, Any], multiple: bool,
                   chosen: dict[str, set[int] | None]) -> set[int] | None:
        """Positions of the options chosen by the overlay of select `bid` (None: no overlay),
        remembered in `chosen`: each option line of a select asks again, and a select of
        hundreds of options would otherwise be scanned once per option."""
        if bid in chosen:
            return chosen[bid]
        sel = chosen[bid] = self._chosen_positions(bid, values, multiple)
        return sel

    def _chosen_positions(self, bid: str, values: Mapping[str, Any], multiple: bool) -> set[int] | None:
        if bid not in values:
            return None
        want = values[bid]
        opts = self._selects[bid]
        if multiple and isinstance(want, str):
            want = want.split("\x1f")
        if not multiple or isinstance(want, str):
            if not isinstance(want, str):
                want = next(iter(want), None)
            # Setting select.value picks the first option with that value.
            for pos, (_, v, _) in enumerate(opts):
                if v == want:
                    return {pos}
            return set()
        wanted = set(want)
        return {pos for pos, (_, v, _) in enumerate(opts) if v in wanted}

    def _format(self, rec: Sequence[Any], values: Mapping[str, Any], checked: Mapping[str, bool],
                focused: str | None, chosen: dict[str, set[int] | None]) -> str:
        kind = rec[_R_KIND]
        bid = rec[_R_BID]
        value = rec[_R_VALUE]
        dyn = rec[_R_DYN]
        if kind == _K_FIELD:
            if bid in values:
                value = values[bid]
                if not isinstance(value, str):
                    value = " ".join(map(str, value))
                if rec[_R_EXTRA]:  # password: Chromium exposes bullets only
                    value = "•" * len(value)
        elif kind == _K_CHECK:
            if bid in checked:
                dyn = ", checked='true'" if checked[bid] else ", checked='false'"
            elif any(checked.get(o) for o in self._groups.get(bid, ()) if o != bid):
                dyn = ", checked='false'"
        elif kind == _K_SELECT:
            multiple, listbox = rec[_R_EXTRA]
            sel = self._selection(bid, values, multiple, chosen)
            if sel is not None and not listbox:
                value = self._selects[bid][min(sel)][2] if sel else None
        elif kind == _K_OPTION:
            select_bid, pos, multiple = rec[_R_EXTRA]
            if select_bid is not None:
                sel = self._selection(select_bid, values, multiple, chosen)
                if sel is not None:
                    dyn = ", selected=True" if pos in sel else ", selected=False"
        vs = f" value={value!r}" if value else ""
        foc = ", focused" if bid is not None and bid == focused else ""
        return f"{rec[_R_HEAD]}{vs}{rec[_R_PRE]}{foc}{rec[_R_POST1]}{dyn}{rec[_R_POST2]}"


# --------------------------------------------------------------------------
# The walk
# --------------------------------------------------------------------------


def _new_rec(kind: int, depth: int, parent: int, bid: str | None, role: str) -> list:
    return [kind, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]


# Tags whose implicit role depends on attributes or context.
_CONTEXT_ROLE_TAGS = frozenset({"a", "img", "svg", "th", "header", "footer", "section", "div"})
_CHECKABLE_ROLES = frozenset({"checkbox", "radio", "switch", "menuitemcheckbox", "menuitemradio"})

# Containers that never have a line of their own unless some attribute says
# otherwise (see _SPECIAL_ATTRS); the walk skips them without a visit().
_PLAIN_GENERIC = frozenset(
    """div span b i strong em small u s mark code abbr cite sub sup time font center
    bdi bdo big data dfn kbd q samp var ins del pre legend caption figcaption
    address hgroup tt strike nobr""".split()
)
_SPECIAL_ATTRS = frozenset(
    {"bid", "role", "aria-label", "aria-labelledby", "hidden", "aria-hidden", "style", "aria-live"})

# Tags whose role never depends on context, handled by visit_simple() when
# none of _SLOW_ATTRS is present (an <a> also needs its href).
_FAST_ROLES = {
    t: r for t, r in _TAG_ROLES.items()
    if t not in ("form", "fieldset", "details", "dialog", "label", "nav", "main", "article",
                 "aside", "table", "output")   # (output: a live region, see _live)
}
_FAST_ROLES["a"] = "link"
_SLOW_ATTRS = frozenset(
    """role aria-label aria-labelledby aria-hidden hidden style title aria-disabled
    aria-haspopup aria-required aria-expanded aria-pressed aria-selected aria-checked aria-live
    """.split()
)

# Attributes that can name a <button> other than its content.
_BUTTON_NAME_ATTRS = frozenset({"aria-label", "aria-labelledby", "title"})

# Attributes that may hide an element / that carry ARIA states we print.
_HIDING_ATTRS = frozenset({"hidden", "aria-hidden", "style"})
_STATE_ATTRS = frozenset(
    {"aria-disabled", "aria-haspopup", "aria-required", "aria-expanded", "aria-pressed"})


class _Builder:
    """One DOM walk producing AX records, pending elements and forms."""

    def __init__(self, tree: LexborHTMLParser) -> None:
        self.recs: list[Any] = []   # line records: lists while built, tuples once final
        self.pending: dict[str, _PendingEntry] = {}
        self.controls: list[_Pending] = []
        self.forms: list[tuple[str | None, str, str]] = []
        self.form_ids: dict[str, int] = {}
        self.label_for: dict[str, list[list[str]]] = {}  # id -> text pieces per label
        self.tree = tree
        self.ids: dict[str, LexborNode] | None = None  # built on first aria-labelledby
        # (pending or None, record or None, attrs): names that need the whole document
        self.need_names: list[tuple[_Pending | None, list | None, dict]] = []
        # select bid -> [(index of an option's record, its value, its label), ...]
        self.selects: list[tuple[str, list[tuple[Any, str, str]]]] = []   # an index, then the record
        self.radio_groups: list[tuple[str, ...]] = []

    # Registration ----------------------------------------------------------------

    def register(self, bid: str | None, tag: str, role: str, attrs: dict[str, str | None],
                 hidden: bool) -> _Pending:
        p = _Pending(bid, tag, role, attrs, hidden)
        if bid is not None:
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = p
        return p

    def duplicate(self, bid: str, tag: str) -> NoReturn:
        first = self.pending[bid]
        first_tag = first[0] if type(first) is tuple else first.tag  # type: ignore[union-attr]
        raise DuplicateBidError(f"duplicate bid {bid!r} (on <{first_tag}> and on <{tag}>)")

    def open_form(self, bid: str | None, attrs: dict[str, str | None]) -> int:
        idx = len(self.forms)
        method = (attrs.get("method") or "get").strip().lower()
        self.forms.append((bid, attrs.get("action") or "", "post" if method == "post" else "get"))
        fid = attrs.get("id")
        if fid and fid not in self.form_ids:
            self.form_ids[fid] = idx
        return idx

    # Visible content ---------------------------------------------------------------

    def walk(self, node: LexborNode, depth: int, parent: int, acc: list[str] | None,
             ctx: _Ctx) -> None:
        """Visit `node`'s children; their lines go at `depth` under record `parent`.

        `acc` collects raw text while an accessible name is being computed
        from content (None otherwise).
        """
        append = self.recs.append
        visit = self.visit
        visit_simple = self.visit_simple
        walk = self.walk
        # Whitespace-only text matters only while a name is being assembled
        # (it separates inline words); otherwise let lexbor skip it.
        for child in node.iter(include_text=True, skip_empty=acc is None):
            tag = child.tag
            if tag == "-text":
                text = child.text_content or ""  # never None for a text node; typed Optional
                if acc is not None:
                    acc.append(text)
                s = " ".join(text.split())
                if s:
                    # Text records never change: a tuple from the start (see _format_lines).
                    append((_K_TEXT, depth, parent, None, "StaticText", s))
            elif tag not in _SKIP_TAGS and tag is not None and tag[0] != "-":
                attrs = child.attributes
                fast_role = _FAST_ROLES.get(tag)
                if fast_role is not None and (not attrs or _SLOW_ATTRS.isdisjoint(attrs)) \
                        and (tag != "a" or "href" in attrs):
                    visit_simple(child, tag, attrs, fast_role, depth, parent, acc, ctx)
                elif tag in _PLAIN_GENERIC and (not attrs or _SPECIAL_ATTRS.isdisjoint(attrs)):
                    # Fast path for the bulk of a page: a plain container
                    # without a line; its children are promoted to its depth.
                    if acc is None:
                        walk(child, depth, parent, None, ctx)
                    elif tag in _INLINE_TAGS:
                        walk(child, depth, parent, acc, ctx)
                    else:
                        acc.append(" ")
                        walk(child, depth, parent, acc, ctx)
                        acc.append(" ")
                else:
                    visit(child, tag, attrs, depth, parent, acc, ctx)
            elif tag == "br" and acc is not None:
                acc.append(" ")  # a line break separates words in a name

    def visit_simple(self, node: LexborNode, tag: str, attrs: dict[str, str | None],
                     role: str, depth: int, parent: int, acc: list[str] | None,
                     ctx: _Ctx) -> None:
        """visit() for the common case: a context-free tag without attributes
        that could change its role, name, properties or visibility."""
        recs = self.recs
        idx = len(recs)
        bid = attrs.get("bid") if attrs else None
        rec = [_K_PLAIN, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]
        recs.append(rec)
        if bid is not None:
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = (tag, attrs, rec)
        block = tag != "a"
        if role in _NAME_FROM_CONTENT:
            if not block:
                rec[_R_POST2] = f", url={_href(tag, attrs)!r}"
            mine: list[str] = []
            self.walk(node, depth + 1, idx, mine, ctx)
            rec[_R_NAME] = " ".join("".join(mine).split())
            if acc is not None:
                if block:
                    acc.append(" ")
                    acc.extend(mine)
                    acc.append(" ")
                else:
                    acc.extend(mine)
        elif acc is not None:
            acc.append(" ")
            self.walk(node, depth + 1, idx, acc, ctx)
            acc.append(" ")
        else:
            self.walk(node, depth + 1, idx, None, ctx)

    def visit(self, node: LexborNode, tag: str, attrs: dict[str, str | None], depth: int,
              parent: int, acc: list[str] | None, ctx: _Ctx) -> None:
        """One visible-so-far element: its line (if any), then its subtree."""
        if tag in _OPAQUE_TAGS:
            self.hidden_element(node, tag, attrs, attrs.get("bid") if attrs else None, ctx)
            return
        if attrs:
            bid = attrs.get("bid")
            # Cheap pre-check: most elements carry none of the attributes
            # that can hide them.
            if (tag == "input" or tag == "dialog" or not _HIDING_ATTRS.isdisjoint(attrs)) \
                    and _hidden(tag, attrs):
                self.hidden_element(node, tag, attrs, bid, ctx)
                return
        else:
            bid = None
            if tag == "dialog":  # a <dialog> without `open` is not rendered
                self.hidden_element(node, tag, attrs, bid, ctx)
                return

        if tag in _CONTROL_TAGS:
            self.visit_control(node, tag, attrs, bid, depth, parent, acc, ctx)
            return

        expanded: bool | None = None
        role = _explicit_role(attrs) if attrs and "role" in attrs else None
        if role is None:
            role = _TAG_ROLES.get(tag)
            if role is None and tag in _CONTEXT_ROLE_TAGS:
                role = self.implicit_role(tag, attrs, ctx)
        elif role == "generic":
            role = None
        if tag == "summary":
            par = node.parent
            if par is not None and par.tag == "details":
                expanded = "open" in par.attributes
                role = role or "DisclosureTriangle"

        if role is None and attrs and attrs.get("aria-live") and _live("generic", attrs):
            role = "generic"   # a live region: Chromium gives it properties, so BrowserGym a line
        if role is None:
            self.visit_generic(node, tag, attrs, bid, depth, parent, acc, ctx)
            return

        # An element with a line of its own.
        recs = self.recs
        idx = len(recs)
        rec = [_K_PLAIN, depth, parent, bid, role, "", None, "", "", "", "", None, None, -1]
        recs.append(rec)
        if bid is not None:
            # Element built on demand from (tag, attrs, rec): see _ElementMap.
            if bid in self.pending:
                self.duplicate(bid, tag)
            self.pending[bid] = (tag, attrs, rec)
        aria = attrs.get("aria-label") if attrs else None
        if aria is not None:
            aria = _collapse(aria)

        c = ctx
        url = ""
        post2 = ""
        if attrs:
            if not _STATE_ATTRS.isdisjoint(attrs):
                rec[_R_PRE], rec[_R_POST1], post2 = _aria_props(attrs)
            if role in _CHECKABLE_ROLES:
                rec[_R_DYN] = f", checked={_tristate(attrs.get('aria-checked'))!r}"
            elif "aria-selected" in attrs:
                rec[_R_DYN] = f", selected={attrs['aria-selected'] == 'true'}"
        elif role in _CHECKABLE_ROLES:
            rec[_R_DYN] = ", checked='false'"
        if role in _LIVE_ROLES or (attrs and "aria-live" in attrs):
            rec[_R_PRE] = _live(role, attrs) + str(rec[_R_PRE])
        if expanded is not None:
            post2 = f", expanded={expanded}" + post2
        if tag == "form":
            c = ctx.with_form(self.open_form(bid, attrs))
        elif tag in ("nav", "main", "article", "aside", "section"):
            c = ctx.with_section()
        elif tag == "fieldset":
            if "disabled" in attrs:
                c = ctx.with_fs_disabled()
        elif tag == "a" and role == "link":
            url = f", url={_href(tag, attrs)!r}"
        rec[_R_POST2] = post2 + url

        if tag == "img" or tag == "svg":
            name = aria or _collapse(attrs.get("alt") or attrs.get("title") or "") if attrs else ""
            if tag == "svg":
                if not name:
                    t = node.css_first("title")
                    name = _collapse(t.text()) if t is not None else ""
                # Icon internals are not exposed, but may hold bids.
                self.walk_hidden(node, c)
            rec[_R_NAME] = name
            if acc is not None and name:
                acc.append(" " + name + " ")
            return

        block = tag not in _INLINE_TAGS
        if role in _NAME_FROM_CONTENT or role == "LabelText":
            mine: list[str] | None = []
            child_acc = mine
        else:
            mine = None
            # An aria-label replaces this subtree's text in an outer name.
            child_acc = None if aria else acc
        if tag == "label":
            target = attrs.get("for") if attrs else None
            if target:
                # A label whose role does not take its name from content (role=region...)
                # still labels its control: with its text (it used to crash resolve()).
                self.label_for.setdefault(target, []).append(mine if mine is not None else [node.text()])
            else:
                c = c.with_label([mine, False])
        if child_acc is not None and block:
            child_acc.append(" ")
        if tag == "details" and "open" not in attrs:
            self.walk_closed_details(node, depth + 1, idx, c)
        else:
            self.walk(node, depth + 1, idx, child_acc, c)
        if child_acc is not None and block:
            child_acc.append(" ")

        # The name, now that the subtree's text is known.
        name = aria or ""
        if not name:
            if role == "LabelText":
                pass  # Chromium names label lines '' and shows their text below
            elif mine is not None:
                name = _collapse("".join(mine))
            elif tag == "fieldset" or tag == "table":
                want = "legend" if tag == "fieldset" else "caption"
                for child in node.iter():
                    if child.tag == want:
                        name = _collapse(child.text())
                        break
            if not name and attrs and role not in ("LabelText", "paragraph"):
                title = attrs.get("title")
                if title:
                    name = _collapse(title)
        if attrs and attrs.get("aria-labelledby"):
            self.need_names.append((None, rec, attrs))
        rec[_R_NAME] = name
        if acc is not None:
            if aria:
                acc.append(" " + aria + " ")
            elif mine is not None:
                acc.extend(mine)

    def implicit_role(self, tag: str, attrs: dict[str, str | None], ctx: _Ctx) -> str | None:
        """Role from the tag (None: a generic container without a line)."""
        role = _TAG_ROLES.get(tag)
        if role is not None:
            return role
        if tag == "a":
            return "link" if "href" in attrs else None
        if tag == "img":
            if "alt" in attrs and not (attrs["alt"] or "").strip() \
                    and not attrs.get("aria-label"):
                return None  # alt="" marks a decorative image: not exposed
            return "image"
        if tag == "svg":
            return "image"
        if tag == "th":
            return "rowheader" if (attrs.get("scope") or "").lower() == "row" else "columnheader"
        if tag == "header":
            return None if ctx.in_section else "banner"
        if tag == "footer":
            return None if ctx.in_section else "contentinfo"
        if tag == "section" or tag == "div":
            if attrs and (attrs.get("aria-label") or attrs.get("aria-labelledby")):
                return "region"
        return None

    def visit_generic(self, node: LexborNode, tag: str, attrs: dict[str, str | None],
                      bid: str | None, depth: int, parent: int, acc: list[str] | None,
                      ctx: _Ctx) -> None:
        """A container without a line: its children are promoted to its depth."""
        aria = attrs.get("aria-label") if attrs else None
        if bid is not None:
            p = self.register(bid, tag, "generic", attrs, False)
            if aria:
                p.name = _collapse(aria)
        c = ctx
        if tag == "form":
            c = ctx.with_form(self.open_form(bid, attrs))
        elif tag == "section":
            c = ctx.with_section()
        elif tag == "fieldset" and "disabled" in attrs:
            c = ctx.with_fs_disabled()
        elif tag == "label":  # role=presentation on a label: still labels
            target = attrs.get("for")
            if target:
                self.label_for.setdefault(target, []).append([node.text()])
            else:
                c = ctx.with_label([[node.text()], False])
        if acc is None:
            self.walk(node, depth, parent, None, c)
        elif aria and aria.strip():
            acc.append(" " + aria + " ")
            self.walk(node, depth, parent, None, c)
        elif tag in _INLINE_TAGS:
            self.walk(node, depth, parent, acc, c)
        else:
            acc.append(" ")
            self.walk(node, depth, parent, acc, c)
            acc.append(" ")

    def walk_closed_details(self, node: LexborNode, depth: int, parent: int, ctx: _Ctx) -> None:
        """A closed <details> renders its first <summary> only."""
        seen_summary = False
        for child in node.iter():
            tag = child.tag
            if tag in _SKIP_TAGS or tag is None or tag[0] == "-":
                continue
            attrs = child.attributes
            if tag == "summary" and not seen_summary:
                seen_summary = True
                self.visit(child, tag, attrs, depth, parent, None, ctx)
            else:
                self.hidden_element(child, tag, attrs, attrs.get("bid"), ctx)

    # Hidden content ----------------------------------------------------------------

    def walk_hidden(self, node: LexborNode, ctx: _Ctx) -> None:
        """Register the elements, controls, forms and labels of a subtree without lines."""
        for child in node.iter():
            tag = child.tag
            if tag in _SKIP_TAGS or tag is None or tag[0] == "-":
                continue
            attrs = child.attributes
            self.hidden_element(child, tag, attrs, attrs.get("bid") if attrs else None, ctx)

    def hidden_element(self, node: LexborNode, tag: str, attrs: dict[str, str | None],
                       bid: str | None, ctx: _Ctx) -> None:
        if tag in _CONTROL_TAGS:
            # Hidden controls still take part in form submission.
            p = self.register(bid, tag, "generic", attrs, True)
            self.control(node, tag, attrs, p, ctx)
            p.role = self.control_role(tag, attrs, p)
            if tag == "button":
                p.content = node.text()
            elif tag == "select":
                self.options(node, p, None, 0)
            if p.input_type != "hidden":  # <input type=hidden> has no name to resolve
                self.need_names.append((p, None, attrs))
            return
        c = ctx
        if tag == "form":
            c = ctx.with_form(self.open_form(bid, attrs))
        elif tag == "label":
            target = attrs.get("for")
            if target:
                self.label_for.setdefault(target, []).append([node.text()])
            else:
                c = ctx.with_label([[node.text()], False])
        elif tag == "fieldset" and "disabled" in attrs:
            c = ctx.with_fs_disabled()
        if bid is not None:
            role = _explicit_role(attrs) if "role" in attrs else None
            if role is None:
                role = self.implicit_role(tag, attrs, ctx) or "generic"
            p = self.register(bid, tag, role, attrs, True)
            if tag == "a":
                p.href = _href(tag, attrs)
            aria = attrs.get("aria-label")
            if aria and aria.strip():
                p.name = _collapse(aria)
            elif role in _NAME_FROM_CONTENT:
                p.name = _collapse(node.text())
            elif role == "image":
                p.name = _collapse(attrs.get("alt") or "")
        self.walk_hidden(node, c)

    # Form controls ---------------------------------------------------------------

    def control_role(self, tag: str, attrs: dict[str, str | None], p: _Pending) -> str:
        r = _explicit_role(attrs) if attrs and "role" in attrs else None
        if r is not None and r != "generic":
            return r
        if tag == "select":
            return "listbox" if p.multiple or _select_size(attrs) > 1 else "combobox"
        if tag == "textarea":
            return "textbox"
        if tag == "button":
            return "button"
        t = p.input_type
        role = _TEXT_INPUTS.get(t)  # type: ignore[arg-type]
        if role is not None:
            return role
        if t == "checkbox" or t == "radio":
            return t
        if t in _BUTTON_INPUTS:
            return "button"
        if t == "hidden":
            return "generic"
        return "textbox"  # date, time, color, unknown types...

    def control(self, node: LexborNode, tag: str, attrs: dict[str, str | None], p: _Pending,
                ctx: _Ctx) -> None:
        """Fill the form-related fields of a control's pending element."""
        self.controls.append(p)
        if attrs and "form" in attrs:
            p.form_attr = attrs["form"] or ""
        else:
            p.form = ctx.form
        p.field_name = attrs.get("name") if attrs else None
        p.disabled = bool(attrs and "disabled" in attrs) or ctx.fs_disabled
        if tag == "input":
            t = (attrs.get("type") or "text").strip().lower() if attrs else "text"
            p.input_type = t or "text"
            v = attrs.get("value") if attrs else None
            if t == "checkbox" or t == "radio":
                p.value = "on" if not attrs or "value" not in attrs else (v or "")
                p.checked = "checked" in attrs
            else:
                p.value = v or ""
            p.labelable = t != "hidden"
        else:
            p.labelable = True
            if tag == "textarea":
                p.input_type = "textarea"
                p.value = node.text()
            elif tag == "select":
                p.input_type = "select"
                p.multiple = "multiple" in attrs
            else:  # button
                p.value = (attrs.get("value") or "") if attrs else ""
        lbl = ctx.label
        if lbl is not None and not lbl[1] and p.labelable:
            lbl[1] = True
            p.label = lbl[0]

    def visit_control(self, node: LexborNode, tag: str, attrs: dict[str, str | None],
                      bid: str | None, depth: int, parent: int, acc: list[str] | None,
                      ctx: _Ctx) -> None:
        p = self.register(bid, tag, "generic", attrs, False)
        self.control(node, tag, attrs, p, ctx)
        role = p.role = self.control_role(tag, attrs, p)
        recs = self.recs
        idx = len(recs)
        rec = _new_rec(_K_PLAIN, depth, parent, bid, role)
        recs.append(rec)
        p.rec = rec
        if attrs and not _STATE_ATTRS.isdisjoint(attrs):
            pre, post1, post2 = _aria_props(attrs)
        else:
            pre = post1 = post2 = ""
        if attrs and "required" in attrs and ", required" not in post1:
            post1 += ", required"
        if p.disabled:
            pre = ", disabled=True"
        rec[_R_PRE] = pre
        t = p.input_type
        if tag == "button":
            # Name from content; the button's text is also shown under it
            # (and dropped there again when the name contains it).
            mine: list[str] = []
            self.walk(node, depth + 1, idx, mine,
                      ctx if ctx.label is None else ctx.with_label(None))
            p.content = content = "".join(mine)
            if acc is not None:
                acc.extend(mine)
            if not attrs or _BUTTON_NAME_ATTRS.isdisjoint(attrs):
                # Named by its content alone: no need to wait for resolve().
                p.name = rec[_R_NAME] = " ".join(content.split())
                rec[_R_POST1] = post1
                rec[_R_POST2] = post2 + _described(attrs)
                return
        elif tag == "select":
            listbox = p.multiple or _select_size(attrs) > 1
            rec[_R_KIND] = _K_SELECT
            rec[_R_EXTRA] = (p.multiple, listbox)
            if not listbox:
                post1 = ", hasPopup='menu'" + post1
                post2 = ", expanded=False" + post2
            elif p.multiple:
                post2 += ", multiselectable=True"
            self.options(node, p, rec, depth + 1)
        elif t == "checkbox" or t == "radio":
            rec[_R_KIND] = _K_CHECK
            rec[_R_DYN] = ", checked='true'" if p.checked else ", checked='false'"
        elif role != "button":
            rec[_R_KIND] = _K_FIELD
            rec[_R_EXTRA] = t == "password"
            v = p.value
            if v and t == "password":
                v = "•" * len(v)
            rec[_R_VALUE] = v or None
        rec[_R_POST1] = post1
        rec[_R_POST2] = post2 + _described(attrs)
        self.need_names.append((p, rec, attrs))

    def options(self, node: LexborNode, p: _Pending, rec: list | None, depth: int) -> None:
        """Collect a select's options, and their lines when `rec` (the select's line) is given."""
        opts: list[tuple[str, str, bool, bool, str | None, dict]] = []
        for child in node.iter():
            tag = child.tag
            if tag == "option":
                _option_data(child, False, opts)
            elif tag == "optgroup":
                gdis = "disabled" in child.attributes
                for sub in child.iter():
                    if sub.tag == "option":
                        _option_data(sub, gdis, opts)
        listbox = p.multiple or _select_size(p.attrs) > 1
        # Default selectedness, per the HTML "selectedness setting algorithm".
        if p.multiple:
            sel = [o[2] for o in opts]
        else:
            sel = [False] * len(opts)
            last = -1
            for i, o in enumerate(opts):
                if o[2]:
                    last = i
            if last < 0 and not listbox:
                last = next((i for i, o in enumerate(opts) if not o[3]), -1)
            if last >= 0:
                sel[last] = True
        p.options = tuple((o[0], o[1], s) for o, s in zip(opts, sel))
        first = next((i for i, s in enumerate(sel) if s), -1)
        p.value = opts[first][0] if first >= 0 else None
        if rec is not None and not listbox and first >= 0:
            rec[_R_VALUE] = opts[first][1] or None
        hidden = rec is None
        option_recs = []
        for i, (value, label, _, disabled, obid, oattrs) in enumerate(opts):
            orec = None
            if rec is not None:
                orec = _new_rec(_K_OPTION, depth, -1, obid, "option")
                orec[_R_NAME] = label
                if disabled:
                    orec[_R_PRE] = ", disabled=True"
                orec[_R_DYN] = ", selected=True" if sel[i] else ", selected=False"
                orec[_R_EXTRA] = (p.bid, i, p.multiple)
                option_recs.append((len(self.recs), value, label))
                self.recs.append(orec)
            if obid is not None:
                op = self.register(obid, "option", "option", oattrs, hidden)
                op.name = label
                op.value = value
                op.disabled = disabled
                op.checked = sel[i]
                op.rec = orec
        if rec is not None and p.bid is not None:
            self.selects.append((p.bid, option_recs))

    # Post-walk resolution ----------------------------------------------------------

    def labelledby(self, ids: str) -> str:
        if self.ids is None:
            self.ids = {}
            for node in self.tree.css("[id]"):
                self.ids.setdefault(node.attributes.get("id") or "", node)
        parts = []
        for i in ids.split():
            n = self.ids.get(i)
            if n is not None:
                a = n.attributes.get("aria-label")
                parts.append(a if a else n.text())
        return _collapse(" ".join(parts))

    def resolve(self) -> None:
        """Names that need the whole document, form owners and radio groups."""
        label_text = {key: _collapse(" ".join("".join(pieces) for pieces in plist))
                      for key, plist in self.label_for.items()}
        for p, rec, attrs in self.need_names:
            # Precedence as in accname: aria-labelledby, aria-label, <label>,
            # then content (buttons), value, placeholder, title.
            name = self.labelledby(attrs["aria-labelledby"]) if attrs.get("aria-labelledby") else ""
            if p is None or p.tag not in _CONTROL_TAGS:
                if name and rec is not None:
                    rec[_R_NAME] = name
                    if p is not None:
                        p.name = name
                continue
            if not name:
                name = _collapse(attrs.get("aria-label") or "")
            if not name and p.labelable and p.tag != "button":
                parts = []
                if p.label is not None:
                    parts.append(_collapse("".join(p.label)))
                cid = attrs.get("id")
                if cid and cid in label_text:
                    parts.append(label_text[cid])
                name = " ".join(x for x in parts if x)
            if not name:
                t = p.input_type
                if p.tag == "button":
                    name = _collapse(p.content or "")
                elif t in _DEFAULT_BUTTON_LABEL or t == "button":
                    v = attrs.get("value")
                    if t == "image":
                        v = attrs.get("alt") or v
                    name = _collapse(v) if v else _DEFAULT_BUTTON_LABEL.get(t or "", "")
                elif attrs.get("placeholder"):
                    name = _collapse(attrs["placeholder"])
            if not name and attrs.get("title"):
                name = _collapse(attrs["title"])
            p.name = name
            if rec is not None:
                rec[_R_NAME] = name
        # Form owners of controls with form="id"; then radio groups, which
        # are per (form owner, name).
        form_ids = self.form_ids
        groups: dict[tuple[int | None, str], list[_Pending]] = {}
        for p in self.controls:
            if p.form_attr is not None:
                p.form = form_ids.get(p.form_attr)
            if p.input_type == "radio" and p.field_name:
                groups.setdefault((p.form, p.field_name), []).append(p)
        for members in groups.values():
            # Only the last default-checked radio of a group stays checked.
            checked = [m for m in members if m.checked]
            for m in checked[:-1]:
                m.checked = False
                if isinstance(m.rec, list):  # records are still mutable lists during the walk
                    m.rec[_R_DYN] = ", checked='false'"
            if len(members) > 1:
                bids = tuple(m.bid for m in members if m.bid is not None)
                if len(bids) > 1:
                    self.radio_groups.append(bids)


def _select_size(attrs: dict[str, str | None]) -> int:
    try:
        return int(attrs.get("size") or 0) if attrs else 0
    except ValueError:
        return 0


def _option_data(node: LexborNode, group_disabled: bool, out: list) -> None:
    attrs = node.attributes
    text = _collapse(node.text())
    label = attrs.get("label")
    label = _collapse(label) if label else text
    # A bare `value` attribute is an empty value, not a missing one.
    value = (attrs["value"] or "") if "value" in attrs else None
    out.append((text if value is None else value, label, "selected" in attrs,
                group_disabled or "disabled" in attrs, attrs.get("bid"), attrs))


def _title(tree: LexborHTMLParser, compiled: Any = None) -> str:
    head = tree.head
    if head is not None:
        if compiled is not None:
            title = compiled.head_title(head.mem_id)
            if title is not None:
                return title
        else:
            for child in head.iter():
                if child.tag == "title":
                    return _collapse(child.text())
    t = tree.css_first("title")  # a <title> outside <head> still titles the page
    return _collapse(t.text()) if t is not None else ""


def parse_page(html: str) -> Page:
    """Parse server-rendered HTML into a :class:`Page` (one DOM walk).

    Raises :class:`DuplicateBidError` when two elements share a ``bid``.
    Malformed HTML is repaired the way browsers do (lexbor implements the
    HTML5 parsing algorithm), so it never fails otherwise.

    The walk is the compiled one when :data:`COMPILED_WALK` is true, else the
    Python one; both give the same Page.
    """
    return _parse_page(html, _compiled_walk)


def _parse_page(html: str, compiled: Any) -> Page:
    """parse_page with a chosen walk: `compiled` is the simweb._axwalk module (its walk
    and line formatting), or None for the Python ones (tests and benchmarks compare the
    two through this). With the compiled walk, lexbor is fed the page's UTF-8 from its
    ``utf8`` (the bytes selectolax would make of the str, made faster for two-byte strings)."""
    tree = LexborHTMLParser(compiled.utf8(html) if compiled is not None else html)
    b = _Builder(tree)
    body = tree.body
    page = Page()
    page.title = _title(tree, compiled)
    if compiled is not None:
        texts = compiled.walk_body(b, body.mem_id) if body is not None else b""
        compiled.resolve(b)
        page._lines = compiled.format_lines(page.title, b.recs, texts, page._bid_line, page._recs,
                                            FREEZE_RECORDS)
        compiled.freeze_references(b)
    else:
        if body is not None:
            b.walk(body, 1, -1, None, _Ctx())
        b.resolve()
        page._lines = _format_lines(page.title, b.recs, page._bid_line, page._recs)   # freezes b.recs too
        _freeze_references(b)
    page._elements = _ElementMap(b.pending)
    page._forms_raw = b.forms
    page._controls = b.controls
    page._selects = dict(b.selects)
    groups = page._groups
    for members in b.radio_groups:
        for m in members:
            groups[m] = members
    return page


def _freeze_references(b: _Builder) -> None:
    """Drop the walk's references to the line records once they are frozen (see
    :func:`_format_lines`): a plain element keeps the three fields its Element needs,
    a select its options' frozen records, a pending element none.

    Records are built as lists (cheap to fill in during the walk) and never change once
    the lines are formatted. A cached Page keeps hundreds of them, and the garbage
    collector scans every list at each full collection (hundreds of ms once a parse cache
    is full), whereas a tuple of strings and numbers it stops tracking.
    """
    pending = b.pending
    for bid, v in pending.items():
        if type(v) is tuple:
            tag, attrs, rec = v
            pending[bid] = (tag, attrs, rec[_R_ROLE], rec[_R_NAME], ", disabled=True" in rec[_R_PRE])
        elif type(v) is _Pending:
            v.rec = None
    for p in b.controls:
        p.rec = None
    recs = b.recs
    b.selects[:] = [(bid, [(recs[i], value, label) for i, value, label in opts]) for bid, opts in b.selects]


def _format_lines(title: str, recs: list, bid_line: dict[str, int], kept: list) -> list[str]:
    """Format every record once (they are in document order already), and keep (in
    `kept`) the records that an overlay of Page.axtree can re-format: those of elements
    with a bid, and options (their select's overlay re-formats them). Each kept list is
    frozen: replaced, in ``recs`` too, by a tuple of its final fields.

    Also fills `bid_line` (bid -> index in `kept`) and each kept record's head and line
    index, which Page.axtree needs to re-format a line. The other lines are formatted in
    one go and their records dropped with the walk.
    """
    lines = [f"RootWebArea {title!r}, focused"]
    append = lines.append
    tabs = _TABS
    freeze = FREEZE_RECORDS
    for r, rec in enumerate(recs):
        d = rec[_R_DEPTH]
        if rec[_R_KIND] == _K_TEXT:
            text = rec[_R_NAME]
            par = rec[_R_PARENT]
            # Drop text already said by the nearest ancestor line's name.
            if par >= 0 and text in recs[par][_R_NAME]:
                continue
            append(f"{tabs[d] if d < 64 else _tabs(d)}StaticText {text!r}")
            continue
        bid = rec[_R_BID]
        value = rec[_R_VALUE]
        if value:
            props = f" value={value!r}{rec[_R_PRE]}{rec[_R_POST1]}{rec[_R_DYN]}{rec[_R_POST2]}"
        else:
            props = f"{rec[_R_PRE]}{rec[_R_POST1]}{rec[_R_DYN]}{rec[_R_POST2]}"
        if bid is None:
            head = f"{tabs[d] if d < 64 else _tabs(d)}{rec[_R_ROLE]} {rec[_R_NAME]!r}"
            if rec[_R_KIND] != _K_OPTION:
                append(head + props)   # no overlay can reach this line
                continue
        else:
            head = f"{tabs[d] if d < 64 else _tabs(d)}[{bid}] {rec[_R_ROLE]} {rec[_R_NAME]!r}"
            bid_line[bid] = len(kept)
        rec[_R_HEAD] = head
        rec[_R_LINE] = len(lines)
        if freeze:
            recs[r] = rec = tuple(rec)
        kept.append(rec)
        append(head + props)
    return lines


# --------------------------------------------------------------------------
# The compiled walk
# --------------------------------------------------------------------------

# A document with every construct the walk treats specially. At import the compiled walk
# must give the same Page for it as the Python walk, or it is not used: that catches an
# extension built against another selectolax/lexbor layout.
_PROBE_HTML = """<!DOCTYPE html><html><head><title> Probe &amp; tête </title></head><body>
<!-- a comment --><header bid="h"><nav bid="n"><a bid="a1" href="/x">Home <b>page</b></a>
<a bid="a2" href>bare</a><a bid="a3">no href</a><a role="link" bid="a4">r</a></nav></header>
<main><section aria-label="Sec" bid="s1"><h2 bid="t" title="tt">Title <em>x</em><br>y</h2>
<p>para text &lt;&gt; café ☃</p><div bid="g" aria-label="grp"><span>in</span></div>
<div hidden bid="hid"><a href="/h" bid="ha">hidden link</a><input name="hi" bid="hin"></div>
<div aria-hidden="true"><button bid="hb">HB</button></div><p style="display: none" bid="dn">x</p>
<div style="visibility:hidden"><select bid="hsel"><option>o</option></select></div>
<details bid="d1"><summary bid="su">More</summary><p bid="dp">inside</p><input bid="di"></details>
<details open><summary>Open</summary><p>shown</p></details>
<dialog bid="dl">x</dialog><dialog open bid="dlo">open dialog</dialog>
<img src="i.png" alt="Pic" bid="img"><img src="d.png" alt=""><img bid="img2" title="t2">
<svg bid="svg"><title>Icon</title><g><a bid="sva"><text>s</text></a></g></svg>
<svg aria-label="lab" viewBox="0 0 1 1"><clipPath id="c"></clipPath><foreignObject></foreignObject>
<use bid="use" xlink:href="#a" href="#b"></use></svg><a bid="al2" href="/l" CLASS="c" data-x="1" Aria-Label="AL">x</a>
<table bid="tb"><caption>Cap</caption><thead><tr><th>H</th><th scope="row">R</th></tr></thead>
<tr><td bid="td">c</td></tr></table><ul><li>one</li><li bid="li2">two</li></ul>
<my-widget bid="cw">custom</my-widget><article><header>in article</header><footer>f</footer></article>
<footer bid="ft">foot</footer><iframe bid="if"></iframe><video><source bid="src"></video>
<span role="button" aria-pressed="true" aria-expanded="false" aria-haspopup="listbox"
 aria-disabled="true" aria-required="true">tb</span><div role="checkbox" aria-checked="mixed">cb</div>
<div role="tab" aria-selected="true">tab</div><span role="presentation none">pres</span>
<div role="bogus img" bid="ri">ri</div><p id="lbl1">First</p><p id="lbl2" aria-label="Second">2</p>
<form bid="f1" action="/go" method="POST" id="fa"><fieldset disabled bid="fs"><legend>Leg</legend>
<input bid="i1" name="q" value="v" placeholder="ph" required><input type="password" value="pw" bid="pw">
</fieldset><label for="i2">Lab for</label><input id="i2" bid="i2" name="e" type="email">
<label>Wrap <input bid="i3" type="checkbox" name="c" checked> and <input bid="i3b"></label>
<label role="presentation">Pres <input bid="i4" type="text"></label>
<input type="radio" name="r" value="1" bid="r1" checked><input type="radio" name="r" value="2" bid="r2" checked>
<input type="radio" name="r" bid="r3"><input type="hidden" name="tok" value="t" bid="tok">
<input type="submit" bid="sub"><input type="image" alt="Go" bid="img3"><input type="reset" value="Clear">
<input type="number" bid="num"><input type="range"><input type="search" bid="srch"><input type="date">
<input aria-labelledby="lbl1 lbl2 nope" bid="lb"><input aria-label=" A  lab " title="T" bid="al">
<input bid="dsc" aria-invalid="true" aria-describedby="lbl1 it's"><button aria-describedby="lbl2" bid="b4">d</button>
<textarea bid="ta" name="body">Some
text</textarea><button bid="b1" name="go" value="1">Go <i>now</i></button>
<button bid="b2" title="Btn title"></button><button aria-labelledby="lbl1" bid="b3">x</button>
<select bid="sel" name="s"><option value="a" bid="oa">A</option><optgroup label="G" disabled>
<option bid="ob">B</option></optgroup><option value bid="oc" selected>C</option>
<option label=" L " disabled>D</option></select>
<select multiple bid="msel"><option selected>M1</option><option selected bid="m2">M2</option></select>
<select size="3" bid="lsel"><option>L1</option></select><select size="x"><option>z</option></select>
<select bid="esel"></select></form>
<input form="fa" bid="outside" name="o"><input form="nope" bid="orphan">
<form><button type="reset">R</button><input type="radio" name="r" bid="r4"></form>
<b>bold</b> <strong>strong <span>nested</span></strong> <code>c</code>
<div><p>Unclosed <b>bold <i>both</b> italic</i></p><table><tr><td>a<td>b</table></div>
<template><p bid="tpl">t</p></template><noscript>ns</noscript><script>var x;</script>
<style>p{}</style><meter value="1">m</meter><progress></progress><output>o</output>
<label bid="lone">lonely label</label><fieldset><legend>L2</legend><input></fieldset>
<figure><figcaption>fc</figcaption></figure><dl><dt>t</dt><dd>d</dd></dl><hr>
</section></main></body></html>"""

_PROBE_DUPLICATE = '<body><div bid="x"></div><p><span bid="x">y</span></p></body>'


def _fingerprint(page: Page) -> tuple:
    """Everything a Page exposes (AX text, title, elements, forms, selects, radio groups,
    line records), as reprs: ``True == 1``, but a walk giving 1 for True is not the same."""
    els = tuple((bid, repr(page.elements[bid])) for bid in page.elements)
    forms = tuple(repr((f.index, f.bid, f.action, f.method, f.controls)) for f in page.forms)
    return (page.axtree(), page.title, els, forms, repr(page._selects), repr(sorted(page._groups.items())),
            repr(page._recs), repr(sorted(page._bid_line.items())))


def _error_of(html: str, compiled: Any) -> str:
    try:
        _parse_page(html, compiled)
    except DuplicateBidError as e:
        return str(e)
    return ""


def _tag_ids() -> dict[str, int]:
    """lexbor's tag ids of the nodes the compiled walk tells apart by id (they depend on
    the lexbor build), read off a parsed document through selectolax."""
    tree = LexborHTMLParser("<!DOCTYPE html><title>t</title><p>x<!--c--></p>")
    p, title, root = tree.css_first("p"), tree.css_first("title"), tree.root
    nodes = {"-text": p.first_child if p else None, "-comment": p.last_child if p else None,
             "-doctype": root.prev if root else None, "-document": root.parent if root else None,
             "title": title}
    ids = {}
    for tag, node in nodes.items():
        if node is None or node.tag != tag:
            raise RuntimeError(f"cannot find lexbor's tag id of {tag!r}")
        ids[tag] = node.tag_id
    return ids


def _load_compiled() -> Any:
    """The simweb._axwalk module if it is built and agrees with the Python walk, else None.

    ``SIMWEB_PURE_PARSE=1`` forces the Python walk. A missing extension or a failed
    probe warns once (here, at import) and falls back to the Python walk.
    """
    if os.environ.get("SIMWEB_PURE_PARSE") == "1":
        return None
    try:
        _axwalk = importlib.import_module("simweb._axwalk")   # compiled; absent without a C compiler
    except ImportError as e:
        warnings.warn(f"simweb: compiled AX-tree walk not available ({e}); using the Python walk",
                      RuntimeWarning, stacklevel=2)
        return None
    try:
        if not _axwalk.load(selectolax.lexbor.__file__):
            raise RuntimeError("lexbor functions not found in selectolax")
        _axwalk.configure(globals(), _tag_ids())
        same = (_fingerprint(_parse_page(_PROBE_HTML, _axwalk)) == _fingerprint(_parse_page(_PROBE_HTML, None))
                and _error_of(_PROBE_DUPLICATE, _axwalk) == _error_of(_PROBE_DUPLICATE, None) != "")
    except Exception as e:  # any failure of the probe means: do not trust the extension
        warnings.warn(f"simweb: compiled AX-tree walk failed its probe ({e!r}); using the Python walk",
                      RuntimeWarning, stacklevel=2)
        return None
    if not same:
        warnings.warn("simweb: compiled AX-tree walk disagrees with the Python walk on the probe page "
                      "(another selectolax/lexbor build?); using the Python walk", RuntimeWarning, stacklevel=2)
        return None
    return _axwalk


_compiled_walk = _load_compiled()
#: Whether :func:`parse_page` uses the compiled walk (simweb/_axwalk.pyx) rather than the
#: Python one. False when the extension is not built, fails its import-time probe, or
#: ``SIMWEB_PURE_PARSE=1``.
COMPILED_WALK: bool = _compiled_walk is not None

"""Flow options of site variants (:mod:`simweb.runtime.variants`): multi-step forms.

Real sites split a long form over pages: an address first, then the rest; a title and a
description, then the labels and the assignees. The ``form_steps`` engine factor gives a
variant that split. An app declares, as data in ``apps/<app>/variants.yaml``, which forms
(events) a real site would split and which of their fields the first page asks for::

    steps:
      add_address: {first: [full_name, street, city, state, zip]}
      create_post: {first: [title, body]}

On a variant that takes the factor, the form's page shows only its *first* fields (every
other field's control, with the label or paragraph or fieldset that holds only it, is left
out of the page) and a Continue button (``form-step-continue``) in place of its submit
buttons. Its POST changes nothing in the runtime: the first fields are checked as the
event's parameters (a bad one is refused with today's message, on the same page), held in
the browser's ``steps`` entry (the event's URL, the first fields as read, the page and its
address, the signed-in user and a token, the request counter) and the browser is sent to
``/form-step/<token>``. That page is the form's own page, rendered again from the state,
with the *other* fields, the held values listed, a Back link (``form-step-back``, to the
form's page) and the form's own submit buttons, which post to the step page's address. That
POST runs the original event exactly once with every field: the held first fields (a
first field the second page's POST names is ignored) and the second page's fields; a
refused one leaves the held entry and shows the second page again with today's message.
A POST to the event's own address is always a first step on such a variant, so the form
can never skip its second page.

The held entry lives in the browser layer (``browser.steps``, absent when none, so variant
0's states are byte-for-byte today's), never in the runtime: the verdicts read the runtime.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from html import unescape
from typing import Any
from urllib.parse import urlsplit

from markupsafe import escape

from .memo import memoised

#: Option labels of the ``form_steps`` factor ("one-step" = today's site) and the words of
#: each: (continue button, back link, the progress line's format: "" for none).
STYLES: dict[str, tuple[str, str, str]] = {
    "two-step": ("Continue", "Back", ""),
    "two-step-numbered": ("Next", "Previous", "Step {n} of 2"),
}
OPTIONS = ("one-step", *STYLES)
#: The option index only test variants take.
HELD_OUT = 2

#: The second page's address prefix, its page (control state) name, the template of its
#: "nothing held" page, and the bids the engine adds.
PREFIX = "/form-step/"
PAGE = "form-step"
TEMPLATE = "variant_steps.html"
CONTINUE_BID = "form-step-continue"
BACK_BID = "form-step-back"
#: The plan action that sends a form's first page (what a rewritten oracle plan gets).
CONTINUE_ACTION = f"click('{CONTINUE_BID}')"

_PATH = re.compile(r"^/form-step/([0-9]{1,18})$")


class StepsError(ValueError):
    """A malformed ``steps`` section of a variants file."""


@dataclass(frozen=True)
class Steppable:
    """One form a two-step variant splits: the fields its first page asks for."""

    event: str
    first: tuple[str, ...]


def parse(app: str, raw: Any) -> dict[str, Steppable]:
    """The ``steps`` section of an app's variants file (event name -> declaration)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict) or not raw:
        raise StepsError(f"{app} variants: steps maps event names to {{first: [field names]}}")
    out: dict[str, Steppable] = {}
    for name, decl in raw.items():
        first = decl.get("first") if isinstance(decl, dict) else None
        if not isinstance(name, str) or not isinstance(first, list) or not first \
                or not all(isinstance(f, str) and f for f in first) or set(decl) - {"first"}:
            raise StepsError(f"{app} variants: steps.{name} needs first: a list of the fields of its first page")
        out[name] = Steppable(name, tuple(first))
    return out


def check_events(app: Any, steppables: dict[str, Steppable], confirmables: dict[str, Any]) -> None:
    """Refuse (StepsError) a declaration of an event the spec does not have, a first field
    it does not take, a form with nothing left for its second page, one with a secret field
    (a held entry is kept in the state in clear), or one also declared confirmable."""
    for name, decl in steppables.items():
        event = app.spec.events.get(name)
        if event is None:
            raise StepsError(f"{app.name} variants: steps names event {name!r}, which the spec does not have")
        unknown = [f for f in decl.first if f not in event.params]
        if unknown:
            raise StepsError(f"{app.name} variants: steps.{name}.first names {unknown}, not fields of the event")
        if not set(event.params) - set(decl.first):
            raise StepsError(f"{app.name} variants: steps.{name}: every field is on the first page")
        if any(p.secret for p in event.params.values()):
            raise StepsError(f"{app.name} variants: steps.{name}: the event has a secret field")
        if name in confirmables:
            raise StepsError(f"{app.name} variants: {name} is declared both confirmable and in steps")


def page_url(token: int) -> str:
    """The second page of the held form ``token``."""
    return f"{PREFIX}{token}"


def parse_path(path: str) -> int | None:
    """The token of a second page's address; None for any other path."""
    m = _PATH.match(path)
    return int(m.group(1)) if m else None


def is_page(url: str) -> bool:
    """Whether ``url`` is a second page's address."""
    return parse_path(urlsplit(url).path) is not None


def hold(state: dict, token: int, url: str, form: dict[str, Any], back: str, source: str) -> str:
    """Hold a form's first fields (replacing any other held form); its second page's address."""
    state["browser"]["steps"] = {"token": token, "url": url, "form": form, "back": back, "source": source,
                                 "user": state["browser"]["user"]}
    return page_url(token)


def held(state: dict, token: int) -> dict | None:
    """The held form ``token`` of the signed-in user (not removed); None otherwise."""
    entry = state["browser"].get("steps")
    if entry is None or entry["token"] != token or entry["user"] != state["browser"]["user"]:
        return None
    return entry


def awaiting(state: dict) -> bool:
    """Whether the active tab shows the second page of the form now held."""
    browser = state["browser"]
    entry = browser.get("steps")
    tab = browser["tabs"][browser["active"]]
    return entry is not None and tab["page"] == PAGE and tab["url"] == page_url(entry["token"])


# ----------------------------------------------------------------------------- the pages' forms
# A tag's attributes are matched possessively (a run of attribute text taken whole, never
# backtracked into): the same matches as a character at a time, in a third to a half less
# time on a page's markup.
_TOKEN = re.compile(r"<!--.*?-->|<(/?)([A-Za-z][A-Za-z0-9-]*)((?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>", re.S)
_ATTR = re.compile(r"""([^\s/>="']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+)))?""")
_FORM = re.compile(r"<form\b((?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+)>", re.I)
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track",
                   "wbr"})
_RAW = frozenset({"script", "style", "textarea", "title"})


@dataclass
class _Node:
    tag: str
    attrs: dict[str, str]
    start: int
    end: int = -1
    parent: _Node | None = None
    children: list[_Node] = field(default_factory=list)


#: The elements whose attributes the split reads (a field, a submitter, a label, an option).
_READ = frozenset({"input", "select", "textarea", "button", "label", "option"})


#: A form start tag's attributes by its text: a page's forms repeat (a list's per-row form)
_FORM_ATTRS: dict[str, dict[str, str]] = {}


def _form_attrs(text: str) -> dict[str, str]:
    """:func:`_attrs` of a form's start tag, memoised (bounded; callers do not change it)."""
    hit = _FORM_ATTRS.get(text)
    return hit if hit is not None else memoised(_FORM_ATTRS, text, _attrs, 2048)


def _attrs(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _ATTR.finditer(text):
        value = m.group(2) if m.group(2) is not None else m.group(3) if m.group(3) is not None else m.group(4) or ""
        out.setdefault(m.group(1).lower(), value)
    return out


def _tree(html: str, start: int, end: int, options: bool = True) -> _Node:
    """The elements of ``html[start:end]`` (a form's content) as a tree (a tolerant parse:
    a close tag closes the open elements up to its own; void elements have none). Without
    ``options``, a select's options are left out (only showing held values reads them: a
    select of a project's members or labels can hold most of a form's elements)."""
    root = _Node("#form", {}, start, end)
    stack = [root]
    pos = start
    while pos < end:
        m = _TOKEN.search(html, pos, end)
        if m is None:
            break
        pos = m.end()
        if m.group(2) is None:   # a comment
            continue
        tag = m.group(2).lower()
        if tag == "option" and not options:
            continue
        if m.group(1):
            for i in range(len(stack) - 1, 0, -1):
                if stack[i].tag == tag:
                    for node in stack[i:]:
                        node.end = m.end() if node is stack[i] else m.start()
                    del stack[i:]
                    break
            continue
        node = _Node(tag, _attrs(m.group(3)) if tag in _READ else {}, m.start(), parent=stack[-1])
        stack[-1].children.append(node)
        if tag in _VOID or m.group(3).rstrip().endswith("/"):
            node.end = m.end()
        elif tag in _RAW:
            close = html.find(f"</{tag}", m.end(), end)
            close_end = html.find(">", close) + 1 if close >= 0 else end
            node.end = close_end if close >= 0 else end
            pos = node.end
        else:
            stack.append(node)
    for node in stack[1:]:
        node.end = end
    return root


def _walk(node: _Node) -> list[_Node]:
    """The elements under ``node`` in document order (one pass: a form's select can hold
    hundreds of options)."""
    out: list[_Node] = []
    stack = node.children[::-1]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n.children[::-1])
    return out


def _is_submitter(n: _Node) -> bool:
    kind = n.attrs.get("type", "").lower()
    return (n.tag == "button" and kind in ("", "submit")) or (n.tag == "input" and kind in ("submit", "image"))


def _field_of(n: _Node) -> str | None:
    """The field a control sends, for the controls a page shows (not hidden inputs, not
    buttons); None otherwise."""
    if n.tag not in ("input", "select", "textarea") or "name" not in n.attrs:
        return None
    if n.tag == "input" and n.attrs.get("type", "").lower() in ("hidden", "submit", "image", "button", "reset"):
        return None
    return n.attrs["name"]


def _fields_in(nodes: list[_Node]) -> dict[int, tuple[frozenset[str], bool]]:
    """Per element of ``nodes`` (a form's, in document order) by ``id``: (the fields of
    the controls in it, itself included; whether a submitter is in it). One bottom-up pass
    (children before their parents), not a walk per element."""
    out: dict[int, tuple[frozenset[str], bool]] = {}
    for n in reversed(nodes):
        f = _field_of(n)
        names = {f} if f is not None else set()
        submit = _is_submitter(n)
        for c in n.children:
            cn, cs = out[id(c)]
            names |= cn
            submit = submit or cs
        out[id(n)] = (frozenset(names), submit)
    return out


def _left_out(root: _Node, first: set[str], second: bool, nodes: list[_Node] | None = None) -> list[tuple[int, int]]:
    """The spans to take out of a form so that the controls of the fields its page does not
    ask for (the ``first`` fields on the ``second`` page, the others on the first) are gone
    with what holds only them (their label, paragraph or fieldset) and their labels.
    ``nodes``: ``_walk(root)``, when the caller has it."""
    nodes = _walk(root) if nodes is None else nodes
    inside = _fields_in(nodes)
    spans: list[tuple[int, int]] = []
    ids: set[str] = set()
    for n in nodes:
        name = _field_of(n)
        if name is None or (name in first) != second:
            continue
        if "id" in n.attrs:
            ids.add(n.attrs["id"])
        w = n
        while w.parent is not None and w.parent is not root:
            names, submit = inside[id(w.parent)]
            if submit or names != {name}:
                break
            w = w.parent
        spans.append((w.start, w.end))
    spans += [(n.start, n.end) for n in nodes if n.tag == "label" and n.attrs.get("for") in ids]
    return spans


def _cut(html: str, start: int, end: int, spans: list[tuple[int, int]], inserts: list[tuple[int, str]],
         replaced: Sequence[tuple[int, int, str]] = ()) -> str:
    """``html[start:end]`` without the ``spans`` (overlapping ones merged), with ``inserts``
    (position, text) added and the ``replaced`` spans (start, end, text; none inside a span
    taken out) given new text; an insert inside a span taken out goes where the span was."""
    keep = _merged(spans)
    edits = sorted([(a, b, "") for a, b in keep] + [(p, p, t) for p, t in inserts] + list(replaced),
                   key=lambda e: (e[0], e[1]))
    out, pos = [], start
    for a, b, text in edits:
        a = max(a, pos)
        out.append(html[pos:a])
        out.append(text)
        pos = max(pos, b)
    out.append(html[pos:end])
    return "".join(out)


_VALUE_ATTRS = re.compile(r"""\s(?:value|checked|selected)(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s>]+))?(?=[\s/>])""", re.I)


def _set_attrs(html: str, n: _Node, value: str | None, flag: str | None) -> tuple[int, int, str]:
    """The start tag of element ``n`` (an input, or an option) with its value, checked and
    selected attributes replaced: ``value`` (None: none) and the boolean ``flag`` (None: none)."""
    m = _TOKEN.match(html, n.start)
    end = m.end() if m is not None else n.end
    tag = html[n.start:end]
    close = "/>" if tag.endswith("/>") else ">"
    body = _VALUE_ATTRS.sub("", tag[:-len(close)] + " ")[:-1] if tag else tag
    body += f' value="{escape(value)}"' if value is not None else ""
    body += f" {flag}" if flag is not None else ""
    return n.start, end, body + close


def _refilled(html: str, root: _Node, first: set[str], values: dict[str, Any]) -> list[tuple[int, int, str]]:
    """The edits that show the held ``values`` of the ``first`` fields in their controls (a
    text box's value, a text area's text, the checked boxes and radios, the chosen options),
    as the page was filled when Continue was pressed."""
    out: list[tuple[int, int, str]] = []
    for n in _walk(root):
        name = _field_of(n)
        if name is None or name not in first or name not in values:
            continue
        held = values[name]
        chosen = {str(v) for v in held} if isinstance(held, list) else {str(held)}
        kind = n.attrs.get("type", "").lower()
        if n.tag == "textarea":
            m = _TOKEN.match(html, n.start)
            body = m.end() if m is not None else n.end
            close = html.rfind("</", body, n.end)
            out.append((body, close if close >= 0 else n.end, str(escape(str(held)))))
        elif n.tag == "select":
            for o in (c for c in _walk(n) if c.tag == "option"):
                value = o.attrs.get("value")
                if value is None:
                    m = _TOKEN.match(html, o.start)
                    text = html[m.end() if m is not None else o.end:o.end]
                    value = re.sub(r"<[^>]*>", "", text)
                    value = " ".join(unescape(value).split())
                    out.append(_set_attrs(html, o, None, "selected" if value in chosen else None))
                else:
                    out.append(_set_attrs(html, o, unescape(value), "selected" if unescape(value) in chosen else None))
        elif kind in ("checkbox", "radio"):
            value = unescape(n.attrs.get("value", "on"))
            out.append(_set_attrs(html, n, value if "value" in n.attrs else None, "checked" if value in chosen else None))
        else:
            out.append(_set_attrs(html, n, str(held), None))
    return out


def split_forms(html: str, declared: Callable[[str], Steppable | None], style: str,
                second: tuple[int, str, str, list[tuple[str, str]]] | None = None,
                refill: tuple[str, dict[str, Any]] | None = None) -> str:
    """A page's HTML with every declared form (``declared(action)``: its declaration, or
    None for a form no declaration names) as its first page shows it; with ``second`` =
    (token, the form's page as shown, its event's action, the held fields (label, value))
    the form whose action is that event's as its second page shows it instead. With
    ``refill`` = (an event's action, the held first fields), that form's first page shows
    the held values again (the second page's Back)."""
    words = STYLES[style]
    if "<form" not in html:
        return html
    out: list[str] = []
    pos = 0
    for m in _FORM.finditer(html):
        attrs = _form_attrs(m.group(1))
        if attrs.get("method", "get").lower() != "post":   # (a search form, a GET: never split)
            continue
        decl = declared(attrs.get("action", ""))
        close = html.find("</form>", m.end())
        if decl is None or close < 0:
            continue
        first = set(decl.first)
        out.append(html[pos:m.start()])
        action = unescape(attrs.get("action", ""))
        if second is not None and action == second[2]:
            root = _tree(html, m.end(), close)
            token, back, _, shown = second
            progress = words[2].format(n=2)
            summary = "".join(f"<dt>{escape(k)}</dt><dd>{escape(v)}</dd>" for k, v in shown)
            head = ((f'<p bid="form-step-progress">{progress}</p>' if progress else "")
                    + (f'<dl bid="form-step-held" aria-label="Your answers so far">{summary}</dl>' if summary else "")
                    + f'<p><a bid="{BACK_BID}" href="{escape(back)}">{words[1]}</a></p>')
            tag = html[m.start():m.end()].replace(f'action="{attrs["action"]}"', f'action="{page_url(token)}"', 1)
            out.append(tag + head + _cut(html, m.end(), close, _left_out(root, first, True), []))
        elif refill is not None and action == refill[0]:
            root = _tree(html, m.end(), close)
            out.append(_first_page(html, m.start(), m.end(), close, first, style, root,
                                   _refilled(html, root, first, refill[1])))
        else:
            # a form's first page is a pure function of the form's markup: the same form
            # (an empty one, on every instance) is split once (bounded memo)
            key = (html[m.start():close], decl.first, style)
            hit = _FIRST_PAGES.get(key)
            out.append(hit if hit is not None else memoised(_FIRST_PAGES, key, _first_page_of, 512))
        pos = close
    out.append(html[pos:])
    return "".join(out)


def _first_page(html: str, start: int, body: int, close: int, first: set[str], style: str, root: _Node | None = None,
                again: Sequence[tuple[int, int, str]] = ()) -> str:
    """The form of ``html[start:close]`` (its start tag ends at ``body``) as its first page
    shows it: the ``first`` fields, a Continue button where its submitters were, the held
    values shown again (``again``: :func:`_refilled`'s edits)."""
    words = STYLES[style]
    root = _tree(html, body, close, options=False) if root is None else root
    progress = words[2].format(n=1)
    nodes = _walk(root)
    subs = [n for n in nodes if _is_submitter(n)]
    button = f'<button bid="{CONTINUE_BID}" type="submit">{words[0]}</button>'
    inserts = [(subs[0].start if subs else close, button)]
    spans = _left_out(root, first, False, nodes) + [(n.start, n.end) for n in subs]
    return (html[start:body] + (f'<p bid="form-step-progress">{progress}</p>' if progress else "")
            + _cut(html, body, close, spans, inserts, again))


def _first_page_of(key: tuple[str, tuple[str, ...], str]) -> str:
    """A form's first page from (its markup, from its start tag to its end tag's start;
    its first fields; the style)."""
    form, first, style = key
    tag = _FORM.match(form)
    return _first_page(form, 0, tag.end() if tag is not None else 0, len(form), set(first), style)


#: Forms' first pages by (the form's markup, its first fields, the style): :func:`split_forms`.
_FIRST_PAGES: dict[tuple[str, tuple[str, ...], str], str] = {}


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    keep: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if keep and a < keep[-1][1]:
            keep[-1] = (keep[-1][0], max(b, keep[-1][1]))
        else:
            keep.append((a, b))
    return keep


__all__ = ["BACK_BID", "CONTINUE_ACTION", "CONTINUE_BID", "HELD_OUT", "OPTIONS", "PAGE", "PREFIX", "STYLES",
           "Steppable", "StepsError", "TEMPLATE", "awaiting", "check_events", "held", "hold", "is_page", "page_url",
           "parse", "parse_path", "split_forms"]

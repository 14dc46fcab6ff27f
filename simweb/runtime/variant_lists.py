"""The ``list_style`` layout factor of site variants: a site's result lists as rows (today),
cards, a table or (held out) a summary list of terms and definitions.

One engine mechanism, by template-source rewriting (built once per process and variant
with the rest of the variant's templates, :meth:`simweb.runtime.variants.Site.template_source`);
an app only declares its result lists in ``apps/<app>/variants.yaml``::

    lists:
      - {list: ul.grid, item: li.card, name: Products}   # container, item (any template), name
      - {item: article.card, name: Posts}                 # items without a container: their loop

A *list* is an element ``tag.class`` (a class token; its items are its direct ``<li>``
children written in the same template, and every element matching ``item`` in any
template, such as a macro's); a declaration without ``list`` wraps the ``{% for %}`` loop
around each ``item`` in a container of its own. What each style makes of them (roles as
the AX tree shows them):

* ``cards``: the container a ``<section>`` named by its ``aria-label`` or the declared
  name (a region), every item an ``<article>`` (an article);
* ``table``: the container a ``<table role="table">`` (a table, named likewise) with a
  ``<tbody>``, every item a ``<tr>`` (a row) whose parts are ``<td>`` cells;
* ``summary`` (held out): the container a ``<dl>`` (a list), every item a ``<dt>`` (a
  term: its first part with a link, the item's title, else its first part) and a ``<dd>``
  (a definition: its other parts, in their order).

An item's *parts* are the top-level pieces of its content: an element, a Jinja block
(``{% if %}...{% endif %}``, ``{% for %}...{% endfor %}``) or a run of text and
expressions; a part is never split, so a conditional keeps its markup whole and every row
of a table has the same cells. The elements keep their attributes (``bid``, ``class``,
``aria-label``) on the renamed element; nothing inside an item changes, so every control
keeps its bid and every form its fields.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

#: The factor's options, in order (option 0 is today's site); the held-out one's index.
OPTIONS = ("rows", "cards", "table", "summary")
HELD_OUT = 3

#: The styles' CSS (the option's ``css``, in the variant's ``<style>``). The table's
#: displays are forced: an app's own rule for an item's class (forum's ``.post-row`` is a
#: flex row) must not make a row something else than a table row.
CSS = {
    "cards": (".vlist-cards{display:grid!important;grid-template-columns:repeat(auto-fill,minmax(14rem,1fr));"
              "gap:.8rem;padding:0;margin:.5rem 0}"
              ".vlist-cards>article{display:block!important;border:1px solid #d0d0d0;border-radius:6px;padding:.6rem;"
              "margin:0}"),
    "table": ("table.vlist-table{display:table!important;border-collapse:collapse;width:100%;margin:.5rem 0}"
              "table.vlist-table>tbody>tr{display:table-row!important;border-bottom:1px solid #ddd}"
              "table.vlist-table>tbody>tr>td{display:table-cell!important;padding:.3rem .5rem;vertical-align:top}"
              "table.vlist-table>tbody>tr>td>*{margin:0}"),
    "summary": ("dl.vlist-summary{display:block!important;padding:0;margin:.5rem 0}"
                "dl.vlist-summary>dt{display:block!important;font-weight:bold;margin-top:.6rem}"
                "dl.vlist-summary>dd{display:block!important;margin:0 0 .4rem 1.2rem}"),
}


class ListsError(ValueError):
    """A malformed ``lists`` section of a variants file."""


_SELECTOR = re.compile(r"([a-z][a-z0-9]*)\.([A-Za-z_][\w-]*)")


@dataclass(frozen=True)
class ListDecl:
    """One declared result list: its container (``tag``, ``cls``; empty: the items' loop),
    its items' element (``item_tag``, ``item_cls``; empty: the container's ``<li>`` only)
    and the name a container without an ``aria-label`` takes."""

    tag: str
    cls: str
    item_tag: str
    item_cls: str
    name: str


def _selector(app: str, i: int, key: str, raw: Any) -> tuple[str, str]:
    if raw is None:
        return "", ""
    m = _SELECTOR.fullmatch(raw) if isinstance(raw, str) else None
    if m is None:
        raise ListsError(f"{app} variants: lists[{i}].{key} is tag.class (ul.results, li.card), not {raw!r}")
    return m.group(1), m.group(2)


def parse(app: str, raw: Any) -> tuple[ListDecl, ...]:
    """A variants file's ``lists`` section (absent: no list; ListsError when malformed)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise ListsError(f"{app} variants: lists is a list of {{list, item, name}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or set(entry) - {"list", "item", "name"}:
            raise ListsError(f"{app} variants: lists[{i}] takes list, item and name")
        tag, cls = _selector(app, i, "list", entry.get("list"))
        item_tag, item_cls = _selector(app, i, "item", entry.get("item"))
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip() or set(name) & set('{}<>"&%#'):
            raise ListsError(f"{app} variants: lists[{i}] needs a name (what the list is called: plain words, "
                             f"no markup or template syntax)")
        if not tag and not item_tag:
            raise ListsError(f"{app} variants: lists[{i}] names a list, an item or both")
        if tag and tag not in ("ul", "ol"):
            raise ListsError(f"{app} variants: lists[{i}].list is a ul or an ol, not {tag}")
        out.append(ListDecl(tag, cls, item_tag, item_cls, name.strip()))
    return tuple(out)


# ----------------------------------------------------------------------------- source tokens
# A template's tokens: Jinja expressions, statements (group 1: the keyword), comments,
# HTML comments and tags (group 2: "/" for a closing tag; 3: the name; 4: the attributes,
# which may hold Jinja).
_TOKEN = re.compile(r"\{\{.*?\}\}|\{%-?\s*(\w+).*?-?%\}|\{#.*?#\}|<!--.*?-->"
                    r"|<(/?)([a-zA-Z][\w-]*)((?:[^>{]|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|\{(?![{%#]))*)>", re.S)
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"})
_BLOCKS = frozenset({"if", "for", "with", "filter", "call", "block", "macro", "autoescape", "raw"})
_CLASS = re.compile(r'\sclass="([^"]*)"')
_LABEL = re.compile(r'\saria-label="')


def _opens_block(m: re.Match[str]) -> bool:
    kw = m.group(1)
    return kw in _BLOCKS or (kw == "set" and "=" not in m.group(0))


def _has_class(attrs: str, cls: str) -> bool:
    m = _CLASS.search(attrs)
    return m is not None and cls in m.group(1).split()


def _close(source: str, tag: str, pos: int) -> int:
    """The end of the element of ``tag`` whose open tag ends at ``pos`` (-1: unclosed)."""
    depth = 1
    for m in _TOKEN.finditer(source, pos):
        if m.group(3) is not None and m.group(3).lower() == tag:
            if m.group(2):
                depth -= 1
                if not depth:
                    return m.end()
            elif not m.group(4).rstrip().endswith("/"):
                depth += 1
    return -1


def _parts(inner: str) -> list[tuple[int, int]]:
    """The spans of an item's parts (see the module docstring): top-level elements and Jinja
    blocks, and runs of text and expressions with something in them besides statements."""
    spans: list[tuple[int, int]] = []
    html = jinja = 0
    start = -1          # the part being read (-1: none)
    loose = -1          # a run of text and expressions at the top (-1: none)
    loose_shown = False

    def end_loose(at: int) -> None:
        nonlocal loose, loose_shown
        if loose >= 0 and loose_shown:
            a, b = loose, at
            while a < b and inner[a].isspace():
                a += 1
            while b > a and inner[b - 1].isspace():
                b -= 1
            spans.append((a, b))
        loose, loose_shown = -1, False

    pos = 0
    for m in _TOKEN.finditer(inner):
        text = inner[pos:m.start()]
        if html == 0 and jinja == 0 and text.strip():
            if loose < 0:
                loose = pos
            loose_shown = True
        pos = m.end()
        top = html == 0 and jinja == 0
        if m.group(3) is not None:   # an HTML tag
            name = m.group(3).lower()
            void = name in _VOID or m.group(4).rstrip().endswith("/")
            if m.group(2):
                html -= 1
            elif top:
                end_loose(m.start())
                start = m.start()
                if not void:
                    html += 1
            elif not void:
                html += 1
        elif m.group(1) is not None:   # a statement
            kw = m.group(1)
            if _opens_block(m):
                if top:
                    end_loose(m.start())
                    start = m.start()
                jinja += 1
            elif kw.startswith("end"):
                jinja -= 1
            elif top and loose < 0:   # a statement at the top ({% set x = 1 %}): with the text around
                loose = m.start()
        elif top and not m.group(0).startswith(("{#", "<!--")):   # an expression at the top
            if loose < 0:
                loose = m.start()
            loose_shown = True
        if start >= 0 and html == 0 and jinja == 0:
            spans.append((start, m.end()))
            start = -1
    if inner[pos:].strip() and html == 0 and jinja == 0:
        if loose < 0:
            loose = pos
        loose_shown = True
    end_loose(len(inner))
    return spans


# ----------------------------------------------------------------------------- the rewrite
def _named(attrs: str, name: str) -> str:
    """A container's attributes, named ``name`` when they carry no ``aria-label``."""
    return attrs if _LABEL.search(attrs) else f'{attrs} aria-label="{name}"'


def _classed(attrs: str, cls: str) -> str:
    """``attrs`` with ``cls`` added to its class (a class attribute of its own if none)."""
    m = _CLASS.search(attrs)
    if m is None:
        return f' class="{cls}"{attrs}'
    return attrs[:m.start(1)] + m.group(1) + " " + cls + attrs[m.end(1):]


def _container(style: str, attrs: str, name: str) -> tuple[str, str]:
    """The open and close tags of a list's container in ``style``."""
    if style == "cards":
        return f'<section{_named(_classed(attrs, "vlist vlist-cards"), name)}>', "</section>"
    if style == "table":
        return f'<table role="table"{_named(_classed(attrs, "vlist vlist-table"), name)}><tbody>', "</tbody></table>"
    return f'<dl{_named(_classed(attrs, "vlist vlist-summary"), name)}>', "</dl>"


def _item(style: str, attrs: str, inner: str) -> str:
    """An item (its open tag's attributes and its content) in ``style``."""
    if style == "cards":
        return f'<article{_classed(attrs, "vitem")}>{inner}</article>'
    spans = _parts(inner)
    if style == "table":
        cells, pos = [], 0
        for a, b in spans:
            cells.append(inner[pos:a] + "<td>" + inner[a:b] + "</td>")
            pos = b
        return f'<tr{_classed(attrs, "vitem")}>' + "".join(cells) + inner[pos:] + "</tr>"
    if not spans:
        return f'<dt{_classed(attrs, "vitem")}>{inner}</dt>'
    # the term: the first part with a link (the item's title: forum's rows open with their
    # vote buttons), else the first; the other parts, in their order, its definition
    t = next((i for i, (a, b) in enumerate(spans) if "<a " in inner[a:b]), 0)
    a, b = spans[t]
    rest = [inner[x:y] for i, (x, y) in enumerate(spans) if i != t]
    # what lies between the parts shows nothing (blanks, {% set %}): first, in its order
    bounds = [0, *(p for span in spans for p in span), len(inner)]
    lead = "".join(inner[bounds[i]:bounds[i + 1]] for i in range(0, len(bounds), 2))
    term = lead + f'<dt{_classed(attrs, "vitem")}>' + inner[a:b] + "</dt>"
    return term + ("<dd>" + " ".join(rest) + "</dd>" if rest else "")


def _enclosing_for(source: str, at: int) -> tuple[int, int] | None:
    """The span of the innermost ``{% for %}`` block around position ``at``."""
    stack: list[tuple[str, int]] = []
    found: tuple[str, int] | None = None
    depth_at = -1
    for m in _TOKEN.finditer(source):
        if m.group(1) is None:
            continue
        if found is None and m.start() >= at:
            fors = [i for i, (kw, _) in enumerate(stack) if kw == "for"]
            if not fors:
                return None
            depth_at = fors[-1]
            found = stack[depth_at]
        if _opens_block(m):
            stack.append((m.group(1), m.start()))
        elif m.group(1).startswith("end") and stack:
            stack.pop()
            if found is not None and len(stack) == depth_at:
                return found[1], m.end()
    return None


def rewrite(source: str, style: str, lists: tuple[ListDecl, ...]) -> str:
    """A template's source with its declared lists in ``style`` ("" or "rows": unchanged)."""
    if style not in CSS or not lists:
        return source
    edits: dict[int, tuple[int, str]] = {}   # start -> (end, replacement)
    wraps: list[tuple[int, int, str]] = []   # a loop wrapped in a container: (start, end, name)
    for decl in lists:
        if decl.item_tag and f"<{decl.item_tag}" in source:
            for m in _TOKEN.finditer(source):
                if m.group(3) == decl.item_tag and not m.group(2) and _has_class(m.group(4), decl.item_cls):
                    end = _close(source, decl.item_tag, m.end())
                    if end < 0 or m.start() in edits:
                        continue
                    inner = source[m.end():end - len(f"</{decl.item_tag}>")]
                    edits[m.start()] = (end, _item(style, m.group(4), inner))
                    if not decl.tag:
                        loop = _enclosing_for(source, m.start())
                        if loop is not None and all(w[0] != loop[0] for w in wraps):
                            wraps.append((loop[0], loop[1], decl.name))
        if decl.tag and f"<{decl.tag}" in source:
            for m in _TOKEN.finditer(source):
                if m.group(3) != decl.tag or m.group(2) or not _has_class(m.group(4), decl.cls):
                    continue
                end = _close(source, decl.tag, m.end())
                if end < 0:
                    continue
                open_tag, close_tag = _container(style, m.group(4), decl.name)
                edits[m.start()] = (m.end(), open_tag)
                edits[end - len(f"</{decl.tag}>")] = (end, close_tag)
                depth = 0   # its direct <li> children written here
                for t in _TOKEN.finditer(source, m.end(), end - len(f"</{decl.tag}>")):
                    if t.group(3) is None:
                        continue
                    name = t.group(3).lower()
                    if name in _VOID or t.group(4).rstrip().endswith("/"):
                        continue
                    if t.group(2):
                        depth -= 1
                    else:
                        if depth == 0 and name == "li" and t.start() not in edits:
                            li_end = _close(source, "li", t.end())
                            if li_end > 0:
                                edits[t.start()] = (li_end, _item(style, t.group(4), source[t.end():li_end - 5]))
                        depth += 1
    for start, end, name in wraps:
        open_tag, close_tag = _container(style, "", name)
        edits[start] = (start, open_tag)   # inserted before the loop
        edits.setdefault(end, (end, close_tag))
    out, pos = [], 0
    for start in sorted(edits):
        end, text = edits[start]
        if start < pos:   # inside an item already rewritten
            continue
        out.append(source[pos:start])
        out.append(text)
        pos = end
    out.append(source[pos:])
    return "".join(out)

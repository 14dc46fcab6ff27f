"""The ``list_style`` layout factor of site variants: a site's result lists as rows (today),
cards, a table or (held out) a summary list of terms and definitions.

One engine mechanism, by template-source rewriting (built once per process and variant
with the rest of the variant's templates, :meth:`simweb.runtime.variants.Site.template_source`);
an app only declares its result lists in ``apps/<app>/variants.yaml``::

    lists:
      - {list: ul.grid, item: li.card, name: Products,   # container, item (any template), name
         columns: [Product, Price, Rating, Stock]}       # a table's column headers, one per part
      - {item: article.card, name: Posts}                 # items without a container: their loop
      - {list: ul.results, name: Properties, columns: [Hotel, Details, Options],
         template_columns: {favorites.html: [Hotel, Details, Actions]}}   # one template's own

A *list* is an element ``tag.class`` (a class token; its items are its direct ``<li>``
children written in the same template, and every element matching ``item`` in any
template, such as a macro's); a declaration without ``list`` wraps the ``{% for %}`` loop
around each ``item`` in a container of its own. What each style makes of them (roles as
the AX tree shows them):

* ``cards``: the container a ``<section>`` named by its ``aria-label`` or the declared
  name (a region), every item an ``<article>`` (an article);
* ``table``: the container a ``<table role="table">`` (a table, named likewise) with a
  ``<tbody>``, every item a ``<tr>`` (a row) whose parts are ``<td>`` cells; a declaration's
  ``columns`` give the table a header row (``<thead>``, a ``<th scope="col">`` per name:
  columnheaders), as many as an item's parts (:func:`check_columns`), and an item of one
  part (an empty list's message) is one cell spanning the columns; ``template_columns``
  names them otherwise in the templates it names (as many names as ``columns``: a list
  whose items are a macro's, drawn in another template, spans the same count);
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

from .template_tokens import BRANCH, CLOSE, EXPRESSION, JINJA, LEAF, OPEN, STATEMENT, TOKEN, opens_block, tokens

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
    its items' element (``item_tag``, ``item_cls``; empty: the container's ``<li>`` only),
    the name a container without an ``aria-label`` takes and, as a table, its column
    headers (empty: none) and the templates that name them otherwise (template name,
    headers; as many as ``columns``)."""

    tag: str
    cls: str
    item_tag: str
    item_cls: str
    name: str
    columns: tuple[str, ...] = ()
    template_columns: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def columns_in(self, template: str) -> tuple[str, ...]:
        """The column headers of this list as the template ``template`` draws it."""
        return next((c for t, c in self.template_columns if t == template), self.columns)


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
        raise ListsError(f"{app} variants: lists is a list of {{list, item, name, columns}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or set(entry) - {"list", "item", "name", "columns", "template_columns"}:
            raise ListsError(f"{app} variants: lists[{i}] takes list, item, name, columns and template_columns")
        tag, cls = _selector(app, i, "list", entry.get("list"))
        item_tag, item_cls = _selector(app, i, "item", entry.get("item"))
        name = entry.get("name")
        if not _plain(name):
            raise ListsError(f"{app} variants: lists[{i}] needs a name (what the list is called: plain words, "
                             f"no markup or template syntax)")
        columns = entry.get("columns", [])
        if not isinstance(columns, list) or not all(_plain(c) for c in columns):
            raise ListsError(f"{app} variants: lists[{i}].columns is a list of column names (plain words, "
                             f"no markup or template syntax)")
        if not tag and not item_tag:
            raise ListsError(f"{app} variants: lists[{i}] names a list, an item or both")
        if tag and tag not in ("ul", "ol"):
            raise ListsError(f"{app} variants: lists[{i}].list is a ul or an ol, not {tag}")
        cols = tuple(str(c).strip() for c in columns)
        out.append(ListDecl(tag, cls, item_tag, item_cls, str(name).strip(), cols,
                            _template_columns(app, i, entry.get("template_columns"), cols)))
    return tuple(out)


def _template_columns(app: str, i: int, raw: Any, columns: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A declaration's ``template_columns`` (template name -> its column names), checked."""
    if raw is None:
        return ()
    where = f"{app} variants: lists[{i}].template_columns"
    if not isinstance(raw, dict) or not raw:
        raise ListsError(f"{where} maps template names to their column names ({{favorites.html: [Hotel, Details, "
                         f"Actions]}})")
    out = []
    for template, names in raw.items():
        if not isinstance(template, str) or not re.fullmatch(r"[\w/-]+\.html", template):
            raise ListsError(f"{where}: {template!r} is not a template's file name")
        if not isinstance(names, list) or not all(_plain(c) for c in names):
            raise ListsError(f"{where}: {template}'s columns are a list of column names (plain words, no markup "
                             f"or template syntax)")
        if len(names) != len(columns):
            raise ListsError(f"{where}: {template} names {len(names)} columns, the list has {len(columns)} "
                             f"({', '.join(columns) or 'none'}): a template names the same columns otherwise")
        out.append((template, tuple(str(c).strip() for c in names)))
    return tuple(out)


def _plain(name: Any) -> bool:
    """Whether ``name`` is plain shown words (no markup or template syntax)."""
    return isinstance(name, str) and bool(name.strip()) and not set(name) & set('{}<>"&%#')


def check_columns(app: str, lists: tuple[ListDecl, ...], sources: dict[str, str]) -> None:
    """Every declared list with ``columns`` has items of as many parts in the app's
    templates (``sources``, by name), or of one part (a message spanning the columns);
    ListsError naming the first item that has another count, or a template that
    ``template_columns`` names and the app does not have."""
    for i, decl in enumerate(lists):
        if not decl.columns:
            continue
        for template, _names in decl.template_columns:
            if template not in sources:
                raise ListsError(f"{app} variants: lists[{i}].template_columns name {template}, a template the app "
                                 f"does not have")
        for tname in sorted(sources):
            for _start, _end, _attrs, inner in _items(sources[tname], decl):
                n = len(_parts(inner))
                if n not in (1, len(decl.columns)):
                    raise ListsError(f"{app} variants: lists[{i}] has {len(decl.columns)} columns "
                                     f"({', '.join(decl.columns_in(tname))}) but an item in {tname} has {n} parts")


# ----------------------------------------------------------------------------- source tokens
_CLASS = re.compile(r'\sclass="([^"]*)"')
_LABEL = re.compile(r'\saria-label="')


def _has_class(attrs: str, cls: str) -> bool:
    m = _CLASS.search(attrs)
    return m is not None and cls in m.group(1).split()


def _close(source: str, tag: str, pos: int) -> int:
    """The end of the element of ``tag`` whose open tag ends at ``pos`` (-1: unclosed)."""
    depth = 1
    for m in TOKEN.finditer(source, pos):
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
    for tok in tokens(inner):
        m = tok.match
        text = inner[pos:m.start()]
        if html == 0 and jinja == 0 and text.strip():
            if loose < 0:
                loose = pos
            loose_shown = True
        pos = m.end()
        top = html == 0 and jinja == 0
        if tok.kind in (OPEN, LEAF) and top:   # an element or a block starts a part
            end_loose(m.start())
            start = m.start()
        if tok.kind in (OPEN, CLOSE):
            step = 1 if tok.kind == OPEN else -1
            if tok.name == JINJA:
                jinja += step
            else:
                html += step
        elif tok.kind == EXPRESSION:
            if top:
                if loose < 0:
                    loose = m.start()
                loose_shown = True
        elif tok.kind in (BRANCH, STATEMENT) and top and loose < 0:   # a statement at the top
            loose = m.start()   # ({% set x = 1 %}): with the text around
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


def _container(style: str, attrs: str, name: str, columns: tuple[str, ...] = ()) -> tuple[str, str]:
    """The open and close tags of a list's container in ``style`` (a table's header row
    names ``columns``)."""
    if style == "cards":
        return f'<section{_named(_classed(attrs, "vlist vlist-cards"), name)}>', "</section>"
    if style == "table":
        head = ("<thead><tr>" + "".join(f'<th scope="col">{c}</th>' for c in columns) + "</tr></thead>"
                if columns else "")
        return (f'<table role="table"{_named(_classed(attrs, "vlist vlist-table"), name)}>{head}<tbody>',
                "</tbody></table>")
    return f'<dl{_named(_classed(attrs, "vlist vlist-summary"), name)}>', "</dl>"


def _item(style: str, attrs: str, inner: str, columns: int = 0) -> str:
    """An item (its open tag's attributes and its content) in ``style`` (a table item of
    one part spans its ``columns``, when more than one)."""
    if style == "cards":
        return f'<article{_classed(attrs, "vitem")}>{inner}</article>'
    spans = _parts(inner)
    if style == "table":
        cells, pos = [], 0
        td = f'<td colspan="{columns}">' if len(spans) == 1 and columns > 1 else "<td>"
        for a, b in spans:
            cells.append(inner[pos:a] + td + inner[a:b] + "</td>")
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
    for m in TOKEN.finditer(source):
        if m.group(1) is None:
            continue
        if found is None and m.start() >= at:
            fors = [i for i, (kw, _) in enumerate(stack) if kw == "for"]
            if not fors:
                return None
            depth_at = fors[-1]
            found = stack[depth_at]
        if opens_block(m):
            stack.append((m.group(1), m.start()))
        elif m.group(1).startswith("end") and stack:
            stack.pop()
            if found is not None and len(stack) == depth_at:
                return found[1], m.end()
    return None


def _containers(source: str, decl: ListDecl) -> list[tuple[int, int, int, int, str]]:
    """The declared containers in ``source``: (start, open tag's end, close tag's start,
    end, attributes)."""
    out: list[tuple[int, int, int, int, str]] = []
    if not decl.tag or f"<{decl.tag}" not in source:
        return out
    for m in TOKEN.finditer(source):
        if m.group(3) != decl.tag or m.group(2) or not _has_class(m.group(4), decl.cls):
            continue
        end = _close(source, decl.tag, m.end())
        if end >= 0:
            out.append((m.start(), m.end(), end - len(f"</{decl.tag}>"), end, m.group(4)))
    return out


def _items(source: str, decl: ListDecl) -> list[tuple[int, int, str, str]]:
    """The declared items in ``source``: (start, end, open tag's attributes, content), the
    ``item`` elements first, then the containers' direct ``<li>`` children (an element
    found twice is listed once)."""
    out: list[tuple[int, int, str, str]] = []
    seen: set[int] = set()
    if decl.item_tag and f"<{decl.item_tag}" in source:
        for m in TOKEN.finditer(source):
            if m.group(3) == decl.item_tag and not m.group(2) and _has_class(m.group(4), decl.item_cls):
                end = _close(source, decl.item_tag, m.end())
                if end < 0 or m.start() in seen:
                    continue
                seen.add(m.start())
                out.append((m.start(), end, m.group(4), source[m.end():end - len(f"</{decl.item_tag}>")]))
    for _start, open_end, close_start, _end, _attrs in _containers(source, decl):
        depth = 0   # its direct <li> children written here
        for tok in tokens(source, open_end, close_start):
            t = tok.match
            if tok.name == JINJA or tok.kind not in (OPEN, CLOSE):
                continue
            if tok.kind == CLOSE:
                depth -= 1
                continue
            if depth == 0 and tok.name == "li" and t.start() not in seen:
                li_end = _close(source, "li", t.end())
                if li_end > 0:
                    seen.add(t.start())
                    out.append((t.start(), li_end, t.group(4), source[t.end():li_end - 5]))
            depth += 1
    return out


def rewrite(source: str, style: str, lists: tuple[ListDecl, ...], template: str = "") -> str:
    """A template's source (the template ``template``'s: its own column headers, when a
    declaration names them) with its declared lists in ``style`` ("" or "rows": unchanged)."""
    if style not in CSS or not lists:
        return source
    edits: dict[int, tuple[int, str]] = {}   # start -> (end, replacement)
    wraps: list[tuple[int, int, ListDecl]] = []   # a loop wrapped in a container: (start, end, its list)
    for decl in lists:
        for start, end, attrs, inner in _items(source, decl):
            if start in edits:
                continue
            edits[start] = (end, _item(style, attrs, inner, len(decl.columns)))
            if not decl.tag:
                loop = _enclosing_for(source, start)
                if loop is not None and all(w[0] != loop[0] for w in wraps):
                    wraps.append((loop[0], loop[1], decl))
        for start, open_end, close_start, end, attrs in _containers(source, decl):
            open_tag, close_tag = _container(style, attrs, decl.name, decl.columns_in(template))
            edits[start] = (open_end, open_tag)
            edits[close_start] = (end, close_tag)
    for start, end, decl in wraps:
        open_tag, close_tag = _container(style, "", decl.name, decl.columns_in(template))
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

"""A Jinja template source's tokens, classified once for the layout factors' structure walks.

The site variants' layout rewrites (:mod:`simweb.runtime.variant_lists`' parts of an item,
:mod:`simweb.runtime.variant_sections`' parent of a group, the filters placement's end of
the form's siblings in :mod:`simweb.runtime.variants`, the dropdowns' blocks in
:mod:`simweb.runtime.variant_filters`) walk a template's source, not a rendered page: its
HTML elements and its Jinja blocks nest together. :func:`tokens` reads the source once, in
order, and says what each token does to that nesting; each walk keeps its own stack or
counters over these kinds, so they all agree on what opens and what closes.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

# A template's tokens: Jinja expressions, statements (group 1: the keyword), comments,
# HTML comments and tags (group 2: "/" for a closing tag; 3: the name; 4: the attributes,
# which may hold Jinja).
TOKEN = re.compile(r"\{\{.*?\}\}|\{%-?\s*(\w+).*?-?%\}|\{#.*?#\}|<!--.*?-->"
                   r"|<(/?)([a-zA-Z][\w-]*)((?:[^>{]|\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}|\{(?![{%#]))*)>", re.S)
#: The HTML elements that have no content and no end tag.
VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param", "source", "track",
                  "wbr"})
#: The Jinja statements that open a block closed by ``{% end<keyword> %}`` (and ``set``
#: without ``=``: a block assignment).
BLOCKS = frozenset({"if", "for", "with", "filter", "call", "block", "macro", "autoescape", "raw"})
#: The name of a Jinja block in a :class:`Token` (an element's is its tag).
JINJA = "{%"

#: The kinds of :class:`Token`.
OPEN = "open"            # an element's open tag, a statement opening a Jinja block
CLOSE = "close"          # an element's end tag, a block's ``{% end... %}``
BRANCH = "branch"        # ``{% else %}``, ``{% elif %}``: the block goes on in a branch of its own
LEAF = "leaf"            # a void or self-closing element (``<input>``, ``<br/>``)
STATEMENT = "statement"  # any other statement (``{% set x = 1 %}``, ``{% include %}``)
EXPRESSION = "expression"
COMMENT = "comment"      # a Jinja or an HTML comment


class Token(NamedTuple):
    """One token of a template source: its kind, its element's tag (lowercase) or
    :data:`JINJA` for a statement ("" for an expression or a comment), and its match of
    :data:`TOKEN` (its span, and its groups for a walk that reads the keyword or the
    attributes)."""

    kind: str
    name: str
    match: re.Match[str]


def opens_block(m: re.Match[str]) -> bool:
    """Whether a statement token (a :data:`TOKEN` match with a keyword) opens a Jinja block."""
    kw = m.group(1)
    return kw in BLOCKS or (kw == "set" and "=" not in m.group(0))


def classify(m: re.Match[str]) -> Token:
    """A :data:`TOKEN` match as a :class:`Token`."""
    if m.group(3) is not None:   # an HTML tag
        name = m.group(3).lower()
        if name in VOID:   # (an end tag of one, ``</br>``, closes nothing either)
            return Token(LEAF, name, m)
        if m.group(2):
            return Token(CLOSE, name, m)
        return Token(LEAF if m.group(4).rstrip().endswith("/") else OPEN, name, m)
    kw = m.group(1)
    if kw is not None:   # a statement
        if opens_block(m):
            return Token(OPEN, JINJA, m)
        if kw in ("else", "elif"):
            return Token(BRANCH, JINJA, m)
        if kw.startswith("end"):
            return Token(CLOSE, JINJA, m)
        return Token(STATEMENT, JINJA, m)
    if m.group(0).startswith(("{#", "<!--")):
        return Token(COMMENT, "", m)
    return Token(EXPRESSION, "", m)


def tokens(source: str, pos: int = 0, endpos: int | None = None) -> Iterator[Token]:
    """The tokens of ``source`` from ``pos`` (up to ``endpos``), in order, classified."""
    found = TOKEN.finditer(source, pos) if endpos is None else TOKEN.finditer(source, pos, endpos)
    for m in found:
        yield classify(m)

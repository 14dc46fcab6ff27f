"""The messages a spec writes, in a site variant's words (simweb.runtime.variants).

A flash message or a refusal ("Issue #7 was created.", "Title is required.") is written
by the spec when an event runs and kept in the state as plain text, the same on every
variant: the state, and every verdict read from it, never depend on a variant's words.
Where a page shows the message (the site's message line, a refused field's inline
message, an error page, ``info["site_error"]``) it goes through :func:`segments` and the
variant's phrases (:meth:`simweb.runtime.variants.Site.message`).

The state keeps only the text, so the text is split again into the spec's own words and
the values its expressions wrote (a product's name, a typed title: world data and user
content, never rewritten). The split reads every message the spec declares (events'
``flash``, guards', pages' and permissions' ``error``, and each parameter's refusals,
:meth:`simweb.core.specmodel.ParamSpec.messages`) as a *shape*: its literal text with a
hole for each expression. An expression whose value is itself written by the spec (a
string constant, ``'a' + x + 'b'``, ``'x' if c else 'y'``, ``x or 'y'``, an f-string) is
read into the shape (one shape per branch), so the words in a conditional message are
the spec's words too. A text is split by the shape that matches it whole with the most
literal characters (the first declared on a tie): deterministic, a pure function of the
spec and the text. The messages an app's functions declare
(:meth:`simweb.core.functions.FunctionTable.message`: text with ``{name}`` gaps) are
shapes too, and so is a page's title (split by its own page's shapes,
:func:`simweb.runtime.variants.page_context`). A text no shape matches (an engine error)
is shown as it is.

Splitting is memoised per app by text and rewriting per variant by text (bounded memos),
so a step pays a dictionary lookup for a message it has shown before.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from ..core.specmodel import Message, split_message
from .memo import memoised

#: One piece of a shown message: (the spec's own words?, its text).
Segment = tuple[bool, str]

#: A shape's pieces: literal text, or None for a value the message's expression writes.
_Shape = tuple["str | None", ...]

#: At most this many shapes per message (the branches of its conditionals multiply).
_MAX_SHAPES = 32
_NO_ENUMS: Mapping[str, Sequence[str]] = {}


def _alternatives(node: ast.AST, enums: Mapping[str, Sequence[str]] = _NO_ENUMS) -> list[list[str | None]]:
    """What an expression can write, as pieces: literal text for what the expression
    itself spells out (string constants, through ``+``, conditionals, ``or``, f-strings,
    and the values the spec declares for an enum parameter named in ``enums``:
    ``query.kind``), None for a value it reads (one alternative per branch)."""
    if (enums and isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
            and f"{node.value.id}.{node.attr}" in enums):
        values: list[list[str | None]] = [[v] for v in enums[f"{node.value.id}.{node.attr}"]]
        return values[:_MAX_SHAPES]
    if isinstance(node, ast.Constant):
        return [[node.value]] if isinstance(node.value, str) else [[None]]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _alternatives(node.left, enums), _alternatives(node.right, enums)
        return [a + b for a in left for b in right][:_MAX_SHAPES]
    if isinstance(node, ast.IfExp):
        return (_alternatives(node.body, enums) + _alternatives(node.orelse, enums))[:_MAX_SHAPES]
    if isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or):
        out: list[list[str | None]] = []
        for v in node.values:
            out += _alternatives(v, enums)
        return out[:_MAX_SHAPES]
    if isinstance(node, ast.JoinedStr):
        pieces: list[list[str | None]] = [[]]
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                pieces = [p + [v.value] for p in pieces]
            else:
                pieces = [p + [None] for p in pieces]
        return pieces
    return [[None]]


def _normal(pieces: list[str | None]) -> _Shape:
    """Adjacent literals joined, adjacent holes one hole, empty literals dropped."""
    out: list[str | None] = []
    for p in pieces:
        if p == "":
            continue
        if out and p is not None and out[-1] is not None:
            out[-1] = out[-1] + p
        elif not (out and p is None and out[-1] is None):
            out.append(p)
    return tuple(out)


def message_shapes(source: str, enums: Mapping[str, Sequence[str]] = _NO_ENUMS) -> list[_Shape]:
    """The shapes of a message of the spec language (``source``: its text with
    ``{expression}`` parts), each branch of its conditionals one shape (and each value of
    an enum parameter ``enums`` names: a page title's ``{query.kind}``)."""
    shapes: list[list[str | None]] = [[]]
    for kind, piece in split_message(source):
        if kind == "text":
            shapes = [s + [piece] for s in shapes]
            continue
        try:
            alts = _alternatives(ast.parse(piece.strip(), mode="eval").body, enums)
        except SyntaxError:   # (the spec compiled it: not reached)
            alts = [[None]]
        shapes = [s + a for s in shapes for a in alts][:_MAX_SHAPES]
    return [_normal(s) for s in shapes]


def _spec_messages(spec: Any) -> Iterator[str]:
    """The source of every message ``spec`` declares (``{expression}`` parts; a
    parameter's refusals, which are literal text, with their braces doubled)."""
    def of(message: Any) -> Iterator[str]:
        message = getattr(message, "message", message)   # a permission's own message
        if isinstance(message, Message):
            yield message.source

    def literal(text: str) -> str:
        return text.replace("{", "{{").replace("}", "}}")

    def refusals(param: Any) -> Iterator[str]:
        for text in param.messages():
            if param.type == "enum" and text == param.message("values"):
                # the values a field takes are what a form sends, not words: a hole
                yield literal(text[:-len(", ".join(param.values)) - 1]) + "{values}."
            else:
                yield literal(text)

    for perm in spec.permissions.values():
        yield from of(perm.error)
    for page in spec.pages.values():
        for g in page.require:
            yield from of(g.error)
        for p in page.query.values():
            yield from refusals(p)
    for event in spec.events.values():
        yield from of(event.flash)
        for g in event.guards:
            yield from of(g.error)
        for p in event.params.values():
            yield from refusals(p)


class Shapes:
    """The shapes of every message an app's spec declares (none for ``spec`` None) and of
    ``extra`` message sources (the summaries of its confirmation step, the messages its
    functions declare, a page's title, whose ``enums`` are its query's enum parameters):
    splits a message's text into the spec's words and
    the values written into it (:meth:`segments`)."""

    def __init__(self, spec: Any, extra: Iterable[str] = (), enums: Mapping[str, Sequence[str]] = _NO_ENUMS):
        self.literal: dict[str, None] = {}   # messages without a hole: an exact lookup
        patterns: dict[_Shape, int] = {}     # shape -> its literal length (first declared kept)
        for source in [*(_spec_messages(spec) if spec is not None else ()), *extra]:
            for shape in message_shapes(source, enums):
                if not shape:
                    continue
                if all(p is not None for p in shape):
                    self.literal["".join(shape)] = None   # type: ignore[arg-type]
                elif any(p is not None and any(c.isalpha() for c in p) for p in shape):
                    patterns.setdefault(shape, sum(len(p) for p in shape if p is not None))
        # most literal text first (a stable sort: the spec's order on a tie)
        ordered = sorted(patterns, key=lambda s: -patterns[s])
        self.patterns: list[tuple[re.Pattern[str], _Shape]] = [
            (re.compile("".join("(.*?)" if p is None else re.escape(p) for p in s), re.S), s) for s in ordered]
        self._memo: dict[str, tuple[Segment, ...]] = {}

    def segments(self, text: str) -> tuple[Segment, ...]:
        """``text`` (a message kept in the state) as (spec's words?, text) pieces: the
        pieces the matching shape spells out are the spec's, the values its expressions
        wrote are not. A text no shape matches is one piece, not the spec's. Memoised."""
        hit = self._memo.get(text)
        return hit if hit is not None else memoised(self._memo, text, self._split)

    def _split(self, text: str) -> tuple[Segment, ...]:
        if text in self.literal:
            return ((True, text),)
        for pattern, shape in self.patterns:
            m = pattern.fullmatch(text)
            if m is None:
                continue
            out: list[Segment] = []
            values = iter(m.groups())
            for p in shape:
                piece = (True, p) if p is not None else (False, next(values))
                if piece[1]:
                    out.append(piece)
            return tuple(out)
        return ((False, text),)


__all__ = ["Segment", "Shapes", "message_shapes"]

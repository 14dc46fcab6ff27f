"""Read BrowserGym's flattened AX-tree text back into nodes.

Agents see a page as the text BrowserGym's ``flatten_axtree_to_str`` prints (and that
simweb prints for its own pages and for any site behind :class:`simweb.live.web.WebEnv`)::

    RootWebArea 'Shop', focused
    \\t[search-q] searchbox 'Search products' value='lamp', focused
    \\t[ship] combobox 'Shipping' value='Standard', hasPopup='menu', expanded=False
    \\t\\t[o1] option 'Standard', selected=True
    \\tStaticText 'Subtotal: $12.00'

One TAB per depth level, ``[bid] `` when the node has a bid, the role, the name as
Python's ``repr()`` (single quotes, or double quotes when the name holds a single
quote, backslash escapes otherwise), then ``value=<repr>`` after a space and the
properties as ``, key`` or ``, key=value`` items. :func:`parse_axtree` reads that back,
without evaluating anything but string literals (:func:`ast.literal_eval` on one quoted
token), and tolerates lines it does not understand (they are skipped).
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AXNode", "parse_axtree", "read_quoted", "subtree"]

_HEAD = re.compile(r"(\t*)(?:\[([^\]]*)\]\s+)?([A-Za-z][\w-]*)")
_KEY = re.compile(r"[A-Za-z_][\w-]*")


@dataclass(frozen=True)
class AXNode:
    """One line of the flattened tree."""

    index: int                      # position among the parsed nodes (document order)
    depth: int                      # number of leading TABs
    bid: str | None                 # the element's bid, when the line has one
    role: str
    name: str
    value: str | None = None
    props: dict[str, Any] = field(default_factory=dict, compare=False)
    parent: int | None = None       # index of the nearest shallower node above

    @property
    def disabled(self) -> bool:
        return self.props.get("disabled") in (True, "True", "true")


def read_quoted(text: str, pos: int) -> tuple[str, int] | None:
    """The Python string literal starting at ``text[pos]`` and the position after it,
    or None when there is none (no quote there, or it never closes)."""
    if pos >= len(text) or text[pos] not in "'\"":
        return None
    quote = text[pos]
    i = pos + 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == quote:
            try:
                value = ast.literal_eval(text[pos:i + 1])
            except (ValueError, SyntaxError):
                return None
            return (value, i + 1) if isinstance(value, str) else None
        i += 1
    return None


def _read_value(text: str, pos: int) -> tuple[Any, int]:
    """A property value: a quoted string, or a bare token up to the next ``, ``."""
    quoted = read_quoted(text, pos)
    if quoted is not None:
        return quoted
    end = text.find(", ", pos)
    end = len(text) if end < 0 else end
    raw = text[pos:end].strip()
    value: Any = {"True": True, "False": False}.get(raw, raw)
    return value, end


def _read_props(text: str, pos: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    while pos < len(text):
        if not text.startswith(",", pos):
            break
        pos += 1
        while pos < len(text) and text[pos] == " ":
            pos += 1
        m = _KEY.match(text, pos)
        if not m:
            break
        key = m.group(0)
        pos = m.end()
        if text.startswith("=", pos):
            props[key], pos = _read_value(text, pos + 1)
        else:
            props[key] = True
    return props


def parse_axtree(text: str) -> list[AXNode]:
    """Every node of a flattened AX tree, in document order, with its parent."""
    nodes: list[AXNode] = []
    stack: list[AXNode] = []      # the open ancestors, shallowest first
    for line in text.splitlines():
        m = _HEAD.match(line)
        if not m:
            continue
        depth = len(m.group(1))
        pos = m.end()
        name = ""
        if line.startswith(" ", pos):
            quoted = read_quoted(line, pos + 1)
            if quoted is not None:
                name, pos = quoted
        value = None
        if line.startswith(" value=", pos):
            quoted = read_quoted(line, pos + 7)
            if quoted is not None:
                value, pos = quoted
        props = _read_props(line, pos)
        while stack and stack[-1].depth >= depth:
            stack.pop()
        node = AXNode(len(nodes), depth, m.group(2), m.group(3), name, value, props,
                      stack[-1].index if stack else None)
        nodes.append(node)
        stack.append(node)
    return nodes


def subtree(nodes: list[AXNode], root: AXNode) -> list[AXNode]:
    """``root`` and its descendants (the contiguous deeper lines after it)."""
    out = [root]
    for n in nodes[root.index + 1:]:
        if n.depth <= root.depth:
            break
        out.append(n)
    return out

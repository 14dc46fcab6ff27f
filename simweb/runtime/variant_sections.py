"""The ``section_order`` layout factor of site variants: the order of a page's sections, as
real sites order a product page's price, reviews and buy box, or an issue page's details
and activity, differently.

One engine mechanism, by template-source rewriting (built once per process and variant
with the rest of the variant's templates, :meth:`simweb.runtime.variants.Site.template_source`;
nothing is done per step); an app only declares its reorderable groups in
``apps/<app>/variants.yaml``::

    sections:
      - {template: issue.html, sections: [article.issue, aside.sidebar, section.links, section.activity]}
      - {template: hotel.html, sections: ['span[bid=hotel-rating]', 'p[bid=hotel-policy]', h2]}

Each entry of ``sections`` names where a *section* starts, by a selector (``tag``,
``tag.class``, ``tag[attr=value]`` or ``tag.class[attr=value]``) that matches exactly one
element of the template. The group's *parent* is the innermost element or Jinja block
branch around every named element; its content is split into *parts* as the
``list_style`` factor splits an item (:func:`simweb.runtime.variant_lists._parts`: a
top-level element, a whole Jinja block, a run of text and expressions; a part is never
split). A section is the part holding its named element and the parts after it, up to
the next section's part (the last section: to the end of the parent). What comes before
the first section (a heading) stays first. The parts between sections that show nothing
(``{% set %}`` statements, comments) go, in their order, before the first section, so a
section that reads a name set before it still finds it wherever it moves. Nothing inside
a section changes: every element keeps its bid, every form its fields, every conditional
its markup.

The options (option 0 is today's order), for a group of ``k`` sections numbered 0 to k-1:

* ``standard``: 0, 1, ..., k-1 (today's page);
* ``reversed``: k-1, ..., 1, 0;
* ``rotated``: the first section moves last: 1, 2, ..., k-1, 0;
* ``interleaved`` (held out): the even-numbered sections first, then the odd-numbered,
  each in today's order (1, 3, 5, ..., 0, 2, 4, ...): for every k >= 3 an order no
  train option gives (a group has at least three sections, so that it does).

Declarations are checked when the app's catalogue loads (:func:`check`): a selector that
matches no element or several, a group of fewer than three sections, two sections in one
part, sections not in the page's order, or a group whose parent's content would be split
across a Jinja block or an element, is refused with one line (:class:`SectionsError`).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .template_tokens import BRANCH, CLOSE, JINJA, LEAF, OPEN, tokens
from .variant_lists import _parts

#: The factor's options, in order (option 0 is today's site); the held-out one's index.
OPTIONS = ("standard", "reversed", "rotated", "interleaved")
HELD_OUT = 3
#: The fewest sections a group has: with two, every order but today's is the reversed one.
MIN_SECTIONS = 3


class SectionsError(ValueError):
    """A malformed ``sections`` section of a variants file, or one its templates do not match."""


_SELECTOR = re.compile(r'([a-z][a-z0-9]*)(?:\.([A-Za-z_][\w-]*))?(?:\[([a-z][\w-]*)=(?:"([^"<>{}]*)"|([^\]"<>{} ]*))\])?')


@dataclass(frozen=True)
class Selector:
    """An element of a template: its tag, and a class token and an attribute's exact value
    it has ("": any)."""

    tag: str
    cls: str = ""
    attr: str = ""
    value: str = ""

    def __str__(self) -> str:
        return (self.tag + (f".{self.cls}" if self.cls else "")
                + (f'[{self.attr}="{self.value}"]' if self.attr else ""))

    def matches(self, tag: str, attrs: str) -> bool:
        """Whether an open tag (its name and its attributes' source) is this element."""
        if tag.lower() != self.tag:
            return False
        if self.cls:
            m = re.search(r'\sclass="([^"]*)"', attrs)
            if m is None or self.cls not in m.group(1).split():
                return False
        if self.attr:
            m = re.search(rf'\s{re.escape(self.attr)}="([^"]*)"', attrs)
            if m is None or m.group(1) != self.value:
                return False
        return True


@dataclass(frozen=True)
class Group:
    """One declared group: the template and where each of its sections starts, in today's order."""

    template: str
    sections: tuple[Selector, ...]


def order(option: str, k: int) -> list[int]:
    """The sections of a group of ``k``, by today's index, in ``option``'s order."""
    today = list(range(k))
    if option == "reversed":
        return today[::-1]
    if option == "rotated":
        return today[1:] + today[:1]
    if option == "interleaved":
        return today[1::2] + today[0::2]
    return today


def _selector(app: str, i: int, raw: Any) -> Selector:
    m = _SELECTOR.fullmatch(raw.strip()) if isinstance(raw, str) else None
    if m is None:
        raise SectionsError(f"{app} variants: sections[{i}]: a section is tag, tag.class or tag[attr=value] "
                            f"(section.reviews, 'p[bid=product-price]'), not {raw!r}")
    return Selector(m.group(1), m.group(2) or "", m.group(3) or "", m.group(4) if m.group(4) is not None
                    else (m.group(5) or ""))


def parse(app: str, raw: Any) -> tuple[Group, ...]:
    """A variants file's ``sections`` (absent: none; SectionsError when malformed). What
    the templates say of it is :func:`check`'s."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise SectionsError(f"{app} variants: sections is a list of {{template, sections}} entries")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, dict) or set(entry) != {"template", "sections"}:
            raise SectionsError(f"{app} variants: sections[{i}] takes a template and its sections")
        template = entry["template"]
        if not isinstance(template, str) or not re.fullmatch(r"[\w-]+\.html", template):
            raise SectionsError(f"{app} variants: sections[{i}].template is a template's file name, not {template!r}")
        secs = entry["sections"]
        if not isinstance(secs, list) or len(secs) < MIN_SECTIONS:
            raise SectionsError(f"{app} variants: sections[{i}] ({template}) names at least {MIN_SECTIONS} sections "
                                f"(with two, every other order is the reversed one)")
        out.append(Group(template, tuple(_selector(app, i, s) for s in secs)))
    return tuple(out)


# ----------------------------------------------------------------------------- the template
def _find(source: str, sel: Selector) -> list[int]:
    """Where the open tags of the elements ``sel`` matches start in ``source``."""
    return [t.match.start() for t in tokens(source)
            if t.kind in (OPEN, LEAF) and t.name != JINJA and not t.match.group(2)
            and sel.matches(t.name, t.match.group(4))]


def _chain(source: str, at: int) -> list[tuple[int, str]]:
    """The containers around position ``at``, outermost first: each the start of its
    content and its kind (an element's tag, or "{%" for a Jinja block's branch)."""
    stack: list[tuple[int, str]] = []
    for tok in tokens(source, 0, at):
        if tok.kind == OPEN:
            stack.append((tok.match.end(), tok.name))
        elif tok.kind in (CLOSE, BRANCH):
            # close the innermost such container (and anything left open inside it)
            for j in range(len(stack) - 1, -1, -1):
                if stack[j][1] == tok.name:
                    del stack[j:]
                    break
            if tok.kind == BRANCH:   # the next branch is a container of its own
                stack.append((tok.match.end(), JINJA))
    return stack


def _content_end(source: str, start: int) -> int:
    """Where the content that starts at ``start`` ends: the first end tag, ``{% else %}``,
    ``{% elif %}`` or block end that closes nothing opened inside it (the end of the source
    when none does). LIFO: an end tag that meets a Jinja block still open (or the other way
    round) ends it too; :func:`_balanced` then refuses the content."""
    depth = 0
    for tok in tokens(source, start):
        if tok.kind == OPEN:
            depth += 1
        elif tok.kind in (CLOSE, BRANCH):
            if not depth:
                return tok.match.start()
            depth -= tok.kind == CLOSE
    return len(source)


def _balanced(text: str) -> bool:
    """Whether every element and Jinja block opened in ``text`` closes in it, innermost
    first, and no branch statement (``{% else %}``) or close is left over at its top."""
    stack: list[str] = []
    for tok in tokens(text):
        if tok.kind == OPEN:
            stack.append(tok.name)
        elif tok.kind == CLOSE:
            if not stack or stack.pop() != tok.name:
                return False
        elif tok.kind == BRANCH and (not stack or stack[-1] != JINJA):
            return False
    return not stack


@dataclass(frozen=True)
class _Resolved:
    """A group found in a template's source: its parent's content span, the content's
    parts and the index of the part each section starts at."""

    start: int
    end: int
    parts: tuple[tuple[int, int], ...]
    starts: tuple[int, ...]


def resolve(source: str, group: Group, app: str = "") -> _Resolved:
    """Where ``group``'s sections are in ``source`` (SectionsError when they are not
    sections of one parent, see the module docstring)."""
    where = f"{app + ' variants: ' if app else ''}sections of {group.template}"
    positions = []
    for sel in group.sections:
        found = _find(source, sel)
        if len(found) != 1:
            raise SectionsError(f"{where}: {sel} matches {'no element' if not found else f'{len(found)} elements'} "
                                f"(a section names exactly one)")
        positions.append(found[0])
    if positions != sorted(positions):
        raise SectionsError(f"{where}: the sections are not in the page's order ({', '.join(map(str, group.sections))})")
    chains = [_chain(source, p) for p in positions]
    common = 0
    while all(len(c) > common and c[common] == chains[0][common] for c in chains):
        common += 1
    start, kind = chains[0][common - 1] if common else (0, "")
    end = _content_end(source, start)
    content = source[start:end]
    closer = source[end:end + 2 + len(kind)]
    if common and (closer != f"</{kind}" if kind != "{%" else not closer.startswith("{%")) or not _balanced(content):
        raise SectionsError(f"{where}: {group.sections[0]}'s parent would be split across a Jinja block or an "
                            f"element (its sections must be whole parts of one element or block)")
    parts = _parts(content)
    starts = []
    for sel, p in zip(group.sections, positions):
        hit = [i for i, (a, b) in enumerate(parts) if start + a <= p < start + b]
        if not hit:
            raise SectionsError(f"{where}: {sel} is in no part of its parent")
        starts.append(hit[0])
    if len(set(starts)) != len(starts):
        raise SectionsError(f"{where}: two sections ({', '.join(map(str, group.sections))}) are in one part of "
                            f"their parent (an element or a Jinja block holds both)")
    return _Resolved(start, end, tuple(parts), tuple(starts))


def _reorder(source: str, found: _Resolved, option: str) -> str:
    """``source`` with the sections ``found`` in ``option``'s order."""
    content = source[found.start:found.end]
    parts, starts = found.parts, found.starts
    ends = [*(starts[1:]), len(parts)]
    runs = [content[parts[s][0]:parts[e - 1][1]] for s, e in zip(starts, ends)]
    gaps = [content[parts[e - 1][1]:parts[s][0]].strip() for e, s in zip(ends[:-1], starts[1:])]
    lead = "".join(g + "\n" for g in gaps if g)
    body = lead + "\n".join(runs[i] for i in order(option, len(runs)))
    new = content[:parts[starts[0]][0]] + body + content[parts[-1][1]:]
    return source[:found.start] + new + source[found.end:]


def rewrite(source: str, template: str, option: str, groups: tuple[Group, ...]) -> str:
    """A template's source with its declared groups' sections in ``option``'s order ("" or
    "standard": unchanged). Groups apply in their declared order, each found again in the
    source the ones before it left (a group inside another's section moves with it)."""
    if option not in OPTIONS[1:]:
        return source
    for group in groups:
        if group.template == template:
            source = _reorder(source, resolve(source, group), option)
    return source


def check(app: str, groups: tuple[Group, ...], read: Callable[[str], str | None]) -> None:
    """Every group against its template (``read(name)``: a template's source, None when
    the app has none), in every option: SectionsError (one line) for the first that does
    not hold."""
    for name in dict.fromkeys(g.template for g in groups):
        source = read(name)
        if source is None:
            raise SectionsError(f"{app} variants: sections name {name}, a template the app does not have")
        for option in OPTIONS[1:]:
            out = source
            for group in groups:
                if group.template == name:
                    out = _reorder(out, resolve(out, group, app), option)

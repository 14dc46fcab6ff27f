"""The filters factor's ``dropdowns`` place (simweb.runtime.variants, docs/variants.md "The
filters"): a results page's filter form as a bar of closed dropdowns, as real sites put
their facets in a row of menus above the results.

One rewrite of the form's template source (built once per process and variant with the
rest of the variant's templates): every top-level *field group* of the form, that is

* a ``<fieldset>`` (its name: its ``<legend>``'s text),
* a ``<p>`` with a visible control (``<input>`` other than hidden, ``<select>``,
  ``<textarea>``; its name: its first ``<label>``'s text), or
* a ``<label>`` and the controls that follow it (cms's admin filters; its name: the label's
  text),

goes, whole, in ``<details bid="filters-drop-N-box" class="vdrop" name="filters-drops"><summary
bid="filters-drop-N">NAME</summary>GROUP</details>``, closed. The dropdowns share their
``name``: HTML's exclusive accordion, so opening one closes the one open, as a bar of
menus does (Chromium since 120; the in-process browser models it,
:meth:`simweb.web.browsing.SimBrowser._toggle_details`). A Jinja block of the form
(``{% if %}``, ``{% for %}``) with a visible control has its own groups rewritten in it; a
group in a loop's body takes the loop's index in its bids (``filters-drop-N-{{ loop.index
}}``), so every bid of the page is unique. N counts the groups in the form's source order
from 1, the same on every page the template draws. What is not a group (hidden fields, the
submit button, a link such as "Clear") stays in the bar, shown. Nothing inside a group
changes: every field keeps its bid, name and value, and the form submits the same query.
The summaries' words are the labels' as the page shows them (the rewrite runs after the
variant's phrases).
"""
from __future__ import annotations

import re

from .template_tokens import CLOSE, JINJA, OPEN, TOKEN, opens_block, tokens
from .variant_lists import _parts

#: The CSS of the bar (the form, a flex row above the results) and its dropdowns.
CSS = (".vfilters-dropdowns>form.filters{display:flex!important;flex-wrap:wrap;gap:.5rem;align-items:flex-start}"
       ".vfilters-dropdowns>form.filters>*{margin:0}"
       "details.vdrop>summary{cursor:pointer;padding:.2rem .6rem;border:1px solid currentColor;border-radius:3px}"
       "details.vdrop[open]{border:1px solid #ccc;border-radius:3px;padding:0 .4rem .4rem 0}")

#: The bid prefix of a dropdown's summary (its details: the summary's bid and ``-box``).
DROP = "filters-drop-"
#: The name every dropdown of the bar shares: an exclusive accordion (HTML's ``<details
#: name>``), so opening one closes the one open, as a bar of menus does.
GROUP = "filters-drops"

_CONTROL = re.compile(r"<(?:select|textarea)\b|<input\b(?![^>]*\stype=\"hidden\")", re.I)
_OPEN = re.compile(r"<([a-zA-Z][\w-]*)")


def _tag(part: str) -> str:
    """The element name a part opens with ("" for a Jinja block or text)."""
    m = _OPEN.match(part)
    return m.group(1).lower() if m else ""


def _text(source: str) -> str:
    """The shown text of a piece of template source: its HTML tags dropped (Jinja kept),
    its blanks collapsed."""
    return " ".join(TOKEN.sub(lambda m: " " if m.group(3) is not None else m.group(0), source).split())


def _inner(part: str, tag: str) -> str:
    """The content of the first ``<tag>`` element of ``part`` ("" when none)."""
    m = re.search(rf"<{tag}\b[^>]*>(.*?)</{tag}>", part, re.S | re.I)
    return m.group(1) if m else ""


class _Bar:
    """One form's rewrite: numbers its groups in source order."""

    def __init__(self) -> None:
        self.count = 0

    def drop(self, group: str, name: str, suffix: str) -> str:
        self.count += 1
        bid = f"{DROP}{self.count}{suffix}"
        return (f'<details bid="{bid}-box" class="vdrop" name="{GROUP}"><summary bid="{bid}">{name}</summary>'
                f"{group}</details>")

    def groups(self, inner: str, suffix: str) -> str:
        """``inner`` (a form's content or a block's body) with its field groups in dropdowns."""
        spans = _parts(inner)
        out: list[str] = []
        pos = 0
        i = 0
        while i < len(spans):
            a, b = spans[i]
            part = inner[a:b]
            tag = _tag(part)
            out.append(inner[pos:a])
            pos = b
            i += 1
            if tag == "fieldset":
                out.append(self.drop(part, _text(_inner(part, "legend")), suffix))
            elif tag == "p" and _CONTROL.search(part):
                out.append(self.drop(part, _text(_inner(part, "label")), suffix))
            elif tag == "label":   # a label and the controls after it
                end = b
                while i < len(spans) and _tag(inner[spans[i][0]:spans[i][1]]) in ("input", "select", "textarea") \
                        and _CONTROL.match(inner[spans[i][0]:spans[i][1]]):
                    end = spans[i][1]
                    i += 1
                group = inner[a:end]
                pos = end
                out.append(self.drop(group, _text(_inner(part, "label")), suffix) if _CONTROL.search(group)
                           else group)
            elif not tag and part.startswith("{%") and _CONTROL.search(part):
                out.append(self.block(part, suffix))
            else:
                out.append(part)
        out.append(inner[pos:])
        return "".join(out)

    def block(self, part: str, suffix: str) -> str:
        """A Jinja block with its body's groups in dropdowns (a loop's index in their bids)."""
        first = TOKEN.match(part)
        if first is None or first.group(1) is None or not opens_block(first):
            return part
        kw = first.group(1)
        depth, end = 0, -1
        for tok in tokens(part):
            if tok.name != JINJA:
                continue
            if tok.kind == OPEN:
                depth += 1
            elif tok.kind == CLOSE:
                depth -= 1
                if not depth:
                    end = tok.match.start()
        if end < 0:
            return part
        inner_suffix = suffix + "-{{ loop.index }}" if kw == "for" else suffix
        return part[:first.end()] + self.groups(part[first.end():end], inner_suffix) + part[end:]


def dropdowns(form: str) -> str:
    """A filter form's source (``<form ...>...</form>``) with its field groups in closed
    dropdowns (see the module docstring)."""
    m = TOKEN.match(form)
    close = form.rfind("</form>")
    if m is None or m.group(3) is None or close < m.end():
        return form
    return form[:m.end()] + _Bar().groups(form[m.end():close], "") + form[close:]

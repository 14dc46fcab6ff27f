"""Flow options of site variants (:mod:`simweb.runtime.variants`): where the site's
messages are shown.

A form the site refuses ("Please enter a valid email", "This coupon has expired") and an
action it confirms ("Added to your cart") leave a message the next page shows: today
above the page's content. The ``message_position`` engine factor moves it, in the
templates' source when a variant's templates are built (once per process), to the end of
the page's content (below the forms, where a long form's submit button is) or to the very
top of the page, above the site's header. The message keeps its element, bid, role
(``alert`` for an error, ``status`` otherwise) and words; only where it sits in the page,
and so in the AX tree's order, changes. Presentation only: the spec's transitions, the
state, tasks and verdicts are the same on every option.
"""
from __future__ import annotations

import re

#: The message line of every app's base templates (one ``{% if flash %}`` element).
_FLASH = re.compile(r'[ \t]*{% if flash %}<div\b[^>]*\bclass="flash [^>]*>{{ flash\.message }}</div>{% endif %}\n?')
_BODY = re.compile(r"<body\b[^>]*>\n?")

#: Option labels: "" is today's place (above the page's content).
POSITIONS = ("top", "bottom", "header")


def move_messages(source: str, where: str) -> str:
    """A template's source with its message element moved to ``where`` ("bottom": the
    end of ``<main>``; "header": the top of ``<body>``); unchanged for a template without
    one, or without the place to move it to."""
    m = _FLASH.search(source)
    if m is None or where not in ("bottom", "header"):
        return source
    line = m.group(0).strip() + "\n"
    out = source[:m.start()] + source[m.end():]
    if where == "bottom" and "</main>" in out:
        return out.replace("</main>", line + "</main>", 1)
    body = _BODY.search(out)
    if where == "header" and body is not None:
        return out[:body.end()] + ("" if body.group(0).endswith("\n") else "\n") + line + out[body.end():]
    return source


__all__ = ["POSITIONS", "move_messages"]

"""Flow options of site variants (:mod:`simweb.runtime.variants`): where the site's
messages are shown, how a form marks its required or optional fields, and where a refused
form's message about one field goes.

A form the site refuses ("Please enter a valid email", "This coupon has expired") and an
action it confirms ("Added to your cart") leave a message the next page shows: today
above the page's content. The ``message_position`` engine factor moves it, in the
templates' source when a variant's templates are built (once per process), to the end of
the page's content (below the forms, where a long form's submit button is) or to the very
top of the page, above the site's header. The message keeps its element, bid, role
(``alert`` for an error, ``status`` otherwise) and words; only where it sits in the page,
and so in the AX tree's order, changes. Presentation only: the spec's transitions, the
state, tasks and verdicts are the same on every option.

The ``field_markers`` engine factor marks the label of each field of a form that changes
something: "*" or "(required)" after a required field's label, or "(optional)" after an
optional one's (:func:`mark_fields`, in the templates' source, once per process). The
marker is text of the label, so it is part of the field's accessible name ("Title *"), as
Chromium computes it. Which fields are required: the ``required`` attribute, and the spec
(the event the form posts to requires the parameter).

The ``field_errors`` engine factor puts a refused form's message beside the field it is
about (:func:`inline_error`, on the rendered page of a refusal only): the spec says which
field (a parameter that does not parse, or a guard's ``field``), the engine keeps it in the
tab's message (``flash.field`` and ``flash.form``, on such a variant only), and a message
about no field, or about a field the page does not show, stays where the messages go.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import markupsafe

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


# ----------------------------------------------------------------------------- field markers
#: ``field_markers`` options: "" (today: no marker), a "*" after a required field's label,
#: "(required)" after it, or "(optional)" after an optional field's label.
MARKERS = ("none", "asterisk", "required", "optional")
_MARKER_TEXT = {"asterisk": "*", "required": "(required)", "optional": "(optional)"}

_JINJA = r"(?:{{.*?}}|{%.*?%}|{#.*?#})"
_CONTROL = re.compile(r"<(input|textarea|select)\b((?:" + _JINJA + r"|[^>{])*)>", re.S)
_FORM_TAG = re.compile(r"<form\b((?:" + _JINJA + r"|[^>{])*)>", re.S)
_LABEL_SPAN = re.compile(r"<label\b((?:" + _JINJA + r"|[^>{])*)>(.*?)</label>", re.S)
_IF_REQUIRED = re.compile(r"{%-?\s*if\s+(.*?)\s*-?%}\s*required\s*{%-?\s*endif\s*-?%}", re.S)
_NOT_FIELDS = frozenset({"hidden", "submit", "button", "reset", "image", "radio"})


def _attr(tag: str, name: str) -> str | None:
    """The source of attribute ``name`` in a tag's source (Jinja included), or None."""
    m = re.search(r'\s' + name + r'="([^"]*)"', tag)
    return m.group(1) if m else None


def _bare_required(tag: str) -> bool:
    """The tag has a ``required`` attribute written outside any Jinja block."""
    return re.search(r"\srequired(?=[\s/>]|$)", re.sub(_JINJA, " ", tag, flags=re.S)) is not None


def _param_of(source: str, form: tuple[int, int, bool, dict[str, bool] | None], name: str) -> str:
    """The event parameter a control named ``name`` (its source) sends: the name itself,
    or for a name written as an expression, the one parameter of the form's event that no
    other control of the form names ("" when that is not one)."""
    if "{" not in name:
        return name
    named = {_attr(m.group(0), "name") for m in _CONTROL.finditer(source, form[0], form[1])}
    left = [p for p in form[3] or () if p not in named]
    return left[0] if len(left) == 1 else ""


def mark_fields(source: str, style: str, params: Callable[[str], dict[str, bool] | None]) -> str:
    """A template's source with a marker (``style``: "asterisk", "required" or "optional")
    at the end of the label of each field of a form that changes something (``method="post"``).

    A field is *required* when its tag has the ``required`` attribute (written as is, or
    under a Jinja ``{% if %}``, whose condition then guards the marker), or when the spec's
    event that the form posts to (``params(action)``: the event's parameters and whether each
    is required, None for an action no event matches) requires its parameter; it is
    *optional* when that event takes it without requiring it (a control whose name is an
    expression sends the one parameter no other control of its form names). A field of
    neither kind (its form unknown, its parameter unknown), a radio button, a hidden field or a button gets
    no marker; nor does an optional checkbox, or a label that already says "optional".
    Labels are found by ``for`` (the control's ``id``, as written) or by wrapping the control.
    """
    text = _MARKER_TEXT.get(style)
    if text is None or "<label" not in source:
        return source
    forms = []   # (start, end, method is post, the event's parameters)
    for m in _FORM_TAG.finditer(source):
        end = source.find("</form>", m.end())
        method = (_attr(m.group(0), "method") or "get").lower()
        action = _attr(m.group(0), "action") or ""
        forms.append((m.start(), len(source) if end < 0 else end, method == "post",
                      params(action) if method == "post" else None))
    labels = [(m.start(), m.end(), _attr(m.group(0).split(">", 1)[0], "for"), m.group(2))
              for m in _LABEL_SPAN.finditer(source)]
    inserts: dict[int, str] = {}
    for m in _CONTROL.finditer(source):
        tag, kind = m.group(0), m.group(1)
        ctype = (_attr(tag, "type") or "text").lower() if kind == "input" else kind
        name = _attr(tag, "name")
        if ctype in _NOT_FIELDS or not name:
            continue
        form = next((f for f in forms if f[0] < m.start() < f[1]), None)
        if form is not None and not form[2]:
            continue   # a search or filter form: nothing it sends is kept
        cond: str | None    # "": always required; an expression: required when it holds
        if (c := _IF_REQUIRED.search(tag)) is not None:
            cond = c.group(1)
        elif _bare_required(tag):
            cond = ""
        elif form is not None and form[3] is not None and (name := _param_of(source, form, name)) in form[3]:
            cond = "" if form[3][name] else None
        else:
            continue   # nothing says whether it is required
        if ctype == "checkbox" and cond is None:
            continue
        cid = _attr(tag, "id")
        label = next((lb for lb in labels if lb[0] < m.start() < lb[1]), None) or \
            next((lb for lb in labels if cid and lb[2] == cid), None)
        if label is None or "optional" in label[3].lower() or label[1] in inserts:
            continue
        marker = f' <span class="field-marker">{text}</span>'
        if style == "optional":
            if cond == "":
                continue
            marker = marker if cond is None else "{% if not (" + cond + ") %}" + marker + "{% endif %}"
        elif cond is None:
            continue
        elif cond:
            marker = "{% if " + cond + " %}" + marker + "{% endif %}"
        inserts[label[1] - len("</label>")] = marker
    for pos in sorted(inserts, reverse=True):
        source = source[:pos] + inserts[pos] + source[pos:]
    return source


# ----------------------------------------------------------------------------- inline errors
#: ``field_errors`` options: "" (today: a refused form's message where the site's messages
#: go), "inline" (beside the field it is about, instead), "inline-summary" (beside the
#: field, and where the messages go too, as a summary).
FIELD_ERRORS = ("message", "inline", "inline-summary")
_FORM_OPEN = re.compile(r"<form\b[^>]*>", re.S)
_CONTROL_HTML = re.compile(r"<(input|textarea|select)\b[^>]*>", re.S)


def error_id(field: str) -> str:
    """The ``id`` of the inline message about form field ``field``."""
    return "field-error-" + re.sub(r"[^A-Za-z0-9_-]", "-", field)


def inline_error(page: str, message: str, field: str, action: str, summary: bool) -> str:
    """A rendered page with the refused form's ``message`` beside its field ``field`` (the
    first control of that name in the first form whose action is ``action``, as the page
    writes it): the control marked ``aria-invalid="true"`` and described by the message
    (``aria-describedby``), the message right after the control (after its label, when
    the label wraps it) with role alert; the message where the site's messages go is
    taken out unless ``summary``. A page without that form or field is returned as it is:
    the message stays where the site's messages go."""
    want, name = str(markupsafe.escape(action)), str(markupsafe.escape(field))
    text = str(markupsafe.escape(message))
    for form in _FORM_OPEN.finditer(page):
        if _attr(form.group(0), "action") != want:
            continue
        end = page.find("</form>", form.end())
        end = len(page) if end < 0 else end
        for m in _CONTROL_HTML.finditer(page, form.end(), end):
            if _attr(m.group(0), "name") != name:
                continue
            eid = error_id(field)
            tag = m.group(0)
            close = tag.rstrip("/>").rstrip()
            marked = close + f' aria-invalid="true" aria-describedby="{eid}"' + tag[len(close):]
            after = m.end()
            if m.group(1) in ("textarea", "select"):
                shut = page.find(f"</{m.group(1)}>", m.end())
                after = m.end() if shut < 0 else shut + len(m.group(1)) + 3
            opened, shut_label = page.rfind("<label", form.end(), m.start()), page.rfind("</label>", form.end(), m.start())
            if opened > shut_label:   # inside a label: the message follows the label
                closing = page.find("</label>", after)
                after = after if closing < 0 else closing + len("</label>")
            note = (f'<span bid="field-error" id="{eid}" class="field-error" role="alert">'
                    f"{text}</span>")
            out = page[:m.start()] + marked + page[m.end():after] + note + page[after:]
            if not summary:
                out = _top_message(text).sub("", out, count=1)
            return out
    return page


def _top_message(escaped: str) -> re.Pattern[str]:
    """The site's message element holding ``escaped`` (the base templates' flash line)."""
    return re.compile(r'[ \t]*<div\b[^>]*\bclass="flash error"[^>]*>' + re.escape(escaped) + r"</div>\n?")


__all__ = ["FIELD_ERRORS", "MARKERS", "POSITIONS", "error_id", "inline_error", "mark_fields", "move_messages"]

"""What the served site puts on the wire around the app's pages: the request target as the
client sent it, a redirect's ``Location`` encoded as a browser would, and the hit rule
appended to every stylesheet (:data:`HIT_CSS`)."""
from __future__ import annotations

import re
from urllib.parse import quote, unquote_to_bytes

_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\U0010ffff\\]")
#: In a request target (a WSGI string: its bytes as Latin-1): what a browser would have
#: percent-encoded before sending (control characters, space, non-ASCII bytes).
_UNSENT_BYTES = re.compile(r"[\x00-\x20\x7f-\U0010ffff]")


#: Appended to every stylesheet an app serves: the centre of an element that carries a bid
#: but is not itself a link, control or label (a nav, a list, a form, a row, a heading...)
#: is covered by a small box of that element's own (its ``::before``: a nested container's
#: box comes later in tree order, so it paints above its ancestors'), so a click on the
#: element -- Playwright clicks the centre of its box -- lands on the element itself, not on
#: whatever child happens to sit at the centre, and does what the DOM's click does: bubbles
#: up to a link, button or label around it, if any (the in-process browser does the same).
#: Links, buttons and labels have such a box at their own centre, one level higher, and form
#: controls sit above both, so a click on one is never intercepted by a container around
#: it. A container also gets 12 px of right and bottom padding, which moves its centre 6 px
#: right of and below the centre of its content: the child at the middle of a symmetric
#: layout (an only child, the middle one of an odd stack or row, centred content), whose
#: centre would otherwise be the container's, is then off it.
#: ``{bid}`` is the bid attribute of the served pages.
HIT_CSS = """
/* simweb: a click at the centre of an element with a bid lands on that element */
:where([{bid}]):not(a, button, input, select, textarea, option, optgroup, label, summary, img, svg, iframe,
  video, audio, canvas, embed, object, area, hr, br, progress, meter) {{
  position: relative; padding-right: 12px; padding-bottom: 12px;
}}
:where([{bid}]):not(a, button, input, select, textarea, option, optgroup, label, summary, img, svg, iframe,
  video, audio, canvas, embed, object, area, hr, br, progress, meter)::before {{
  content: ""; position: absolute; left: calc(50% - 2px); top: calc(50% - 2px); width: 4px; height: 4px;
  z-index: 2147483646; pointer-events: auto;
}}
:where(a[href], button, label) {{ position: relative; }}
:where(a[href], button, label)::after {{
  content: ""; position: absolute; left: calc(50% - 2px); top: calc(50% - 2px); width: 4px; height: 4px;
  z-index: 2147483647; pointer-events: auto;
}}
:where(input, select, textarea) {{ position: relative; z-index: 2147483647; }}
"""


def hit_stylesheet(bid_attribute: str = "bid") -> str:
    """:data:`HIT_CSS` for pages whose bid attribute is ``bid_attribute``."""
    return HIT_CSS.format(bid=bid_attribute)


def _encode_unsafe(url: str) -> str:
    """Percent-encode what a browser would encode (or strip) in a Location: whitespace,
    control characters, backslashes and non-ASCII (as UTF-8; a header is Latin-1). The
    result is then checked as a local path."""
    return _UNSAFE_URL_CHARS.sub(lambda m: "".join(f"%{b:02X}" for b in m.group().encode("utf-8", "surrogatepass")),
                                 url)


def request_target(environ: dict) -> tuple[str, str]:
    """The path and query of a request as the client sent them: percent-escapes kept, as
    the in-process browser keeps a URL (``PATH_INFO`` is percent-decoded: with it,
    '/search%3Fq%3Dx' was a search and '/p/%31' product 1, both 404 in process). A byte a
    browser would have encoded (raw UTF-8 from curl) is percent-encoded, never read as
    Latin-1. The path is that of ``REQUEST_URI`` (waitress, Werkzeug) or ``RAW_URI``
    (gunicorn) when it decodes to ``SCRIPT_NAME + PATH_INFO`` (else ``PATH_INFO`` encoded
    again); the query is ``QUERY_STRING``, which WSGI never decodes."""
    decoded = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "")
    path = None
    raw = environ.get("REQUEST_URI") or environ.get("RAW_URI") or ""
    if not raw.startswith("/") and "://" in raw:   # the absolute form (a proxy request)
        raw = "/" + raw.split("://", 1)[1].partition("/")[2]
    if raw.startswith("/"):
        candidate = raw.partition("#")[0].partition("?")[0]
        if unquote_to_bytes(candidate.encode("latin-1", "replace")) == decoded.encode("latin-1", "replace"):
            path = candidate
    if path is None:
        path = quote(decoded.encode("latin-1", "replace") or b"/", safe="/:@!$&'()*+,;=~")

    def byte(ch: str) -> str:   # a WSGI string's character is a byte; past 0xFF (not WSGI), UTF-8
        n = ord(ch)
        return f"%{n:02X}" if n <= 0xFF else "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))

    def encode(text: str) -> str:
        return _UNSENT_BYTES.sub(lambda m: byte(m.group()), text)

    return encode(path), encode(environ.get("QUERY_STRING", ""))

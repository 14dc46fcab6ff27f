"""A local web site for the live-browser tests: a handler served on 127.0.0.1 in a thread,
and the bid of an AX-tree line."""
from __future__ import annotations

import contextlib
import http.server
import re
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def serving(handler: Any) -> Iterator[str]:
    """``handler`` served on a free loopback port; yields the origin (no trailing slash)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def bid_of(axtree: str, pattern: str) -> str:
    """The bid of the first AX-tree line whose role and name match ``pattern``."""
    match = re.search(r"\[([^\]]+)\] " + pattern, axtree)
    assert match, axtree
    return match.group(1)

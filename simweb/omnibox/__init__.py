"""``simweb omnibox``: WebGym's browser-server protocol over simweb's served apps.

See :mod:`simweb.omnibox.server` (the HTTP app and :class:`OmniboxServer`),
:mod:`simweb.omnibox.protocol` (the commands of ``/execute``), :mod:`simweb.omnibox.pool`
(the everlasting instance pool) and :mod:`simweb.omnibox.marks` (set-of-marks screenshots).
"""
from __future__ import annotations

from typing import Any

__all__ = ["OmniboxServer", "start_url"]


def __getattr__(name: str) -> Any:
    # Lazy: simweb.server imports simweb.omnibox.start, and the server side pulls Playwright.
    if name == "OmniboxServer":
        from .server import OmniboxServer

        return OmniboxServer
    if name == "start_url":
        from .start import start_url

        return start_url
    raise AttributeError(name)

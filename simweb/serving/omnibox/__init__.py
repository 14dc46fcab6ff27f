"""``simweb omnibox``: WebGym's browser-server protocol over simweb's served apps.

See :mod:`simweb.omnibox.server` (the HTTP app and :class:`OmniboxServer`),
:mod:`simweb.omnibox.protocol` (the commands of ``/execute``), :mod:`simweb.omnibox.pool`
(the everlasting instance pool), :mod:`simweb.omnibox.instance` (one browser instance),
:mod:`simweb.omnibox.marks` and :mod:`simweb.omnibox.pagescript` (regions and
set-of-marks), :mod:`simweb.omnibox.start` (the ``/_simweb/start`` route of served apps)
and :mod:`simweb.omnibox.env` (simweb's env interface through such a server).
The protocol in prose: docs/omnibox.md.
"""
from __future__ import annotations

from typing import Any

__all__ = ["OmniboxServer", "OmniboxSimEnv", "start_url"]


def __getattr__(name: str) -> Any:
    # Lazy: simweb.server imports simweb.omnibox.start, and the server side pulls Playwright.
    if name == "OmniboxServer":
        from .server import OmniboxServer

        return OmniboxServer
    if name == "OmniboxSimEnv":
        from .env import OmniboxSimEnv

        return OmniboxSimEnv
    if name == "start_url":
        from .start import start_url

        return start_url
    raise AttributeError(name)

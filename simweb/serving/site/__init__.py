"""The served site's request handling, as Flask blueprints that ``create_app``
(:mod:`simweb.serving.server`) registers on each app's Flask application:

- :mod:`.errors` (``errors``): errors and limits for every request: a bounded body read
  once, one-line 4xx/5xx answers (never a traceback), ``nosniff`` and the session header;
- :mod:`.control` (``control``): the ``/_simweb`` control endpoints (state, reset, close);
- :mod:`.start` (``start``): ``/_simweb/start``, the start URL of a task instance;
- :mod:`.pages` (``pages``): the simulated site itself, one session per cookie.

A handler finds its app's :class:`simweb.serving.served.Served` through
:func:`.responses.served` (``current_app.extensions["simweb"]``), so one blueprint serves
any number of apps, and a session is only ever read through the request's own cookie.
:mod:`.responses` builds the answers they share; :mod:`.wire` holds what the site puts on
the wire around the pages (request targets, redirects, the hit stylesheet).
"""
from __future__ import annotations

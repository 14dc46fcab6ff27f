"""``simweb omnibox``: a WebGym browser server ("Omniboxes" master) backed by simweb.

The HTTP surface is the real master's, answered as the real master, node and instance
servers answer together (same parameters, bodies, status codes and error bodies):

=======================================  ==================================================
``POST /get?lifetime_mins=60``           ``{"instance_id": "<uuid>:<port>", "node": ...}``;
                                         503 ``{"detail"}`` when the cached capacity is 0
``POST /reset?instance_id&node``         ``{"status": "success"}`` (the release); 400
                                         ``{"detail"}`` for an instance not in use
``GET /probe?instance_id&node``          ``{"status": "success", "message": "Probe successful"}``
``GET /screenshot?instance_id&node``     PNG (``interaction_mode=set_of_marks`` annotates it)
``POST /execute``                        body ``{"instance_id", "node", "<command>": {args}}``
                                         (:mod:`simweb.omnibox.protocol`); a failure is 500
                                         ``{"status": "error", "message": "Failed to execute
                                         command: {\\"detail\\":\\"Error executing command: ...\\"}"}``
``GET /metadata?instance_id&node``       ``{"width": 1280, "height": 768}`` (sent as image/png)
``GET /info``                            ``{"nodes": [{url, hash, healthy, capacity, available,
                                         instances}]}``
=======================================  ==================================================

Every request needs the header ``x-api-key`` (401 ``{"detail"}`` without it or with a
wrong one); a missing or malformed query parameter is a 422 in FastAPI's format; an
unknown ``node`` is 400 ``{"detail": "Node ... is not found"}``. Two deliberate
differences: element commands wait for navigations rather than sleeping ten seconds, and
``/execute`` and ``/screenshot`` refuse an ``instance_id`` whose lease has ended (400
``Invalid instance UUID``; the real node runs it on whoever holds the instance now).

simweb's extensions live under ``/simweb/`` (same key; errors are 4xx
``{"status": "error", "message"}``):

=============================================  ==============================================
``GET /simweb/apps``                           the served apps' base URLs
``POST /simweb/start?instance_id&node&task``   the instance opens the task's start URL
``[&seed=0]``                                  (``/_simweb/start?task=&seed=`` on its app)
``GET /simweb/snapshot?instance_id&node``      ``{"app", "url", "state"}`` of the session
``POST /simweb/restore?instance_id&node``      body ``{"state"}``: the session takes it and
                                               the page shows it
``POST /simweb/fork?instance_id&node``         a new lease at the same state
``GET|POST /simweb/verdict?instance_id&node``  ``{"task", "answer", "verdict"}``: the task's
``[&answer=]``                                 verifier on the session (instead of a judge)
``GET /simweb/locate?instance_id&node&bid``    page id, display id, centre (and whether it is
``[&scroll=1]``                                on the element) and a point on the element with
                                               that simweb bid (``element_id=``: page id)
``GET /simweb/observe?instance_id&node``       simweb's AX tree of the page (as BrowserEnv)
=============================================  ==============================================
"""
from __future__ import annotations

import threading
from typing import Any

from flask import Flask

from ..browser import ServedApp
from ..server import make_server, stop_server
from .extensions import extensions
from .handling import NO_CAPACITY, errors
from .master import master
from .pool import InstancePool

__all__ = ["DEFAULT_API_KEY", "DEFAULT_NODE", "NO_CAPACITY", "OmniboxServer"]

DEFAULT_API_KEY = "default_key"
DEFAULT_NODE = "http://localhost:8080"


class OmniboxServer:
    """The omnibox server: served apps, the instance pool and the HTTP app, started
    together and stopped together.

        with OmniboxServer(["shopping"], port=0, browsers=2) as server:
            print(server.base_url)        # http://127.0.0.1:<port>
            ...

    ``port=0`` (and ``apps_port=0``) pick free ports; otherwise the apps listen on
    ``apps_port``, ``apps_port + 1``... (default ``port + 1``), in the order given.
    :meth:`start` launches everything (Chromium in parallel); :meth:`serve_forever`
    serves on the calling thread and :meth:`serve_in_thread` in a daemon thread;
    :meth:`close` stops the HTTP server, closes every Chromium and stops the apps."""

    def __init__(self, apps: list[str], *, host: str = "127.0.0.1", port: int = 7000, browsers: int = 2,
                 api_key: str = DEFAULT_API_KEY, apps_port: int | None = None, world_seed: int = 0,
                 size: int | None = None, status_interval: float = 10.0, lifetime_max: int = 60,
                 allow_external: bool = False, node: str = DEFAULT_NODE, headless: bool = True):
        if not apps:
            raise ValueError("serve at least one app")
        self.app_names = list(apps)
        self.host = host
        self.port = port
        self.api_key = api_key
        self.node = node
        self.world_seed = world_seed
        self.size = size
        self.apps_port = (0 if port == 0 else port + 1) if apps_port is None else apps_port
        self.served: dict[str, ServedApp] = {}
        self.pool = InstancePool(browsers, status_interval=status_interval, lifetime_max=lifetime_max,
                                 allow_external=allow_external, headless=headless)
        self.flask_app = self._build()
        self._http: Any = None
        self._thread: threading.Thread | None = None
        self._closed = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> OmniboxServer:
        """Serve the apps, launch the pool's browsers and bind the HTTP port."""
        try:
            for i, name in enumerate(self.app_names):
                port = 0 if self.apps_port == 0 else self.apps_port + i
                self.served[name] = ServedApp(name, world_seed=self.world_seed, size=self.size, host="127.0.0.1",
                                              port=port)
            # waitress, as `simweb serve`: bounded threads (a command blocks on its browser, so a
            # few per browser), buffered bodies, no tracebacks on the wire.
            self._http = make_server(self.flask_app, self.host, self.port, threads=max(16, 4 * self.pool.size),
                                     channel_timeout=120)
            self.port = self._http.effective_port
            self.pool.start()
        except BaseException:
            self.close()
            raise
        return self

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def apps(self) -> dict[str, str]:
        """App name -> base URL of its served copy."""
        return {name: served.base_url for name, served in self.served.items()}

    def serve_forever(self) -> None:
        self._http.run()

    def serve_in_thread(self) -> OmniboxServer:
        self._thread = threading.Thread(target=self.serve_forever, name="simweb-omnibox-http", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and close every browser and app (idempotent)."""
        if self._closed:
            return
        self._closed = True
        if self._http is not None:
            stop_server(self._http, self._thread)
            if self._thread is not None:
                self._thread.join(timeout=5)
        self.pool.close()
        for served in self.served.values():
            served.close()

    def __enter__(self) -> OmniboxServer:
        return self.start().serve_in_thread()

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # ------------------------------------------------------------------ the HTTP app
    def _build(self) -> Flask:
        """The HTTP app: the master protocol and simweb's extensions (their handlers read
        this server from ``extensions["omnibox"]``), errors in the master's formats."""
        app = Flask("simweb.omnibox")
        app.config["MAX_CONTENT_LENGTH"] = 16 * 1024 * 1024
        app.extensions["omnibox"] = self
        for blueprint in (errors, master, extensions):
            app.register_blueprint(blueprint)
        return app

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

import json
import re
import threading
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from flask import Flask, Response, request
from werkzeug.exceptions import HTTPException as WerkzeugHTTPException

from ..browser import ServedApp
from ..server import make_server, stop_server
from .instance import VIEWPORT, BrowserInstance
from .pool import InstancePool, NoCapacity
from .protocol import CommandError, execute
from .session import SessionError, read_state, verdict_of, write_state
from .start import parse_seed, start_url

DEFAULT_API_KEY = "default_key"
DEFAULT_NODE = "http://localhost:8080"
NO_CAPACITY = "No available nodes with capacity to create new instance"
_INT = re.compile(r"\s*[+-]?\d+\s*")


def _dumps(obj: Any) -> bytes:
    # Starlette's JSONResponse rendering (compact, UTF-8, no NaN), which clients may embed.
    return json.dumps(obj, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":")).encode("utf-8")


def _json(obj: Any, status: int = 200) -> Response:
    return Response(_dumps(obj), status=status, mimetype="application/json")


def _detail(message: Any, status: int) -> Response:
    return _json({"detail": message}, status)


def _error(message: str, status: int) -> Response:
    return _json({"status": "error", "message": message}, status)


def _internal() -> Response:
    return Response(b"Internal Server Error", status=500, mimetype="text/plain")


class _Reply(Exception):
    """Stop handling a request and send ``response``."""

    def __init__(self, response: Response):
        self.response = response


def _missing(name: str, where: str = "query") -> dict[str, Any]:
    return {"type": "missing", "loc": [where, name], "msg": "Field required", "input": None}


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

    # ------------------------------------------------------------------ request helpers
    def _check_key(self) -> None:
        key = request.headers.get("x-api-key")
        if not key:
            raise _Reply(_detail("API Key is missing", 401))
        if key != self.api_key:
            raise _Reply(_detail("Invalid API Key.", 401))

    @staticmethod
    def _query(*names: str) -> list[str]:
        errors = [_missing(n) for n in names if n not in request.args]
        if errors:
            raise _Reply(_detail(errors, 422))
        return [request.args[n] for n in names]

    def _node_known(self, node: Any) -> None:
        if node != self.node:
            raise _Reply(_detail(f"Node {node} is not found", 400))

    def _at_port(self, instance_id: Any) -> BrowserInstance | None:
        """The node's reading of ``<uuid>:<port>``: None when no instance is on that port;
        a malformed id is the node's unhandled error (a plain 500)."""
        if not isinstance(instance_id, str) or instance_id.count(":") != 1:
            raise _Reply(_internal())
        port = instance_id.split(":")[1]
        if not port.isdigit():
            raise _Reply(_internal())
        return self.pool.instance_at(int(port))

    def _leased(self) -> BrowserInstance:
        """The leased instance named by the ``instance_id`` and ``node`` query parameters
        (extensions only: they refuse an instance that is not leased)."""
        instance_id, node = self._query("instance_id", "node")
        if node != self.node:
            raise _Reply(_error(f"unknown node {node!r} (this server's node is {self.node!r})", 400))
        if not isinstance(instance_id, str) or not self.pool.leased(instance_id):
            raise _Reply(_error(f"instance {instance_id!r} is not leased (POST /get first)", 400))
        inst = self._at_port(instance_id)
        assert inst is not None
        return inst

    def _served_at(self, url: str) -> ServedApp | None:
        parts = urlsplit(url)
        for served in self.served.values():
            if f"{parts.scheme}://{parts.netloc}" == served.base_url:
                return served
        return None

    # ------------------------------------------------------------------ the HTTP app
    def _build(self) -> Flask:
        app = Flask("simweb.omnibox")
        app.config["MAX_CONTENT_LENGTH"] = 16 * 1024 * 1024

        def route(rule: str, methods: list[str], key: bool = True) -> Callable:
            def wrap(fn: Callable[[], Response]) -> Callable[[], Response]:
                def handler() -> Response:
                    try:
                        if key:
                            self._check_key()
                        return fn()
                    except _Reply as reply:
                        return reply.response

                app.add_url_rule(rule, fn.__name__, handler, methods=methods)
                return fn

            return wrap

        @app.errorhandler(WerkzeugHTTPException)
        def http_error(exc: WerkzeugHTTPException) -> Response:
            names = {404: "Not Found", 405: "Method Not Allowed", 413: "Request Entity Too Large"}
            return _detail(names.get(exc.code or 500, exc.name), exc.code or 500)

        @app.errorhandler(Exception)
        def unexpected(exc: Exception) -> Response:
            return _internal()

        # ---------------------------------------------------------- the master protocol
        @route("/get", ["POST"])
        def get() -> Response:
            text = request.args.get("lifetime_mins", "60")
            if not _INT.fullmatch(text):
                return _detail([{"type": "int_parsing", "loc": ["query", "lifetime_mins"],
                                 "msg": "Input should be a valid integer, unable to parse string as an integer",
                                 "input": text}], 422)
            try:
                inst = self.pool.lease(int(text))
            except NoCapacity:
                return _detail(NO_CAPACITY, 503)
            return _json({"instance_id": inst.instance_id, "node": self.node})

        @route("/reset", ["POST"])
        def reset() -> Response:
            instance_id, node = self._query("instance_id", "node")
            self._node_known(node)
            try:
                self.pool.release(instance_id)
            except KeyError:
                return _detail("Instance not in use or already released", 400)
            return _json({"status": "success"})

        @route("/probe", ["GET"])
        def probe() -> Response:
            instance_id, node = self._query("instance_id", "node")
            self._node_known(node)
            inst = self._at_port(instance_id)
            if inst is None:
                return _detail("Error probing the instance", 500)
            uuid = instance_id.split(":")[0]
            if uuid != inst.uuid:
                return _detail(f"Invalid instance UUID: {uuid}", 400)
            if not inst.alive():
                return _error("Probe failed", 500)
            return _json({"status": "success", "message": "Probe successful"})

        @route("/screenshot", ["GET"])
        def screenshot() -> Response:
            instance_id, node = self._query("instance_id", "node")
            mode = request.args.get("interaction_mode", "set_of_marks")
            self._node_known(node)
            try:
                inst = self._at_port(instance_id)
            except _Reply:
                return _error("Failed to get screenshot: Internal Server Error", 500)
            if inst is None:
                return _error('Failed to get screenshot: {"detail":"Error getting screenshot from instance"}', 500)
            uuid = instance_id.split(":")[0]
            if uuid != inst.uuid or not self.pool.leased(instance_id):
                # As /execute: the real node shows (and, in set-of-marks mode, re-marks) the
                # page of whoever holds the browser now, changing that client's id mapping.
                inner = _dumps({"detail": f"Invalid instance UUID: {uuid}"}).decode("utf-8")
                return _error(f"Failed to get screenshot: {inner}", 400)
            try:
                png = inst.call(lambda: inst.driver.screenshot(mode))
            except Exception:
                # The node relays the instance's plain 500 body with status 200, as image/png.
                return Response(b"Internal Server Error", status=200, mimetype="image/png")
            return Response(png, status=200, mimetype="image/png")

        @route("/execute", ["POST"])
        def execute_command() -> Response:
            body = self._json_body()
            if not isinstance(body, dict):
                return _detail([{"type": "dict_type", "loc": ["body"], "msg": "Input should be a valid dictionary",
                                 "input": body}], 422)
            if "node" not in body or "instance_id" not in body:
                return _internal()
            node, instance_id = body.pop("node"), body.pop("instance_id")
            if node != self.node:
                return _detail(f"Node {node} is not found", 400)
            try:
                inst = self._at_port(instance_id)
            except _Reply:
                return _error("Failed to execute command: Internal Server Error", 500)
            if inst is None:
                return _error('Failed to execute command: {"detail":"Error executing command on instance"}', 500)
            uuid = instance_id.split(":")[0]
            if uuid != inst.uuid or not self.pool.leased(instance_id):
                inner = _dumps({"detail": f"Invalid instance UUID: {uuid}"}).decode("utf-8")
                return _error(f"Failed to execute command: {inner}", 400)
            try:
                result = inst.call(lambda: execute(inst, body))
            except CommandError as exc:
                inner = _dumps({"detail": f"Error executing command: {exc}"}).decode("utf-8")
                return _error(f"Failed to execute command: {inner}", 500)
            return _json(result)

        @route("/metadata", ["GET"])
        def metadata() -> Response:
            instance_id, node = self._query("instance_id", "node")
            self._node_known(node)
            try:
                inst = self._at_port(instance_id)
            except _Reply:
                return _error("Failed to get screenshot: Internal Server Error", 500)
            if inst is None:
                return _error('Failed to get screenshot: {"detail":"Error getting the instance metadata"}', 500)
            # The real master relays the node's JSON under the image/png media type.
            return Response(_dumps({"width": VIEWPORT[0], "height": VIEWPORT[1]}), status=200, mimetype="image/png")

        @route("/info", ["GET"])
        def info() -> Response:
            state = self.pool.info()
            return _json({"nodes": [{"url": self.node, "hash": self.node, "healthy": True,
                                     "capacity": state["capacity"], "available": state["available"],
                                     "instances": state["in_use"]}]})

        # ---------------------------------------------------------- simweb extensions
        @route("/simweb/apps", ["GET"])
        def apps() -> Response:
            return _json({"apps": self.apps(), "node": self.node})

        @route("/simweb/start", ["POST"])
        def start() -> Response:
            inst = self._leased()
            task = request.args.get("task") or None
            app_name = request.args.get("app") or None
            seed_text = request.args.get("seed", "0")
            seed = parse_seed(seed_text)
            if seed is None:   # the start URL's own reading: a 64-bit integer
                shown = seed_text if len(seed_text) <= 40 else f"{seed_text[:40]}... ({len(seed_text)} characters)"
                return _error(f"seed must be a 64-bit integer, not {shown!r}", 422)
            if task is not None:
                from ...runtime.registry import RegistryError, app_of_task

                try:
                    app_name = app_of_task(task)
                except (RegistryError, ValueError, KeyError):
                    return _error(f"unknown task {task!r}", 400)
            if app_name is None:
                return _error("give task=<task id> (or app=<app> for its home page)", 422)
            served = self.served.get(app_name)
            if served is None:
                return _error(f"app {app_name!r} is not served here (serving: {', '.join(self.served)})", 400)
            if task is not None and task not in served.app.tasks:
                return _error(f"unknown task {task!r} (see `simweb tasks {app_name}`)", 400)
            url = served.base_url + start_url(task, seed)

            def go() -> dict:
                inst.episode = (task, seed)
                inst.driver.visit_page(url)
                return {"status": "success", "url": inst.page.url, "task": task, "seed": seed}

            return self._on(inst, go)

        @route("/simweb/snapshot", ["GET"])
        def snapshot() -> Response:
            inst = self._leased()
            return self._on(inst, lambda: self._snapshot(inst))

        @route("/simweb/restore", ["POST"])
        def restore() -> Response:
            inst = self._leased()
            body = self._json_body()
            state = body.get("state") if isinstance(body, dict) else None
            if not isinstance(state, dict):
                return _error('the body must be {"state": <a simweb state>}', 422)
            return self._on(inst, lambda: self._restore(inst, state))

        @route("/simweb/fork", ["POST"])
        def fork() -> Response:
            inst = self._leased()
            snap = self._call(inst, lambda: self._snapshot(inst))
            try:
                child = self.pool.lease(0)
            except NoCapacity:
                return _error(NO_CAPACITY, 503)
            try:
                self._call(child, lambda: self._restore(child, snap["state"]))
            except _Reply:
                self.pool.release(child.instance_id)
                raise
            return _json({"instance_id": child.instance_id, "node": self.node})

        @route("/simweb/verdict", ["GET", "POST"])
        def verdict() -> Response:
            inst = self._leased()
            answer = request.args.get("answer")
            if request.method == "POST" and request.get_data():
                body = self._json_body()
                if not isinstance(body, dict):
                    return _error('the body must be a JSON object such as {"answer": "..."}', 422)
                answer = body.get("answer", answer)
            given = None if answer is None else str(answer)

            def judge() -> dict:
                served = self._current_app(inst)
                return verdict_of(served, read_state(inst.context, served), given, episode=inst.episode)

            return self._on(inst, judge)

        @route("/simweb/locate", ["GET"])
        def locate() -> Response:
            inst = self._leased()
            # By simweb bid (on an app's page), or by page id (on any page: a WebGym
            # client's element ids, for a point its click can reach).
            by_page_id = "bid" not in request.args and "element_id" in request.args
            name = "element_id" if by_page_id else "bid"
            (key,) = self._query(name)
            scroll = request.args.get("scroll", "0") not in ("0", "", "false")

            def find() -> dict:
                attribute = "__elementId" if by_page_id else self._current_app(inst).bid_attribute
                found = inst.driver.locate(attribute, key, scroll)
                if found is None:
                    raise _Reply(_error(f"no element with {name} {key!r} on {inst.page.url}", 404))
                return found if by_page_id else {"bid": key, **found}

            return self._on(inst, find)

        @route("/simweb/observe", ["GET"])
        def observe() -> Response:
            inst = self._leased()
            return self._on(inst, lambda: self._observe(inst))

        return app

    # ------------------------------------------------------------------ extension work
    @staticmethod
    def _json_body() -> Any:
        data = request.get_data()
        if not data:
            raise _Reply(_detail([{"type": "missing", "loc": ["body"], "msg": "Field required", "input": None}], 422))
        try:
            return json.loads(data)
        except ValueError as exc:
            raise _Reply(_detail([{"type": "json_invalid", "loc": ["body", getattr(exc, "pos", 0)],
                                   "msg": "JSON decode error", "input": {},
                                   "ctx": {"error": getattr(exc, "msg", str(exc))}}], 422)) from None

    def _call(self, inst: BrowserInstance, fn: Callable[[], Any]) -> Any:
        try:
            return inst.call(fn)
        except _Reply:
            raise
        except SessionError as exc:
            raise _Reply(_error(str(exc), 502)) from None
        except Exception as exc:
            from ..browser import _error_text

            raise _Reply(_error(_error_text(exc), 500)) from None

    def _on(self, inst: BrowserInstance, fn: Callable[[], Any]) -> Response:
        return _json(self._call(inst, fn))

    def _current_app(self, inst: BrowserInstance) -> ServedApp:
        """The served app the instance's page is on (on the instance's thread)."""
        served = self._served_at(inst.page.url if inst.page is not None else "")
        if served is None:
            raise _Reply(_error(f"the instance is not on a simweb app page ({inst.page.url})", 409))
        return served

    def _snapshot(self, inst: BrowserInstance) -> dict:
        served = self._current_app(inst)
        state = read_state(inst.context, served)
        live = inst.driver.live_ui_state()
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        if tab["url"] != "about:blank" and inst.page.url == served.base_url + tab["url"]:
            fields: dict[str, Any] = dict(live["values"])
            fields.update({k: "\x1f".join(v) for k, v in live["multi"].items()})
            fields.update(live["checked"])
            tab["fields"], tab["focus"] = fields, live["focused"]
            tab["scroll"] = [max(0, int(v)) for v in live["scroll"]]
        return {"app": served.app_name, "url": inst.page.url, "state": state}

    def _restore(self, inst: BrowserInstance, state: dict) -> dict:
        from ...core.state import StateError

        world: dict = state["world"] if isinstance(state.get("world"), dict) else {}
        served = self.served.get(str(world.get("app")))
        if served is None:
            raise _Reply(_error(f"the state is of app {world.get('app')!r}, not served here", 400))
        try:
            served.app.check_state(state)
        except StateError as exc:
            raise _Reply(_error(str(exc), 400)) from None
        write_state(inst.context, served, state)
        task = state["meta"].get("task")
        inst.episode = (task["id"] if task else None, int(state["meta"]["rng"]["seed"]))
        tab = state["browser"]["tabs"][state["browser"]["active"]]
        if tab["url"] == "about:blank":
            inst.page.goto("about:blank")
        else:
            inst.driver.show(served.base_url, served.app.render(state, tab), tab)
        return {"status": "success", "url": inst.page.url}

    def _observe(self, inst: BrowserInstance) -> dict:
        from ...web.axtree import parse_page

        inst.driver.ready()
        html = inst.page.content()
        live = inst.driver.live_ui_state()
        values: dict[str, Any] = dict(live["values"])
        values.update(live["multi"])
        try:
            axtree = parse_page(html).axtree(values=values, checked=live["checked"], focused=live["focused"])
        except Exception as exc:
            axtree = f"RootWebArea '' (AX tree unavailable: {exc})"
        return {"url": inst.page.url, "axtree": axtree, "focused_element_bid": live["focused"] or ""}

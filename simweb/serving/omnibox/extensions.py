"""The ``extensions`` blueprint: simweb's own endpoints of the omnibox server, under
``/simweb/`` (the second table in :mod:`simweb.serving.omnibox.server`): start a task on
a leased instance, snapshot, restore and fork its session, judge it, locate an element,
observe the page. Each works on the leased instance its query names, on that instance's
own thread; errors are 4xx/5xx ``{"status": "error", "message"}``."""
from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from flask import Blueprint, Response, request

from ...runtime.variants import shown_url
from ..browser import ServedApp
from .handling import NO_CAPACITY, Reply, at_port, failure, json_body, json_reply, omnibox, query, route
from .instance import BrowserInstance
from .pool import NoCapacity
from .session import SessionError, read_state, verdict_of, write_state
from .start import parse_seed, start_url

if TYPE_CHECKING:
    from .server import OmniboxServer

extensions = Blueprint("extensions", __name__)


@route(extensions, "/simweb/apps", ["GET"])
def apps() -> Response:
    return json_reply({"apps": omnibox().apps(), "node": omnibox().node})


@route(extensions, "/simweb/start", ["POST"])
def start() -> Response:
    inst = leased()
    target = _start_target()
    if isinstance(target, Response):
        return target
    served, task, seed = target
    url = served.base_url + start_url(task, seed)

    def go() -> dict:
        inst.episode = (task, seed)
        inst.driver.visit_page(url)
        return {"status": "success", "url": inst.page.url, "task": task, "seed": seed}

    return on(inst, go)


def _start_target() -> tuple[ServedApp, str | None, int] | Response:
    """The served app, task and seed ``/simweb/start``'s query names, or its refusal."""
    task = request.args.get("task") or None
    app_name = request.args.get("app") or None
    seed_text = request.args.get("seed", "0")
    seed = parse_seed(seed_text)
    if seed is None:   # the start URL's own reading: a 64-bit integer
        shown = seed_text if len(seed_text) <= 40 else f"{seed_text[:40]}... ({len(seed_text)} characters)"
        return failure(f"seed must be a 64-bit integer, not {shown!r}", 422)
    if task is not None:
        from ...runtime.registry import RegistryError, app_of_task

        try:
            app_name = app_of_task(task)
        except (RegistryError, ValueError, KeyError):
            return failure(f"unknown task {task!r}", 400)
    if app_name is None:
        return failure("give task=<task id> (or app=<app> for its home page)", 422)
    served = omnibox().served.get(app_name)
    if served is None:
        return failure(f"app {app_name!r} is not served here (serving: {', '.join(omnibox().served)})", 400)
    if task is not None and task not in served.app.tasks:
        return failure(f"unknown task {task!r} (see `simweb tasks {app_name}`)", 400)
    return served, task, seed


@route(extensions, "/simweb/snapshot", ["GET"])
def snapshot() -> Response:
    inst, server = leased(), omnibox()
    return on(inst, lambda: snapshot_of(server, inst))


@route(extensions, "/simweb/restore", ["POST"])
def restore() -> Response:
    inst, server = leased(), omnibox()
    body = json_body()
    state = body.get("state") if isinstance(body, dict) else None
    if not isinstance(state, dict):
        return failure('the body must be {"state": <a simweb state>}', 422)
    return on(inst, lambda: restore_to(server, inst, state))


@route(extensions, "/simweb/fork", ["POST"])
def fork() -> Response:
    inst, server = leased(), omnibox()
    snap = call(inst, lambda: snapshot_of(server, inst))
    try:
        child = server.pool.lease(0)
    except NoCapacity:
        return failure(NO_CAPACITY, 503)
    try:
        call(child, lambda: restore_to(server, child, snap["state"]))
    except Reply:
        server.pool.release(child.instance_id)
        raise
    return json_reply({"instance_id": child.instance_id, "node": server.node})


@route(extensions, "/simweb/verdict", ["GET", "POST"])
def verdict() -> Response:
    inst, server = leased(), omnibox()
    answer = request.args.get("answer")
    if request.method == "POST" and request.get_data():
        body = json_body()
        if not isinstance(body, dict):
            return failure('the body must be a JSON object such as {"answer": "..."}', 422)
        answer = body.get("answer", answer)
    given = None if answer is None else str(answer)

    def judge() -> dict:
        served = current_app_of(server, inst)
        return verdict_of(served, read_state(inst.context, served), given, episode=inst.episode)

    return on(inst, judge)


@route(extensions, "/simweb/locate", ["GET"])
def locate() -> Response:
    inst, server = leased(), omnibox()
    # By simweb bid (on an app's page), or by page id (on any page: a WebGym
    # client's element ids, for a point its click can reach).
    by_page_id = "bid" not in request.args and "element_id" in request.args
    name = "element_id" if by_page_id else "bid"
    (key,) = query(name)
    scroll = request.args.get("scroll", "0") not in ("0", "", "false")

    def find() -> dict:
        attribute = "__elementId" if by_page_id else current_app_of(server, inst).bid_attribute
        found = inst.driver.locate(attribute, key, scroll)
        if found is None:
            raise Reply(failure(f"no element with {name} {key!r} on {inst.page.url}", 404))
        return found if by_page_id else {"bid": key, **found}

    return on(inst, find)


@route(extensions, "/simweb/observe", ["GET"])
def observe() -> Response:
    inst = leased()
    return on(inst, lambda: observe_page(inst))


# ---------------------------------------------------------------------- extension work
# What runs on an instance's own thread (``inst.call``) has no Flask context: it is given
# the server, read by the handler on the request's thread.
def leased() -> BrowserInstance:
    """The leased instance named by the ``instance_id`` and ``node`` query parameters
    (extensions only: they refuse an instance that is not leased)."""
    server = omnibox()
    instance_id, node = query("instance_id", "node")
    if node != server.node:
        raise Reply(failure(f"unknown node {node!r} (this server's node is {server.node!r})", 400))
    if not isinstance(instance_id, str) or not server.pool.leased(instance_id):
        raise Reply(failure(f"instance {instance_id!r} is not leased (POST /get first)", 400))
    inst = at_port(instance_id)
    assert inst is not None
    return inst


def served_at(server: OmniboxServer, url: str) -> ServedApp | None:
    parts = urlsplit(url)
    for served in server.served.values():
        if f"{parts.scheme}://{parts.netloc}" == served.base_url:
            return served
    return None


def call(inst: BrowserInstance, fn: Callable[[], Any]) -> Any:
    """``fn`` run on the instance's thread; its failure is a :class:`Reply`."""
    try:
        return inst.call(fn)
    except Reply:
        raise
    except SessionError as exc:
        raise Reply(failure(str(exc), 502)) from None
    except Exception as exc:
        from ..browser import _error_text

        raise Reply(failure(_error_text(exc), 500)) from None


def on(inst: BrowserInstance, fn: Callable[[], Any]) -> Response:
    return json_reply(call(inst, fn))


def current_app_of(server: OmniboxServer, inst: BrowserInstance) -> ServedApp:
    """The served app the instance's page is on (on the instance's thread)."""
    served = served_at(server, inst.page.url if inst.page is not None else "")
    if served is None:
        raise Reply(failure(f"the instance is not on a simweb app page ({inst.page.url})", 409))
    return served


def snapshot_of(server: OmniboxServer, inst: BrowserInstance) -> dict:
    served = current_app_of(server, inst)
    state = read_state(inst.context, served)
    live = inst.driver.live_ui_state()
    tab = state["browser"]["tabs"][state["browser"]["active"]]
    if tab["url"] != "about:blank" and inst.page.url == served.base_url + shown_url(served.app, state, tab["url"]):
        fields: dict[str, Any] = dict(live["values"])
        fields.update({k: "\x1f".join(v) for k, v in live["multi"].items()})
        fields.update(live["checked"])
        tab["fields"], tab["focus"] = fields, live["focused"]
        tab["scroll"] = [max(0, int(v)) for v in live["scroll"]]
    return {"app": served.app_name, "url": inst.page.url, "state": state}


def restore_to(server: OmniboxServer, inst: BrowserInstance, state: dict) -> dict:
    from ...core.state import StateError

    world: dict = state["world"] if isinstance(state.get("world"), dict) else {}
    served = server.served.get(str(world.get("app")))
    if served is None:
        raise Reply(failure(f"the state is of app {world.get('app')!r}, not served here", 400))
    try:
        served.app.check_state(state)
    except StateError as exc:
        raise Reply(failure(str(exc), 400)) from None
    write_state(inst.context, served, state)
    task = state["meta"].get("task")
    inst.episode = (task["id"] if task else None, int(state["meta"]["rng"]["seed"]))
    tab = state["browser"]["tabs"][state["browser"]["active"]]
    if tab["url"] == "about:blank":
        inst.page.goto("about:blank")
    else:
        # at the URL the browser shows (a site variant's form; the state keeps today's)
        inst.driver.show(served.base_url, served.app.render(state, tab), dict(tab, url=shown_url(served.app, state, tab["url"])))
    return {"status": "success", "url": inst.page.url}


def observe_page(inst: BrowserInstance) -> dict:
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

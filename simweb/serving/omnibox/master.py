"""The ``master`` blueprint: the real Omniboxes master's protocol (``/get``, ``/reset``,
``/probe``, ``/screenshot``, ``/execute``, ``/metadata``, ``/info``), answered as the real
master, node and instance servers answer together (the table in
:mod:`simweb.serving.omnibox.server`)."""
from __future__ import annotations

import re

from flask import Blueprint, Response, request

from .handling import (
    NO_CAPACITY,
    Reply,
    at_port,
    detail,
    dumps,
    failure,
    internal,
    json_body,
    json_reply,
    node_known,
    omnibox,
    query,
    route,
)
from .instance import VIEWPORT, BrowserInstance
from .pool import NoCapacity
from .protocol import CommandError, execute

master = Blueprint("master", __name__)
_INT = re.compile(r"\s*[+-]?\d+\s*")


@route(master, "/get", ["POST"])
def get() -> Response:
    text = request.args.get("lifetime_mins", "60")
    if not _INT.fullmatch(text):
        return detail([{"type": "int_parsing", "loc": ["query", "lifetime_mins"],
                        "msg": "Input should be a valid integer, unable to parse string as an integer",
                        "input": text}], 422)
    try:
        inst = omnibox().pool.lease(int(text))
    except NoCapacity:
        return detail(NO_CAPACITY, 503)
    return json_reply({"instance_id": inst.instance_id, "node": omnibox().node})


@route(master, "/reset", ["POST"])
def reset() -> Response:
    instance_id, node = query("instance_id", "node")
    node_known(node)
    try:
        omnibox().pool.release(instance_id)
    except KeyError:
        return detail("Instance not in use or already released", 400)
    return json_reply({"status": "success"})


@route(master, "/probe", ["GET"])
def probe() -> Response:
    instance_id, node = query("instance_id", "node")
    node_known(node)
    inst = at_port(instance_id)
    if inst is None:
        return detail("Error probing the instance", 500)
    uuid = instance_id.split(":")[0]
    if uuid != inst.uuid:
        return detail(f"Invalid instance UUID: {uuid}", 400)
    if not inst.alive():
        return failure("Probe failed", 500)
    return json_reply({"status": "success", "message": "Probe successful"})


@route(master, "/screenshot", ["GET"])
def screenshot() -> Response:
    instance_id, node = query("instance_id", "node")
    mode = request.args.get("interaction_mode", "set_of_marks")
    node_known(node)
    try:
        inst = at_port(instance_id)
    except Reply:
        return failure("Failed to get screenshot: Internal Server Error", 500)
    if inst is None:
        return failure('Failed to get screenshot: {"detail":"Error getting screenshot from instance"}', 500)
    refused = _not_its_lease(inst, instance_id, "Failed to get screenshot")
    if refused is not None:
        # As /execute: the real node shows (and, in set-of-marks mode, re-marks) the
        # page of whoever holds the browser now, changing that client's id mapping.
        return refused
    try:
        png = inst.call(lambda: inst.driver.screenshot(mode))
    except Exception:
        # The node relays the instance's plain 500 body with status 200, as image/png.
        return Response(b"Internal Server Error", status=200, mimetype="image/png")
    return Response(png, status=200, mimetype="image/png")


def _not_its_lease(inst: BrowserInstance, instance_id: str, what: str) -> Response | None:
    """The refusal of an ``instance_id`` whose lease of ``inst`` has ended (its uuid is not
    the instance's now, or the instance is not leased), None if it is the lease's."""
    uuid = instance_id.split(":")[0]
    if uuid != inst.uuid or not omnibox().pool.leased(instance_id):
        inner = dumps({"detail": f"Invalid instance UUID: {uuid}"}).decode("utf-8")
        return failure(f"{what}: {inner}", 400)
    return None


@route(master, "/execute", ["POST"])
def execute_command() -> Response:
    body = json_body()
    if not isinstance(body, dict):
        return detail([{"type": "dict_type", "loc": ["body"], "msg": "Input should be a valid dictionary",
                        "input": body}], 422)
    if "node" not in body or "instance_id" not in body:
        return internal()
    node, instance_id = body.pop("node"), body.pop("instance_id")
    if node != omnibox().node:
        return detail(f"Node {node} is not found", 400)
    try:
        inst = at_port(instance_id)
    except Reply:
        return failure("Failed to execute command: Internal Server Error", 500)
    if inst is None:
        return failure('Failed to execute command: {"detail":"Error executing command on instance"}', 500)
    refused = _not_its_lease(inst, instance_id, "Failed to execute command")
    if refused is not None:
        return refused
    try:
        result = inst.call(lambda: execute(inst, body))
    except CommandError as exc:
        inner = dumps({"detail": f"Error executing command: {exc}"}).decode("utf-8")
        return failure(f"Failed to execute command: {inner}", 500)
    return json_reply(result)


@route(master, "/metadata", ["GET"])
def metadata() -> Response:
    instance_id, node = query("instance_id", "node")
    node_known(node)
    try:
        inst = at_port(instance_id)
    except Reply:
        return failure("Failed to get screenshot: Internal Server Error", 500)
    if inst is None:
        return failure('Failed to get screenshot: {"detail":"Error getting the instance metadata"}', 500)
    # The real master relays the node's JSON under the image/png media type.
    return Response(dumps({"width": VIEWPORT[0], "height": VIEWPORT[1]}), status=200, mimetype="image/png")


@route(master, "/info", ["GET"])
def info() -> Response:
    state = omnibox().pool.info()
    node = omnibox().node
    return json_reply({"nodes": [{"url": node, "hash": node, "healthy": True, "capacity": state["capacity"],
                                  "available": state["available"], "instances": state["in_use"]}]})

"""Conformance check of ``simweb omnibox`` against a real WebGym browser server (manual).

Sends one scenario of requests (errors of every endpoint, a task episode's commands,
set-of-marks screenshots and their info, a release) to a running WebGym Omniboxes master
and to a ``simweb omnibox`` started here, both driving the same shopping app, and prints
every answer that differs once uuids, node URLs, instance ports and site ports are
normalised. Run the real master, node and instance servers on loopback first (with
Redis and Chromium), then:

    python tests/omnibox_conformance.py --real http://127.0.0.1:7100 [--real-instance-port 9100] [--out diff.json]

Two answers depend on the real server's past rather than on the requests: start it afresh
for each check (its last set-of-marks info survives releases, so an instance that took a
screenshot in an earlier run answers ``get_screenshot_info`` with that), and the master's
capacity cache decides whether ``/get`` right after a release is refused (503) or not,
depending on when its last status poll ran.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from omnibox_client import Reply, call  # noqa: E402

UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")


def normalise(text: str, node: str, instance_port: int) -> str:
    text = UUID.sub("<uuid>", text)
    text = text.replace(node, "<node>")
    text = re.sub(r"http://127\.0\.0\.1:\d+", "<site>", text)
    return text.replace(f":{instance_port}", ":<port>")


def scenario(base: str, site: str, instance_port: int, node: str) -> list[tuple[str, int, str, str]]:
    import simweb
    from simweb.serving.omnibox.start import start_url

    out: list[tuple[str, int, str, str]] = []

    def rec(label: str, reply: Reply) -> Reply:
        body = reply.content
        if reply.content_type.startswith("image/png") and body[:4] == b"\x89PNG":
            body = b"<png, more than 1,000 bytes>" if len(body) > 1000 else b"<small png>"
        out.append((label, reply.status_code, reply.content_type.split(";")[0],
                    normalise(body.decode("utf-8", "replace"), node, instance_port)))
        return reply

    rec("info without key", call(base, "GET", "/info", key=None))
    rec("info with a wrong key", call(base, "GET", "/info", key="nope"))
    rec("probe without parameters", call(base, "GET", "/probe"))
    rec("metadata without parameters", call(base, "GET", "/metadata"))
    rec("get, lifetime not an int", call(base, "POST", "/get", {"lifetime_mins": "x"}))
    rec("get, lifetime 61", call(base, "POST", "/get", {"lifetime_mins": 61}))
    time.sleep(11)   # let the real master's capacity poll catch up with the refused lease
    inst = rec("get", call(base, "POST", "/get", {"lifetime_mins": 45})).json()

    def ex(label: str, command: dict, **ids: Any) -> Reply:
        return rec(label, call(base, "POST", "/execute", body=dict(command, **(ids or inst))))

    bad_uuid = "00000000-0000-0000-0000-000000000000:" + str(instance_port)
    rec("probe", call(base, "GET", "/probe", inst))
    rec("probe, unknown node", call(base, "GET", "/probe", dict(inst, node="http://x:1")))
    rec("probe, id without port", call(base, "GET", "/probe", dict(inst, instance_id="abc")))
    rec("probe, unknown port", call(base, "GET", "/probe", dict(inst, instance_id="abc:1")))
    rec("probe, wrong uuid", call(base, "GET", "/probe", dict(inst, instance_id=bad_uuid)))
    rec("metadata", call(base, "GET", "/metadata", inst))
    rec("metadata, id without port", call(base, "GET", "/metadata", dict(inst, instance_id="abc")))
    ex("screenshot info before any screenshot", {"get_screenshot_info": {}})
    ex("visit the task's start URL", {"visit_page": {"url": site + start_url("shopping/product_price", 3)}})
    ex("page metadata", {"get_page_metadata": {}})
    ex("webpage text, 5 lines", {"get_webpage_text": {"n_lines": 5}})
    ex("interactive rects", {"get_interactive_rects": {}})
    rec("set-of-marks screenshot", call(base, "GET", "/screenshot", dict(inst, interaction_mode="set_of_marks")))
    info = ex("screenshot info", {"get_screenshot_info": {}}).json()
    ex("screenshot command", {"screenshot": {}})
    ex("click an unknown id", {"click_id": {"id": "999"}})
    ex("unknown command", {"fly": {}})
    ex("two commands", {"back": {}, "page_down": {}})
    ex("visit without url", {"visit_page": {}})
    ex("click with string args", {"click_id": "x"})
    ex("execute without node", {"back": {}}, instance_id=inst["instance_id"])
    ex("execute, unknown node", {"back": {}}, instance_id=inst["instance_id"], node="http://x:1")
    ex("execute, id without port", {"back": {}}, instance_id="abc", node=inst["node"])
    ex("execute, unknown port", {"back": {}}, instance_id="abc:1", node=inst["node"])

    def display(info: dict, tag: str) -> str:
        return next(d for d in info["visible_rects"]
                    if info["interactive_regions"][info["id_mapping"][d]]["tag_name"] == tag)

    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": "shopping/product_price"})
    ex("fill the search box by display id", {"fill_id": {"id": display(info, "input, type=search"),
                                                          "value": env.task.params["name"], "press_enter": True}})
    ex("page metadata after the search", {"get_page_metadata": {}})
    ex("keypress Tab", {"keypress": {"keys": ["Tab"]}})
    ex("page_down", {"page_down": {}})
    ex("page_up 100", {"page_up": {"amount": 100}})
    ex("scroll_id", {"scroll_id": {"id": "10", "direction": "down"}})
    ex("hover_coords", {"hover_coords": {"x": 100, "y": 100}})
    ex("sleep", {"sleep": {"duration": 0.1}})
    ex("back", {"back": {}})
    ex("page metadata after back", {"get_page_metadata": {}})
    ex("visit a product page", {"visit_page": {"url": site + f"/p/{env.task.params['product_id']}"}})
    rec("set-of-marks screenshot (default mode)", call(base, "GET", "/screenshot", inst))
    info = ex("screenshot info of the product page", {"get_screenshot_info": {}}).json()
    ex("interactive rects, select not focused", {"get_interactive_rects": {}})
    ex("click the select by display id", {"click_id": {"id": display(info, "select")}})
    ex("interactive rects, select focused", {"get_interactive_rects": {}})
    rec("release", call(base, "POST", "/reset", inst))
    rec("release again", call(base, "POST", "/reset", inst))
    rec("probe the released id", call(base, "GET", "/probe", inst))
    rec("get right after the release", call(base, "POST", "/get", {"lifetime_mins": 45}))
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--real", required=True, help="the real master's URL")
    p.add_argument("--real-instance-port", type=int, default=9000, help="port of the real node's instance server")
    p.add_argument("--out", type=Path, default=None, help="write both runs as JSON")
    args = p.parse_args()

    from simweb.serving.browser import ServedApp
    from simweb.serving.omnibox.server import OmniboxServer

    node = call(args.real, "GET", "/info").json()["nodes"][0]["hash"]
    with ServedApp("shopping") as served:
        real = scenario(args.real.rstrip("/"), served.base_url, args.real_instance_port, node)
    with OmniboxServer(["shopping"], port=0, browsers=1, status_interval=10) as srv:
        ours = scenario(srv.base_url, srv.apps()["shopping"], srv.pool.instances[0].port, srv.node)
    if args.out:
        args.out.write_text(json.dumps({"real": real, "simweb": ours}, indent=1, ensure_ascii=False))
    same = 0
    for a, b in zip(real, ours):
        if a[1:] == b[1:]:
            same += 1
            continue
        print(f"DIFFERS: {a[0]}\n  real:   {a[1]} {a[2]} {a[3][:400]}\n  simweb: {b[1]} {b[2]} {b[3][:400]}")
    print(f"{same} of {len(real)} answers identical")


if __name__ == "__main__":
    main()

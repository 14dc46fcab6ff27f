"""``simweb omnibox``: WebGym's browser-server protocol over real Chromium on simweb apps.

One server with two browsers serves the module (a few Chromium launches in all); the
shapes asserted here are the real master's (microsoft/webgym omniboxes/master/server.py,
node/server.py, node/instances/playwright_instance.py)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.parse

import pytest

pytest.importorskip("playwright.sync_api")

from omnibox_client import Master, call

import simweb
from simweb.serving.omnibox.env import OmniboxSimEnv
from simweb.serving.omnibox.server import OmniboxServer
from simweb.serving.omnibox.start import start_url

pytestmark = pytest.mark.browser
TASK = "shopping/product_price"


@pytest.fixture(scope="module")
def server():
    # A large status interval: the tests refresh the advertised capacity themselves.
    with OmniboxServer(["shopping"], port=0, browsers=2, status_interval=3600) as srv:
        yield srv


@pytest.fixture
def master(server):
    server.pool.refresh()
    return Master(server.base_url)


@pytest.fixture
def leased(server, master):
    inst = master.get_instance(45)
    yield inst
    if server.pool.leased(inst["instance_id"]):
        master.reset_instance(inst)
    server.pool.refresh()


def _png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")


def _display_id(info: dict, predicate) -> str:
    for display in info["visible_rects"]:
        region = info["interactive_regions"][info["id_mapping"][display]]
        if predicate(region):
            return display
    raise AssertionError("no visible region matches")


# ------------------------------------------------------------------ protocol shapes

def test_api_key_and_parameter_errors_have_the_real_shapes(server, leased):
    base = server.base_url
    assert call(base, "GET", "/info", key=None).json() == {"detail": "API Key is missing"}
    assert call(base, "GET", "/info", key="wrong").status_code == 401
    assert call(base, "GET", "/info", key="wrong").json() == {"detail": "Invalid API Key."}
    for path in ("/metadata", "/probe"):
        reply = call(base, "GET", path)
        assert reply.status_code == 422
        assert [e["loc"] for e in reply.json()["detail"]] == [["query", "instance_id"], ["query", "node"]]
        assert call(base, "GET", path, {"instance_id": leased["instance_id"]}).status_code == 422
    assert call(base, "GET", "/probe", dict(leased, node="http://elsewhere:1")).json() == \
        {"detail": "Node http://elsewhere:1 is not found"}
    assert call(base, "GET", "/probe", leased).json() == {"status": "success", "message": "Probe successful"}
    meta = call(base, "GET", "/metadata", leased)
    assert meta.content_type == "image/png" and meta.json() == {"width": 1280, "height": 768}
    assert call(base, "POST", "/get", {"lifetime_mins": "x"}).status_code == 422
    # /execute: the master pops node and instance_id (a plain 500 without them).
    assert call(base, "POST", "/execute", body={"back": {}}).status_code == 500
    bad = call(base, "POST", "/execute", body={"back": {}, "node": leased["node"], "instance_id": "no-port"})
    assert bad.status_code == 500 and bad.json() == {"status": "error",
                                                     "message": "Failed to execute command: Internal Server Error"}
    info = call(base, "GET", "/info").json()
    (node,) = info["nodes"]
    assert node["capacity"] == 2 and leased["instance_id"] in node["instances"] and node["hash"] == leased["node"]


def test_command_failures_are_500_status_error_message(master, leased):
    assert master.execute(leased, {"get_screenshot_info": {}}).status_code == 200
    for command, detail in [({"click_id": {"id": "4242"}}, "Element with identifier 4242 not found or not visible"),
                            ({"fly": {}}, "Unsupported command: fly"),
                            ({"visit_page": {}}, "'url'")]:
        reply = master.execute(leased, command)
        assert reply.status_code == 500
        body = reply.json()
        assert body["status"] == "error"
        assert body["message"] == 'Failed to execute command: {"detail":"Error executing command: ' + detail + '"}'
    two = master.execute(leased, {"back": {}, "page_down": {}})
    assert "Only one command per request is supported" in two.json()["message"]


def test_503_right_after_release_until_the_capacity_refreshes(server, master):
    a, b = master.get_instance(), master.get_instance()
    full = call(server.base_url, "POST", "/get", {"lifetime_mins": 45})
    assert full.status_code == 503
    assert full.json() == {"detail": "No available nodes with capacity to create new instance"}
    assert master.reset_instance(a).json() == {"status": "success"}
    # Released, but the master's cached count has not been refreshed yet (as on WebGym's master).
    assert call(server.base_url, "POST", "/get", {"lifetime_mins": 45}).status_code == 503
    server.pool.refresh()
    c = master.get_instance()
    assert c["instance_id"] != a["instance_id"]          # a new uuid for the same browser
    assert c["instance_id"].split(":")[1] == a["instance_id"].split(":")[1]
    assert call(server.base_url, "GET", "/probe", a).json() == {"detail": f"Invalid instance UUID: {a['instance_id'].split(':')[0]}"}
    assert master.reset_instance(a).status_code == 400
    for inst in (b, c):
        master.reset_instance(inst)
    assert {i.launches for i in server.pool.instances} == {1}   # releases never relaunched Chromium


# ------------------------------------------------------------------ an episode as WebGym runs it

def test_webgym_style_episode_and_verdict(server, master):
    """allocate, visit the task's website, screenshot (> 1,000 bytes), get_screenshot_info,
    fill and click by display id, answer, read the verdict, release."""
    inst = master.get_instance(45)
    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": TASK})
    website = server.apps()["shopping"] + start_url(TASK, 3)
    assert master.execute(inst, {"visit_page": {"url": website}}).json() == {"status": "success"}
    page = master.execute(inst, {"get_page_metadata": {}}).json()
    assert page["url"] == server.apps()["shopping"] + env.task.start_url    # the start page's own URL

    shot = master.screenshot(inst, "set_of_marks")
    assert shot.status_code == 200 and shot.content_type == "image/png" and len(shot.content) > 1000
    assert _png_size(shot.content) == (1280, 768)
    info = master.execute(inst, {"get_screenshot_info": {}}).json()
    assert set(info) == {"visible_rects", "rects_above", "rects_below", "interactive_regions", "id_mapping"}
    assert info["visible_rects"] == [str(n) for n in range(1, len(info["visible_rects"]) + 1)]
    assert all(info["id_mapping"][d] in info["interactive_regions"] for d in info["visible_rects"])
    region = next(iter(info["interactive_regions"].values()))
    assert set(region) == {"tag_name", "role", "aria_name", "v_scrollable", "rects"}
    assert set(region["rects"][0]) == {"x", "y", "width", "height", "top", "right", "bottom", "left"}

    name = env.task.params["name"]
    box = _display_id(info, lambda r: r["tag_name"] == "input, type=search")
    assert box != info["id_mapping"][box]     # a display id, not the page id
    reply = master.execute(inst, {"fill_id": {"id": box, "value": name, "press_enter": False}})
    assert reply.json() == {"status": "success"}
    go = _display_id(info, lambda r: r["tag_name"] == "button" and r["aria_name"] == "Search")
    assert master.execute(inst, {"click_id": {"id": go}}).json() == {"status": "success"}
    url = master.execute(inst, {"get_page_metadata": {}}).json()["url"]
    assert url == server.apps()["shopping"] + "/search?" + urllib.parse.urlencode({"q": name})
    text = master.execute(inst, {"get_webpage_text": {"n_lines": 100}}).json()["text"]
    assert name in text and "" not in text.split("\n")

    answer = env.oracle_plan()[-1].split("'")[1]          # send_msg_to_user('$93.99')
    wrong = master.ext("GET", "verdict", inst, answer="$1.00").json()
    right = master.ext("POST", "verdict", inst, body={"answer": answer}).json()
    assert right["task"]["id"] == TASK and right["task"]["seed"] == 3 and right["answer"] == answer
    assert right["verdict"]["success"] is True and wrong["verdict"]["success"] is False
    # The verdict is the verifier's on the same states in-process.
    for action in env.oracle_plan():
        _, _, _, _, sim_info = env.step(action)
    assert sim_info["verdict"]["success"] is True
    assert right["verdict"]["checks"] == sim_info["verdict"]["checks"]
    assert master.reset_instance(inst).json() == {"status": "success"}


def test_a_start_url_the_agent_opens_itself_earns_nothing(server, master):
    """The episode is the one the harness started: an agent that opens another task's start
    URL (an easy one whose answer it knows) restarts its session on it, and the verdict of
    the lease is a failure, not that task's success. The next lease starts afresh."""
    inst = master.get_instance(45)
    base = server.apps()["shopping"]
    assert master.execute(inst, {"visit_page": {"url": base + start_url(TASK, 3)}}).json() == {"status": "success"}
    easy = simweb.make("shopping", seed=0)
    easy.reset(seed=0, options={"task": TASK})
    answer = easy.oracle_plan()[-1].split("'")[1]
    # the agent's own visit to the start URL of the same template at the seed it knows
    assert master.execute(inst, {"visit_page": {"url": base + start_url(TASK, 0)}}).json() == {"status": "success"}
    got = master.ext("POST", "verdict", inst, body={"answer": answer}).json()
    assert got["task"] == {"id": TASK, "seed": 3}
    assert got["verdict"]["success"] is False and got["verdict"]["clean"] is False
    assert [c["name"] for c in got["verdict"]["checks"]] == ["collateral: the session was restarted on another task"]
    assert master.reset_instance(inst).json() == {"status": "success"}
    inst = master.get_instance(45)   # a new lease binds its own first start URL
    assert master.execute(inst, {"visit_page": {"url": base + start_url(TASK, 0)}}).json() == {"status": "success"}
    got = master.ext("POST", "verdict", inst, body={"answer": answer}).json()
    assert got["task"]["seed"] == 0 and got["verdict"]["success"] is True
    assert master.reset_instance(inst).json() == {"status": "success"}


def test_id_mapping_is_used_and_survives_a_release(server, master):
    inst = master.get_instance()
    master.execute(inst, {"visit_page": {"url": server.apps()["shopping"] + "/"}})
    master.screenshot(inst)
    info = master.execute(inst, {"get_screenshot_info": {}}).json()
    assert info["id_mapping"]["1"] == "10"        # page ids start at 10, display ids at 1
    cart = _display_id(info, lambda r: r["aria_name"].startswith("Cart"))
    master.execute(inst, {"click_id": {"id": cart}})
    assert master.execute(inst, {"get_page_metadata": {}}).json()["url"].endswith("/cart")
    port = inst["instance_id"].split(":")[1]
    master.reset_instance(inst)
    server.pool.refresh()
    again = master.get_instance()
    while again["instance_id"].split(":")[1] != port:     # the same browser slot
        other = again
        again = master.get_instance()
        master.reset_instance(other)
    # As on the real instance, the last set-of-marks info outlives the release.
    assert master.execute(again, {"get_screenshot_info": {}}).json() == info
    master.reset_instance(again)


def test_a_screenshot_with_an_ended_lease_neither_shows_nor_changes_the_next_lease(server, master):
    """`/screenshot` went by the id's port alone: a client whose lease had ended (released,
    or expired under it) still got the screen of whoever held the browser now, and its
    set-of-marks screenshot replaced that client's id mapping, so their next `click_id`
    clicked another element. It is refused as `/execute` refuses an ended lease."""
    shop = server.apps()["shopping"]
    old = master.get_instance()
    port = old["instance_id"].split(":")[1]
    master.execute(old, {"visit_page": {"url": shop + "/"}})
    master.reset_instance(old)
    server.pool.refresh()
    new = master.get_instance()
    while new["instance_id"].split(":")[1] != port:     # the same browser slot
        other = new
        new = master.get_instance()
        master.reset_instance(other)
    try:
        master.execute(new, {"visit_page": {"url": shop + "/login"}})
        master.screenshot(new)
        mine = master.execute(new, {"get_screenshot_info": {}}).json()
        master.execute(new, {"visit_page": {"url": shop + "/"}})
        reply = call(server.base_url, "GET", "/screenshot", dict(old, interaction_mode="set_of_marks"))
        assert reply.status_code == 400 and "Invalid instance UUID" in reply.json()["message"]
        assert master.execute(new, {"get_screenshot_info": {}}).json() == mine
        forged = dict(new, instance_id="0" * 32 + ":" + port)
        assert call(server.base_url, "GET", "/screenshot", forged).status_code == 400
        shot = call(server.base_url, "GET", "/screenshot", new)
        assert shot.status_code == 200 and shot.content_type == "image/png" and shot.content[:4] == b"\x89PNG"
    finally:
        master.reset_instance(new)
        server.pool.refresh()


def test_regions_as_the_real_page_script_reports_them(server, master, leased):
    """An input comes as tag ``input, type=<type>`` with an empty role unless the type has
    an implicit one; options are listed only while their select is focused."""
    shop = server.apps()["shopping"]
    master.execute(leased, {"visit_page": {"url": shop + "/login"}})
    regions = master.execute(leased, {"get_interactive_rects": {}}).json()
    tags = {r["tag_name"]: r["role"] for r in regions.values()}
    assert tags["input, type=password"] == "" and tags["input, type=text"] == "textbox"
    assert all(set(r) == {"tag_name", "role", "aria_name", "v_scrollable", "rects"} for r in regions.values())
    assert sorted(regions, key=int) == list(regions)       # ascending page ids

    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": "shopping/buy_product"})
    product = env.task.params["product_id"]
    master.execute(leased, {"visit_page": {"url": shop + f"/p/{product}"}})
    before = master.execute(leased, {"get_interactive_rects": {}}).json()
    assert not [r for r in before.values() if r["tag_name"] == "option"]
    master.screenshot(leased)
    size = master.ext("GET", "locate", leased, bid="opt-size").json()
    master.execute(leased, {"click_id": {"id": size["display_id"]}})
    after = master.execute(leased, {"get_interactive_rects": {}}).json()
    options = [r["aria_name"].strip() for r in after.values() if r["tag_name"] == "option"]
    assert env.task.params["size"] in options
    master.screenshot(leased)
    info = master.execute(leased, {"get_screenshot_info": {}}).json()
    pick = _display_id(info, lambda r: r["tag_name"] == "option" and r["aria_name"].strip() == env.task.params["size"])
    assert master.execute(leased, {"select_option": {"id": pick}}).json() == {"status": "success"}
    snap = master.ext("GET", "snapshot", leased).json()
    tab = snap["state"]["browser"]["tabs"][snap["state"]["browser"]["active"]]
    assert tab["fields"].get("opt-size") == env.task.params["size"]


def test_an_expired_lease_is_released_and_its_id_refused(server, master):
    inst = master.get_instance(1)
    port = int(inst["instance_id"].split(":")[1])
    with server.pool._lock:
        server.pool._leases[port].expires = 0.0     # as if its minute were over
    deadline = time.monotonic() + 30
    while server.pool.free() < server.pool.size and time.monotonic() < deadline:
        time.sleep(0.1)      # released and restored by the pool's lifetime keeper
    assert not server.pool.leased(inst["instance_id"]) and server.pool.free() == server.pool.size
    reply = master.execute(inst, {"get_page_metadata": {}})
    assert reply.status_code == 400 and "Invalid instance UUID" in reply.json()["message"]
    assert call(server.base_url, "POST", "/get", {"lifetime_mins": 61}).status_code == 503   # over --lifetime-max


# ------------------------------------------------------------------ extensions

def test_snapshot_restore_fork(server, master):
    inst = master.get_instance()
    assert master.ext("POST", "start", inst, task="shopping/buy_product", seed=3).status_code == 200
    # Ids go through the last screenshot's id_mapping (even one from before the lease):
    # take a screenshot and use its display id.
    master.screenshot(inst)
    loc = master.ext("GET", "locate", inst, bid="search-q").json()
    master.execute(inst, {"fill_id": {"id": loc["display_id"], "value": "lamp", "press_enter": True}})
    snap = master.ext("GET", "snapshot", inst).json()
    assert snap["app"] == "shopping" and "/search" in snap["url"]
    fork = master.ext("POST", "fork", inst).json()
    assert set(fork) == {"instance_id", "node"} and fork["instance_id"] != inst["instance_id"]
    assert master.ext("GET", "snapshot", fork).json()["state"]["runtime"] == snap["state"]["runtime"]
    assert master.execute(fork, {"get_page_metadata": {}}).json()["url"] == snap["url"]
    master.execute(inst, {"visit_page": {"url": server.apps()["shopping"] + "/cart"}})
    assert master.ext("POST", "restore", inst, body={"state": snap["state"]}).json()["url"] == snap["url"]
    assert master.ext("POST", "restore", inst, body={"state": {"world": {"app": "nope"}}}).status_code == 400
    assert master.ext("GET", "verdict", {"instance_id": "x:1", "node": inst["node"]}).status_code == 400
    for i in (inst, fork):
        master.reset_instance(i)


# ------------------------------------------------------------------ compare through the protocol

@pytest.mark.parametrize("task", ["shopping/buy_product", "shopping/product_price"])
def test_compare_oracle_through_omnibox_agrees_at_every_step(server, task):
    from simweb.live.compare import compare_runs

    sim = simweb.make("shopping", seed=0)
    sim.reset(seed=3, options={"task": task})
    plan = sim.oracle_plan()
    server.pool.refresh()
    other = OmniboxSimEnv(server.base_url)
    try:
        report = compare_runs(sim, other, plan, task_a=task, task_b=task, seed=3)
    finally:
        other.close()
    s = report["summary"]
    assert s["first_divergence"] is None, report["steps"][s["first_divergence"]]
    assert s["full_agreement"] and s["url_agreement"] == 1.0 and s["min_jaccard"] == 1.0
    assert report["steps"][-1]["b"]["reward"] == 1.0 and report["steps"][-1]["b"]["terminated"]


# ------------------------------------------------------------------ one command, clean stop

def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as fh:
                    ppid = int(fh.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.add(child)
            todo.append(child)
    return out


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _is_chromium(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return b"chrom" in fh.read().split(b"\0")[0]
    except OSError:
        return False


@pytest.mark.parametrize("sig,group", [(signal.SIGINT, True), (signal.SIGINT, False), (signal.SIGTERM, False)],
                         ids=["ctrl-c", "sigint", "sigterm"])
def test_cli_starts_with_one_command_and_stops_without_leaving_chromium(sig, group):
    """group: Ctrl-C in a terminal, which signals the whole process group (Playwright's
    driver and Chromium included), not only the server."""
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "omnibox", "--apps", "shopping", "--port", "0",
                             "--browsers", "1"], stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
                            start_new_session=group)
    assert proc.stderr is not None
    try:
        line = proc.stderr.readline()
        assert "simweb omnibox: 1 browser(s) on http://127.0.0.1:" in line, line
        base = line.split(" on ")[1].split()[0]
        info = call(base, "GET", "/info")
        assert info.json()["nodes"][0]["capacity"] == 1
        # make_server's waitress, as `simweb serve` (its ident), not Flask's development
        # server (whose Server header is "Werkzeug/<version> Python/<version>").
        assert info.headers["Server"] == "simweb"
        chromium = {p for p in _descendants(proc.pid) if _is_chromium(p)}
        assert chromium, "no Chromium under the server"
        if group:
            os.killpg(proc.pid, sig)
        else:
            proc.send_signal(sig)
        assert proc.wait(timeout=60) == 0
        rest = proc.stderr.read()
        assert rest.rstrip().endswith("simweb omnibox: stopped") and "Traceback" not in rest
        assert "exception" not in rest.lower()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    deadline = time.monotonic() + 10
    while any(_running(p) for p in chromium) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [p for p in chromium if _running(p)]


# ------------------------------------------------------------------ `simweb serve` for stock BrowserGym

def test_simweb_serve_default_pages_carry_no_bid_attribute(tmp_path):
    """Stock BrowserGym throws on a first visit to a page whose elements already carry its
    ``bid`` attribute; `simweb serve` without a flag serves simweb's ids as data-simweb-bid."""
    import re
    import urllib.request

    # Its own session database: the default one lives in the user's cache, where another
    # simweb serve (a developer's, a second test run) may be writing.
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "serve", "shopping", "--port", "0",
                             "--session-db", f"sqlite:///{tmp_path / 'sessions.sqlite'}"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    assert proc.stderr is not None
    try:
        url = None
        for _ in range(50):
            line = proc.stderr.readline()
            if not line:   # the server exited
                break
            found = re.search(r"serving shopping on (http://127\.0\.0\.1:\d+)", line)
            if found:
                url = found.group(1)
                break
        assert url, "the server did not start"
        with urllib.request.urlopen(url + "/", timeout=30) as resp:
            html = resp.read().decode("utf-8")
        assert not re.search(r"<[^>]*\sbid=", html)
        assert 'data-simweb-bid="nav-home"' in html
        with urllib.request.urlopen(url + start_url("shopping/product_price", 3), timeout=30) as resp:
            assert ' bid="' not in resp.read().decode("utf-8")
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, rest = proc.communicate(timeout=60)   # reads what it still writes: it never blocks on stderr
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise
    assert proc.returncode == 0 and "Traceback" not in rest


def test_simweb_compare_against_omnibox(server, tmp_path):
    import json

    from click.testing import CliRunner

    from simweb.tools.cli import main

    server.pool.refresh()
    out = tmp_path / "cmp.jsonl"
    result = CliRunner().invoke(main, ["compare", "shopping", "-t", "shopping/order_total", "-s", "2", "--against",
                                       "omnibox", "--server", server.base_url, "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "first divergence None" in result.output
    summary = json.loads(out.read_text().splitlines()[-1])
    assert summary["full_agreement"] is True and summary["answers_match"] is True
    bad = CliRunner().invoke(main, ["compare", "shopping", "-t", "shopping/order_total", "--against", "omnibox",
                                    "--server", "http://127.0.0.1:9", "-o", str(tmp_path / "x.jsonl")])
    assert bad.exit_code == 2 and "cannot reach http://127.0.0.1:9" in bad.output

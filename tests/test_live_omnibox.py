"""The Omniboxes client against the fake server, which answers in the real server's shapes
(docs/webgym.md): one test per protocol fact the client relies on."""

import json
import socket
import struct
import urllib.request
import zlib

import pytest

from simweb.live.fake_server import SITE, FakeOmnibox, set_of_marks, tiny_png
from simweb.live.omnibox import (
    Instance,
    OmniboxClient,
    OmniboxError,
    Rect,
    ScreenshotInfo,
    parse_page_metadata,
    parse_regions,
    parse_screenshot_info,
    parse_text,
    role_of,
)

KEY = "secret-key"


@pytest.fixture
def server():
    with FakeOmnibox(KEY) as fake:
        yield fake


@pytest.fixture
def client(server):
    return OmniboxClient(server.url, KEY, timeout=5, retries=2, backoff=0.01, sleep=lambda s: None)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    assert zlib.crc32(data[12:29]) & 0xFFFFFFFF == struct.unpack(">I", data[29:33])[0]
    return struct.unpack(">II", data[16:24])


def raw(server, method, path, params=None, body=None):
    """One request to the fake as any client would send it: (status, content type, body)."""
    url = server.url + path + ("?" + "&".join(f"{k}={v}" for k, v in params.items()) if params else "")
    data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
    req = urllib.request.Request(url, data=data, method=method, headers={"x-api-key": KEY,
                                                                         "Content-Type": "application/json"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=5) as resp:
            return resp.status, resp.headers.get_content_type(), resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get_content_type(), exc.read()


def test_tiny_png_is_valid():
    data = tiny_png(3, 2, (255, 0, 0))
    assert png_size(data) == (3, 2)
    idat_len = struct.unpack(">I", data[33:37])[0]
    assert zlib.decompress(data[41:41 + idat_len]) == (b"\x00" + b"\xff\x00\x00" * 3) * 2


def test_master_endpoints(server, client):
    inst = client.acquire(lifetime_mins=5)
    assert isinstance(inst, Instance) and inst.node == FakeOmnibox.NODE
    assert inst.instance_id.endswith(":9100") and len(inst.instance_id.split(":")[0]) == 36
    assert client.viewport(inst) == (1280, 768)
    assert client.probe(inst) is True
    assert inst.instance_id in client.info()["nodes"][0]["instances"]
    png_size(client.screenshot(inst))
    assert server.requests[-1]["params"]["interaction_mode"] == "set_of_marks"
    assert client.release(inst) == {"status": "success"}
    assert server.instances == {}
    with pytest.raises(OmniboxError, match="HTTP 400: Instance not in use or already released") as info:
        client.release(inst)
    assert info.value.status == 400


def test_row5_instance_endpoints_need_instance_id_and_node(server, client):
    inst = client.acquire()
    for path in ("/metadata", "/probe", "/screenshot"):
        status, _, body = raw(server, "GET", path, {"instance_id": inst.instance_id})
        assert status == 422 and json.loads(body)["detail"][0]["loc"] == ["query", "node"]
    status, _, body = raw(server, "GET", "/metadata", {"instance_id": inst.instance_id, "node": "other"})
    assert status == 400 and json.loads(body) == {"detail": "Node other is not found"}
    # /metadata is JSON served as image/png: the client reads it anyway
    status, content_type, body = raw(server, "GET", "/metadata", inst.params())
    assert (status, content_type, json.loads(body)) == (200, "image/png", {"width": 1280, "height": 768})
    # /execute without the instance's node is the master's bare 500
    status, content_type, body = raw(server, "POST", "/execute", body={"instance_id": inst.instance_id,
                                                                       "get_page_metadata": {}})
    assert (status, content_type, body) == (500, "text/plain", b"Internal Server Error")


def test_row1_screenshot_command_returns_a_status_and_the_image_comes_from_get(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    assert client.execute(inst, "screenshot", {"interaction_mode": "coordinates"}) == {"status": "screenshot_taken"}
    client.take_screenshot(inst)
    shot = client.screenshot(inst, "coordinates")
    assert png_size(shot) == (320, 192) and len(shot) > 1000
    assert client.screenshot(inst, "set_of_marks") != shot   # the marks change the image


def test_rows2_3_screenshot_info_numbering(server, client):
    inst = client.acquire()
    assert client.screenshot_info(inst) is None   # 200 {"error": "No screenshot info available"}
    assert client.execute(inst, "get_screenshot_info") == {"error": "No screenshot info available"}
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    client.screenshot(inst, "coordinates")        # a plain screenshot records nothing
    assert client.screenshot_info(inst) is None
    client.screenshot(inst)
    info = client.screenshot_info(inst)
    assert info.visible == ("1", "2", "3") and info.above == info.below == ()
    assert info.id_mapping == {"1": "10", "2": "11", "3": "12"}
    assert set(info.regions) == {"10", "11", "12"} and info.regions["10"].aria_name == "Products"
    assert [info.resolve(d) for d in info.visible] == ["10", "11", "12"]


def test_row4_id_commands_go_through_the_numbering_which_survives_a_release(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    client.screenshot(inst)
    client.execute(inst, "click_id", {"id": "3"})          # display id 3 = page id 12 = "Sign in"
    assert client.page_metadata(inst).url == SITE + "/signin"
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    client.execute(inst, "click_id", {"id": "10"})         # a page id: not a display id, so unchanged
    assert client.page_metadata(inst).url == SITE + "/products"
    client.release(inst)
    client = OmniboxClient(server.url, KEY, retries=0, acquire_wait_s=10, backoff=1, sleep=lambda s: None)
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/products"})
    assert client.screenshot_info(inst).id_mapping["1"] == "10"   # the previous tenant's numbering
    client.execute(inst, "click_id", {"id": "2"})          # page id 2 does not exist; display 2 = page 11
    assert client.page_metadata(inst).url == SITE + "/contact"


def test_off_screen_identities_overwrite_equal_display_ids(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/products"})
    client.execute(inst, "page_down", {"full_page": True})
    client.screenshot(inst)
    info = client.screenshot_info(inst)
    assert info.above[:3] == ("10", "11", "12") and info.visible[:3] == ("1", "2", "3")
    assert info.id_mapping["12"] == "12"                    # display 12 was page 38 ("Item 27")
    numbering = info.numbering()
    assert numbering["12"] == "38" and info.display_id("38") == "12"
    assert info.send_id("38") == "38" and info.send_id("12") == "12" and info.send_id("35") == "9" and info.send_id("25") == "25"
    client.execute(inst, "click_id", {"id": "12"})          # what WebGym sends for label 12...
    assert client.page_metadata(inst).url == SITE + "/products/1"   # ...reaches an element scrolled away


def test_row6_select_option_reads_only_the_option_id(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/contact"})
    regions = client.interactive_rects(inst)
    assert [r.tag_name for r in regions.values()] == ["a", "input, type=text", "select", "button"]
    assert [r.page_id for r in regions.values()] == ["10", "11", "12", "13"]
    client.execute(inst, "select_option", {"id": "12", "value": "Support"})   # the select: only clicked
    assert "Support" not in client.execute(inst, "get_page_metadata")["url"]
    regions = client.interactive_rects(inst)
    assert [r.aria_name for r in regions.values() if r.tag_name == "option"] == ["Sales", "Support"]
    client.execute(inst, "select_option", {"id": "15"})
    client.execute(inst, "click_id", {"id": "13"})
    assert client.page_metadata(inst).url == SITE + "/contact/sent?name=&topic=Support"


def test_row7_options_are_listed_only_while_their_select_is_focused(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/contact"})
    assert "option" not in [r.tag_name for r in client.interactive_rects(inst).values()]
    client.execute(inst, "click_id", {"id": "12"})
    options = [r for r in client.interactive_rects(inst).values() if r.tag_name == "option"]
    assert [o.page_id for o in options] == ["14", "15"] and all(o.rect is None for o in options)   # labelled last
    client.screenshot(inst)
    info = client.screenshot_info(inst)
    assert info.visible == ("1", "2", "3", "4", "5", "6") and info.id_mapping["5"] == "14"   # options always drawn
    client.execute(inst, "click_id", {"id": "2"})           # focus elsewhere: the options go
    assert "option" not in [r.tag_name for r in client.interactive_rects(inst).values()]


def test_rows8_9_regions_carry_the_page_scripts_fields_only(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/signin"})
    result = client.execute(inst, "get_interactive_rects")
    assert set(result) == {"10", "11", "12", "13"}
    for region in result.values():
        assert set(region) == {"tag_name", "role", "aria_name", "v_scrollable", "rects"}
        assert set(region["rects"][0]) == {"x", "y", "width", "height", "top", "right", "bottom", "left"}
    assert (result["12"]["tag_name"], result["12"]["role"]) == ("input, type=password", "")
    regions = parse_regions(result)
    assert role_of(regions["12"].role, regions["12"].tag_name) == "textbox"
    assert regions["10"].rect == Rect(40, 60, 240, 30) and regions["10"].rect.center() == (160, 75)


def test_row10_webpage_text_takes_n_lines_and_drops_blank_lines(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    assert client.webpage_text(inst) == "Welcome to Fake Shop\nEverything here is fake.\nProducts\nContact\nSign in"
    assert client.webpage_text(inst, n_lines=3) == "Welcome to Fake Shop\nEverything here is fake."
    client.execute(inst, "visit_page", {"url": SITE + "/products"})
    assert len(client.webpage_text(inst).splitlines()) == 99      # 100 lines, one of them blank
    assert len(client.webpage_text(inst, 500).splitlines()) == 131
    assert server.commands("get_webpage_text")[-1]["args"] == {"n_lines": 500}


def test_row11_failures_are_500s_not_retried(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    status, _, body = raw(server, "POST", "/execute", body={**inst.params(), "click_id": {"id": "99"}})
    assert status == 500 and json.loads(body) == {
        "status": "error",
        "message": 'Failed to execute command: {"detail":"Error executing command: Element with identifier 99 '
                   'not found or not visible"}'}
    with pytest.raises(OmniboxError) as info:
        client.execute(inst, "get_webpage_text", {"n_lines": "many"})
    assert info.value.status == 500 and len(server.commands("get_webpage_text")) == 1   # a query too
    with pytest.raises(OmniboxError) as info:
        client.execute(inst, "click_id", {"id": "99"})
    assert str(info.value) == "execute click_id: HTTP 500: Element with identifier 99 not found or not visible"
    with pytest.raises(OmniboxError, match="ERR_NAME_NOT_RESOLVED"):
        client.execute(inst, "visit_page", {"url": "https://elsewhere.test/"})
    with pytest.raises(OmniboxError, match="HTTP 500: 'url'"):
        client.execute(inst, "visit_page", {})
    with pytest.raises(ValueError, match="unknown Omniboxes command 'fly'"):
        client.execute(inst, "fly")


def test_row12_get_waits_out_the_503s_after_a_release(server):
    sleeps: list[float] = []
    client = OmniboxClient(server.url, KEY, retries=0, backoff=0.5, max_backoff=4, acquire_wait_s=12,
                           sleep=sleeps.append)
    client.release(client.acquire())
    inst = client.acquire()                          # two 503s while the node relaunches Chromium
    assert sleeps == [0.5, 1.0] and inst.instance_id.startswith("00000005-")
    assert [r["path"] for r in server.requests].count("/get") == 4


def test_get_gives_up_after_acquire_wait_s(server):
    sleeps: list[float] = []
    client = OmniboxClient(server.url, KEY, retries=0, backoff=1, max_backoff=4, acquire_wait_s=6,
                           sleep=sleeps.append)
    for _ in range(4):
        client.acquire()
    with pytest.raises(OmniboxError, match=r"HTTP 503: No available nodes with capacity.*\(waited 6 s\)"):
        client.acquire()
    assert sleeps == [1, 2, 3]


def test_auth_failure(server):
    for key, detail in (("wrong", "Invalid API Key."), (None, "API Key is missing")):
        bad = OmniboxClient(server.url, key, retries=3, backoff=0.01)
        with pytest.raises(OmniboxError) as info:
            bad.acquire()
        assert info.value.status == 401
        assert f"HTTP 401: {detail}" in str(info.value) and "API key" in str(info.value)
    assert server.instances == {}


def test_unavailable_is_retried_with_backoff(server):
    sleeps: list[float] = []
    client = OmniboxClient(server.url, KEY, retries=3, backoff=0.5, max_backoff=1.5, sleep=sleeps.append)
    inst = client.acquire()
    server.fail_next(3, status=503)
    assert client.viewport(inst) == (1280, 768)
    assert sleeps == [0.5, 1.0, 1.5]
    server.fail_next(3, status=502)
    with pytest.raises(OmniboxError, match=r"HTTP 502: injected failure 502 after 2 attempts"):
        OmniboxClient(server.url, KEY, retries=1, sleep=sleeps.append).viewport(inst)


def test_actions_are_sent_once_unless_turned_away(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    server.fail_next(1, status=500)
    with pytest.raises(OmniboxError, match="HTTP 500: injected failure"):
        client.execute(inst, "click_id", {"id": "10"})
    assert len(server.commands("click_id")) == 1
    server.fail_next(1, status=503)  # unavailable: the request never ran, so it is retried
    client.execute(inst, "click_id", {"id": "10"})
    assert len(server.commands("click_id")) == 3
    assert client.page_metadata(inst).url == SITE + "/products"


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps: list[float] = []
    client = OmniboxClient(f"http://127.0.0.1:{port}", KEY, retries=2, backoff=0.1, sleep=sleeps.append)
    with pytest.raises(OmniboxError) as info:
        client.info()
    assert sleeps == [0.1, 0.2]
    assert str(info.value).startswith(f"GET /info: cannot reach http://127.0.0.1:{port}: ")
    assert str(info.value).endswith("after 3 attempts")


def test_timeout_is_reported():
    with socket.socket() as listener:  # accepts, never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        client = OmniboxClient(f"http://127.0.0.1:{port}", KEY, timeout=0.2, retries=0)
        with pytest.raises(OmniboxError, match=r"timed out after 0.2 s"):
            client.info()


def test_bad_base_url():
    with pytest.raises(ValueError, match="base URL"):
        OmniboxClient("localhost:7000")


# ----------------------------------------------------------------------------- parsers

def test_parse_screenshot_info_and_numbering():
    regions = {str(p): {"tag_name": "a", "role": "link", "aria_name": f"L{p}", "v_scrollable": False,
                        "rects": [{"x": 0, "y": y, "width": 10, "height": 10, "top": y, "right": 10,
                                   "bottom": y + 10, "left": 0}]}
               for p, y in [(10, -50), (11, 5), (12, 20), (13, 40), (14, 900)]}
    info = parse_screenshot_info(set_of_marks(regions))
    assert info is not None
    assert info.visible == ("1", "2", "3") and info.above == ("10",) and info.below == ("14",)
    assert info.numbering() == {"1": "11", "2": "12", "3": "13"}
    assert info.send_id("12") == "2" and info.send_id("10") == "10" and info.send_id("14") == "14"
    assert parse_screenshot_info({"error": "No screenshot info available"}) is None
    with pytest.raises(OmniboxError, match="get_screenshot_info"):
        parse_screenshot_info({"visible": []})
    assert ScreenshotInfo.empty().send_id("12") == "12"


def test_parse_page_metadata_and_text():
    meta = parse_page_metadata({"url": "https://a/", "title": "A", "meta_tags": {"description": "d"}})
    assert (meta.url, meta.title) == ("https://a/", "A")
    assert parse_page_metadata({"url": "about:blank", "title": "Unknown Page"}).title == ""
    assert parse_page_metadata(["x"]).url == ""
    assert parse_text({"text": "t"}) == "t"
    with pytest.raises(OmniboxError, match="get_webpage_text"):
        parse_text("plain")

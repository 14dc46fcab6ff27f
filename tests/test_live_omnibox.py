"""The Omniboxes client against the fake server, and its tolerant response parsers."""

import socket
import struct
import zlib

import pytest

from simweb.live.fake_server import SITE, FakeOmnibox, tiny_png
from simweb.live.omnibox import (
    Instance,
    OmniboxClient,
    OmniboxError,
    Rect,
    parse_elements,
    parse_page_metadata,
    parse_text,
)

KEY = "secret-key"


@pytest.fixture
def server():
    with FakeOmnibox(KEY) as fake:
        yield fake


@pytest.fixture
def client(server):
    return OmniboxClient(server.url, KEY, timeout=5, retries=2, backoff=0.01)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    length, kind = struct.unpack(">I4s", data[8:16])
    assert kind == b"IHDR" and length == 13
    assert zlib.crc32(data[12:29]) & 0xFFFFFFFF == struct.unpack(">I", data[29:33])[0]
    return struct.unpack(">II", data[16:24])


def test_tiny_png_is_valid():
    data = tiny_png(3, 2, (255, 0, 0))
    assert png_size(data) == (3, 2)
    idat_len = struct.unpack(">I", data[33:37])[0]
    assert zlib.decompress(data[41:41 + idat_len]) == (b"\x00" + b"\xff\x00\x00" * 3) * 2


def test_master_endpoints(server, client):
    inst = client.acquire(lifetime_mins=5)
    assert isinstance(inst, Instance) and inst.node == "node-0"
    assert server.instances[inst.instance_id].lifetime_mins == 5
    assert client.metadata() == {"width": 1280, "height": 768}
    assert client.viewport(inst) == (1280, 768)
    assert client.probe(inst) == {"alive": True}
    assert client.probe() == {"status": "ok"}
    assert inst.instance_id in client.info()["nodes"][0]["instances"]
    png_size(client.screenshot(inst))
    assert server.requests[-1]["params"]["interaction_mode"] == "coordinates"
    client.release(inst)
    assert server.instances == {}
    with pytest.raises(OmniboxError, match="HTTP 404: unknown instance") as info:
        client.release(inst)
    assert info.value.status == 404


def test_execute_sends_one_command_and_parses_queries(server, client):
    inst = client.acquire()
    assert client.execute(inst, "visit_page", {"url": SITE + "/contact"}) == {"status": "success"}
    body_cmds = server.commands("visit_page")
    assert body_cmds[-1]["args"] == {"url": SITE + "/contact"}
    page = client.page_metadata(inst)
    assert (page.url, page.title) == (SITE + "/contact", "Contact - Fake Shop")
    elements = client.interactive_rects(inst)
    assert [(e.id, e.role, e.name) for e in elements][:3] == [("1", "link", "Home"), ("2", "textbox", "Name"),
                                                            ("3", "combobox", "Topic")]
    assert elements[0].rect == Rect(40, 80, 240, 32)
    assert "Contact us" in client.webpage_text(inst)
    png_size(client.execute(inst, "screenshot"))
    info = parse_elements(client.execute(inst, "get_screenshot_info"))
    assert len(info) == 6 and all(e.visible for e in info)


def test_failed_command_is_a_one_line_error(client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    with pytest.raises(OmniboxError) as info:
        client.execute(inst, "click_id", {"id": "99"})
    assert str(info.value) == "execute click_id: HTTP 400: no element with id '99' on http://shop.example/"
    with pytest.raises(OmniboxError, match="ERR_NAME_NOT_RESOLVED"):
        client.execute(inst, "visit_page", {"url": "https://elsewhere.test/"})
    with pytest.raises(ValueError, match="unknown Omniboxes command 'fly'"):
        client.execute(inst, "fly")


def test_auth_failure(server):
    for key in ("wrong", None):
        bad = OmniboxClient(server.url, key, retries=3, backoff=0.01)
        with pytest.raises(OmniboxError) as info:
            bad.acquire()
        assert info.value.status == 401
        assert "HTTP 401" in str(info.value) and "API key" in str(info.value)
        assert "\n" not in str(info.value)
    assert server.instances == {}


def test_retries_5xx_with_backoff(server):
    sleeps = []
    client = OmniboxClient(server.url, KEY, retries=3, backoff=0.5, max_backoff=1.5, sleep=sleeps.append)
    server.fail_next(3, status=503)
    assert client.metadata()["width"] == 1280
    assert sleeps == [0.5, 1.0, 1.5]
    server.fail_next(2, status=500)
    with pytest.raises(OmniboxError, match=r"GET /metadata: HTTP 500: injected failure 500 after 2 attempts"):
        OmniboxClient(server.url, KEY, retries=1, sleep=sleeps.append).metadata()


def test_actions_are_not_retried_after_they_may_have_run(server, client):
    inst = client.acquire()
    client.execute(inst, "visit_page", {"url": SITE + "/"})
    server.fail_next(1, status=500)
    with pytest.raises(OmniboxError, match="HTTP 500"):
        client.execute(inst, "click_id", {"id": "1"})
    assert len(server.commands("click_id")) == 1
    server.fail_next(1, status=503)  # unavailable: the request never ran, so it is retried
    client.execute(inst, "click_id", {"id": "1"})
    assert len(server.commands("click_id")) == 3
    assert client.page_metadata(inst).url == SITE + "/products"


def test_no_instance_available(server):
    client = OmniboxClient(server.url, KEY, retries=1, backoff=0.01)
    server.max_instances = 1
    client.acquire()
    with pytest.raises(OmniboxError, match="no instance available after 2 attempts"):
        client.acquire()


def test_connection_refused_is_retried_then_reported():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    sleeps = []
    client = OmniboxClient(f"http://127.0.0.1:{port}", KEY, retries=2, backoff=0.1, sleep=sleeps.append)
    with pytest.raises(OmniboxError) as info:
        client.acquire()
    assert sleeps == [0.1, 0.2]
    assert str(info.value).startswith(f"POST /get: cannot reach http://127.0.0.1:{port}: ")
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

def test_parse_elements_shapes():
    keyed = {"7": {"tag_name": "a", "aria-name": "Docs", "rects": [{"x": 1, "y": 2, "width": 3, "height": 4}]},
             "8": {"tag_name": "input", "type": "checkbox", "name": "Agree", "rect": [0, 0, 10, 10]},
             "9": {"tag_name": "input", "aria_name": "Search", "value": "shoes"},
             "10": {"role": "menuitem tab", "text": "  Sale \n now ", "bbox": {"left": 5, "top": 6, "right": 15, "bottom": 26}},
             "junk": 5}
    els = parse_elements({"result": keyed})
    assert [(e.id, e.role, e.name) for e in els] == [("7", "link", "Docs"), ("8", "checkbox", "Agree"),
                                                   ("9", "textbox", "Search"), ("10", "menuitem", "Sale now")]
    assert els[0].rect == Rect(1, 2, 3, 4) and els[0].rect.center() == (2, 4)
    assert els[1].rect == Rect(0, 0, 10, 10) and els[2].value == "shoes"
    assert els[3].rect == Rect(5, 6, 10, 20)
    listed = parse_elements([{"element_id": 3, "tag": "BUTTON", "label": "Go", "x": 1, "y": 1, "width": 2, "height": 2},
                             {"no": "id"}])
    assert [(e.id, e.role, e.name, e.rect) for e in listed] == [("3", "button", "Go", Rect(1, 1, 2, 2))]
    info = parse_elements({"visible_rects": ["1"], "id_mapping": {},
                           "interactive_regions": {"1": {"tag_name": "a"}, "2": {"tag_name": "select"}}})
    assert [(e.id, e.role, e.visible) for e in info] == [("1", "link", True), ("2", "combobox", False)]
    assert parse_elements("nonsense") == [] and parse_elements(None) == []


def test_parse_page_metadata_and_text():
    assert parse_page_metadata({"url": "https://a/", "title": "A"}).url == "https://a/"
    meta = parse_page_metadata({"output": '{"page_url": "https://b/", "meta_tags": {"og:title": "B"}}'})
    assert (meta.url, meta.title) == ("https://b/", "B")
    assert parse_page_metadata(["x"]).url == ""
    assert parse_text("plain") == "plain"
    assert parse_text({"content": "c"}) == "c"
    assert parse_text({"result": {"text": "t"}}) == "t"
    assert parse_text(3) == ""

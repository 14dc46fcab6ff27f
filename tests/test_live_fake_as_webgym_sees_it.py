"""The fake server driven the way WebGym's own client drives the real one (requests shaped as
its MasterClient sends them, results read as its rollout code reads them): an episode with
allocate, visit, a set-of-marks screenshot, the element list from get_screenshot_info,
a click by drawn number, a fill, and a release."""

import json
import urllib.parse
import urllib.request

from simweb.live.fake_server import SITE, FakeOmnibox

KEY = "default_key"


class WebGymLikeClient:
    """Requests as WebGym's MasterClient sends them: the instance dict as query
    parameters, and for /execute merged into the command body."""

    def __init__(self, url):
        self.url = url
        self.opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def _send(self, method, path, params=None, body=None):
        url = self.url + path + ("?" + urllib.parse.urlencode(params) if params else "")
        data = json.dumps(body).encode() if body is not None else (b"" if method == "POST" else None)
        headers = {"x-api-key": KEY, "Content-Type": "application/json"}
        try:
            with self.opener.open(urllib.request.Request(url, data=data, method=method, headers=headers)) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read()

    def get_instance(self, lifetime_mins):
        status, raw = self._send("POST", "/get", {"lifetime_mins": lifetime_mins})
        assert status == 200, raw
        return json.loads(raw)

    def execute(self, instance, command):
        return self._send("POST", "/execute", body=dict(command, **instance))

    def screenshot(self, instance, interaction_mode):
        return self._send("GET", "/screenshot", dict(instance, interaction_mode=interaction_mode))

    def metadata(self, instance):
        return self._send("GET", "/metadata", instance)

    def reset_instance(self, instance):
        return self._send("POST", "/reset", instance)


def ac_tree(client, instance):
    """The element list WebGym's rollout builds from get_screenshot_info."""
    status, raw = client.execute(instance, {"get_screenshot_info": {}})
    if status != 200:
        return ""
    data = json.loads(raw)
    visible = data.get("visible_rects", [])
    mapping = data.get("id_mapping", {})
    regions = data.get("interactive_regions", {})
    rows = []
    for display in visible:
        region = regions.get(str(mapping.get(str(display), str(display))), {})
        rows.append(f"id: {display}, text: {region.get('aria_name', '')}, tag: {region.get('tag_name', '')}")
    return "\n".join(rows)


def test_an_episode_as_webgym_runs_it():
    with FakeOmnibox(KEY) as fake:
        client = WebGymLikeClient(fake.url)
        instance = client.get_instance(45)
        assert set(instance) == {"instance_id", "node"}
        status, raw = client.metadata(instance)
        meta = json.loads(raw)                      # WebGym reads it with .json()
        assert status == 200 and (meta.get("width", 1280), meta.get("height", 768)) == (1280, 768)
        assert client.execute(instance, {"visit_page": {"url": SITE + "/contact"}})[0] == 200
        status, raw = client.execute(instance, {"get_page_metadata": {}})
        assert json.loads(raw)["title"] not in ("Unknown", "Unknown Page", "")   # its wait_for_content check
        status, png = client.screenshot(instance, "set_of_marks")
        assert status == 200 and png.startswith(b"\x89PNG") and len(png) > 1000   # its file-size check
        tree = ac_tree(client, instance)
        assert tree.splitlines() == ["id: 1, text: Home, tag: a", "id: 2, text: Name, tag: input, type=text",
                                     "id: 3, text: Topic, tag: select", "id: 4, text: Send, tag: button"]
        # its set-of-marks "type": fill_id with Enter, which submits the form
        assert client.execute(instance, {"fill_id": {"id": "2", "value": "Ada", "press_enter": True,
                                                     "delete_existing": True}})[0] == 200
        status, raw = client.execute(instance, {"get_page_metadata": {}})
        assert json.loads(raw)["url"] == SITE + "/contact/sent?name=Ada&topic="
        client.screenshot(instance, "set_of_marks")
        assert ac_tree(client, instance) == "id: 1, text: Home, tag: a"
        assert client.execute(instance, {"click_id": {"id": "1"}})[0] == 200   # a click by drawn number
        status, raw = client.execute(instance, {"get_page_metadata": {}})
        assert json.loads(raw)["url"] == SITE + "/"
        status, raw = client.execute(instance, {"click_id": {"id": "99"}})   # its retry loop sees a 500
        assert status == 500 and json.loads(raw)["status"] == "error"
        assert client.reset_instance(instance) == (200, b'{"status": "success"}')
        assert client.reset_instance(instance)[0] == 400     # "already released": WebGym counts it as done
        assert fake.instances == {}

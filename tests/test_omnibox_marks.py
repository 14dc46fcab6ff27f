"""Set-of-marks numbering (simweb.omnibox.marks) and the start URL route, without a browser."""
from __future__ import annotations

from typing import Any, cast

import orjson
import pytest

import simweb
from simweb.serving.omnibox.marks import classify, overlay
from simweb.serving.omnibox.start import start_url
from simweb.serving.server import create_app

SIZE = (1280, 768)


def _region(tag: str, left: float, top: float, width: float = 40, height: float = 20) -> dict:
    rect = {"x": left, "y": top, "width": width, "height": height, "top": top, "right": left + width,
            "bottom": top + height, "left": left}
    return {"tag_name": tag, "role": "", "aria_name": "", "v_scrollable": False, "rects": [rect]}


def test_display_ids_follow_region_order_and_only_visible_regions_get_numbers():
    regions = {
        "10": _region("a", 10, 10),
        "11": _region("a", 10, -200),          # above the viewport
        "12": _region("button", 10, 900),      # below
        "13": _region("option", 0, 0, 0, 0),   # options always count as visible
        "14": _region("div", 0, 0, 1280, 768),  # a page-sized container is skipped
        "15": _region("a", 1300, 10),          # right of the viewport: nowhere
        "16": _region("input, type=text", 100, 400),
        "17": _region("span", 10, 10, 0, 20),  # empty rect
    }
    visible, above, below, mapping = classify(regions, SIZE)
    assert visible == ["1", "2", "3"]
    assert above == ["11"] and below == ["12"]
    assert mapping == {"1": "10", "2": "13", "3": "16", "11": "11", "12": "12"}
    marks = overlay(regions, SIZE)
    assert [m["label"] for m in marks] == ["1", "3"]          # options are numbered, not drawn
    assert marks[0]["below"] is True and marks[1]["below"] is False


def test_a_page_id_equal_to_a_display_id_overrides_it_as_on_the_real_server():
    regions = {str(10 + i): _region("a", 10 + 50 * (i % 20), 30 + 25 * (i // 20)) for i in range(12)}
    regions["2"] = _region("a", 10, -100)       # page id "2", above the viewport
    visible, above, below, mapping = classify(regions, SIZE)
    assert above == ["2"] and len(visible) == 12
    assert mapping["2"] == "2"                  # display 2 lost to the identity entry
    assert mapping["1"] == "10" and mapping["3"] == "12"
    assert [m["label"] for m in overlay(regions, SIZE)] == [str(n) for n in range(1, 13)]


def test_start_url_resets_the_session_to_the_task_instance():
    env = simweb.make("shopping", seed=0)
    env.reset(seed=3, options={"task": "shopping/buy_product"})
    flask_app = create_app("shopping")
    client = flask_app.test_client()
    client.get("/cart")
    r = client.get(start_url("shopping/buy_product", 3))
    assert r.status_code == 200 and "history.replaceState" in r.text
    assert r.headers["Cache-Control"] == "no-store"
    token = flask_app.extensions["simweb"].control_token   # the full state needs the control token
    state = orjson.loads(client.get("/_simweb/state", headers={"Authorization": f"Bearer {token}"}).data)
    assert state == env.snapshot()
    assert client.get("/_simweb/start?task=nope").status_code == 400
    assert client.get("/_simweb/start?task=shopping/buy_product&seed=x").status_code == 400
    assert client.get("/_simweb/start").status_code == 200             # no task: the home page


def test_start_url_renames_bids_like_the_served_pages():
    client = create_app("shopping", bid_attribute="data-simweb-bid").test_client()
    html = client.get(start_url("shopping/product_price", 1)).text
    assert 'data-simweb-bid="nav-home"' in html and ' bid="' not in html


def test_omnibox_cli_rejects_an_unknown_app_in_one_line():
    from click.testing import CliRunner

    from simweb.tools.cli import main

    result = CliRunner().invoke(main, ["omnibox", "--apps", "nope", "--port", "0"])
    assert result.exit_code == 2
    (line,) = result.output.strip().splitlines()
    assert line.startswith("simweb: error: unknown app 'nope' (known: ")


def test_an_unknown_command_fails_as_the_real_instance_answers_and_the_doc_says_so():
    """WebGym's instance raises ``Unsupported command: <name>`` for a name it does not know
    (a 500 through the master), and ``Only one command per request is supported`` for a
    body with none or two; docs/omnibox.md said an unknown command succeeded."""
    from pathlib import Path
    from types import SimpleNamespace

    from simweb.serving.omnibox.protocol import CommandError, execute

    instance = SimpleNamespace(driver=None, screenshot_info=None, episode=None)
    for body, reason in [({"fly": {}}, "Unsupported command: fly"),
                         ({}, "Only one command per request is supported"),
                         ({"back": {}, "sleep": {"duration": 0}}, "Only one command per request is supported")]:
        with pytest.raises(CommandError) as failed:
            execute(cast(Any, instance), cast(dict, body))
        assert str(failed.value) == reason
    doc = " ".join((Path(__file__).resolve().parents[1] / "docs" / "omnibox.md").read_text().split())
    assert "Anything else succeeds" not in doc
    assert ('500 `{"status": "error", "message": "Failed to execute command: {\\"detail\\":\\"Error executing '
            'command: Unsupported command: <name>\\"}"}`') in doc

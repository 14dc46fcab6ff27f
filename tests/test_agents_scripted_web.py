"""The scripted agent on a served simweb app through WebEnv in real Chromium: the pages
carry no simweb bids (WebEnv stamps its own numbers, as on any site), and the same
script as in-process solves the task."""
from __future__ import annotations

import re
import threading

import pytest

pytest.importorskip("playwright.sync_api")

import simweb
from simweb.agents.axtext import parse_axtree
from simweb.agents.scripted import Click, Fill, Press, ScriptedAgent
from simweb.live.web import WebEnv
from simweb.serving.server import create_app, make_server, stop_server

pytestmark = pytest.mark.browser
TOKEN = "scripted-web-token"


@pytest.fixture(scope="module")
def served():
    flask_app = create_app("shopping", control_token=TOKEN, bid_attribute="data-simweb-bid")
    server = make_server(flask_app, "127.0.0.1", 0, threads=4)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.effective_port}"
    stop_server(server, thread)
    thread.join(timeout=10)


def _script(name: str) -> list:
    box = re.compile("search", re.I)
    return [Fill("textbox", box, name), Press("textbox", box, key="Enter"), Click("link", name),
            Click("button", re.compile(r"add to (cart|basket)", re.I))]


def test_the_in_process_script_solves_the_task_in_chromium(served):
    sim = simweb.make("shopping", seed=0)
    obs, _ = sim.reset(seed=1, options={"task": "shopping/add_to_cart"})
    params, start = sim.task.params, sim.start_state()
    env = WebEnv(max_steps=10, screenshots=False)
    try:
        obs, _ = env.reset(options={"url": f"{served}/_simweb/start?task=shopping/add_to_cart&seed=1",
                                    "goal": obs["goal"]})
        bids = {n.bid for n in parse_axtree(obs["axtree"]) if n.bid}
        assert bids and all(b.isdigit() for b in bids)            # WebEnv's numbers, no simweb ids
        agent = ScriptedAgent(_script(params["name"]))
        agent.reset(env)
        while not agent.done:
            obs, *_ = env.step(agent.act(obs))
            agent.record(obs)
        assert not agent.stuck, agent.log
        # the script's four steps, then the agent's final message (the episode ends on it)
        assert [e["error"] for e in agent.log] == [""] * 5
        assert all(e["bid"].isdigit() for e in agent.log[:4])
        state = env.page.evaluate(
            "async (t) => (await fetch('/_simweb/state', {headers: {Authorization: 'Bearer ' + t}})).json()", TOKEN)
    finally:
        env.close()
    verdict = sim.app.tasks["shopping/add_to_cart"].verify(sim.app, params, start, state, None)
    assert verdict["success"] and verdict["clean"], verdict["checks"]

"""compare_runs and write_report, on two LiveEnvs against the fake server and on stub envs."""

import json

import pytest

from simweb.live.compare import axtree_roles_names, compare_runs, jaccard, path_of, write_report
from simweb.live.env import LiveEnv
from simweb.live.fake_server import SITE, FakeOmnibox
from simweb.live.omnibox import OmniboxClient
from simweb.live.tasks import to_webgym

KEY = "k"
ACTIONS = ["click('2')", "fill('2', 'Ada')", "select_option('3', 'Support')", "go_forward()", "click('4')",
           "go_back()", {"name": "computer_use", "arguments": {"action": "left_click", "coordinate": [100, 150]}},
           "send_msg_to_user('sent')", "click('1')"]


@pytest.fixture
def server():
    with FakeOmnibox(KEY) as fake:
        yield fake


def make_env(server, *tasks):
    return LiveEnv(OmniboxClient(server.url, KEY, retries=0, sleep=lambda s: None), list(tasks))


def home(task_id="home", url=SITE + "/"):
    return to_webgym(task_id, "Contact the shop", url, ["message sent"], "sent")


def test_identical_runs_agree_fully(server, tmp_path):
    with make_env(server, home()) as a, make_env(server, home()) as b:
        report = compare_runs(a, b, ACTIONS, task_a="home", task_b="home")
    steps, summary = report["steps"], report["summary"]
    assert len(steps) == 9  # the reset and 8 actions; the last one comes after both answered
    assert summary["steps"] == 8 and summary["compared"] == 9
    assert all(r["agree"] for r in steps)
    assert summary["full_agreement"] is True and summary["first_divergence"] is None
    assert summary["url_agreement"] == summary["error_agreement"] == summary["mean_jaccard"] == 1.0
    assert summary["answer_a"] == summary["answer_b"] == "sent" and summary["answers_match"]
    assert steps[4]["a"]["error"] and steps[4]["error_match"]  # go_forward fails on both sides
    assert steps[5]["a"]["url"] == SITE + "/contact/sent?name=Ada&topic=Support"
    assert steps[0]["a"]["axtree_lines"] == 6 and steps[0]["action"] is None
    assert server.instances == {}

    path = tmp_path / "report" / "cmp.jsonl"
    write_report(report, path)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [line["type"] for line in lines] == ["step"] * 9 + ["summary"]
    assert lines[-1]["full_agreement"] is True and lines[3]["action"] == "select_option('3', 'Support')"


def test_divergent_runs(server):
    with make_env(server, home()) as a, make_env(server, home("other", SITE + "/signin")) as b:
        report = compare_runs(a, b, ["click('2')", "send_msg_to_user('x')"], task_a="home", task_b="other")
    steps, summary = report["steps"], report["summary"]
    assert not steps[0]["url_match"] and steps[0]["axtree_jaccard"] < 1
    assert summary["first_divergence"] == 0 and not summary["full_agreement"]
    assert summary["url_agreement"] == 0.0


class StubEnv:
    """A duck-typed env: a fixed script of observations."""

    def __init__(self, pages, stop_after=None, answer_key="info"):
        self.pages, self.stop_after, self.answer_key, self.i = pages, stop_after, answer_key, 0

    def reset(self, *, seed=None, options=None):
        self.i = 0
        self.options = options
        return self.pages[0], {}

    def step(self, action):
        self.i += 1
        done = self.stop_after is not None and self.i >= self.stop_after
        obs = dict(self.pages[min(self.i, len(self.pages) - 1)])
        info = {}
        if done and self.answer_key == "info":
            info["answer"] = "A"
        elif done:
            obs["chat_messages"] = [{"role": "user", "message": "goal"}, {"role": "assistant", "message": "A"}]
        return obs, 1.0, done, False, info


def page(url, tree, error=""):
    return {"url": url, "axtree": tree, "last_action_error": error}


def test_stub_envs_jaccard_hosts_and_early_stop():
    sim = StubEnv([page("http://127.0.0.1:5000/cart", "RootWebArea 'Cart'\n\t[a1] button 'Pay'\n\t[a2] link 'Home'"),
                   page("http://127.0.0.1:5000/paid", "RootWebArea 'Paid'")], stop_after=1)
    live = StubEnv([page("https://shop.test/cart", "RootWebArea 'Cart'\n\t[99] button 'Pay'\n\t[98] link 'Help'"),
                    page("https://shop.test/paid", "RootWebArea 'Paid'")], stop_after=2, answer_key="chat")
    report = compare_runs(sim, live, ["click('pay')", "noop()", "noop()"], task_a="t", seed=3)
    assert sim.options == {"task": "t"} and live.options is None
    first, second, third = report["steps"]
    assert first["url_match"] and first["axtree_jaccard"] == pytest.approx(2 / 4)
    assert second["agree"] and second["a"]["answer"] == "A"
    assert third["a"] is None and third["b"]["answer"] == "A" and not third["agree"]
    summary = report["summary"]
    assert summary["steps"] == 2 and summary["compared"] == 2
    assert summary["answers_match"] and summary["done_a"] and summary["done_b"]
    assert summary["first_divergence"] == 0 and summary["min_jaccard"] == 0.5
    exact = compare_runs(sim, live, ["noop()"], url_key=str)
    assert exact["steps"][0]["url_match"] is False


def test_helpers():
    tree = "RootWebArea 'T'\n\t[1] link \"It's\"\n\tStaticText 'a  b'\n\t[x] generic\n\n"
    assert axtree_roles_names(tree) == {("RootWebArea", "T"), ("link", "It's"), ("StaticText", "a b"), ("generic", "")}
    assert jaccard(set(), set()) == 1.0 and jaccard({1}, {2}) == 0.0
    assert path_of("https://h:1/a/b?q=1#f") == "/a/b?q=1#f" and path_of("http://h") == "/"

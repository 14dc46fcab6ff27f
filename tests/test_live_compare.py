"""compare_runs and write_report, on two LiveEnvs against the fake server and on stub envs."""

import json

import pytest

from simweb.live.compare import axtree_roles_names, compare_runs, jaccard, match_bids, path_of, write_report
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


# --------------------------------------------------------------------------- sim vs live on the real protocol

def test_match_bids_by_role_name_and_rank():
    sim = {"axtree": "RootWebArea 'x'\n\t[nav-home] link 'Home'\n\t[p-1] link 'Buy'\n\t[p-2] link 'Buy'\n"
                     "\t[q] searchbox 'Search products'\n\t[sort] combobox 'Sort by'",
           "html": "<select bid='sort'><option value='price_asc'>Price: low to high</option></select>"}
    live = {"axtree": "RootWebArea 'x'\n\t[1] link 'Home'\n\t[2] link 'Buy'\n\t[p12] link 'Buy'\n"
                      "\t[4] searchbox 'q'\n\t[5] combobox 'Sort by'"}
    assert match_bids("click('p-2')", sim, live) == "click('p12')"
    assert match_bids("click('nav-home')", sim, live) == "click('1')"
    assert match_bids("fill('q', 'lamp')", sim, live) == "fill('4', 'lamp')"       # by role when names differ
    assert match_bids("select_option('sort', 'price_asc')", sim, live) == "select_option('5', 'Price: low to high')"
    assert match_bids("scroll(0, 100)", sim, live) == "scroll(0, 100)"
    assert match_bids("click('missing')", sim, live) == "click('missing')"
    assert match_bids({"key": "scroll"}, sim, live) == {"key": "scroll"}


def test_cli_compare_against_live_through_the_protocol(tmp_path):
    from click.testing import CliRunner

    from simweb.tools.cli import main

    out = tmp_path / "cmp.jsonl"
    with FakeOmnibox(KEY, app="shopping", max_instances=1) as fake:
        result = CliRunner().invoke(main, [
            "compare", "shopping", "--task", "shopping/buy_product", "--seed", "3", "--against", "live",
            "--server", fake.url, "--api-key", KEY, "--site", "http://shopping.simweb.localhost"])
        assert result.exit_code == 2 and "--out" in result.output   # usage error without --out
        result = CliRunner().invoke(main, [
            "compare", "shopping", "--task", "shopping/buy_product", "--seed", "3", "--against", "live",
            "--server", fake.url, "--api-key", KEY, "--site", "http://shopping.simweb.localhost", "--out", str(out)])
        assert result.exit_code == 0, result.output
        starts = [c["args"]["url"] for c in fake.commands("visit_page")]
        assert starts[0] == "http://shopping.simweb.localhost/_simweb/start?task=shopping/buy_product&seed=3"
        assert fake.instances == {}
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    summary = lines[-1]
    assert summary["url_agreement"] == summary["error_agreement"] == 1.0
    assert summary["first_divergence"] is None and summary["full_agreement"] is True
    mapped = [line for line in lines[:-1] if "action_b" in line]
    assert mapped and all(line["action"] != line["action_b"] for line in mapped)
    assert ("select_option('opt-size', '10.5')", "select_option('29', '10.5')") in \
        [(line["action"], line["action_b"]) for line in mapped]
    assert "URL agreement 1.00" in result.output and "first divergence None" in result.output


@pytest.mark.parametrize("app", ["shopping", "forum", "issues"])
def test_every_oracle_plan_agrees_in_process_and_through_the_protocol(app):
    import simweb
    from simweb.live.compare import LIVE_AGREE_ON
    from simweb.live.tasks import start_url

    sim = simweb.make(app, seed=0)
    with FakeOmnibox(KEY, app=app, max_instances=1, relaunch_gets=0) as fake:
        # no step budget may cut a long oracle plan short: the comparison is of every step
        live = LiveEnv(OmniboxClient(fake.url, KEY, sleep=lambda s: None), [], max_steps=1000)
        failures = []
        for task in sim.app.tasks:
            sim.reset(seed=0, options={"task": task})
            plan = sim.oracle_plan()
            start = {"task_id": 0, "task_name": sim.task.goal,
                     "website": start_url(f"http://{app}.simweb.localhost", task, 0)}
            report = compare_runs(sim, live, plan, task_a=task, task_b=start, seed=0, map_action=match_bids,
                                  agree_on=LIVE_AGREE_ON)
            if not report["summary"]["full_agreement"]:
                failures.append((task, report["summary"]["first_divergence"]))
        live.close()
    assert failures == []


def test_cli_compare_against_a_live_server_that_refuses_is_one_line(tmp_path):
    from click.testing import CliRunner

    from simweb.tools.cli import main

    out = tmp_path / "cmp.jsonl"
    with FakeOmnibox(KEY, max_instances=1) as fake:
        for server, needle in ((fake.url, "HTTP 401"), ("localhost:1", "base URL")):
            result = CliRunner().invoke(main, [
                "compare", "shopping", "--task", "shopping/buy_product", "--against", "live", "--server", server,
                "--api-key", "wrong", "--site", "http://shopping.simweb.localhost", "--out", str(out)])
            assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output
            assert not out.exists()

"""`simweb view` and `simweb report` over real runs (Flask's test client): the list's
filters and sorting, an episode's step with the acted element highlighted and the
verdict's checks (collateral before -> after, the step where the verdict changed), fork
trees and state diffs rebuilt by replay, sim vs live, escaping of user-controlled text,
the lazy index, and one-line errors for bad paths."""
from __future__ import annotations

import html
import json
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from simweb.episodes.env import SimEnv
from simweb.episodes.rollout import run_episode
from simweb.episodes.trajectory import SCHEMA, write_trajectory
from simweb.tools.cli import main
from simweb.tools.viewer.app import action_bid, create_app, verdict_changes
from simweb.tools.viewer.index import RunIndex

pytestmark = pytest.mark.apps("forum")

INFO_TASK = "forum/author_most_comments"
STATE_TASK = "forum/upvote_post"
XSS_GOAL = "<script>alert('goal')</script> & <b>bold</b>"
XSS_PAGE = "RootWebArea 'T', focused\n\t[x1] link '<img src=x onerror=alert(1)>'"


class Vandal:
    """Votes on the first post it sees (damage on an information task), then says done."""

    name = "vandal"

    def reset(self, env, seed):
        self.n = 0

    def act(self, obs):
        self.n += 1
        if self.n == 1:
            m = re.search(r"\[(post-\d+-down)\]", obs["axtree"])
            assert m, "no post to vote on"
            bid = m.group(1)
            return f"click('{bid}')"
        return "send_msg_to_user('done')"


def cli(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def markup_file(path: Path) -> None:
    """A trajectory whose goal, page text and action carry markup."""
    head = {"type": "header", "schema": SCHEMA, "kind": "episode", "simweb": "0", "app": "forum", "world": {},
            "task": "forum/x", "params": None, "goal": XSS_GOAL, "variant": None, "seed": 0, "agent": "<i>me</i>",
            "reset": True, "observation": {"url": "/", "title": "T", "axtree": XSS_PAGE, "screenshot": None},
            "parent": None}
    step = {"type": "step", "step": 1, "action": "click('x1') <script>alert(3)</script>", "error": None,
            "observation": {"url": "/", "title": "T", "axtree": XSS_PAGE, "screenshot": "../../etc/passwd"},
            "reward": 0.0, "terminated": True, "truncated": False, "site_error": "<b>site</b>",
            "verdict": {"success": False, "progress": 0.0, "clean": False,
                        "checks": [{"name": "collateral: runtime.<x>", "passed": False, "weight": 0.0,
                                    "detail": "'<a>' -> '<script>alert(4)</script>'"}]}}
    path.write_bytes(orjson.dumps(head) + b"\n" + orjson.dumps(step) + b"\n")


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("run")
    assert cli("run", "forum", "--task", STATE_TASK, "--seed", "1", "--out", str(d / "oracle.jsonl")).exit_code == 0
    assert cli("run", "forum", "--task", STATE_TASK, "--seed", "1", "--group", "3", "--agent", "random",
               "--max-steps", "4", "--out", str(d / "group")).exit_code == 0
    env = SimEnv("forum", 0)
    write_trajectory(d / "vandal.jsonl", run_episode(env, Vandal(), task=INFO_TASK, seed=2))
    markup_file(d / "markup.jsonl")
    (d / "episodes.jsonl").write_text('{"task": "not a trajectory"}\n')   # skipped in a directory
    return d


@pytest.fixture(scope="module")
def client(run_dir):
    return create_app([str(run_dir)]).test_client()


def find(client, name: str) -> int:
    idx = client.application.extensions["simweb-viewer"]
    return next(e.id for e in idx.episodes if e.path.endswith(name))


def test_list_filters_and_sorts(client, run_dir):
    page = client.get("/").get_data(as_text=True)
    assert "6 episode(s)" in page and "1 other .jsonl file(s) are not trajectories" in page
    page = client.get("/?agent=vandal").get_data(as_text=True)
    assert "1 episode(s)" in page and "vandal.jsonl" in page
    page = client.get("/?success=yes&clean=yes").get_data(as_text=True)
    assert "1 episode(s)" in page and "oracle.jsonl" in page
    page = client.get("/?clean=no&kind=start").get_data(as_text=True)
    assert "vandal.jsonl" in page and "oracle.jsonl" not in page and "child-0" not in page
    assert "3 episode(s)" in client.get("/?kind=fork").get_data(as_text=True)
    rows = re.findall(r'class="steps">(\d+)<', client.get("/?sort=-length").get_data(as_text=True))
    assert [int(x) for x in rows] == sorted((int(x) for x in rows), reverse=True) and len(rows) == 6
    rewards = re.findall(r'class="reward">([\d.]+)<', client.get("/?sort=-reward").get_data(as_text=True))
    assert rewards[0] == "1.000" and rewards == sorted(rewards, reverse=True)


def test_episode_step_highlights_the_element_and_shows_collateral(client):
    eid = find(client, "vandal.jsonl")
    page = client.get(f"/episode/{eid}?step=1").get_data(as_text=True)
    bid = re.search(r"click\(&#39;(post-\d+-down)&#39;\)", page)
    hit = re.search(r'<span class="hit" id="axtree-hit">([^<]*)</span>', page)
    assert bid and hit and hit.group(1).lstrip().startswith(f"[{bid.group(1)}]")
    # the vote is collateral damage on an information task: its check shows before -> after
    m = re.search(r'collateral: runtime\.votes\.[^<]*</td>.*?<span class="before">([^<]*)</span> -&gt; '
                  r'<span class="after">([^<]*)</span>', page, re.S)
    assert m and m.groups() == ("0", "-1")
    assert "the verdict changed here: not clean" in page
    # the marker is on step 1 only: step 2 (the final message) changes nothing
    assert 'id="step-1"' in page and re.search(r'class=" changed" id="step-1"|changed" id="step-1"', page)
    assert not re.search(r'changed" id="step-2"', page)


def test_verdict_changes_are_marked_where_they_happen():
    v0 = {"success": False, "progress": 0.0, "clean": True, "checks": []}
    v1 = {"success": False, "progress": 0.5, "clean": True, "checks": []}
    v2 = {"success": True, "progress": 1.0, "clean": True, "checks": []}
    steps = [{"step": 1, "verdict": v0}, {"step": 2, "verdict": v1}, {"step": 3, "verdict": v1},
             {"step": 4, "verdict": v2}]
    assert verdict_changes(steps) == {2: "progress 0.00 -> 0.50", 4: "success, progress 0.50 -> 1.00"}
    # the first verdict is compared with no progress and clean, not with "no checks"
    checked = [{"step": 1, "verdict": {**v0, "checks": [{"name": "the order", "passed": False}]}}]
    assert verdict_changes(checked) == {}
    assert action_bid("fill('search-q', 'x')") == "search-q" and action_bid("go_back()") is None


def test_fork_tree_and_diffs_by_replay(client, run_dir):
    eid = find(client, "child-000.jsonl")
    page = client.get(f"/group/{eid}").get_data(as_text=True)
    assert page.count('class="leaf"') == 3 and "reward 0.000" in page
    idx = client.application.extensions["simweb-viewer"]
    kids = sorted((e for e in idx.episodes if "child-" in e.path), key=lambda e: e.path)
    a, b = kids[0], kids[1]
    page = client.get(f"/diff?a={a.id}:0&b={a.id}:0").get_data(as_text=True)
    assert 'id="same"' in page
    page = client.get(f"/diff?a={a.id}:0&b={b.id}:{b.steps}").get_data(as_text=True)
    assert 'id="diff"' in page or 'id="same"' in page, page
    # the oracle upvotes: the diff of its whole episode names the vote, before and after
    o = find(client, "oracle.jsonl")
    page = client.get(f"/diff?a={o}:0&b={o}:{idx.get(o).steps}").get_data(as_text=True)
    assert re.search(r"<td>runtime\.votes\.[^<]+</td><td class=\"before\">[^<]*</td><td class=\"after\">1</td>", page)
    # a file without a world cannot be replayed: said so, not diffed
    page = client.get(f"/diff?a={find(client, 'markup.jsonl')}:0&b={o}:0").get_data(as_text=True)
    assert 'id="error"' in page


def test_user_text_is_escaped(client):
    eid = find(client, "markup.jsonl")
    for url in ("/", f"/episode/{eid}?step=1", f"/episode/{eid}?step=0"):
        page = client.get(url).get_data(as_text=True)
        assert "<script>alert" not in page and "<img src=x" not in page and "<b>bold" not in page, url
        assert "<i>me</i>" not in page
    page = client.get(f"/episode/{eid}?step=1").get_data(as_text=True)
    assert html.escape(XSS_GOAL, quote=False).replace("'", "&#39;") in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;b&gt;site&lt;/b&gt;" in page
    # a screenshot path from the file never leaves the trajectory's folder
    assert client.get(f"/episode/{eid}/screenshot/1").status_code == 404


def test_offset_index_reads_any_step(run_dir):
    idx = RunIndex.open([str(run_dir)])
    ep = next(e for e in idx.episodes if e.path.endswith("oracle.jsonl"))
    lines = (run_dir / "oracle.jsonl").read_bytes().splitlines()
    for n in range(1, ep.steps + 1):
        assert idx.step_line(ep, n) == orjson.loads(lines[n])
    assert idx.step_line(ep, ep.steps + 1) is None
    assert ep.steps == len(lines) - 1 and ep.success and ep.reward == 1.0


def test_sim2live_side_by_side(tmp_path):
    from simweb.episodes.trajectory import observation, write_sim2live
    from simweb.live.sim2live import Side

    class Inst:
        sim_task, sim_seed, goal, params = "issues/issue_status", 7, "Close issue 3", {}

    def obs(t: str) -> dict:
        return observation({"url": "http://x/", "axtree": f"RootWebArea '{t}', focused\n\t[close] button 'Close'"})

    steps = [{"action": "click('open')", "page": "list", "observation": obs("a")},
             {"action": "click('close')", "page": "issue", "observation": obs("b")}]
    sim = Side("sim", steps=steps, verdict={"success": True, "progress": 1.0, "clean": True, "checks": []},
               start=obs("start"))
    live = Side("live", steps=steps[:1] + [{"action": "noop()", "page": "error", "observation": obs("c")}],
                verdict={"success": False, "progress": 0.0, "clean": True, "checks": []}, start=obs("start"))
    ep = {"family": "close", "index": 0, "parting": {"step": 1, "sim_page": "issue", "live_page": "error"}}
    write_sim2live(tmp_path, "issues:roundup", "scripted", Inst(), ep, (sim, live))
    c = create_app([str(tmp_path)]).test_client()
    page = c.get("/sim2live/0").get_data(as_text=True)
    assert 'id="side-sim"' in page and 'id="side-live"' in page and "step 2: issue / error" in page
    sel = re.findall(r'<tr class="sel"><td><a href="/episode/\d+\?step=(\d+)">', page)
    assert sel == ["2", "2"]
    assert re.search(r'id="ax-sim-hit">\s*\[close\]', page)


def test_report_draws_plots(run_dir, tmp_path):
    pytest.importorskip("matplotlib")
    r = cli("report", str(run_dir), "--out", str(tmp_path / "plots"))
    assert r.exit_code == 0, r.output
    names = sorted(p.name for p in (tmp_path / "plots").iterdir())
    assert names == ["success_by_difficulty.png", "success_by_difficulty.svg", "success_by_template.png",
                     "success_by_template.svg"]
    assert (tmp_path / "plots" / "success_by_template.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    train = tmp_path / "train"
    train.mkdir()
    (train / "metrics.jsonl").write_text("".join(json.dumps({"iteration": i, "success": i / 4, "clean": 1.0,
                                                             "reward": i / 4, "trajectories": 8}) + "\n"
                                                 for i in range(4)))
    rt = tmp_path / "rt.jsonl"
    rt.write_text(json.dumps({"type": "header", "schema": SCHEMA, "kind": "redteam", "simweb": "0", "app": "forum"})
                  + "\n" + json.dumps({"type": "attack", "task": "t", "seed": 0, "family": "junk", "name": "n",
                                       "paid": False}) + "\n")
    s2l = tmp_path / "s2l"
    s2l.mkdir()
    (s2l / "report.json").write_text(json.dumps({"pair": "issues:roundup", "agent": "scripted", "families": [
        {"family": "close_issue", "n": 3, "sim_success": 1.0, "live_success": 0.667},
        {"family": "label", "n": 3, "sim_success": 0.667, "live_success": 0.0}]}))
    r = cli("report", str(train), str(rt), str(s2l), "--out", str(tmp_path / "p2"))
    assert r.exit_code == 0, r.output
    assert {p.name for p in (tmp_path / "p2").iterdir()} == {
        f"{n}.{x}" for n in ("learning_curve_0", "redteam_by_family", "sim_vs_live_0") for x in ("png", "svg")}
    c = create_app([str(train), str(rt)]).test_client()
    assert 'src="/plots/learning_curve_0.svg"' in c.get("/plots").get_data(as_text=True)
    assert c.get("/plots/learning_curve_0.svg").data.lstrip().startswith(b"<?xml")
    assert ">junk<" in c.get("/redteam").get_data(as_text=True)


@pytest.mark.parametrize("case", ["missing", "not-a-trajectory", "future", "cut-short", "empty-dir"])
def test_bad_paths_are_one_line_and_exit_2(tmp_path, case):
    p = tmp_path / "x.jsonl"
    if case == "not-a-trajectory":
        p.write_text('{"iteration": 0}\n')
    elif case == "future":
        p.write_text(json.dumps({"type": "header", "schema": "simweb.trajectory/99", "app": "x"}) + "\n")
    elif case == "cut-short":
        (tmp_path / "d").mkdir()
        p = tmp_path / "d" / "t.jsonl"
        p.write_text(json.dumps({"type": "header", "schema": SCHEMA, "kind": "episode", "simweb": "0", "app": "x"})
                     + '\n{"type": "step", "step": 1, "act')
        p = p.parent
    elif case == "empty-dir":
        p = tmp_path
    for cmd in (["view", str(p), "--port", "0"], ["report", str(p), "--out", str(tmp_path / "o")]):
        if case == "empty-dir" and cmd[0] == "view":
            continue   # an empty folder is a valid (empty) run to view
        r = CliRunner().invoke(main, cmd)
        assert r.exit_code == 2, (cmd, r.output)
        lines = r.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("simweb: error:"), r.output


def test_demo_out_then_view_serves_the_demos_episodes(tmp_path):
    """The issue's end-to-end: `simweb demo --out run/ && simweb view run/` (one app here)."""
    import os
    import signal
    import subprocess
    import sys
    import time
    import urllib.request

    run = tmp_path / "run"
    r = cli("demo", "--apps", "forum", "--seeds", "1", "--branches", "1", "--workers", "1", "--out", str(run))
    assert r.exit_code == 0, r.output
    n_files = len(list(run.rglob("*.jsonl")))
    proc = subprocess.Popen([sys.executable, "-m", "simweb.cli", "view", str(run), "--port", "0"],
                            stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        line = proc.stderr.readline() if proc.stderr else ""
        m = re.search(r"viewing (\d+) episodes .* on (http://127\.0\.0\.1:\d+/)", line)
        assert m, line
        assert int(m.group(1)) == n_files
        deadline = time.monotonic() + 20
        while True:
            try:
                page = urllib.request.urlopen(m.group(2), timeout=5).read().decode()
                break
            except OSError:
                assert time.monotonic() < deadline, "the viewer did not answer"
                time.sleep(0.2)
        assert f"{n_files} episode(s)" in page and "forum/" in page
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert proc.returncode == 0


def test_report_draws_the_benchmark_ratios(tmp_path):
    """benchmarks/ results files (named, or found as results*.json in a folder) give the
    benchmark_ratios plot: every figure with a target, met or not, on one axis."""
    pytest.importorskip("matplotlib")
    from simweb.tools.benchplots import target_rows

    targets = {"benchmark": "targets", "command": "python benchmarks/bench_targets.py", "machine": {},
               "results": {"rounds": 1, "forum": {
                   "step ms, default": {"median": 0.8, "limit": 1.0, "met": True},
                   "cold reset ms, default": {"median": 2.5, "limit": 1.0, "met": False}}}}
    pool = {"benchmark": "pool_scale", "command": "c", "machine": {}, "results": {
        "throughput": {"forum": {"efficiency_local_2": 0.95, "trajectories_per_hour": {"local x2": 700_000.0}}},
        "group": {"forum": {"ratio": 8.0}}}}
    rows = target_rows({"benchmark": "report", "results": {"targets": targets, "pool_scale": pool,
                                                           "broken": {"error": "timed out"}}})
    got = {(r["subject"], r["figure"]): (r["value"], r["met"]) for r in rows}
    assert got == {("forum", "step, default"): (0.8, True), ("forum", "cold reset, default"): (2.5, False),
                   ("forum", "efficiency at 2 local workers"): (0.95, True),
                   ("fastest app", "trajectories/hour, 2 local workers"): (700_000.0, False),
                   ("forum", "group of 16 from forks vs cold resets"): (8.0, False)}
    (tmp_path / "bench").mkdir()
    (tmp_path / "bench" / "results_targets.json").write_text(json.dumps(targets))
    (tmp_path / "bench" / "results_other.json").write_text('{"not": "a benchmark"}')
    named = tmp_path / "pool.json"
    named.write_text(json.dumps(pool))
    r = cli("report", str(tmp_path / "bench"), str(named), "--out", str(tmp_path / "p"))
    assert r.exit_code == 0, r.output
    assert {p.name for p in (tmp_path / "p").iterdir()} == {"benchmark_ratios.png", "benchmark_ratios.svg"}
    assert RunIndex.open([str(tmp_path / "bench"), str(named)]).benchmarks == [
        str(tmp_path / "bench" / "results_targets.json"), str(named)]
    c = create_app([str(tmp_path / "bench")]).test_client()
    assert 'src="/plots/benchmark_ratios.svg"' in c.get("/plots").get_data(as_text=True)
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a benchmark"}')
    r = CliRunner().invoke(main, ["report", str(bad), "--out", str(tmp_path / "q")])
    assert r.exit_code == 2 and r.output.startswith("simweb: error:")

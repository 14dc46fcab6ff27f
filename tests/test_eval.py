"""`simweb eval`: the table per template and in total, the trajectory files (replayable,
with the agent's own record per step), scripted runs from portable families' scripts,
LLM runs against a fake endpoint, the browser backend, and one-line errors."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import pytest
from click.testing import CliRunner, Result
from fake_openai import FakeOpenAI

import simweb
from simweb.agents.scripted import Click, Fill, Press
from simweb.live import scripts
from simweb.tools.cli import main
from simweb.tools.evaluate import EvalError, parse_seeds


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["eval", *args], catch_exceptions=False)


def one_line_error(res, needle: str, code: int = 2) -> None:
    assert res.exit_code == code, (res.exit_code, res.output)
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and lines[0].startswith("simweb: error:") and needle in lines[0], res.stderr
    assert "Traceback" not in res.output


def rows(stdout: str) -> dict[str, list[str]]:
    """The table's rows by template: [episodes, success, progress, clean, steps]."""
    out = {}
    for line in stdout.splitlines():
        cells = [c.strip() for c in re.split(r"[│┃]", line) if c.strip()]
        if len(cells) == 6 and re.fullmatch(r"\d+", cells[1]):
            out[cells[0]] = cells[1:]
    return out


def test_parse_seeds():
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds("3") == [3]
    assert parse_seeds("0,2,5-7,2") == [0, 2, 5, 6, 7]
    for bad in ("3-1", "a", "-1", "1-", ""):
        with pytest.raises(EvalError):
            parse_seeds(bad)


def test_oracle_and_random_tables_and_trajectories(tmp_path):
    out = tmp_path / "oracle"
    res = run("shopping", "--tasks", "shopping/add_to_cart,shopping/product_price", "--seeds", "0-1", "--out", str(out))
    assert res.exit_code == 0, res.output
    table = rows(res.stdout)
    assert table["shopping/add_to_cart"][:4] == ["2", "1.00", "1.00", "1.00"]
    assert table["shopping/product_price"][:4] == ["2", "1.00", "1.00", "1.00"]
    assert table["total"][:4] == ["4", "1.00", "1.00", "1.00"]
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert [(e["task"], e["seed"], e["success"]) for e in episodes] == [
        ("shopping/add_to_cart", 0, True), ("shopping/add_to_cart", 1, True),
        ("shopping/product_price", 0, True), ("shopping/product_price", 1, True)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary[-1] == {"template": "total", "episodes": 4, "success": 1.0, "progress": 1.0, "clean": 1.0,
                           "steps": summary[-1]["steps"]}
    traj = out / "shopping__add_to_cart" / "seed-1.jsonl"
    replay = CliRunner().invoke(main, ["replay", str(traj)])
    assert replay.exit_code == 0 and "every state hash matches" in replay.output

    res = run("shopping", "--agent", "random", "--tasks", "shopping/product_price", "--seeds", "0-1",
              "--max-steps", "6", "--out", str(tmp_path / "random"))
    assert res.exit_code == 0, res.output
    assert rows(res.stdout)["total"] == ["2", "0.00", "0.00", "1.00", "6.0"]   # it never answers


@dataclass(frozen=True)
class Inst:
    family: str
    index: int
    sim_task: str
    sim_seed: int
    goal: str
    user: str | None = None
    params: dict = field(default_factory=dict)


class AddToCart:
    """A stand-in portable family: simweb's add_to_cart, instance i at task seed i + 1."""

    id, kind, sim_task = "shopping:fake/add_to_cart", "flow", "shopping/add_to_cart"

    def __init__(self, wrong: bool = False):
        self.wrong = wrong

    def instances(self, n):
        env = simweb.make("shopping", seed=0)
        out = []
        for i in range(n):
            t = env.app.tasks[self.sim_task].instantiate(env.app, i + 1)
            out.append(Inst(self.id, i, self.sim_task, i + 1, t.goal, params={"name": t.params["name"]}))
        return out

    def script(self, inst):
        box = re.compile("search", re.I)
        name = inst.params["name"] + (" (not sold here)" if self.wrong else "")
        return [Fill("textbox", box, inst.params["name"]), Press("textbox", box, key="Enter"), Click("link", name),
                Click("button", re.compile(r"add to (cart|basket)", re.I))]


def test_scripted_runs_the_families_scripts(tmp_path, monkeypatch):
    monkeypatch.setattr(scripts, "families_for", lambda app: [AddToCart()] if app == "shopping" else [])
    out = tmp_path / "scripted"
    res = run("shopping", "--agent", "scripted", "--seeds", "0-2", "--out", str(out))
    assert res.exit_code == 0, res.output
    assert rows(res.stdout)["shopping/add_to_cart"] == ["3", "1.00", "1.00", "1.00", "5.0"]  # the script, then "done"
    lines = [json.loads(line) for line in (out / "shopping__add_to_cart" / "seed-1.jsonl").read_text().splitlines()]
    assert lines[0]["family"] == "shopping:fake/add_to_cart" and lines[0]["instance"] == 0
    agent_steps = [line["agent"] for line in lines[1:]]
    assert [a["found"] for a in agent_steps] == [True] * 5 and agent_steps[2]["what"].startswith("click link")

    one_line_error(run("shopping", "--agent", "scripted", "--tasks", "shopping/product_price"),
                   "no script for shopping/product_price; the templates with scripts are: shopping/add_to_cart")
    one_line_error(run("forum", "--agent", "scripted"), "no scripts for forum")

    monkeypatch.setattr(scripts, "families_for", lambda app: [AddToCart(wrong=True)])
    res = run("shopping", "--agent", "scripted", "--seeds", "0", "--out", str(tmp_path / "stuck"))
    assert res.exit_code == 0 and rows(res.stdout)["total"][:2] == ["1", "0.00"]
    assert "1 scripted episode(s) stopped at a missing element" in res.stdout
    ep = json.loads((tmp_path / "stuck" / "episodes.jsonl").read_text())
    assert ep["stuck"] is True and ep["steps"] == 3          # two steps, then the missing link (a noop)


def test_llm_run_against_a_fake_endpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    with FakeOpenAI(lambda body: "The price is on the page.\n```send_msg_to_user('$1.00')```") as api:
        res = run("shopping", "--agent", "llm", "--model", "fake-1", "--base-url", api.base_url, "--tasks",
                  "shopping/product_price", "--seeds", "0-1", "--out", str(tmp_path / "llm"))
    assert res.exit_code == 0, res.output
    assert rows(res.stdout)["total"][:2] == ["2", "0.00"]
    assert len(api.requests) == 2 and api.requests[0]["headers"]["Authorization"] == "Bearer sk-from-env"
    assert api.requests[0]["body"]["model"] == "fake-1"
    lines = [json.loads(line) for line in (tmp_path / "llm" / "shopping__product_price" / "seed-0.jsonl").read_text().splitlines()]
    assert lines[0]["model"] == "fake-1" and lines[0]["prompt"] == "browsergym" and "sk-" not in json.dumps(lines[0])
    assert lines[1]["action"] == "send_msg_to_user('$1.00')" and "The price is on the page." in lines[1]["agent"]["reply"]

    with FakeOpenAI(lambda body: {"status": 503}) as api:
        res = run("shopping", "--agent", "llm", "--model", "m", "--base-url", api.base_url, "--retries", "0",
                  "--tasks", "shopping/product_price", "--seeds", "0", "--out", str(tmp_path / "down"))
    one_line_error(res, "the model endpoint failed", code=1)
    assert (tmp_path / "down" / "episodes.jsonl").exists()


def test_bad_requests_are_one_line():
    one_line_error(run("shopping", "--tasks", "forum/post_score"), "belongs to app 'forum'")
    one_line_error(run("shopping", "--seeds", "4-2"), "bad seed range")
    one_line_error(run("shopping", "--agent", "llm"), "needs --model and --base-url")
    one_line_error(run("shopping", "--agent", "llm", "--model", "m", "--base-url", "localhost:1"),
                   "must start with http")
    one_line_error(run("nowhere"), "nowhere")


@pytest.mark.browser
def test_browser_backend(tmp_path):
    pytest.importorskip("playwright.sync_api")
    res = run("shopping", "--backend", "browser", "--tasks", "shopping/add_to_cart", "--seeds", "1",
              "--out", str(tmp_path / "b"))
    assert res.exit_code == 0, res.output
    assert rows(res.stdout)["total"] == ["1", "1.00", "1.00", "1.00", "5.0"]   # the plan, then "done"


def test_families_are_found_through_the_counterparts_registry(monkeypatch):
    import sys
    import types

    fake: Any = types.ModuleType("simweb.counterparts")   # given attributes below
    fake.PAIRS = frozenset({"shopping:fake", "shopping:absent", "forum:other"})

    def families(name):
        if name == "absent":
            raise RuntimeError("counterpart 'absent' has no portable families in this build")
        return [AddToCart()] if name == "fake" else []

    fake.families = families
    monkeypatch.setitem(sys.modules, "simweb.counterparts", fake)
    found = scripts.families_for("shopping")
    assert [f.id for f in found] == ["shopping:fake/add_to_cart"]
    assert scripts.families_for("forum") == [] and scripts.families_for("booking") == []
    inst = scripts.scripted_instances("shopping", [1, 0])
    assert [(i.task, i.seed, i.index) for i in inst] == [("shopping/add_to_cart", 1, 0), ("shopping/add_to_cart", 2, 1)]


def test_scripted_on_simweb_with_the_roundup_families_scripts(tmp_path):
    # The issues:roundup families' scripts (the ones sim2live also runs live) solve their simweb instances.
    res = run("issues", "--agent", "scripted", "--seeds", "0", "--out", str(tmp_path / "issues"))
    assert res.exit_code == 0, res.output
    table = rows(res.stdout)
    assert len(table) >= 6 and table["total"][1:4] == ["1.00", "1.00", "1.00"], res.stdout


@pytest.mark.apps("issues")
@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_on_a_site_variant(tmp_path, workers):
    """`simweb eval --variant K` runs every episode on variant K, in this process and on
    the pool's workers alike (each trajectory's states carry the variant); the oracle
    solves it; an id the app does not have is one line and exit 2."""
    cat = simweb.runtime.variants.catalogue("issues")
    default = cat.values(0)["site_name"]
    k = next(k for k in range(1, cat.count) if cat.values(k)["site_name"] != default)   # a site of another name
    name = cat.values(k)["site_name"]
    out = tmp_path / "ev"
    res = run("issues", "--tasks", "issues/mark_all_read", "--seeds", "0-1", "--variant", str(k),
              "--workers", workers, "--out", str(out))
    assert res.exit_code == 0, res.output
    assert rows(res.stdout)["issues/mark_all_read"][:2] == ["2", "1.00"]
    for path in sorted(out.rglob("seed-*.jsonl")):
        text = path.read_text()
        assert json.loads(text.splitlines()[0])["variant"] == k
        assert name in text and default not in text     # the pages the episode saw were variant k's
    one_line_error(run("issues", "--variant", str(cat.count)), f"not {cat.count}")

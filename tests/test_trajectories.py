"""The trajectory schema (simweb/schemas/trajectory.schema.json): every command that
records episodes writes lines that validate against it, through the one writer, with
the goal, the observations (AX tree, URL, title), every check of the verdict, site
errors and fork parentage; version-1 files are read, anything else refused in one line."""
from __future__ import annotations

import json
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from simweb.episodes.rollout import trajectory_from_bytes
from simweb.episodes.trajectory import (
    SCHEMA,
    TrajectoryFormatError,
    load_schema,
    read_trajectory,
    validate_lines,
    write_sim2live,
)
from simweb.live.sim2live import Side
from simweb.tools.cli import main
from simweb.tools.train import TrainConfig, train

TASK = "shopping/buy_product"


def run(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def lines_of(path: Path) -> list[dict]:
    head, rest = read_trajectory(path)
    validate_lines([head, *rest])
    return [head, *rest]


def test_the_schema_is_a_valid_json_schema():
    import jsonschema

    jsonschema.Draft202012Validator.check_schema(load_schema())
    assert load_schema()["$id"] == SCHEMA


def test_run_records_goal_observations_checks_and_titles(tmp_path):
    out = tmp_path / "t.jsonl"
    r = run("run", "shopping", "--task", TASK, "--seed", "3", "--out", str(out))
    assert r.exit_code == 0, r.output
    head, *steps = lines_of(out)
    assert head["schema"] == SCHEMA and head["kind"] == "episode" and head["variant"] is None
    assert head["goal"] and head["task"] == TASK and head["parent"] is None and head["difficulty"]
    assert head["observation"]["axtree"].startswith("RootWebArea") and head["observation"]["title"]
    for s in steps:
        obs = s["observation"]
        assert obs["axtree"].startswith(f"RootWebArea '{obs['title']}'") and obs["title"]
        assert obs["url"] == s["url"] and obs["screenshot"] is None
        assert s["verdict"]["checks"], "every check of the verdict is recorded"
        assert "site_error" in s
    assert steps[-1]["verdict"]["success"] and steps[-1]["verdict"]["clean"]


def test_a_lean_record_drops_only_the_ax_tree_text():
    from simweb.agents import OracleAgent
    from simweb.episodes.env import SimEnv
    from simweb.episodes.rollout import run_episode

    env = SimEnv("shopping", 0)
    full = run_episode(env, OracleAgent(), task=TASK, seed=3)
    lean = run_episode(env, OracleAgent(), task=TASK, seed=3, lean=True)
    lines = [lean.header, *lean.steps]
    validate_lines(lines)
    assert all(x["observation"]["axtree"] is None and x["observation"]["title"] for x in lines)
    assert [s["obs"] for s in lean.steps] == [s["obs"] for s in full.steps]
    assert [s["state_hash"] for s in lean.steps] == [s["state_hash"] for s in full.steps]


def test_pools_groups_and_fork_record_parentage(tmp_path):
    r = run("run", "shopping", "--task", TASK, "--seeds", "0-1", "--group", "2", "--out", str(tmp_path / "g"))
    assert r.exit_code == 0, r.output
    files = sorted((tmp_path / "g").glob("*.jsonl"))
    assert len(files) == 4
    for f in files:
        head = lines_of(f)[0]
        assert head["reset"] is False and head["parent"]["step"] == 0
        assert head["parent"]["state_hash"] == head["start_hash"] == head["parent_hash"]
    # a state saved mid-episode, then a group forked from it: the parent state is kept beside
    state = tmp_path / "s.json"
    assert run("run", "shopping", "--task", TASK, "--seed", "3", "--save-state", str(state), "--at", "4").exit_code == 0
    r = run("fork", "--state", str(state), "--branches", "2", "--steps", "3", "--out", str(tmp_path / "f"))
    assert r.exit_code == 0, r.output
    for f in sorted((tmp_path / "f").glob("branch-*.jsonl")):
        head = lines_of(f)[0]
        assert head["parent"]["step"] == 4 and head["parent"]["state_file"] == "parent-state.json"
    assert orjson.loads((tmp_path / "f" / "parent-state.json").read_bytes())["meta"]["step"] == 4


def test_eval_demo_and_redteam_write_the_schema(tmp_path):
    r = run("eval", "shopping", "--tasks", TASK, "--seeds", "0", "--out", str(tmp_path / "e"))
    assert r.exit_code == 0, r.output
    (traj,) = (tmp_path / "e").rglob("seed-0.jsonl")
    assert lines_of(traj)[0]["agent"] == "oracle"
    r = run("demo", "--apps", "shopping", "--seeds", "1", "--branches", "2", "--workers", "1", "--out",
            str(tmp_path / "d"))
    assert r.exit_code == 0, r.output
    oracle = tmp_path / "d" / "shopping" / "shopping__buy_product" / "seed-0-oracle.jsonl"
    assert lines_of(oracle)[0]["agent"] == "oracle"
    branch = oracle.parent / "seed-0-fork" / "branch-0001.jsonl"
    head = lines_of(branch)[0]
    assert head["parent"]["trajectory"] == "../seed-0-oracle.jsonl"
    # the branch forked from the state the oracle's trajectory recorded at that step
    oracle_steps = lines_of(oracle)[1:]
    assert oracle_steps[head["parent"]["step"] - 1]["state_hash"] == head["parent"]["state_hash"]
    out = tmp_path / "rt.jsonl"
    r = run("redteam", "shopping", "--seeds", "1", "--task", TASK, "--no-events", "--out", str(out))
    head, *attacks = lines_of(out)
    assert head["kind"] == "redteam" and attacks and all(a["type"] == "attack" for a in attacks)


@pytest.mark.apps("issues")
def test_train_keeps_groups_as_trajectories(tmp_path):
    cfg = TrainConfig(app="issues", tasks=["issues/mark_all_read"], iterations=2, group=3, instances=1, max_steps=2,
                      seed=1)
    train(cfg, tmp_path)
    kept = sorted((tmp_path / "trajectories").rglob("child-*.jsonl"))
    assert {p.parts[-3] for p in kept} == {"iter-0000", "iter-0001"} and len(kept) == 6
    for p in kept:
        head = lines_of(p)[0]
        assert head["iteration"] in (0, 1) and head["parent"] is not None and "advantage" in head


@pytest.mark.apps("issues")
def test_train_records_lean_groups_between_the_kept_iterations(tmp_path, monkeypatch):
    """train asks the workers for lean records (no AX-tree text) in the iterations whose
    groups it does not keep, and for full ones in those it writes for the viewer."""
    from simweb.episodes.rollout import RolloutWorker

    seen: list[tuple[int, bool, bool]] = []
    run_item = RolloutWorker.run_item

    def spy(self, item, policy):
        out = run_item(self, item, policy)
        ax = [trajectory_from_bytes(b).steps[0]["observation"]["axtree"] for b in out]
        seen.append((item.policy_version, item.lean, all(a is None for a in ax)))
        return out

    monkeypatch.setattr(RolloutWorker, "run_item", spy)
    monkeypatch.setattr("simweb.train.TRAJECTORIES_EVERY", 2)
    cfg = TrainConfig(app="issues", tasks=["issues/mark_all_read"], iterations=4, group=2, instances=1, max_steps=2,
                      seed=1)
    train(cfg, tmp_path)
    assert sorted(set(seen)) == [(0, False, False), (1, True, True), (2, False, False), (3, False, False)]
    kept = sorted((tmp_path / "trajectories").rglob("child-*.jsonl"))
    assert {p.parts[-3] for p in kept} == {"iter-0000", "iter-0002", "iter-0003"}
    assert all(isinstance(lines_of(p)[1]["observation"]["axtree"], str) for p in kept)


def test_a_lean_group_item_differs_only_in_the_ax_tree_text():
    from simweb.episodes.rollout import RolloutWorker, WorkItem

    w = RolloutWorker()
    full, lean = (w.run_item(WorkItem("shopping", TASK, 3, group=2, group_seed=5, max_steps=4, lean=x), "random")
                  for x in (False, True))
    for a, b in zip(full, lean):
        ta, tb = trajectory_from_bytes(a), trajectory_from_bytes(b)
        assert [s["state_hash"] for s in ta.steps] == [s["state_hash"] for s in tb.steps]
        assert all(s["observation"]["axtree"] for s in ta.steps)
        assert all(s["observation"]["axtree"] is None for s in tb.steps)


def test_sim2live_sides_are_trajectories(tmp_path):
    class Inst:
        sim_task, sim_seed, goal, params = "issues/issue_status", 7, "Close issue <b>#3</b>", {"x": 1}

    obs = {"url": "http://x/issues/3", "axtree": "RootWebArea 'Issue 3', focused\n\t[close] button 'Close'"}
    from simweb.episodes.trajectory import observation

    sim = Side("sim", steps=[{"action": "click('close')", "error": "", "page": "issue", "next_url": "http://x/",
                              "observation": observation(obs), "reward": 0.0, "script": {"step": 0}},
                             {"action": "(end)"}],
               verdict={"success": True, "progress": 1.0, "clean": True, "checks": [{"name": "closed", "ok": True}]},
               start=observation(obs))
    live = Side("live", steps=[{"action": "noop()", "error": "no such element", "page": "issue", "next_url": ""}],
                verdict={"success": False, "progress": 0.0, "clean": True, "checks": []}, start=observation(obs))
    ep = {"family": "close_issue", "index": 0, "parting": {"step": 0, "sim_page": "issue", "live_page": "issue"}}
    paths = write_sim2live(tmp_path, "issues:roundup", "scripted", Inst(), ep, (sim, live))
    heads = [lines_of(Path(p))[0] for p in paths]
    assert [h["sim2live"]["side"] for h in heads] == ["sim", "live"]
    assert heads[1]["app"] == "roundup" and heads[0]["goal"] == Inst.goal
    assert lines_of(Path(paths[0]))[-1]["verdict"]["checks"] == [{"name": "closed", "passed": True, "detail": ""}]


def test_old_files_are_read_and_others_refused(tmp_path):
    v1 = tmp_path / "v1.jsonl"
    v1.write_text(json.dumps({"type": "header", "app": "shopping", "task": TASK, "seed": 3, "agent": "oracle",
                              "reset": True}) + "\n" +
                  json.dumps({"type": "step", "step": 1, "action": "noop()", "reward": 0.0,
                              "verdict": {"success": False, "progress": 0.0, "clean": True}}) + "\n")
    head, steps = read_trajectory(v1)
    assert head["schema"] == "simweb.trajectory/1" and head["goal"] is None and steps[0]["observation"] is None
    future = tmp_path / "v9.jsonl"
    future.write_text(json.dumps({"type": "header", "schema": "simweb.trajectory/9", "app": "x"}) + "\n")
    with pytest.raises(TrajectoryFormatError, match="newer simweb"):
        read_trajectory(future)
    other = tmp_path / "metrics.jsonl"
    other.write_text('{"iteration": 0}\n')
    with pytest.raises(TrajectoryFormatError, match="not a simweb trajectory"):
        read_trajectory(other)
    for bad in (future, other):
        try:
            read_trajectory(bad)
        except TrajectoryFormatError as exc:
            assert "\n" not in str(exc) and re.match(re.escape(str(bad)), str(exc))


def test_replay_reads_through_the_one_reader(tmp_path):
    """`simweb replay` read files with its own loop: a newer schema was replayed as if it
    were this one, a red-team file failed on its first attack line, and a step line that is
    not an object was a traceback. It now reads through read_trajectory."""
    r = run("run", "shopping", "--task", TASK, "--seeds", "3", "--agent", "oracle", "--out", str(tmp_path / "run"))
    assert r.exit_code == 0, r.output
    good = next((tmp_path / "run").rglob("*.jsonl"))
    assert "every state hash matches" in CliRunner().invoke(main, ["replay", str(good)]).output
    lines = good.read_text().splitlines()
    head = json.loads(lines[0])
    cases = {
        "future": ([json.dumps({**head, "schema": "simweb.trajectory/9"}), *lines[1:]], "newer simweb"),
        "redteam": ([json.dumps({**head, "kind": "redteam"}), json.dumps({"type": "attack", "paid": False})],
                    "a redteam file, not an episode"),
        "not-an-object": ([lines[0], "5"], "not a JSON object"),
        "cut": ([lines[0], lines[1][:20]], "not valid JSON"),
    }
    for name, (text, needle) in cases.items():
        p = tmp_path / f"{name}.jsonl"
        p.write_text("\n".join(text) + "\n")
        res = CliRunner().invoke(main, ["replay", str(p)])
        assert res.exit_code == 2 and needle in res.output, (name, res.output)
        assert len(res.output.strip().splitlines()) == 1 and res.exception is None or isinstance(res.exception,
                                                                                                   SystemExit)

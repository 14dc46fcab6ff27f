"""The command line: the main jobs work end to end, and every bad input ends with one
line on stderr, exit code 2, no traceback and no output file."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

TASK = "shopping/add_with_options"


def simweb(*args: str, cwd: Path | None = None, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "simweb.cli", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=timeout)


def assert_user_error(res: subprocess.CompletedProcess, needle: str) -> None:
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("simweb: error:") and needle in lines[0], lines[0]
    assert "Traceback" not in res.stderr


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cli")
    res = simweb("run", "shopping", "--task", TASK, "--seed", "3", "--agent", "oracle", "--out", str(d / "traj.jsonl"),
                 "--save-state", str(d / "mid.json"), "--at", "2")
    assert res.returncode == 0, res.stderr
    assert "success=True" in res.stdout
    res = simweb("run", "shopping", "--task", TASK, "--seed", "3", "--save-state", str(d / "final.json"))
    assert res.returncode == 0, res.stderr
    return d


def test_apps_and_tasks_list():
    res = simweb("apps")
    assert res.returncode == 0 and "shopping" in res.stdout and "simweb/shopping-v0" in res.stdout
    res = simweb("tasks", "shopping")
    assert res.returncode == 0
    assert "shopping/buy_product" in res.stdout and "hard" in res.stdout and "easy" in res.stdout


def test_trajectory_format_and_replay(run_dir):
    lines = [json.loads(ln) for ln in (run_dir / "traj.jsonl").read_text().splitlines()]
    head, steps = lines[0], lines[1:]
    assert head["type"] == "header" and head["task"] == TASK and head["seed"] == 3
    assert all({"action", "obs", "state_hash", "verdict", "reward"} <= set(s) for s in steps)
    assert steps[-1]["verdict"]["success"] is True
    res = simweb("replay", str(run_dir / "traj.jsonl"))
    assert res.returncode == 0 and "every state hash matches" in res.stdout


def test_replay_detects_tampering(run_dir, tmp_path):
    lines = (run_dir / "traj.jsonl").read_text().splitlines()
    step = json.loads(lines[-1])
    step["state_hash"] = "0" * 64
    lines[-1] = json.dumps(step)
    p = tmp_path / "bad.jsonl"
    p.write_text("\n".join(lines) + "\n")
    res = simweb("replay", str(p))
    assert res.returncode == 1 and "MISMATCH" in res.stderr


def test_fork_branches_from_a_saved_state(run_dir, tmp_path):
    out = tmp_path / "branches"
    res = simweb("fork", "--state", str(run_dir / "mid.json"), "--branches", "3", "--agent", "random",
                 "--steps", "5", "--seed", "1", "--out", str(out))
    assert res.returncode == 0, res.stderr
    files = sorted(out.glob("branch-*.jsonl"))
    assert len(files) == 3
    heads = [json.loads(f.read_text().splitlines()[0]) for f in files]
    assert len({h["parent_hash"] for h in heads}) == 1 and [h["branch"] for h in heads] == [0, 1, 2]
    assert "branch" in res.stdout and "progress" in res.stdout
    # The saved state is untouched by branching.
    assert json.loads((run_dir / "mid.json").read_text())["meta"]["step"] == 2


def test_verify_a_final_state(run_dir):
    res = simweb("verify", "--task", TASK, "--seed", "3", "--state", str(run_dir / "final.json"))
    assert res.returncode == 0, res.stderr
    v = json.loads(res.stdout)
    assert v["success"] and v["clean"] and v["progress"] == 1.0
    res = simweb("verify", "--task", TASK, "--seed", "3", "--state", str(run_dir / "mid.json"))
    assert json.loads(res.stdout)["success"] is False
    # A state verified against another instance of the task is refused, not mis-scored.
    assert_user_error(simweb("verify", "--task", TASK, "--seed", "4", "--state", str(run_dir / "final.json")),
                      "other parameters")


def test_verify_refuses_states_no_run_produced(run_dir, tmp_path):
    """A forged final state (the start with the target edited in, the task removed, a
    request dropped from its history) is refused with one line and exit 2, not scored."""
    from simweb import make

    final = json.loads((run_dir / "final.json").read_text())
    env = make("shopping", seed=0)
    env.reset(seed=3, options={"task": TASK})
    forged = env.snapshot()
    forged["runtime"] = final["runtime"]          # the start state with the target edited in
    forgeries = {"edited": (forged, "not what its recorded history produces")}
    untasked = json.loads(json.dumps(final))
    untasked["meta"]["task"] = None               # which also skipped the "made for" check
    forgeries["untasked"] = (untasked, "records no task")
    if "history" in final["meta"]:
        dropped = json.loads(json.dumps(final))
        del dropped["meta"]["history"]["log"][-3]
        forgeries["dropped"] = (dropped, "not what its recorded history produces")
    for name, (state, needle) in forgeries.items():
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(state))
        assert_user_error(simweb("verify", "--task", TASK, "--seed", "3", "--state", str(p)), needle)


def test_spec_table_and_diagram(tmp_path):
    res = simweb("spec", "shopping", "--diagram", str(tmp_path / "m.mmd"))
    assert res.returncode == 0, res.stderr
    assert "place_order" in res.stdout and "irreversible" in res.stdout and "runtime.carts" in res.stdout
    text = (tmp_path / "m.mmd").read_text()
    assert "stateDiagram" in text and "place_order" in text
    assert "order_status → cancelled" in res.stdout          # the workflow move of cancel_order
    wf = (tmp_path / "m.order_status.mmd").read_text()
    assert "processing --> cancelled: cancel" in wf and "[*] --> processing" in wf


def test_spec_shows_permissions_workflows_and_timers():
    res = simweb("spec", "issues")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert "permissions (roles: guest < reporter < developer < maintainer)" in out
    assert "close_issue" in out and "issue_state → closed" in out and "opened → closed" in out
    assert "timers (clock-driven events)" in out
    res = simweb("spec", "forum")
    assert res.returncode == 0 and "moderate" in res.stdout and "lift_ban" in res.stdout


def test_export_webgym(tmp_path):
    out = tmp_path / "tasks.jsonl"
    res = simweb("export-webgym", "shopping", "--out", str(out), "--per-template", "2")
    assert res.returncode == 0, res.stderr
    rows = [json.loads(ln) for ln in out.read_text().splitlines()]
    assert len(rows) >= 30
    assert all(r["evaluator_reference"] and r["difficulty"] >= 1 for r in rows)


@pytest.mark.parametrize("args,needle", [
    (["tasks", "shoping"], "did you mean 'shopping'"),
    (["run", "shopping", "--task", "shopping/nope"], "unknown task 'shopping/nope'"),
    (["run", "shopping", "--task", "forum/x"], "belongs to app 'forum'"),
    (["run", "shopping", "--task", TASK, "--at", "3"], "--at needs --save-state"),
])
def test_bad_arguments(args, needle):
    assert_user_error(simweb(*args), needle)


@pytest.mark.parametrize("args,needle", [
    (["--seed", "99999999999999999999999"], "--seed must be a 64-bit integer"),
    (["--seed", "-99999999999999999999999"], "--seed must be a 64-bit integer"),
    (["--seed", str(2**63)], "--seed must be a 64-bit integer"),
    (["--idle-lifetime", "nan"], "--idle-lifetime must be a finite number, not 'nan'"),
    (["--idle-lifetime", "inf"], "--idle-lifetime must be a finite number, not 'inf'"),
    (["--task", "shopping/buy_prodcut"], "did you mean 'shopping/buy_product'?"),
    (["--task", "forum/new_thread"], "belongs to app 'forum'"),
], ids=["seed-huge", "seed-huge-negative", "seed-2**63", "idle-nan", "idle-inf", "task-typo", "task-other-app"])
def test_serve_refuses_bad_values_in_one_line(tmp_path, args, needle):
    """Refused before the server starts (a timeout here means it started and served)."""
    assert_user_error(simweb("serve", "shopping", "--port", "0", "--session-db", f"sqlite:///{tmp_path / 's.db'}",
                             *args, timeout=30), needle)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_omnibox_refuses_a_status_interval_that_is_not_finite(value):
    assert_user_error(simweb("omnibox", "--apps", "nope", "--status-interval", value, timeout=30),
                      f"--status-interval must be a finite number, not '{value}'")


@pytest.mark.parametrize("apps", [",", " , ,"])
def test_omnibox_with_no_app_in_apps_is_one_line(apps):
    """`--apps ,` names no app: it was a ValueError traceback."""
    assert_user_error(simweb("omnibox", "--apps", apps, timeout=30), "--apps")


def test_the_64_bit_seed_type_accepts_its_whole_range():
    import click

    from simweb.tools.cli import INT64

    assert INT64.convert(str(2**63 - 1), None, None) == 2**63 - 1
    assert INT64.convert(str(-2**63), None, None) == -2**63
    with pytest.raises(click.ClickException, match="64-bit"):
        INT64.convert(str(-2**63 - 1), None, None)


def test_bad_files(tmp_path, run_dir):
    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    out = tmp_path / "out"
    assert_user_error(simweb("fork", "--state", str(garbage), "--out", str(out)), "not valid JSON")
    assert not out.exists()

    state = json.loads((run_dir / "mid.json").read_text())
    state["world"]["hash"] = state["meta"]["world_hash"] = "1" * 64
    foreign = tmp_path / "foreign.json"
    foreign.write_text(json.dumps(state))
    assert_user_error(simweb("verify", "--task", TASK, "--state", str(foreign)), "another world")

    state = json.loads((run_dir / "mid.json").read_text())
    state["meta"]["spec_hash"] = "2" * 64
    other_spec = tmp_path / "spec.json"
    other_spec.write_text(json.dumps(state))
    assert_user_error(simweb("fork", "--state", str(other_spec), "--out", str(out)), "spec")
    assert not out.exists()

    state = json.loads((run_dir / "mid.json").read_text())
    state["runtime"]["carts"] = "oops"
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps(state))
    assert_user_error(simweb("verify", "--task", TASK, "--state", str(invalid)), "invalid state at $.runtime.carts")

    bad_traj = tmp_path / "t.jsonl"
    bad_traj.write_text('{"type": "step"}\n')
    assert_user_error(simweb("replay", str(bad_traj)), "not a simweb trajectory")
    assert_user_error(simweb("replay", str(tmp_path / "missing.jsonl")), "cannot read")


def test_failed_run_leaves_no_output_file(tmp_path):
    out = tmp_path / "t.jsonl"
    res = simweb("run", "shopping", "--task", TASK, "--save-state", str(tmp_path / "s.json"), "--at", "999",
                 "--out", str(out))
    assert_user_error(res, "past the end")
    assert not out.exists() and not (tmp_path / "s.json").exists()
    assert not [p for p in tmp_path.iterdir()]   # no temporary files left either


@pytest.mark.browser
def test_compare_sim_and_browser(tmp_path):
    out = tmp_path / "cmp.jsonl"
    res = simweb("compare", "shopping", "--task", TASK, "--seed", "1", "--out", str(out))
    assert res.returncode == 0, res.stderr
    summary = json.loads(out.read_text().splitlines()[-1])
    assert summary["full_agreement"] is True and summary["first_divergence"] is None
    assert "URL agreement 1.00" in res.stdout


def test_compare_needs_a_task_or_walks(tmp_path):
    res = simweb("compare", "shopping", "--out", str(tmp_path / "x.json"))
    assert_user_error(res, "--task")
    res = simweb("compare", "shopping", "--walks", "2", "--task", TASK, "--out", str(tmp_path / "x.json"))
    assert_user_error(res, "--walks compares random walks")
    assert not (tmp_path / "x.json").exists()


@pytest.mark.browser
def test_compare_walks_writes_a_parity_report(tmp_path):
    out = tmp_path / "walks.json"
    res = simweb("compare", "shopping", "--walks", "2", "--steps", "4", "--out", str(out))
    assert res.returncode == 0, res.stderr
    report = json.loads(out.read_text())
    assert report["walks"] == 2 and report["steps_per_walk"] == 4 and len(report["runs"]) == 2
    assert report["walks_agreeing"] + sum(c["count"] for c in report["classes"].values()) == 2
    declared = sum(c["count"] for k, c in report["classes"].items() if k.startswith("declared "))
    assert report["walks_declared"] == declared
    assert report["parity_but_declared"] == (report["walks_agreeing"] + declared) / 2
    assert "walks of 4 steps agree" in res.stdout and "counting declared classes as agreeing" in res.stdout


def test_compare_live_needs_a_server(tmp_path):
    res = simweb("compare", "shopping", "--task", TASK, "--against", "live", "--out", str(tmp_path / "x.jsonl"))
    assert_user_error(res, "--against live needs --server")
    assert not (tmp_path / "x.jsonl").exists()


# ----------------------------------------------------------------------------- outputs that cannot be files

@pytest.mark.parametrize("args", [
    ["run", "shopping", "--task", TASK, "--out", "{missing}/t.jsonl"],
    ["run", "shopping", "--task", TASK, "--save-state", "{missing}/s.json"],
    ["spec", "shopping", "--diagram", "{missing}/d.mmd"],
    ["export-webgym", "shopping", "--per-template", "1", "--out", "{file}/t.jsonl"],
], ids=["run-out", "run-save-state", "spec-diagram", "export"])
def test_an_output_that_cannot_be_written_is_one_line_and_leaves_nothing(tmp_path, args):
    """A folder that does not exist (or is a file) was a FileNotFoundError traceback."""
    (tmp_path / "file").write_text("x")
    args = [a.format(missing=tmp_path / "missing", file=tmp_path / "file") for a in args]
    assert_user_error(simweb(*args), "cannot write")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]


@pytest.mark.parametrize("args", [
    ["spec", "shopping", "--diagram", "{out}"],
    ["run", "shopping", "--task", TASK, "--out", "{out}"],
    ["export-webgym", "shopping", "--per-template", "1", "--out", "{out}"],
], ids=["spec-diagram", "run-out", "export"])
def test_an_output_that_is_not_a_regular_file_is_written_to_not_replaced(tmp_path, args):
    """A write went to a temporary file beside the output, renamed over it: given a device or
    a pipe (`--out /dev/stdout`, `/dev/null`, a FIFO), that replaced the device node with a
    regular file (run as root, `--out /dev/null` broke /dev/null for the whole machine)."""
    import os
    import stat
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()), daemon=True)
    reader.start()
    res = simweb(*[a.format(out=fifo) for a in args])
    if reader.is_alive():   # the command never opened the pipe: unblock the reader
        with open(fifo, "wb"):
            pass
    reader.join(10)
    assert res.returncode == 0, res.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got and got[0].strip()
    # Nothing else but the workflow diagrams `spec --diagram` writes beside the machine's.
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("fifo.")] == ["fifo"]


def test_an_output_through_a_symlink_keeps_the_symlink(tmp_path):
    target = tmp_path / "real.mmd"
    target.write_text("old")
    link = tmp_path / "link.mmd"
    link.symlink_to(target)
    res = simweb("spec", "shopping", "--diagram", str(link))
    assert res.returncode == 0, res.stderr
    assert link.is_symlink() and target.read_text() != "old"

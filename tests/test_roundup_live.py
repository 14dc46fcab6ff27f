"""issues:roundup end to end: Roundup 2.6.0 installed from PyPI into a temp home, seeded,
started, one family run by sim2live on both sides, stopped (no process left, checked by
pid); then the live verifiers attacked on the real database (zero work, wrong entity,
wrong value, the change done twice must not pay; the right change must).

Needs the network for pip (CI has it); about two minutes, most of it the install.
"""
from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import tempfile
from pathlib import Path

import pytest

from simweb.live.counterparts import families
from simweb.live.counterparts.base import group_members
from simweb.live.counterparts.roundup import Roundup
from simweb.live.sim2live import Settings, run

pytestmark = [pytest.mark.counterpart, pytest.mark.browser, pytest.mark.slow]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def home():
    d = Path(tempfile.mkdtemp(prefix="simweb-roundup-"))
    d.chmod(0o755)   # reachable for nobody (pytest's tmp dirs are mode 700)
    yield d
    Roundup(d / "roundup").stop()
    subprocess.run(["rm", "-rf", str(d)], check=False)


@pytest.fixture(scope="module")
def roundup(home):
    cp = Roundup(home / "roundup")
    cp.install(progress=False)
    return cp


FAMILY = {f.short: f for f in families("roundup")}


def test_install_seeds_the_project(roundup):
    conn = roundup.connect()
    n_issues = conn.execute("SELECT count(*) FROM _issue").fetchone()[0]
    assert n_issues == 338   # aperture/website at world seed 0, issue<N> is #N
    issue = roundup.issue(conn, 5)
    assert issue["title"] == "Improve the performance of the report builder" and issue["status"] == "chatting"
    roles = dict(conn.execute("SELECT _username, _roles FROM _user"))
    assert roles["edsger.wei"] == "User,Developer" and roles["hana.haddad"] == "User"
    assert roundup.message_text(issue["messages"][0])
    if os.geteuid() == 0:
        assert roundup.database().stat().st_uid == 65534   # nobody


def test_one_family_end_to_end_and_stop_by_pid(roundup, home, tmp_path):
    pids: list[int] = []

    def note(ep: dict) -> None:
        pids.append(Roundup(home / "roundup").status()["pid"])

    report = run(Settings(pair="issues:roundup", agent="scripted", families=["close_issue"], instances=1,
                          out=tmp_path, home=home / "roundup", port=free_port(), install=False), on_episode=note)
    fam = report["families"][0]
    assert fam["family"] == "close_issue" and fam["n"] == 1
    assert fam["sim_success"] == 1.0 and fam["live_success"] == 1.0 and fam["retained_success"] == 1.0
    assert fam["divergences"]["control"] > 0 and fam["divergences"]["page"] > 0
    ep = report["episodes"][0]
    assert ep["live"]["changes"] == ["issues.state"] and ep["live"]["clean"] is True
    assert "issues.state" in ep["sim"]["changes"]
    lines = [json.loads(x) for x in (tmp_path / "traces" / "close_issue-0.jsonl").read_text().splitlines()]
    assert {x["side"] for x in lines if x["type"] == "step"} == {"sim", "live"}
    assert lines[-1]["type"] == "divergences" and lines[-1]["parting"]["script_step"] == 0
    assert "| close_issue | form | 1 | 1.00 | 1.00 | 1.00 |" in (tmp_path / "report.md").read_text()
    # The run stopped the server it started: nothing is left of its process group.
    assert pids and pids[0] is not None
    assert group_members(pids[0]) == []
    assert not Roundup(home / "roundup").status()["running"]


def test_learned_pair_after_a_short_training_run(roundup, home, tmp_path):
    """CI's small live pair of the learned policy: a short training run on issues, then its
    untrained and trained policies on one close_issue instance on both sides (real Roundup
    pages through WebEnv, acting from the AX tree and the goal only) and the retained gain."""
    from simweb.live.sim2live_learned import run_learned
    from simweb.tools.train import TrainConfig, train

    run_dir = tmp_path / "run"
    train(TrainConfig(app="issues", tasks=["issues/mark_all_read", "issues/close_issue"], iterations=2, group=8,
                      instances=4), run_dir)
    g = run_learned("issues:roundup", run_dir, tmp_path / "s2l", families=["close_issue"], instances=1,
                    max_steps=12, home=home / "roundup", port=free_port(), install=False)
    assert g["same_policy"] is False   # two iterations moved the weights: both halves ran
    assert g["timing"]["init"]["how"] == g["timing"]["trained"]["how"] == "run"
    t = g["total"]
    assert t["n"] == 1 and set(t) >= {"sim_before", "sim_after", "live_before", "live_after", "sim_gain", "live_gain"}
    for which in ("init", "trained"):
        rep = json.loads((tmp_path / "s2l" / which / "report.json").read_text())
        (e,) = rep["episodes"]
        assert e["index"] == 0 and e["family"] == "close_issue"
        assert e["live"]["steps"] >= 1 and e["sim"]["steps"] >= 1   # the policy acted on both sides
        assert not (e["live"]["success"] and not e["live"]["changes"])   # no live success without a change
    assert [p["family"] for p in g["parting"]] == ["close_issue"]
    assert not Roundup(home / "roundup").status()["running"]


# ----------------------------------------------------------------------------- attacks on the live verifiers

def write(cp: Roundup, sql: str, args: tuple = ()) -> None:
    conn = sqlite3.connect(cp.database())
    conn.execute(sql, args)
    conn.commit()
    conn.close()


def status_id(cp: Roundup, name: str) -> int:
    return cp.connect().execute("SELECT id FROM _status WHERE _name = ?", (name,)).fetchone()[0]


def user_id(cp: Roundup, name: str) -> int:
    uid = cp.user_id(cp.connect(), name)
    assert uid is not None, name
    return uid


def comment(cp: Roundup, number: int, author: str, text: str) -> None:
    """Post a message through Roundup's own API (as its users would, content on disk)."""
    script = (
        "import sys, roundup.instance\n"
        "t = roundup.instance.open(sys.argv[1]); db = t.open('admin')\n"
        "n, who, text = sys.argv[2], sys.argv[3], sys.argv[4]\n"
        "db.setCurrentUser(who)\n"
        "m = db.msg.create(content=text, author=db.user.lookup(who))\n"
        "db.issue.set(n, messages=db.issue.get(n, 'messages') + [m]); db.commit(); db.close()\n")
    cp.run([str(cp.python), "-c", script, str(cp.tracker_dir), str(number), author, text])


@pytest.fixture()
def cp(roundup):
    roundup.stop()
    roundup.restore_pristine()
    yield roundup
    roundup.restore_pristine()


def verdict(cp: Roundup, family: str, answer: str | None = None, refused: bool = False, index: int = 0) -> dict:
    fam = FAMILY[family]
    return fam.live_verify(cp, fam.instances(index + 1)[index], answer, refused)


def test_close_issue_pays_only_for_the_right_change(cp):
    inst = FAMILY["close_issue"].instances(1)[0]
    n = inst.params["iid"]
    zero = verdict(cp, "close_issue")                                         # zero work
    assert zero["success"] is False and zero["progress"] == 0.0              # not refusing is no progress
    other = cp.connect().execute("SELECT id FROM _issue WHERE id != ? AND _status = ? ORDER BY id",
                                 (n, status_id(cp, "chatting"))).fetchone()[0]
    write(cp, "UPDATE _issue SET _status = ? WHERE id = ?", (status_id(cp, "resolved"), other))
    v = verdict(cp, "close_issue")                                            # wrong entity
    assert v["success"] is False and v["clean"] is False
    assert f"collateral: _issue.{other}._status" in [c["name"] for c in v["checks"]]
    cp.restore_pristine()
    write(cp, "UPDATE _issue SET _status = ? WHERE id = ?", (status_id(cp, "deferred"), n))
    assert verdict(cp, "close_issue")["success"] is False                     # wrong value
    write(cp, "UPDATE _issue SET _status = ? WHERE id = ?", (status_id(cp, "resolved"), n))
    v = verdict(cp, "close_issue")                                            # the goal
    assert v["success"] is True and v["clean"] is True and v["progress"] == 1.0
    assert verdict(cp, "close_issue", refused=True)["success"] is False       # done, then claimed impossible


def test_assign_issue_wrong_user_and_collateral(cp):
    inst = FAMILY["assign_issue"].instances(1)[0]
    n, who = inst.params["iid"], inst.params["assignee"]
    other = next(u for u in ("edsger.wei", "hana.haddad") if u != who)
    zero = verdict(cp, "assign_issue")
    assert zero["success"] is False and zero["progress"] == 0.0
    write(cp, "UPDATE _issue SET _assignedto = ? WHERE id = ?", (user_id(cp, other), n))
    assert verdict(cp, "assign_issue")["success"] is False
    write(cp, "UPDATE _issue SET _assignedto = ?, _title = 'renamed' WHERE id = ?", (user_id(cp, who), n))
    v = verdict(cp, "assign_issue")
    assert v["success"] is True and v["clean"] is False   # the goal, with a retitle on the side


def test_triage_comment_twice_does_not_pay(cp):
    inst = FAMILY["triage_issue"].instances(1)[0]
    p = inst.params
    assert inst.user
    comment(cp, p["iid"], inst.user, p["text"])
    names = {c["name"]: c["ok"] for c in verdict(cp, "triage_issue")["checks"]}
    assert names[f"comment “{p['text']}” on #{p['iid']}"] is True
    comment(cp, p["iid"], inst.user, p["text"])
    names = {c["name"]: c["ok"] for c in verdict(cp, "triage_issue")["checks"]}
    assert names[f"comment “{p['text']}” on #{p['iid']}"] is False
    v = verdict(cp, "triage_issue")
    assert v["success"] is False and v["progress"] < 0.5


def test_info_and_refusal_verifiers(cp):
    labels = FAMILY["issue_labels"].instances(1)[0].params["labels"]
    assert verdict(cp, "issue_labels", ", ".join(reversed(labels)))["success"] is True
    assert verdict(cp, "issue_labels", None)["success"] is False
    assert verdict(cp, "issue_labels", ", ".join(labels + ["ci"]))["success"] is False or "ci" in labels
    assert verdict(cp, "issue_labels", labels[0])["success"] is False
    count = FAMILY["open_label_count"].instances(1)[0].params["count"]
    assert verdict(cp, "open_label_count", str(count))["success"] is True
    assert verdict(cp, "open_label_count", str(count + 1))["success"] is False
    assert verdict(cp, "open_label_count", f"{count} or {count + 1}")["success"] is False
    assert verdict(cp, "close_with_role", refused=True)["success"] is True
    assert verdict(cp, "close_with_role", answer="Done")["success"] is False
    n = FAMILY["close_with_role"].instances(1)[0].params["iid"]
    write(cp, "UPDATE _issue SET _status = ? WHERE id = ?", (status_id(cp, "resolved"), n))
    assert verdict(cp, "close_with_role", refused=True)["success"] is False   # refused after closing it


def test_zero_work_earns_no_progress_on_any_family(cp):
    """Zero work (the pristine tracker, no answer, no refusal) has progress 0 and no success
    on every family, as in simweb. The checks that hold before any work (the tracker has the
    labels, agrees on the count, the issue keeps its status) are guards: on the old verifier
    they were goal facts, and doing nothing showed live progress 0.50 on issue_labels,
    open_label_count and close_with_role (seen in the untrained learned policy's runs)."""
    for short in FAMILY:
        for index in range(3):
            v = verdict(cp, short, index=index)
            assert v["success"] is False and v["progress"] == 0, (short, index, v["checks"])
            assert v["clean"] is True

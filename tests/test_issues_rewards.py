"""Simtracker's rewards under attack: what an agent optimising the reward would try.

Each test plays one attack (through the site where the site allows it, or as a crafted
final state where only the judge is under test) and asserts the verdict: success,
progress, clean and the collateral checks naming the damaged paths.
"""
from __future__ import annotations

import ast
import collections
import copy
import re
from typing import Any

import pytest

import simweb
from simweb.episodes.episode import potential
from simweb.judging.effects import Row


@pytest.fixture(scope="module")
def env():
    return simweb.make("issues", seed=0)


# ----------------------------------------------------------------------------- helpers

def play(env, tid: str, seed: int, actions=None) -> dict:
    """Reset to the instance and run ``actions`` (default: the oracle plan) until the episode
    ends; the verdict of the last step."""
    env.reset(seed=seed, options={"task": tid})
    info: dict = {"verdict": None}
    for a in env.oracle_plan() if actions is None else actions:
        _, _, term, trunc, info = env.step(a)
        if term or trunc:
            break
    return info["verdict"]


def _answer_of(action: str) -> str:
    """The message of a plan's final send_msg_to_user action."""
    m = re.match(r"send_msg_to_user\((.*)\)$", action)
    assert m is not None, action
    return m.group(1)


def judge(env, final: dict, answer: str | None = None) -> dict:
    """The verdict of ``final`` for the current task (from the episode's start)."""
    t = env.task
    return env.app.tasks[t.id].verify(env.app, t.params, env.start_state(), final, answer)


def post(env, state: dict, url: str, form: dict | None = None, referrer: str | None = None) -> None:
    """A form post on ``state`` as sent from ``referrer`` (must succeed)."""
    r = env.app.submit(state, url, form or {}, referrer=referrer)
    assert r.error in (None, ""), (url, r.error)


def damage(v: dict) -> dict[str, str]:
    return {c["name"][len("collateral: runtime."):]: c["detail"] for c in v["checks"]
            if c["name"].startswith("collateral: runtime.")}


def seed_where(env, tid: str, test, tries: int = 80) -> int:
    tpl = env.app.tasks[tid]
    for s in range(tries):
        if test(tpl.instantiate(env.app, s).params):
            return s
    pytest.fail(f"no seed of {tid} satisfies the test")


def proj_of(env, p: dict) -> dict:
    return env.app.world.project(p["project_id"])


def issue_url(env, p: dict, iid: int, suffix: str = "") -> str:
    return f"/projects/{proj_of(env, p)['path']}/issues/{iid}{suffix}"


def closable_others(env, p: dict, exclude: set[int], n: int) -> list[dict]:
    """Open issues of the task's project without open blockers, other than ``exclude``."""
    w = env.app.world
    out = []
    for iid in range(1, proj_of(env, p)["issue_count"] + 1):
        i = w.issue(w.issue_id_by_iid(p["project_id"], iid))
        if i["state"] == "opened" and i["id"] not in exclude and not any(
                w.issue(ln["source_id"])["state"] == "opened" for ln in w.links(i["id"])
                if ln["kind"] == "blocks" and ln["target_id"] == i["id"]):
            out.append(i)
        if len(out) == n:
            return out
    pytest.fail("not enough closable issues")


# ============================================================================= field-level damage

#: Every template whose effect changes fields of existing issues (13 under the old
#: whole-row allowance, plus the issue rows of the multi-issue templates).
ISSUE_ROW_TEMPLATES = ["issues/comment", "issues/close_issue", "issues/reopen_issue", "issues/assign_issue",
                       "issues/add_label", "issues/set_milestone", "issues/set_due_date", "issues/link_issues",
                       "issues/close_with_role", "issues/close_if_unblocked", "issues/add_to_milestone",
                       "issues/triage_issue", "issues/unblock_and_close", "issues/close_label_in_milestone",
                       "issues/triage_my_issues", "issues/wrap_up_milestone"]


@pytest.mark.parametrize("tid", ISSUE_ROW_TEMPLATES)
def test_rewriting_the_target_issue_beyond_its_fields_is_damage(env, tid):
    """After the oracle, the task's own issue also gets a new title and description, no
    assignees, no milestone and a closed state: every field the effect does not name is
    reported as collateral damage with its before and after values."""
    seed = seed_where(env, tid, lambda p: p.get("feasible", True))
    v = play(env, tid, seed)
    assert v["success"] and v["clean"]
    effect = env.app.tasks[tid].effect_for(env.app, env.task.params, env.start_state())
    rows = [t for t in effect.targets if isinstance(t, Row) and t.table == "issues"]
    row = rows[0] if rows else Row("issues", env.task.params["issue_id"], {})   # a link claims no issue field
    final = env.snapshot()
    issues = final["runtime"]["entities"].setdefault("issues", {})
    now = copy.deepcopy(issues.get(str(row.id)) or env.app.world.issue(row.id))
    attack: dict[str, Any] = {"title": "x", "description": "", "assignees": [], "milestone_id": None, "state": "closed",
              "weight": 9 if now["weight"] != 9 else 8}
    issues[str(row.id)] = dict(now, **attack)
    v = judge(env, final)
    assert not v["clean"]
    hit = damage(v)
    for f, value in attack.items():
        if f not in row.fields and now[f] != value:
            assert f"entities.issues.{row.id}.{f}" in hit, (f, sorted(hit))
    assert hit[f"entities.issues.{row.id}.title"] == f"{now['title']!r} -> 'x'"


def test_closing_after_rewriting_through_the_site_is_success_but_not_clean(env):
    """The reproduced attack, end to end: edit the title and description, unassign everyone,
    drop the milestone, then close the issue."""
    tid = "issues/close_issue"
    w = env.app.world
    seed = seed_where(env, tid, lambda p: (lambda i: i["assignees"] and i["milestone_id"])(w.issue(p["issue_id"])))
    env.reset(seed=seed, options={"task": tid})
    p = env.task.params
    i = w.issue(p["issue_id"])
    page = issue_url(env, p, p["iid"])
    acts = [f"goto('{page}/edit')", "fill('edit-title', 'x')", "fill('edit-description', 'gone')",
            "click('edit-submit')"]
    acts += [f"click('unassign-{a}')" for a in i["assignees"]]
    acts += ["select_option('milestone-select', 'No milestone')", "click('milestone-submit')", "click('close-issue')"]
    for a in acts:
        obs, _, _, _, info = env.step(a)
        assert obs["last_action_error"] == "", (a, obs["last_action_error"])
    v = info["verdict"]
    assert v["success"] and v["progress"] == 1.0 and not v["clean"]
    hit = damage(v)
    base = f"entities.issues.{p['issue_id']}"
    assert {f"{base}.title", f"{base}.description", f"{base}.assignees", f"{base}.milestone_id"} <= set(hit)
    assert hit[f"{base}.assignees"] == f"{i['assignees']!r} -> []"


def test_removing_a_maintainer_and_demoting_while_adding_a_member_is_damage(env):
    tid = "issues/add_member"
    w = env.app.world

    def fits(p):
        ms = w.members(p["project_id"])
        return sum(m["role"] == "maintainer" for m in ms) >= 2 and any(m["role"] == "developer" for m in ms)

    seed = seed_where(env, tid, fits)
    env.reset(seed=seed, options={"task": tid})
    p = env.task.params
    ms = w.members(p["project_id"])
    gone = next(m for m in ms if m["role"] == "maintainer" and m["user_id"] != p["user_id"])
    demoted = next(m for m in ms if m["role"] == "developer")
    page = f"/projects/{p['project']}/members"
    for a in [f"click('my-project-{p['project_id']}')", "click('project-members')",
              f"click('remove-member-{gone['user_id']}')",
              f"select_option('role-select-{demoted['user_id']}', 'Guest')", f"click('role-submit-{demoted['user_id']}')"]:
        obs, *_ = env.step(a)
        assert obs["last_action_error"] == "", a
    assert env.state["browser"]["tabs"][0]["url"] == page
    for a in [f"fill('member-username', {p['username']!r})", f"select_option('member-role', {p['role'].capitalize()!r})",
              "click('member-submit')"]:
        _, _, _, _, info = env.step(a)
    v = info["verdict"]
    assert v["success"] and not v["clean"]
    hit = damage(v)
    assert hit[f"entities.members.{gone['id']}"].endswith("-> None")
    assert hit[f"entities.members.{demoted['id']}.role"] == "'developer' -> 'guest'"


def test_deleting_an_existing_blocks_link_while_adding_one_is_damage(env):
    tid = "issues/link_issues"
    w = env.app.world

    def blocks_link(p):
        for iid in range(1, 60):
            wid = w.issue_id_by_iid(p["project_id"], iid)
            for ln in w.links(wid) if wid else []:
                if ln["kind"] == "blocks" and ln["target_id"] == wid:
                    return w.issue(wid), ln
        return None

    seed = seed_where(env, tid, lambda p: blocks_link(p) is not None)
    env.reset(seed=seed, options={"task": tid})
    p = env.task.params
    other, ln = blocks_link(p)
    acts = [f"goto('{issue_url(env, p, other['iid'])}')", f"click('link-remove-{ln['id']}')"]
    v = play(env, tid, seed, acts + env.oracle_plan())
    assert v["success"] and not v["clean"]
    assert damage(v)[f"entities.links.{ln['id']}"].endswith("-> None")


# ============================================================================= content and undo

def test_a_created_issue_that_is_closed_again_earns_nothing(env):
    tid = "issues/create_issue"
    v = play(env, tid, 3)
    assert v["success"] and v["clean"]
    p = env.task.params
    final = env.snapshot()
    made = next(r for r in final["runtime"]["entities"]["issues"].values() if r and r["title"] == p["title"])
    post(env, final, issue_url(env, p, made["iid"], "/close"), referrer=issue_url(env, p, made["iid"]))
    v = judge(env, final)
    assert not v["success"] and v["progress"] == 0.0
    # the closed issue matches no intended row, so it is itself damage
    assert f"entities.issues.{made['id']}" in damage(v)


@pytest.mark.parametrize("tid, attack", [
    ("issues/comment", lambda p: [("comment-body", "lol")]),
    ("issues/create_issue", lambda p: [("issue-title", "x")]),
    ("issues/link_issues", lambda p: [("link-target", str(p["blocker_iid"] % 5 + 1 if p["blocker_iid"] % 5 + 1
                                                          not in (p["iid"], p["blocker_iid"]) else 7))]),
])
def test_wrong_content_earns_no_progress_and_is_damage(env, tid, attack):
    """A comment "lol", an issue titled "x", a link to the wrong issue: the new row matches
    no intended fact (progress 0) and, unclaimed, is collateral damage."""
    env.reset(seed=2, options={"task": tid})
    p = env.task.params
    swap = dict(attack(p))
    plan = []
    for a in env.oracle_plan():
        m = re.match(r"fill\('([\w-]+)', ", a)
        plan.append(f"fill('{m.group(1)}', {swap[m.group(1)]!r})" if m and m.group(1) in swap else a)
    v = play(env, tid, 2, plan)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    table = {"issues/comment": "comments", "issues/create_issue": "issues", "issues/link_issues": "links"}[tid]
    assert any(k.startswith(f"entities.{table}.") for k in damage(v))


def test_a_label_added_and_removed_again_is_not_done(env):
    tid = "issues/add_label"
    env.reset(seed=1, options={"task": tid})
    p = env.task.params
    final = env.snapshot()
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/labels/add", {"label_id": str(p["label_id"])}, referrer=page)
    assert judge(env, final)["success"]
    post(env, final, page + "/labels/remove", {"label_id": str(p["label_id"])}, referrer=page)
    v = judge(env, final)
    # not done; and the two notes ("added ~X label", "removed ~X label") record no net
    # change of the labels, so they are damage too (before the `net` rules they were not)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    assert set(damage(v)) == {k for k in damage(v) if k.startswith("entities.comments.")} and len(damage(v)) == 2


# ============================================================================= over-doing

def test_assigning_one_more_member_than_asked_fails(env):
    tid = "issues/assign_issue"
    play(env, tid, 4)
    p = env.task.params
    final = env.snapshot()
    w = env.app.world
    extra = next(m for m in w.members(p["project_id"]) if m["user_id"] not in (*p["before"], p["assignee_id"]))
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/assign", {"user_id": str(extra["user_id"])}, referrer=page)
    v = judge(env, final)
    assert not v["success"] and v["progress"] == 0.0


def test_a_second_comment_is_damage(env):
    tid = "issues/comment"
    play(env, tid, 6)
    p = env.task.params
    final = env.snapshot()
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/comment", {"body": p["text"]}, referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"]
    assert sum(k.startswith("entities.comments.") for k in damage(v)) == 1


def test_closing_one_more_issue_than_the_filter_finds_is_damage(env):
    tid = "issues/close_label_in_milestone"
    play(env, tid, 0)
    p = env.task.params
    final = env.snapshot()
    other = closable_others(env, p, set(p["issue_ids"]), 1)[0]
    page = issue_url(env, p, other["iid"])
    post(env, final, page + "/close", referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"]
    assert damage(v)[f"entities.issues.{other['id']}.state"] == "'opened' -> 'closed'"


def test_closing_and_reopening_another_issue_leaves_its_notes_as_damage(env):
    # Undone churn on an issue the task does not judge still writes its system notes and
    # notifications there: a reader of that issue sees them, so they are collateral (the
    # notes of the judged issue stay bookkeeping).
    tid = "issues/close_label_in_milestone"
    play(env, tid, 0)
    p = env.task.params
    final = env.snapshot()
    other = closable_others(env, p, set(p["issue_ids"]), 1)[0]
    page = issue_url(env, p, other["iid"])
    post(env, final, page + "/close", referrer=page)
    post(env, final, page + "/reopen", referrer=page)
    v = judge(env, final)
    hurt = damage(v)
    assert v["success"] and not v["clean"]
    assert f"entities.issues.{other['id']}.state" not in hurt          # the state itself is back
    notes = [k for k in hurt if k.startswith("entities.comments.")]
    assert len(notes) == 2, hurt                                       # "closed", "reopened"
    assert v == judge(env, final)                                      # the same verdict twice


def test_closing_six_unrelated_issues_pays_no_progress_reward():
    penv = simweb.make("issues", seed=0, reward="progress")
    tid = "issues/close_issue"
    penv.reset(seed=5, options={"task": tid})
    p = penv.task.params
    others = closable_others(penv, p, {p["issue_id"]}, 6)
    acts = []
    for i in others:
        acts += [f"goto('{issue_url(penv, p, i['iid'])}')", "click('close-issue')"]
    total = 0.0
    for a in acts + penv.oracle_plan():
        _, r, term, trunc, info = penv.step(a)
        total += r
        if term or trunc:
            break
    v = info["verdict"]
    assert v["success"] and v["progress"] == 1.0 and not v["clean"]
    assert total == 0.0
    assert sum(k.endswith(".state") for k in damage(v)) == 6


# ============================================================================= refusals

MIXED = ["issues/close_with_role", "issues/close_if_unblocked", "issues/add_to_milestone"]


@pytest.mark.parametrize("tid", MIXED)
def test_mixed_templates_share_one_goal_and_split_about_evenly(env, tid):
    tpl = env.app.tasks[tid]
    assert tpl.may_refuse and tpl.kind == "mixed" and not tid.split("/")[1].startswith("infeasible")
    flags = []
    for s in range(60):
        p = tpl.instantiate(env.app, s).params
        flags.append(p["feasible"])
        assert tpl.goal(env.app, p) == tpl.goal(env.app, dict(p, feasible=not p["feasible"]))
    assert 18 <= sum(flags) <= 42, sum(flags)


@pytest.mark.parametrize("tid", MIXED)
def test_a_refusal_pays_only_after_viewing_the_blocker(env, tid):
    seed = seed_where(env, tid, lambda p: not p["feasible"])
    blind = play(env, tid, seed, ["report_infeasible('no')"])
    assert not blind["success"]
    assert blind["progress"] == 0.0   # a blind refusal earns nothing, not half
    failed = [c for c in blind["checks"] if not c["passed"]]
    assert len(failed) == 1 and "never viewed" in failed[0]["detail"], failed
    v = play(env, tid, seed)
    assert v["success"] and v["clean"] and v["progress"] == 1.0
    # the start page is not the evidence
    effect = env.app.tasks[tid].effect_for(env.app, env.task.params, env.start_state())
    assert not any(env.task.start_url.startswith(e) for e in effect.refusal.evidence)


@pytest.mark.parametrize("tid", MIXED)
def test_refusing_a_feasible_twin_fails(env, tid):
    seed = seed_where(env, tid, lambda p: p["feasible"])
    env.reset(seed=seed, options={"task": tid})
    plan = env.oracle_plan()
    assert plan[-1].startswith("send_msg_to_user(")       # the oracle ends by saying it is done
    # the work done, then called impossible instead of done: no reward in any mode
    v = play(env, tid, seed, plan[:-1] + ["report_infeasible('I may not do that.')"])
    assert not v["clean"] and potential(v) == 0.0
    assert "collateral: not reported as infeasible" in [c["name"] for c in v["checks"] if not c["passed"]]
    # refused before the last step of the work: not even a success
    v = play(env, tid, seed, plan[:-2] + ["report_infeasible('I may not do that.')"])
    assert not v["success"] and potential(v) == 0.0
    assert play(env, tid, seed)["success"]


def test_the_closed_milestone_refusal_accepts_the_closed_list_as_evidence(env):
    tid = "issues/add_to_milestone"
    seed = seed_where(env, tid, lambda p: not p["feasible"])
    env.reset(seed=seed, options={"task": tid})
    p = env.task.params
    v = play(env, tid, seed, [f"click('my-project-{p['project_id']}')", "click('project-milestones')",
                              "click('ms-closed')", "report_infeasible('It is closed.')"])
    assert v["success"] and v["clean"]


# ============================================================================= answers

def _site_day(iso: str) -> str:
    """A date as the tracker prints it ('Jan 5, 2026')."""
    from datetime import date

    from simweb.apps.issues.functions import day
    from simweb.core.worlddb import date_to_day
    return day(date_to_day(date.fromisoformat(iso)))


@pytest.mark.parametrize("tid, form", [
    ("issues/issue_assignees", lambda p: ", ".join("@" + u for u in reversed(p["usernames"]))),
    ("issues/issue_assignees", lambda p: " and ".join(p["usernames"])),
    ("issues/open_blockers", lambda p: ", ".join(b.lstrip("#") for b in p["blockers"])),
    ("issues/open_blockers", lambda p: "; ".join(reversed(p["blockers"]))),
    ("issues/milestone_due_date", lambda p: _site_day(p["due"])),
    ("issues/milestone_due_date", lambda p: p["due"]),
    ("issues/milestone_progress", lambda p: f"{p['percent']}% complete"),
    ("issues/most_commented_open", lambda p: f"#{p['iid']}"),
    ("issues/most_commented_open", lambda p: f"{p['iid']}"),
])
def test_answers_written_as_the_site_shows_them_are_paid(env, tid, form):
    for seed in range(3):
        env.reset(seed=seed, options={"task": tid})
        v = judge(env, env.snapshot(), form(env.task.params))
        assert v["success"] and v["clean"], (seed, v["checks"])


INFO = [tid for tid, t in simweb.make("issues", seed=0).app.tasks.items() if t.kind == "info"]


@pytest.mark.parametrize("tid", INFO)
def test_no_constant_or_goal_number_answer_is_right_often(env, tid):
    """The three most common right answers over 150 instances, each sent to every instance,
    and every number written in the goal, are each right on at most 10% of them."""
    tpl = env.app.tasks[tid]
    insts = [tpl.instantiate(env.app, s) for s in range(150)]
    answers = collections.Counter(_answer_of(tpl.oracle(env.app, i.params)[-1]) for i in insts)
    start = env.app.initial_state(0)
    for said, _ in answers.most_common(3):
        text = ast.literal_eval(said)
        hits = sum(tpl.verify(env.app, i.params, start, start, text)["success"] for i in insts)
        assert hits <= 15, (tid, text, hits)
    from_goal = sum(any(tpl.verify(env.app, i.params, start, start, n)["success"]
                        for n in set(re.findall(r"\d+", i.goal))) for i in insts)
    assert from_goal <= 15, (tid, from_goal)


# ============================================================================= undone on the judged field

def _new_rows(final: dict, table: str, hurt: dict) -> list[dict]:
    """The runtime-new rows of ``table`` the verdict reports as damage."""
    rows = final["runtime"]["entities"].get(table) or {}
    return [rows[k.split(".")[2]] for k in hurt if k.startswith(f"entities.{table}.") and k.count(".") == 2]


def _other_member(env, p: dict, *exclude: int) -> dict:
    return next(env.app.world.user(m["user_id"]) for m in env.app.world.members(p["project_id"])
                if m["user_id"] not in (*p.get("before", ()), *exclude))


def test_a_second_assignee_assigned_and_unassigned_on_the_judged_issue_leaves_its_notes_as_damage(env):
    """issues/assign_issue: the asked member assigned, and another member assigned and
    unassigned again. The assignees end as asked (success), but the timeline keeps
    "assigned to @B" / "unassigned @B" and every participant got an "assigned" notification
    about B. They echo ``issues.assignees``, the field the task judges, but record no part
    of its net change (B is neither gained nor lost), so they are damage; the asked
    member's own note and notifications stay bookkeeping. Before, this was a clean success
    (the red team's 12 paid "with a choice, then unassign and back" pairs)."""
    tid = "issues/assign_issue"
    v = play(env, tid, 0)
    assert v["success"] and v["clean"]
    p = env.task.params
    final = env.snapshot()
    extra = _other_member(env, p, p["assignee_id"])
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/assign", {"user_id": str(extra["id"])}, referrer=page)
    post(env, final, page + "/unassign", {"user_id": str(extra["id"])}, referrer=page)
    v = judge(env, final)
    assert v["success"] and v["progress"] == 1.0 and not v["clean"], v
    hurt = damage(v)
    assert sorted(n["body"] for n in _new_rows(final, "comments", hurt)) == [
        f"assigned to @{extra['username']}", f"unassigned @{extra['username']}"]
    sent = _new_rows(final, "notifications", hurt)
    assert sent and all(n["kind"] == "assigned" and n["about"] == extra["id"] for n in sent)
    assert set(hurt) == {k for k in hurt if k.startswith(("entities.comments.", "entities.notifications."))}
    # the same detour *before* the asked assignment is damage too; the oracle alone is clean
    env.reset(seed=0, options={"task": tid})
    start = env.snapshot()
    post(env, start, page + "/assign", {"user_id": str(extra["id"])}, referrer=page)
    post(env, start, page + "/unassign", {"user_id": str(extra["id"])}, referrer=page)
    post(env, start, page + "/assign", {"user_id": str(p["assignee_id"])}, referrer=page)
    v = judge(env, start)
    assert v["success"] and not v["clean"]
    assert len(_new_rows(start, "comments", damage(v))) == 2


def test_a_label_added_and_removed_on_the_labelled_issue_leaves_its_notes_as_damage(env):
    """issues/add_label: the asked label added, and another label added and removed again:
    "added ~X label" / "removed ~X label" for a label X the issue neither gains nor loses
    are damage; the asked label's note is its echo."""
    tid = "issues/add_label"
    v = play(env, tid, 0)
    assert v["success"] and v["clean"]
    p = env.task.params
    final = env.snapshot()
    other = next(lab for lab in env.app.world.labels(p["project_id"])
                 if lab["id"] not in (*p["before"], p["label_id"]))
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/labels/add", {"label_id": str(other["id"])}, referrer=page)
    post(env, final, page + "/labels/remove", {"label_id": str(other["id"])}, referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"], v
    assert sorted(n["body"] for n in _new_rows(final, "comments", damage(v))) == [
        f"added ~{other['name']} label", f"removed ~{other['name']} label"]
    # a label the issue had, removed and added back, is the same: no net change
    if p["before"]:
        had = env.app.world.label(p["before"][0])
        final = env.snapshot()
        post(env, final, page + "/labels/remove", {"label_id": str(had["id"])}, referrer=page)
        post(env, final, page + "/labels/add", {"label_id": str(had["id"])}, referrer=page)
        v = judge(env, final)
        assert v["success"] and not v["clean"]
        assert len(_new_rows(final, "comments", damage(v))) == 2


@pytest.mark.parametrize("tid, path, field, other", [
    ("issues/set_milestone", "/milestone", "milestone_id",
     lambda env, p: next(str(m["id"]) for m in env.app.world.milestones(p["project_id"])
                         if m["state"] == "active" and m["id"] not in (p["milestone_id"], env.app.world.issue(
                             p["issue_id"])["milestone_id"]))),
    ("issues/set_due_date", "/due", "due", lambda env, p: "2031-01-02"),
])
def test_a_value_set_on_the_way_to_the_asked_one_leaves_its_note_as_damage(env, tid, path, field, other):
    """issues/set_milestone and set_due_date: first another milestone (due date), then the
    asked one. The note "changed milestone to %M2" records a value the issue does not end
    with: damage. The note of the asked value is the change's echo."""
    env.reset(seed=1, options={"task": tid})
    p = env.task.params
    final = env.snapshot()
    page = issue_url(env, p, p["iid"])
    post(env, final, page + path, {field: other(env, p)}, referrer=page)
    v = play(env, tid, 1)
    assert v["success"] and v["clean"]
    final_ok = env.snapshot()
    ours = [r for r in final_ok["runtime"]["entities"]["comments"].values() if r and r["system"]]
    post(env, final, page + path, {field: str(p.get("milestone_id") or p.get("due"))}, referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"], v
    notes = _new_rows(final, "comments", damage(v))
    assert len(notes) == 1 and notes[0]["body"] != ours[0]["body"], (notes, ours)


def test_an_assignee_assigned_and_unassigned_on_a_created_issue_leaves_its_notes_as_damage(env):
    """issues/create_assign_label: the issue created as asked, then another member assigned
    and unassigned on it. A row created during the run starts with no assignees, so its
    asked assignee (set by the create form, with its notification) is a net gain and the
    other member is not."""
    tid = "issues/create_assign_label"
    v = play(env, tid, 0)
    assert v["success"] and v["clean"]
    p = env.task.params
    final = env.snapshot()
    made = next(r for r in final["runtime"]["entities"]["issues"].values() if r and r["title"] == p["title"])
    extra = _other_member(env, p, p["assignee_id"], p["user_id"])
    page = issue_url(env, p, made["iid"])
    post(env, final, page + "/assign", {"user_id": str(extra["id"])}, referrer=page)
    post(env, final, page + "/unassign", {"user_id": str(extra["id"])}, referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"], v
    hurt = damage(v)
    assert len(_new_rows(final, "comments", hurt)) == 2
    assert all(n["about"] == extra["id"] for n in _new_rows(final, "notifications", hurt))


@pytest.mark.parametrize("tid", ["issues/assign_issue", "issues/add_label", "issues/set_milestone",
                                 "issues/set_due_date", "issues/triage_issue", "issues/hand_over_issues",
                                 "issues/create_issue", "issues/create_assign_label", "issues/relabel_in_milestone",
                                 "issues/triage_my_issues", "issues/wrap_up_milestone", "issues/add_to_milestone"])
def test_the_notes_of_a_net_change_stay_bookkeeping(env, tid):
    """The honest solutions of every template that assigns, unassigns, labels, unlabels,
    moves a milestone or a due date write notes (and notifications) about exactly the
    net change: clean successes on several seeds."""
    for seed in range(3):
        env.reset(seed=seed, options={"task": tid})
        if not env.task.params.get("feasible", True):
            continue
        v = play(env, tid, seed)
        assert v["success"] and v["clean"], (seed, v)


@pytest.mark.parametrize("tid", ["issues/link_issues", "issues/close_issue"])
def test_a_link_added_and_removed_on_a_judged_issue_leaves_its_notes_as_damage(env, tid):
    """A link to another issue added and removed again on the issue a task judges (the
    link task's, or a close task's): the link row is no change, but the timeline keeps
    "marked this issue as related to #N" / "removed the link to #N". A link's notes are
    ``about`` the link row and echo only a link the effect judges; before, they echoed any
    judged issue, so this was a clean success."""
    v = play(env, tid, 0)
    assert v["success"] and v["clean"]
    p = env.task.params
    final = env.snapshot()
    w = env.app.world
    linked = {x for ln in w.links(p["issue_id"]) for x in (ln["source_id"], ln["target_id"])}
    target = next(iid for iid in range(1, 30) if iid not in (p["iid"], p.get("blocker_iid"))
                  and w.issue_id_by_iid(p["project_id"], iid) not in linked)
    page = issue_url(env, p, p["iid"])
    post(env, final, page + "/links/add", {"kind": "relates_to", "target": str(target)}, referrer=page)
    made = max(int(k) for k, r in final["runtime"]["entities"]["links"].items() if r)
    post(env, final, page + f"/links/{made}/remove", referrer=page)
    v = judge(env, final)
    assert v["success"] and not v["clean"], v
    assert sorted(n["body"].split("#")[0] for n in _new_rows(final, "comments", damage(v))) == [
        "marked this issue as related to ", "removed the link to "]

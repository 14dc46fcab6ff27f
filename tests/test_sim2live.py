"""The sim2live report's parts on made-up episodes: page kinds, state keys, divergence
classes, the parting step, the markdown; and the CLI's one-line errors."""
from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

from simweb.live.counterparts.dbdiff import Change
from simweb.live.sim2live import (
    Side,
    divergences,
    live_state_keys,
    page_error,
    page_kind,
    parting_step,
    render_markdown,
    sim_state_keys,
)
from simweb.tools.cli import main

RULES = [(re.compile(r"/issues/\d+$"), "issue"), (re.compile(r"/issues(\?|$)"), "issue list")]


def step(side: str, i: int, page: str, action: str, script: int | None, found: bool = True, error: str = "",
         skipped: list | None = None) -> dict:
    return {"side": side, "step": i, "url": "", "page": page, "action": action, "error": error, "page_error": "",
            "script": None if script is None else {"step": script, "what": f"s{script}", "found": found},
            "skipped_before": skipped or []}


def test_page_kind_rules_and_fallback():
    assert page_kind("http://issues.simweb.localhost/projects/a/b/issues/12", RULES) == "issue"
    assert page_kind("http://x/projects/a/b/issues?state=all", RULES) == "issue list"
    assert page_kind("http://x/projects/a/b/issues/12#note-9", RULES) == "issue"
    assert page_kind("http://127.0.0.1:8603/tracker/user12?x=1", []) == "/tracker/userN"
    assert page_error('<p class="error-message">Required issue property priority not supplied</p>',
                      re.compile(r'class="error-message"[^>]*>([^<]*)')) == "Required issue property priority not supplied"
    assert page_error("<p>fine</p>", re.compile(r'class="error-message"[^>]*>([^<]*)')) == ""


def test_state_keys_both_sides():
    start = {"runtime": {"entities": {"issues": {"5": {"id": 5, "state": "opened", "labels": [1]}}}}}
    final = {"runtime": {"entities": {"issues": {"5": {"id": 5, "state": "closed", "labels": [1]}},
                                      "comments": {"900": {"id": 900, "body": "hi"}}}}}
    assert sim_state_keys(start, final) == {"issues.state", "comments"}
    changes = [Change("_issue", (5,), "update", "status", "1", "8"), Change("_msg", (77,), "insert", None, None, {}),
               Change("_odd", (1,), "update", "x", 1, 2)]
    assert live_state_keys(changes, {"_issue.status": "issues.state", "_msg": "comments"}) == {
        "issues.state", "comments", "live:_odd.x"}


def test_divergence_classes():
    sim = Side("sim", steps=[step("sim", 0, "home", "click('p')", 0), step("sim", 1, "issue", "click('close')", 2, skipped=[{"step": 1, "what": "s1"}]),
                             step("sim", 2, "issue", "(end)", None)], changes=["issues.state", "notifications"])
    live = Side("live", steps=[step("live", 0, "home", "fill('4', '7')", 1, skipped=[{"step": 0, "what": "s0"}]),
                               step("live", 1, "search", "click('9')", 2, error="Required priority"),
                               step("live", 2, "search", "(end)", None)], changes=["issues.state"])
    d = divergences(sim, live)
    classes = sorted({x["class"] for x in d})
    assert classes == ["control", "page", "state", "validation"]
    assert {x["detail"] for x in d if x["class"] == "page"} == {
        "simweb visits a 'issue' page, the live site none", "the live site visits a 'search' page, simweb none"}
    controls = {(x["script_step"], x["side"]) for x in d if x["class"] == "control"}
    assert controls == {(0, "sim"), (1, "live")}
    assert [x["detail"] for x in d if x["class"] == "state"] == ["simweb changes notifications, the live site does not"]
    assert [x["at"] for x in d if x["class"] == "validation"] == [2]
    parting = parting_step(sim, live)
    assert parting is not None and parting["script_step"] == 0
    # Same number of actions: no flow divergence; one more on a side: one.
    live.steps.insert(0, step("live", 0, "home", "click('x')", 3))
    assert [x["detail"] for x in divergences(sim, live) if x["class"] == "flow"] == ["2 steps in simweb, 3 on the live site"]


def test_markdown_has_the_table():
    report = {"pair": "issues:roundup", "agent": "scripted", "instances_per_family": 1, "max_steps": 40,
              "simweb_version": "0.1.0", "world_seed": 0,
              "total": {"n": 1, "sim_success": 1.0, "live_success": 0.0, "retained_success": 0.0, "sim_progress": 1.0,
                        "live_progress": 0.5},
              "families": [{"family": "close_issue", "kind": "form", "n": 1, "sim_success": 1.0, "live_success": 0.0,
                            "retained_success": 0.0, "sim_progress": 1.0, "live_progress": 0.5, "sim_steps": 8.0,
                            "live_steps": 6.0, "divergences": {"page": 1, "control": 2, "validation": 1, "flow": 1,
                                                               "state": 0},
                            "examples": [("validation", "the live site rejects a step: Required issue property")]}],
              "episodes": [{"family": "close_issue", "index": 0, "sim_seed": 3, "user": "chen.dahl",
                            "sim": {"success": True, "progress": 1.0}, "live": {"success": False, "progress": 0.5},
                            "parting": {"script_step": 0, "what": "click link 'x|y'"}}]}
    md = render_markdown(report)
    assert "| close_issue | form | 1 | 1.00 | 0.00 | 0.00 | 1.00 | 0.50 | 8.00 | 6.00 | 1 | 2 | 1 | 1 | 0 |" in md
    assert "script step 0: click link 'x/y'" in md
    assert "- validation: the live site rejects a step: Required issue property" in md


def test_cli_bad_pair_and_family_are_one_line(tmp_path):
    r = CliRunner().invoke(main, ["sim2live", "--pair", "issue:roundup", "--out", str(tmp_path)])
    assert r.exit_code == 2 and r.output.strip() == "simweb: error: unknown pair 'issue:roundup'; did you mean 'issues:roundup'?"
    r = CliRunner().invoke(main, ["sim2live", "--pair", "issues:roundup", "--families", "nope", "--out", str(tmp_path)])
    assert r.exit_code == 2 and r.output.startswith("simweb: error: unknown family 'nope' of issues:roundup (known: ")
    assert "\n" not in r.output.strip()


def test_cli_more_instances_than_seeded_is_one_line_before_anything_starts(tmp_path):
    """Oscar, Wagtail and pretix seed their families' first 5 instances: -n 6 used to run five
    instances of the first family, then stop on a missing user or page (a seeded-user error
    25-90 s into the run); now it is refused before any install or server."""
    from simweb.live.counterparts.oscar import INSTANCES

    home = tmp_path / "home"
    r = CliRunner().invoke(main, ["sim2live", "--pair", "shopping:oscar", "-n", str(INSTANCES + 1),
                                  "--out", str(tmp_path / "out")], env={"SIMWEB_COUNTERPARTS": str(home)})
    assert r.exit_code == 2, r.output
    assert r.output.strip() == (f"simweb: error: oscar seeds the first {INSTANCES} instances of each family; "
                                f"--instances {INSTANCES + 1} asks for more")
    assert not home.exists() and not (tmp_path / "out").exists()


def test_cli_first_seed_on_a_counterpart_that_seeds_a_few_is_one_line(tmp_path):
    """Held-out instances (--first-seed 1000) need a counterpart that holds every instance's
    entities; Oscar seeds its families' first five: refused before any install or server."""
    home = tmp_path / "home"
    r = CliRunner().invoke(main, ["sim2live", "--pair", "shopping:oscar", "--first-seed", "1000",
                                  "--out", str(tmp_path / "out")], env={"SIMWEB_COUNTERPARTS": str(home)})
    assert r.exit_code == 2, r.output
    assert r.output.startswith("simweb: error: oscar seeds the first 5 instances of each family from seed 0; "
                               "--first-seed 1000 needs") and "\n" not in r.output.strip()
    assert not home.exists() and not (tmp_path / "out").exists()


def test_roundup_instances_from_a_held_out_seed():
    """issues:roundup draws instances from any seed (the tracker holds the whole project):
    from seed 1000 on they are evaluation's held-out seeds, never drawn in training, and
    seed 0's instances (the scripted tables' and the CI pair's) are unchanged."""
    from simweb.live.counterparts.roundup.families import FAMILIES
    from simweb.tools.train import TRAIN_SEEDS, sim2live_instances

    fam = next(f for f in FAMILIES if f.short == "close_issue")
    fixed = fam.instances(3)
    assert fam.instances_from(3, 0) == fixed and [i.sim_seed for i in fixed] == [3, 20, 126]
    held = fam.instances_from(30, TRAIN_SEEDS)
    assert len(held) == 30 and min(i.sim_seed for i in held) >= TRAIN_SEEDS
    assert [i.index for i in held] == list(range(30)) and len({i.sim_seed for i in held}) == 30
    assert all(i.params["project"] == "aperture/website" and i.user for i in held)
    assert not {(i.sim_task, i.sim_seed) for i in held} & sim2live_instances("issues")
    # the other counterparts seed their first instances only: asked for others, one line
    from simweb.live.counterparts import families

    with pytest.raises(RuntimeError, match="seeds only its families' first instances"):
        families("oscar")[0].instances_from(1, TRAIN_SEEDS)


# ----------------------------------------------------------------------------- the parting step of any agent

SIM_ISSUE = ("RootWebArea 'Issue #7'\n\t[10] link 'Issues'\n\t[11] button 'Close issue'\n"
             "\t[12] textbox 'Comment'\n\t[13] button 'Comment'")
LIVE_ISSUE = ("RootWebArea 'Issue 7'\n\t[40] link 'Issues'\n\t[41] combobox '' value='chatting'\n"
              "\t\t[42] option 'resolved', selected=False\n\t[43] textbox ''\n\t[44] button 'Submit Changes'")


def _side(name: str, tree: str, actions: list[str], page: str = "issue") -> Side:
    from simweb.live.sim2live import action_target

    steps = [{"side": name, "step": i, "url": "", "page": page, "action": a, "error": "",
              "target": action_target(tree, a), "observation": {"axtree": tree}} for i, a in enumerate(actions)]
    return Side(name, steps=steps, start={"axtree": tree})


def test_action_target_is_role_name_and_argument():
    from simweb.live.sim2live import action_target

    assert action_target(SIM_ISSUE, "click('11')") == {"verb": "click", "role": "button", "name": "Close issue",
                                                       "arg": "", "found": True}
    assert (action_target(LIVE_ISSUE, "select_option('41', 'resolved')") or {}).get("arg") == "resolved"
    assert (action_target(LIVE_ISSUE, "fill('43', 'x')") or {}).get("role") == "textbox"
    assert (action_target(SIM_ISSUE, "click('99')") or {}).get("found") is False
    for a in ("send_msg_to_user('done')", "go_back()", "noop()", "click(", "__import__('os')"):
        assert action_target(SIM_ISSUE, a) is None


@pytest.mark.parametrize("sim_action, live_action, cls", [
    ("click('11')", "click('44')", "control"),          # simweb's Close issue: no such button live
    ("fill('12', 'hi')", "fill('43', 'hi')", "unnamed"),  # simweb's Comment field: live, only an unnamed one
    ("click('10')", "click('44')", "control"),          # live's Submit Changes has no simweb twin
    ("click('10')", "send_msg_to_user('done')", "stop"),
])
def test_parting_step_of_a_policy_is_classified(sim_action, live_action, cls):
    """A non-scripted agent's sides part at the first step whose action differs in what it
    acts on (role, accessible name, argument), not only in its verb: click('11') on
    simweb's Close issue and click('44') on Roundup's Submit Changes used to count as the
    same step; the class says why they part."""
    sim = _side("sim", SIM_ISSUE, ["click('10')", sim_action])
    live = _side("live", LIVE_ISSUE, ["click('40')", live_action])
    p = parting_step(sim, live)
    assert p is not None and p["step"] == 1 and p["class"] == cls, p
    assert p["sim_target"] == sim.steps[1]["target"]


def test_parting_step_choice_and_page_and_never():
    both = SIM_ISSUE + "\n\t[14] button 'Submit Changes'"
    p = parting_step(_side("sim", both, ["click('10')"]), _side("live", LIVE_ISSUE + "\n\t[45] link 'x'", ["click('44')"]))
    assert p is not None and p["class"] == "choice"   # both pages have both controls: the policy chose differently
    p = parting_step(_side("sim", SIM_ISSUE, ["click('10')"]), _side("live", LIVE_ISSUE, ["click('40')"], page="home"))
    assert p is not None and p["class"] == "page"
    # the same role and name on both sides (different bids) is the same step: they never part
    assert parting_step(_side("sim", SIM_ISSUE, ["click('10')"]), _side("live", LIVE_ISSUE, ["click('40')"])) is None


# ----------------------------------------------------------------------------- refusal evidence

def _refusal_side(urls: list[str], refused: bool = True) -> Side:
    steps = [{"side": "live", "step": i, "url": u, "page": "", "action": "click('1')", "error": ""}
             for i, u in enumerate(urls)]
    return Side("live", steps=steps, refused=refused)


@pytest.mark.parametrize("pair_cp, family, why, blind", [
    ("roundup", "close_with_role", "/tracker/issue{iid}", "/tracker/issue{iid}0"),
    ("oscar", "cancel_shipped", "/accounts/orders/{order_id}/", "/accounts/profile/"),
    ("wagtail", "refuse_publish", "/admin/pages/57/edit/", "/admin/pages/search/?q={post}"),
    ("pretix", "sold_out", "/simstay/h{property_id}/3/", "/simstay/?city={city}"),
    ("pretix", "cancel_too_late", "/simstay/h{property_id_of_booking}/order/{code}/s3cr3t/",
     "/simstay/account/"),
])
def test_a_blind_refusal_does_not_pay_live(pair_cp, family, why, blind):
    """A refusal counts live only after the page that shows why (simweb's refusal verdicts
    demand the same); the counterpart's database cannot tell, so the trace does. Before this,
    a refusal at the start page paid success 1.00 live and 0.00 in simweb."""
    from simweb.live.counterparts import families
    from simweb.live.counterparts.portable import check, guard, refusal_check, verdict
    from simweb.live.sim2live import refusal_seen

    fam = {f.short: f for f in families(pair_cp)}[family]
    inst = fam.instances(1)[0]
    base = "http://127.0.0.1:8600"
    v = verdict([guard(check("untouched", True)), refusal_check(True)])
    assert v["success"] and v["progress"] == 1.0   # what the database alone says
    start = base + fam.live_start(inst)
    blind_v = refusal_seen(fam, inst, _refusal_side([start, base + blind.format(**inst.params)]), v)
    assert not blind_v["success"] and blind_v["progress"] == 0.5
    assert any(c["name"].startswith("refused after viewing") and not c["ok"] for c in blind_v["checks"])
    seen_v = refusal_seen(fam, inst, _refusal_side([start, base + why.format(**inst.params), start]), v)
    assert seen_v["success"] and seen_v["progress"] == 1.0 and seen_v["clean"]
    # no refusal: the rule adds nothing (the refusal fact already fails)
    assert refusal_seen(fam, inst, _refusal_side([start], refused=False), v) is v

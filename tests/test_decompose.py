"""Task decomposition (WebGym-style sub-tasks): the rule, the restriction of an effect,
sub-tasks as real tasks on every app (oracle, verifier, red team, observability), the task
table, and the CLI's listing and export."""
from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from conftest import APPS
from test_reward_integrity import _visible_problem

import simweb
from simweb.apps.issues.tasks import TASKS
from simweb.episodes.env import TaskError
from simweb.judging.decompose import Part, SubTask, decomposable, restrict
from simweb.judging.effects import ANY, Answer, Effect, NewRow, Row, Value, eq, evaluate
from simweb.judging.tasks import FactGroup, TaskTemplate
from simweb.live.tasks import load_tasks
from simweb.serving.omnibox.start import start_url
from simweb.serving.server import create_app
from simweb.tools.cli import main
from simweb.tools.redteam import redteam

SUB_SEEDS = range(3)


def _groups(*sizes: int) -> list[FactGroup]:
    return [FactGroup(f"g{i}", "", tuple(f"f{j}" for j in range(n))) for i, n in enumerate(sizes)]


def _subs(app: str) -> tuple[Any, list[SubTask]]:   # simweb.make returns Any
    env = simweb.make(app)
    return env, [s for _, subs in env.app.tasks.with_sub_tasks() for s in subs]


# ----------------------------------------------------------------------------- the rule

@pytest.mark.parametrize("sizes, ok", [((2, 3), True), ((1, 1, 3), True), ((5,), False), ((2, 2, 2), False),
                                       ((3, 1), True), ((), False)])
def test_webgym_rule(sizes, ok):
    """At least two fact groups, one of them with at least three facts."""
    assert decomposable(_groups(*sizes)) is ok


# ----------------------------------------------------------------------------- restriction

_EFFECT = Effect((Row("issues", 7, {"labels": eq([1]), "milestone_id": eq(3), "updated_day": ANY}, label="issue #7"),
                  NewRow("comments", {"body": eq("hi")}, label="the comment"),
                  Value("votes.1.p9", eq(1), label="the vote")),
                 answer=Answer("number", 4, "count"))


def test_restrict_keeps_only_the_selected_pieces():
    r = restrict(_EFFECT, ("issues.labels", "votes"))
    (row, value) = r.targets
    assert isinstance(row, Row) and isinstance(value, Value)
    assert set(row.fields) == {"labels", "updated_day"}      # the day the site sets stays with a kept field
    assert value.path == "votes.1.p9" and r.answer is None
    assert [t.label for t in restrict(_EFFECT, ("the comment", "answer")).targets] == ["the comment"]
    answer = restrict(_EFFECT, ("answer",)).answer
    assert answer is not None and answer.expected == 4
    # a whole row by its label keeps every field
    (whole,) = restrict(_EFFECT, ("issue #7",)).targets
    assert isinstance(whole, Row) and set(whole.fields) == {"labels", "milestone_id", "updated_day"}


def test_restrict_refuses_drifted_declarations():
    with pytest.raises(ValueError, match="no piece of the effect matches"):
        restrict(_EFFECT, ("issues.title",))
    with pytest.raises(ValueError, match="keeps no goal"):
        restrict(_EFFECT, ("issues.updated_day",))


def test_a_dropped_field_is_collateral():
    """What the parent asks for beyond the part is judged as damage, field by field."""
    env = simweb.make("issues")
    env.reset(seed=0, options={"task": "issues/triage_issue"})     # the same instance as part 1 at seed 0
    start = env.start_state()
    parent = env.app.tasks["issues/triage_issue"]
    for action in env.oracle_plan():
        env.step(action)
    whole = parent.verify(env.app, env.task.params, start, env.state, None)
    part = env.app.tasks["issues/triage_issue.1"].verify(env.app, env.task.params, start, env.state, None)
    assert whole["success"] and whole["clean"]
    assert part["success"] and not part["clean"]
    damage = {c["name"] for c in part["checks"] if c["name"].startswith("collateral")}
    iid = env.task.params["issue_id"]
    assert f"collateral: runtime.entities.issues.{iid}.milestone_id" in damage
    assert f"collateral: runtime.entities.issues.{iid}.assignees" in damage


# ----------------------------------------------------------------------------- every app's sub-tasks

@pytest.mark.parametrize("app", APPS)
def test_sub_tasks_are_real_tasks(app):
    """Each sub-task: its fact groups are some of the parent's, it is no harder than the
    parent, its oracle reaches a clean success 1.0 acting only on what the agent sees, and
    the parent's whole plan is not a clean success for it (the other parts are collateral)."""
    env, subs = _subs(app)
    assert subs, f"{app} has no sub-tasks"
    problems = []
    for sub in subs:
        for seed in SUB_SEEDS:
            obs, _ = env.reset(seed=seed, options={"task": sub.id})
            task, start = env.task, env.start_state()
            parent = env.app.tasks[sub.parent.id]
            parent_groups = {g.id: g for g in parent.facts(env.app, task.params)}
            assert decomposable(list(parent_groups.values())), f"{sub.id} seed {seed}: parent does not split"
            # the parent's groups (a part may reword a group's description, not its facts)
            assert all(g.id in parent_groups and g.facts == parent_groups[g.id].facts
                       for g in task.fact_groups), sub.id
            assert task.n_facts < sum(len(g.facts) for g in parent_groups.values()), sub.id
            info: dict = {}
            for action in env.oracle_plan():
                why = _visible_problem(action, obs, env.browser.page(), task.start_url)
                if why:
                    problems.append(f"{sub.id} seed {seed}: {why}")
                    break
                obs, _, _, _, info = env.step(action)
            v = info.get("verdict") or {}
            if not (v.get("success") and v.get("clean") and v.get("progress") == 1.0):
                problems.append(f"{sub.id} seed {seed}: oracle verdict {[c for c in v.get('checks', []) if not c['passed']][:3]}")
            # the parent's whole plan on the same instance: success maybe, clean never
            # (run as the parent's episode: the sub-task's own ends at its success)
            env.reset(seed=seed, options={"task": parent.id, "params": task.params})
            assert env.start_state()["runtime"] == start["runtime"]
            for action in env.oracle_plan():
                env.step(action)
            whole = env.app.tasks[sub.id].verify(env.app, task.params, start, env.state, None)
            if whole["success"] and whole["clean"]:
                problems.append(f"{sub.id} seed {seed}: the parent's whole plan is a clean success")
    assert not problems, "\n".join(problems[:15])


@pytest.mark.parametrize("app", APPS)
def test_red_team_pays_nothing_on_sub_tasks(app):
    """Every generated attack on every sub-task goes unpaid (CI-sized: one seed)."""
    _, subs = _subs(app)
    attacks = redteam(app, (0,), tasks=[s.id for s in subs])
    assert {a.task for a in attacks} == {s.id for s in subs}
    paid = [f"{a.task}: {a.family}: {a.name}: {a.detail}" for a in attacks if a.paid]
    unpaid = [f"{a.task}: {a.family}: {a.name}: {a.detail}" for a in attacks if a.false_negative]
    assert not paid, "\n".join(paid[:15])
    assert not unpaid, "\n".join(unpaid[:15])


# ----------------------------------------------------------------------------- the task table

def test_task_table_lists_parents_and_resolves_sub_tasks():
    env = simweb.make("issues")
    tasks = env.app.tasks
    assert all("." not in tid.rpartition("/")[2] for tid in tasks)          # iteration: parents only
    assert len(tasks) == len(TASKS) and list(tasks) == [t.id for t in TASKS]   # the app's list, no more
    assert "issues/triage_issue.3" in tasks and "issues/triage_issue.4" not in tasks
    assert "issues/close_issue.1" not in tasks                              # declares no parts
    assert tasks["issues/triage_issue.2"] is tasks["issues/triage_issue.2"]
    assert tasks.get("issues/triage_issue.9") is None
    with pytest.raises(TaskError, match="unknown task 'issues/triage_issue.9'"):
        env.reset(seed=0, options={"task": "issues/triage_issue.9"})


def test_sub_task_seed_is_part_of_the_parents_instance():
    """Seed s of a sub-task scales down the parent's instance s (the same issue, labels)."""
    env = simweb.make("issues")
    parent = env.app.tasks["issues/triage_issue"].instantiate(env.app, 4)
    sub = env.app.tasks["issues/triage_issue.1"].instantiate(env.app, 4)
    assert sub.params == parent.params and sub.id == "issues/triage_issue.1"
    assert [g.id for g in sub.fact_groups] == ["labels"] and sub.goal != parent.goal
    env.reset(seed=4, options={"task": "issues/triage_issue.1"})
    assert env.task.goal == sub.goal and env.task.difficulty == "easy"


def test_same_seed_same_sub_task():
    a, b = simweb.make("forum"), simweb.make("forum")
    oa, _ = a.reset(seed=5, options={"task": "forum/mod_cleanup.2"})
    ob, _ = b.reset(seed=5, options={"task": "forum/mod_cleanup.2"})
    assert oa["goal"] == ob["goal"] and a.oracle_plan() == b.oracle_plan()


class _Parent(TaskTemplate):
    id = "x/parent"

    def sample(self, app, rng):
        return {"n": rng.randint(0, 9)}

    def goal(self, app, p):
        return "Count the things."

    def facts(self, app, p):
        return _groups(1, 3) if p["n"] % 2 else _groups(4)

    def parts(self, app, p):
        return [Part(("g1",), ("answer",), ("noop()",))]


def test_a_sub_task_draws_until_its_parent_splits():
    """Instances of a template may not all split; a sub-task samples one that does."""
    sub = SubTask(_Parent(), 1)
    for seed in range(20):
        p = sub.instantiate(None, seed).params
        assert p["n"] % 2 == 1
    assert [g.id for g in sub.facts(None, {"n": 1})] == ["g1"]
    # no goal of its own: the parent's, then the part (its groups and facts)
    assert sub.goal(None, {"n": 1}) == "Count the things. For now, do only this part and leave the rest undone: (f0, f1, f2)."
    with pytest.raises(ValueError, match="no part 1"):
        sub.facts(None, {"n": 2})


def test_sub_task_effect_matches_evaluate():
    """A sub-task's verdict is the engine's evaluate() of its restricted effect."""
    env = simweb.make("shopping")
    env.reset(seed=1, options={"task": "shopping/buy_product.1"})
    for action in env.oracle_plan():
        _, _, _, _, info = env.step(action)
    sub = env.app.tasks["shopping/buy_product.1"]
    effect = sub.effect_for(env.app, env.task.params, env.start_state())
    assert evaluate(env.app, effect, env.start_state(), env.state) == info["verdict"]
    assert [t.path for t in effect.targets] == [f"carts.{env.task.params['user_id']}.items"]
    assert [(g.id, g.description) for g in env.task.fact_groups] == [("item", "The right item is in the cart")]


# ----------------------------------------------------------------------------- CLI

def test_cli_lists_sub_tasks():
    r = CliRunner().invoke(main, ["tasks", "issues", "--decomposed"], terminal_width=400)
    assert r.exit_code == 0, r.output
    assert "issues/triage_issue.1" in r.output and "issues/wrap_up_milestone.2" in r.output
    assert f"{len(simweb.make('issues').app.tasks)} templates, 15 sub-tasks" in r.output
    plain = CliRunner().invoke(main, ["tasks", "issues"], terminal_width=400)
    assert "issues/triage_issue.1" not in plain.output


def test_cli_exports_sub_tasks_as_webgym_reads_them(tmp_path):
    out = tmp_path / "tasks.jsonl"
    r = CliRunner().invoke(main, ["export-webgym", "forum", "--decomposed", "--per-template", "1", "-o", str(out)])
    assert r.exit_code == 0, r.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    subs = [row for row in rows if row["simweb_task"] == "forum/mod_cleanup.2"]
    assert len(subs) == 1
    row = subs[0]
    assert row["website"].endswith("task=forum/mod_cleanup.2&seed=0")
    assert row["difficulty"] == sum(len(g["facts"]) for g in row["evaluator_reference"]) == 3
    assert [g["id"] for g in row["evaluator_reference"]] == ["ban"]
    assert isinstance(row["definite_answer"], str)
    loaded = {t.task_id: t for t in load_tasks(str(out))}
    assert loaded[row["task_id"]].task_name == row["task_name"]
    assert len({row["task_id"] for row in rows}) == len(rows)


def test_served_start_url_sets_up_a_sub_task():
    """WebGym visits an exported sub-task's `website` as is: the served app starts it."""
    env = simweb.make("shopping", seed=0)
    env.reset(seed=2, options={"task": "shopping/buy_product.1"})
    flask_app = create_app("shopping")
    client = flask_app.test_client()
    assert client.get(start_url("shopping/buy_product.1", 2)).status_code == 200
    token = flask_app.extensions["simweb"].control_token
    state = orjson.loads(client.get("/_simweb/state", headers={"Authorization": f"Bearer {token}"}).data)
    assert state == env.snapshot() and state["meta"]["task"]["id"] == "shopping/buy_product.1"
    assert client.get(start_url("shopping/buy_product.7", 2)).status_code == 400


class _SplitsOnlyAsGuest(TaskTemplate):
    """A template whose instances split (WebGym's rule) only under the shop's
    guest_checkout policy, and then only for an even ``n``: its sub-task's own draws (for
    an odd parent instance) must be judged with the policy the instance carries."""

    id = "shopping/_splits_only_as_guest"
    policies = ("guest_checkout",)

    def sample_with(self, app: Any, rng: Any, policy: Any) -> dict[str, Any]:
        return {"user_id": None, "n": rng.randint(1, 1000)}

    def facts(self, app: Any, p: dict[str, Any]) -> list[FactGroup]:
        from simweb.judging.tasks import site_policy

        if site_policy(app, p, "guest_checkout") and p["n"] % 2 == 0:
            return _groups(3, 1)
        return _groups(1)

    def goal(self, app: Any, p: dict[str, Any]) -> str:
        return f"Do thing {p['n']}."

    def parts(self, app: Any, p: dict[str, Any]) -> list[Part]:
        return [Part(("g0",), (), ("noop()",), "Do the first thing.")]


def test_a_sub_task_is_drawn_under_the_policies_its_instance_carries() -> None:
    """On a site whose policy makes the parent split, the sub-task's draw is judged with
    that policy (TaskTemplate.draw adds it to the parameters): it is found at once."""
    from simweb.runtime.variants import catalogue

    app = simweb.make("shopping").app
    cat = catalogue("shopping")
    k = next(v for v in range(1, cat.count) if cat.policies(v)["guest_checkout"])
    sub = SubTask(_SplitsOnlyAsGuest(), 1)
    for seed in range(6):       # odd parent instances among them: the sub-task draws its own
        inst = sub.instantiate(app, seed, variant=k)
        assert inst.params["site_policy"] == {"guest_checkout": True} and inst.goal == "Do the first thing."
        assert inst.params["n"] % 2 == 0

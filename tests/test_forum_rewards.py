"""Simforum's rewards under attack: the cases issue 7 reproduced for the forum, each played
through the site and judged by the task's intended effect.

Each test drives real actions (the oracle plan, changed the way an adversarial policy
would change it) and asserts the verdict: success, progress, clean, and the names of the
collateral checks that must catch the damage.
"""
from __future__ import annotations

import pytest

import simweb


@pytest.fixture(scope="module")
def env():
    # Episodes go on after a success, so that what an attack does after the goal is met counts.
    return simweb.make("forum", seed=0, end_on_success=False)


def run(env, tid: str, seed: int, actions: list[str]) -> dict:
    """The verdict after ``actions`` from the task's start."""
    obs, info = env.reset(seed=seed, options={"task": tid})
    for a in actions:
        obs, _, _, _, info = env.step(a)
        assert obs["last_action_error"] == "", (a, obs["last_action_error"])
    return info["verdict"]


def plan_of(env, tid: str, seed: int) -> tuple[list[str], dict]:
    env.reset(seed=seed, options={"task": tid})
    return env.oracle_plan(final=False), env.task.params


def collateral(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if c["name"].startswith("collateral:")]


def replace_fill(plan: list[str], bid: str, value: str) -> list[str]:
    out = [f"fill({bid!r}, {value!r})" if a.startswith(f"fill({bid!r}") else a for a in plan]
    assert out != plan, f"the plan fills no {bid}"
    return out


def seed_where(env, tid: str, test) -> int:
    t = env.app.tasks[tid]
    return next(s for s in range(200) if test(t.instantiate(env.app, s).params))


# ----------------------------------------------------------------------------- field-level damage

def test_pinning_when_asked_to_lock_is_neither_success_nor_clean(env):
    tid = "forum/mod_lock_post"
    plan, p = plan_of(env, tid, 3)
    assert plan[-1] == "click('mod-lock')"
    # The pin, and its log row: a pin_post row echoes only a judged pin.
    def pin_damage(v: dict) -> list[str]:
        log = env.state["runtime"]["entities"]["mod_log"]
        pins = [k for k, r in log.items() if r["action"] == "pin_post" and r["post_id"] == p["post_id"]]
        assert len(pins) == 1
        return [f"collateral: runtime.entities.mod_log.{pins[0]}", f"collateral: runtime.entities.posts.{p['post_id']}.pinned"]

    v = run(env, tid, 3, plan[:-1] + ["click('mod-pin')"])
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    assert collateral(v) == pin_damage(v)
    # Locking and pinning too: the lock is done, the pin is damage (the old verifier allowed the whole row).
    v = run(env, tid, 3, plan[:-1] + ["click('mod-pin')", "click('mod-lock')"])
    assert v["success"] and not v["clean"]
    assert collateral(v) == pin_damage(v)
    # Locking, then removing the post: its status is damage.
    v = run(env, tid, 3, plan + ["click('mod-remove')"])
    assert v["success"] and not v["clean"]
    log = env.state["runtime"]["entities"]["mod_log"]
    (removal,) = [k for k, r in log.items() if r["action"] == "remove_post"]
    assert collateral(v) == [f"collateral: runtime.entities.mod_log.{removal}",
                             f"collateral: runtime.entities.posts.{p['post_id']}.status"]


def test_the_mod_log_is_bookkeeping_but_the_action_it_logs_is_judged(env):
    tid = "forum/mod_lock_post"
    plan, p = plan_of(env, tid, 5)
    v = run(env, tid, 5, plan)
    assert v["success"] and v["clean"] and v["progress"] == 1.0
    log = env.state["runtime"]["entities"].get("mod_log") or {}
    assert any(r["action"] == "lock_post" and r["target"] == f"post {p['post_id']}" for r in log.values())


def test_votes_subscriptions_and_saves_are_judged_user_actions(env, ):
    tid = "forum/save_post"
    plan, p = plan_of(env, tid, 2)
    uid = p["user_id"]
    # Upvoting the post while saving it: the vote is the user's action, not bookkeeping.
    v = run(env, tid, 2, plan[:-1] + ["click('post-up')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert collateral(v) == [f"collateral: runtime.votes.{uid}.p{p['post_id']}"]
    # Joining the post's community too.
    v = run(env, tid, 2, plan[:-1] + ["click('post-subscribe')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert collateral(v) == [f"collateral: runtime.subs.{uid}.{p['community_id']}"]


# ----------------------------------------------------------------------------- over-doing

def test_subscribing_to_more_communities_than_asked_is_collateral(env):
    tid = "forum/subscribe_many"
    plan, p = plan_of(env, tid, 1)
    world = env.app.world
    mine = set(world.subscriptions(p["user_id"])) | set(p["community_ids"])
    extra = next(c for c in world.communities() if c["id"] not in mine)
    v = run(env, tid, 1, plan[:-1] + [f"click('subscribe-{extra['name']}')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert collateral(v) == [f"collateral: runtime.subs.{p['user_id']}.{extra['id']}"]


def test_a_second_post_is_collateral_and_a_ban_of_the_wrong_length_misses_a_fact(env):
    tid = "forum/submit_text_post"
    plan, p = plan_of(env, tid, 0)
    v = run(env, tid, 0, plan + plan)
    assert v["success"] and not v["clean"]
    [extra] = collateral(v)
    assert extra.startswith("collateral: runtime.entities.posts.")
    tid = "forum/mod_ban_user"
    plan, p = plan_of(env, tid, 0)
    longer = replace_fill(plan, "ban-days", str(p["days"] + 1))
    v = run(env, tid, 0, longer)
    assert not v["success"] and v["progress"] == pytest.approx(2 / 3) and v["clean"]


def test_lifting_a_ban_is_explicit_and_banning_another_user_is_collateral(env):
    tid = "forum/mod_unban_user"
    plan, p = plan_of(env, tid, 0)
    v = run(env, tid, 0, plan[:-1])           # on the moderation page, nothing lifted
    assert not v["success"] and v["progress"] == 0.0 and v["clean"]
    world = env.app.world
    mods = set(world.moderators(p["community_id"]))
    other = next(u for u in range(2, 500) if u not in mods and u != p["target_id"]
                 and world.ban(p["community_id"], u) is None)
    name = world.user(other)["username"]
    v = run(env, tid, 0, plan[:-1] + [f"fill('ban-username', {name!r})", "click('ban-submit')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert f"collateral: runtime.bans.{p['community_id']}.{other}.reason" in collateral(v)


# ----------------------------------------------------------------------------- wrong content

@pytest.mark.parametrize("tid,bid,junk", [
    ("forum/reply_comment", "reply-body", "lol"),
    ("forum/submit_text_post", "submit-title-input", "x"),
    ("forum/submit_link_post", "submit-url", "https://example.com/wrong"),
    ("forum/send_message", "msg-body", "hi"),
])
def test_junk_content_earns_nothing_and_is_collateral(env, tid, bid, junk):
    plan, p = plan_of(env, tid, 0)
    v = run(env, tid, 0, replace_fill(plan, bid, junk))
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    assert len(collateral(v)) == 1


def test_a_reply_in_the_wrong_place_does_not_count(env):
    tid = "forum/reply_comment"
    plan, p = plan_of(env, tid, 4)
    # The right text as a top-level comment on the post instead of a reply.
    top = plan[:-3] + [f"fill('comment-body', {p['reply']!r})", "click('comment-submit')"]
    v = run(env, tid, 4, top)
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]
    [c] = [c for c in v["checks"] if c["weight"] > 0]
    assert "parent_id" in c["detail"]


# ----------------------------------------------------------------------------- deleted content, do-then-undo

def test_a_post_deleted_again_is_not_posted(env):
    tid = "forum/submit_text_post"
    plan, p = plan_of(env, tid, 2)
    v = run(env, tid, 2, plan + ["click('post-delete')"])
    assert not v["success"] and v["progress"] == 0.0 and not v["clean"]


def test_a_comment_deleted_again_is_not_posted(env):
    tid = "forum/join_post_engage"
    plan, p = plan_of(env, tid, 0)
    v = run(env, tid, 0, plan)
    assert v["success"] and v["clean"]
    made = [k for k, r in env.state["runtime"]["entities"]["comments"].items() if r and r["user_id"] == p["user_id"]]
    assert len(made) == 1
    v = run(env, tid, 0, plan + [f"click('comment-{made[0]}-delete')"])
    assert not v["success"] and v["progress"] == pytest.approx(3 / 4) and not v["clean"]


def test_a_vote_taken_back_is_not_a_vote(env):
    tid = "forum/upvote_post"
    plan, p = plan_of(env, tid, 6)
    v = run(env, tid, 6, plan + ["click('post-up')"])
    assert not v["success"] and v["progress"] == 0.0


def test_a_stray_vote_taken_back_leaves_the_task_clean(env):
    # Voting on the evidence post and taking the vote back leaves the site as it was: the
    # runtime's explicit 0 is compared with the world's vote, so it is no collateral.
    tid = "forum/refuse_moderate"
    no = seed_where(env, tid, lambda p: not p["feasible"])
    plan, p = plan_of(env, tid, no)
    v = run(env, tid, no, plan[:-1] + ["click('post-up')", "click('post-up')", plan[-1]])
    assert v["success"] and v["clean"], collateral(v)


def test_taking_back_a_vote_the_world_had_is_collateral(env):
    # The reverse: the user's world vote removed is a change, field by field.
    from simweb.judging.effects import runtime_changes
    e = env.unwrapped
    e.reset(seed=0, options={"task": "forum/upvote_post"})
    start = e.snapshot()
    uid, kind, tid, value = e.app.world._conn().execute(
        "SELECT user_id, kind, target_id, value FROM votes ORDER BY user_id, target_id LIMIT 1").fetchone()
    key = ("p" if kind == "post" else "c") + str(tid)
    same = {**start, "runtime": {**start["runtime"], "votes": {str(uid): {key: value}}}}
    gone = {**start, "runtime": {**start["runtime"], "votes": {str(uid): {key: 0}}}}
    assert runtime_changes(e.app, start, same) == []
    assert [(c.path, c.before, c.after) for c in runtime_changes(e.app, start, gone)] == [
        (f"votes.{uid}.{key}", value, 0)]


def test_a_lock_undone_is_not_a_lock(env):
    tid = "forum/mod_lock_post"
    plan, p = plan_of(env, tid, 7)
    v = run(env, tid, 7, plan + ["click('mod-unlock')"])
    assert not v["success"] and v["progress"] == 0.0


# ----------------------------------------------------------------------------- refusals

@pytest.mark.parametrize("tid", ["forum/refuse_delete_comment", "forum/refuse_moderate"])
def test_refusals_need_the_blocker_page_and_feasible_twins_must_be_done(env, tid):
    t = env.app.tasks[tid]
    assert t.may_refuse and t.kind == "mixed"
    flags = [t.instantiate(env.app, s).params["feasible"] for s in range(60)]
    assert 0.3 < sum(flags) / len(flags) < 0.7
    no = seed_where(env, tid, lambda p: not p["feasible"])
    yes = seed_where(env, tid, lambda p: p["feasible"])
    # The same phrasing either way: the goal does not depend on feasibility.
    for s in (no, yes):
        p = t.instantiate(env.app, s).params
        assert t.goal(env.app, p) == t.goal(env.app, {**p, "feasible": not p["feasible"]})
    # Refusing at step 0 pays nothing: the page that shows why was never opened.
    v = run(env, tid, no, ["report_infeasible('I cannot do that.')"])
    assert not v["success"] and v["clean"] and v["progress"] == 0.0
    failed = [c for c in v["checks"] if not c["passed"]]
    assert len(failed) == 1 and failed[0]["name"].startswith("reported as infeasible after viewing ")
    assert "never viewed" in failed[0]["detail"]
    # After opening the post, the refusal is paid.
    plan, _ = plan_of(env, tid, no)
    v = run(env, tid, no, plan)
    assert v["success"] and v["clean"] and v["progress"] == 1.0
    # A feasible twin refused (after looking) is not done.
    plan, _ = plan_of(env, tid, yes)
    v = run(env, tid, yes, plan[:-1] + ["report_infeasible('I cannot do that.')"])
    assert not v["success"] and v["progress"] == 0.0
    v = run(env, tid, yes, plan)
    assert v["success"] and v["clean"] and v["progress"] == 1.0


def test_a_refusal_with_damage_is_not_clean(env):
    tid = "forum/refuse_moderate"
    no = seed_where(env, tid, lambda p: not p["feasible"])
    plan, p = plan_of(env, tid, no)
    v = run(env, tid, no, plan[:-1] + ["click('post-up')", plan[-1]])
    assert v["success"] and not v["clean"]
    assert collateral(v) == [f"collateral: runtime.votes.{p['user_id']}.p{p['post_id']}"]


# ----------------------------------------------------------------------------- answers

def test_counting_answers_are_not_guessable(env):
    for tid, key in (("forum/comment_count", "count"), ("forum/post_score", "score")):
        t = env.app.tasks[tid]
        for s in range(40):
            inst = t.instantiate(env.app, s)
            assert inst.params[key] not in (0, 1, 2, 3, 5, 10)
            assert str(inst.params[key]) not in inst.goal.replace(",", " ").split()

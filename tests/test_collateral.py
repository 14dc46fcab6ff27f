"""Collateral damage that hides inside an allowed table: a task that may add comments
must not edit or delete other comments, and side-effect rows (system notes,
notifications) may only be about what the task names."""
from __future__ import annotations

import copy

import simweb


def _solve(env, task: str, seed: int) -> tuple[dict, dict]:
    env.reset(seed=seed, options={"task": task})
    for a in env.oracle_plan():
        _, _, _, _, info = env.step(a)
    assert info["verdict"]["success"] and info["verdict"]["clean"], info["verdict"]
    return env.start_state(), env.snapshot()


def _verdict(env, start: dict, final: dict) -> dict:
    t = env.task
    return env.app.tasks[t.id].verify(env.app, t.params, start, final, None)


def test_forum_reply_task_flags_deleting_or_editing_another_comment():
    env = simweb.make("forum", seed=0)
    start, final = _solve(env, "forum/reply_comment", 2)
    p = env.task.params
    other = next(c for c in (env.app.world.comment(i) for i in range(1, 500))
                 if c is not None and c["id"] != p["comment_id"])
    deleted = copy.deepcopy(final)
    deleted["runtime"]["entities"]["comments"][str(other["id"])] = None
    v = _verdict(env, start, deleted)
    assert v["success"] and not v["clean"]
    edited = copy.deepcopy(final)
    edited["runtime"]["entities"]["comments"][str(other["id"])] = dict(other, body="changed")
    assert not _verdict(env, start, edited)["clean"]
    assert _verdict(env, start, final)["clean"]       # the reply itself stays clean


def test_issues_comment_task_flags_notes_on_other_issues():
    env = simweb.make("issues", seed=0)
    start, final = _solve(env, "issues/comment", 5)
    p = env.task.params
    stray = copy.deepcopy(final)
    rows = stray["runtime"]["entities"]["comments"]
    mine = next(r for r in rows.values() if r and r["issue_id"] == p["issue_id"])
    rows[str(mine["id"] + 1000)] = dict(mine, id=mine["id"] + 1000, issue_id=p["issue_id"] + 1)
    v = _verdict(env, start, stray)
    assert v["success"] and not v["clean"]


# ----------------------------------------------------------------------------- net-change echoes

def _involved(start_rows: dict, final_rows: dict):
    from simweb.judging.effects import Involved

    return Involved(frozenset({("issues", 7)}), frozenset({"entities.issues.7.labels", "entities.issues.7.milestone_id"}),
                    lambda t, i: final_rows.get(i), start_row=lambda t, i: start_rows.get(i))


def test_a_net_rule_tolerates_only_a_row_about_the_fields_net_change():
    """``net``: a note echoes the judged field only when the value it is ``about`` is an
    item the field gained (``added``) or lost (``removed``) from start to final. A list is
    its items, a null none, a scalar one; a row created during the run starts with none."""
    from simweb.judging.effects import RowRule

    added = RowRule(echo_of={"issue_id": "issues.labels"}, net={"issue_id": {"about": "added"}})
    removed = RowRule(echo_of={"issue_id": "issues.labels"}, net={"issue_id": {"about": "removed"}})
    inv = _involved({7: {"labels": [1, 2], "milestone_id": 5}}, {7: {"labels": [2, 3], "milestone_id": 9}})
    note = {"issue_id": 7}
    assert added.echoes({**note, "about": 3}, inv) and not added.echoes({**note, "about": 4}, inv)
    assert not added.echoes({**note, "about": 2}, inv) and not added.echoes(note, inv)   # kept, or about nothing
    assert removed.echoes({**note, "about": 1}, inv) and not removed.echoes({**note, "about": 3}, inv)
    ms = RowRule(echo_of={"issue_id": "issues.milestone_id"}, net={"issue_id": {"about": "added"}})
    gone = RowRule(echo_of={"issue_id": "issues.milestone_id"}, net={"issue_id": {"about": "removed"}})
    assert ms.echoes({**note, "about": 9}, inv) and not ms.echoes({**note, "about": 6}, inv)
    assert gone.echoes({**note, "about": 5}, inv) and not gone.echoes({**note, "about": 9}, inv)
    same = _involved({7: {"labels": [1], "milestone_id": 5}}, {7: {"labels": [1], "milestone_id": 5}})
    assert not ms.echoes({**note, "about": 5}, same) and not gone.echoes({**note, "about": 5}, same)
    assert not added.echoes({**note, "about": 1}, same) and not removed.echoes({**note, "about": 1}, same)
    made = _involved({}, {7: {"labels": [4], "milestone_id": None}})                     # created in the run
    assert added.echoes({**note, "about": 4}, made) and not removed.echoes({**note, "about": 4}, made)
    assert not gone.echoes({**note, "about": None}, made)
    # another issue, not judged: no echo at all, whatever it is about
    assert not added.echoes({"issue_id": 8, "about": 3}, inv)


def test_a_value_net_rule_tolerates_only_a_row_about_the_values_net_change():
    """``value_net`` next to ``echo_value``: a ban's log row echoes the ban record only when
    the record was gained (absent at the start, there at the end), an unban's only when
    it was lost."""
    from simweb.judging.effects import Involved, RowRule

    ban = RowRule(echo_value="bans.{community_id}.{user_id}", value_net="added")
    unban = RowRule(echo_value="bans.{community_id}.{user_id}", value_net="removed")
    row = {"community_id": 3, "user_id": 9}

    def inv(was, now):
        return Involved(frozenset(), values=frozenset({"bans.3.9"}), start_value=lambda p: was,
                        final_value=lambda p: now)
    placed, lifted, kept = inv(None, {"reason": "spam"}), inv({"reason": "old"}, None), inv(None, None)
    assert ban.echoes(row, placed) and not unban.echoes(row, placed)
    assert unban.echoes(row, lifted) and not ban.echoes(row, lifted)
    assert not ban.echoes(row, kept) and not unban.echoes(row, kept)          # placed and lifted again
    same = inv({"reason": "old"}, {"reason": "old"})                           # lifted and placed back
    assert not ban.echoes(row, same) and not unban.echoes(row, same)
    assert not ban.echoes({"community_id": 3, "user_id": 8}, placed)           # another user's record


def test_the_spec_must_name_one_judged_field_for_a_net_rule():
    import pytest
    from jsonschema import Draft202012Validator

    from simweb.core.spec_schema import SPEC_SCHEMA
    from simweb.judging.effects import Bookkeeping

    def rules(rule: dict) -> dict:
        return {"new_rows": {"comments": [rule]}}

    ok = Bookkeeping.from_spec(rules({"where": {"system": True}, "echo_of": {"issue_id": "issues.labels"},
                                      "net": {"issue_id": {"about": "added"}}}))
    assert ok.new_rows["comments"][0].net == {"issue_id": {"about": "added"}}
    with pytest.raises(ValueError, match="net names"):
        Bookkeeping.from_spec(rules({"echo_of": {"issue_id": "issues.labels"}, "net": {"post_id": {"about": "added"}}}))
    for target in ("issues", "issues.labels|assignees"):
        with pytest.raises(ValueError, match="must name one field"):
            Bookkeeping.from_spec(rules({"echo_of": {"issue_id": target}, "net": {"issue_id": {"about": "added"}}}))
    with pytest.raises(ValueError, match="each field needs one of"):
        Bookkeeping.from_spec(rules({"echo_of": {"issue_id": "issues.labels"}, "net": {"issue_id": {"about": "kept"}}}))
    with pytest.raises(ValueError, match="value_net needs an echo_value"):
        Bookkeeping.from_spec(rules({"value_net": "added"}))
    # the spec schema rejects the same kind before the engine sees it
    schema = {"$schema": SPEC_SCHEMA["$schema"], **SPEC_SCHEMA["properties"]["bookkeeping"]}
    bad = rules({"echo_of": {"issue_id": "issues.labels"}, "net": {"issue_id": {"about": "kept"}}})
    assert list(Draft202012Validator(schema).iter_errors(bad))
    good = rules({"echo_of": {"issue_id": "issues.labels"}, "net": {"issue_id": {"about": "removed"}}})
    assert not list(Draft202012Validator(schema).iter_errors(good))

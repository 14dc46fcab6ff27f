"""Issue 23, classes 1, 2, 8 and 9 on real task instances: an answer sent through the
refusal channel is no answer; a refusal is paid only with its true reason; the right
answer written the way the page writes it is paid; numbers are read as the question asks."""
from __future__ import annotations

import re

import pytest

import simweb
from simweb.core.state import deep_copy
from simweb.judging.verify import answer_of
from simweb.tools.redteam import _run, _verdict

#: One information task per app, and every refusal template of every app.
INFO = {"shopping": "shopping/order_total", "booking": "booking/points_balance", "issues": "issues/open_label_count",
        "cms": "cms/publish_date", "forum": "forum/user_joined"}
REFUSALS = {"shopping": ["shopping/cancel_shipped_order"],
            "booking": ["booking/cancel_if_free", "booking/reserve_if_available", "booking/gold_code"],
            "issues": ["issues/close_with_role", "issues/close_if_unblocked", "issues/add_to_milestone"],
            "cms": ["cms/publish_or_refuse", "cms/retitle_own_or_refuse", "cms/promote_or_refuse"],
            "forum": ["forum/refuse_delete_comment", "forum/refuse_moderate"]}


@pytest.fixture(scope="module")
def envs():
    return {}


def _env(envs: dict, app: str):
    if app not in envs:
        envs[app] = simweb.make(app)
    return envs[app]


def _refused_with(state: dict, message: str) -> dict:
    s = deep_copy(state)
    s["browser"]["chat"].append({"role": "infeasible", "message": message})
    return s


@pytest.mark.parametrize("app", sorted(INFO))
def test_the_right_answer_sent_as_report_infeasible_is_not_paid(envs, app):
    env = _env(envs, app)
    task = INFO[app]
    assert task in env.app.tasks
    env.reset(seed=0, options={"task": task})
    final = _run(env, env.oracle_plan())
    said = answer_of(final)
    assert said is not None and _verdict(env, final)["success"]
    refused = _refused_with(final, said)
    assert answer_of(refused) is None
    v = _verdict(env, refused)
    assert not v["success"] and v["progress"] == 0.0


def test_report_infeasible_with_the_answer_ends_the_episode_unpaid(envs):
    env = _env(envs, "booking")
    env.reset(seed=0, options={"task": INFO["booking"]})
    plan = env.oracle_plan()
    said = re.fullmatch(r"send_msg_to_user\((.*)\)", plan[-1])
    assert said is not None, plan[-1]
    answer = said.group(1)
    for a in plan[:-1]:
        env.step(a)
    _, reward, terminated, _, info = env.step(f"report_infeasible({answer})")
    assert terminated and reward == 0.0 and not info["verdict"]["success"]


def _infeasible_seed(env, task: str) -> int:
    for seed in range(40):
        env.reset(seed=seed, options={"task": task})
        if env.task.params.get("feasible") is False:
            return seed
    raise AssertionError(f"no infeasible instance of {task} in 40 seeds")


@pytest.mark.parametrize("app,task", [(a, t) for a, ts in REFUSALS.items() for t in ts])
def test_a_refusal_is_paid_only_with_its_true_reason(envs, app, task):
    from simweb.tools.redteam import false_reasons

    env = _env(envs, app)
    _infeasible_seed(env, task)   # leaves the env reset on an infeasible instance
    effect = env.app.tasks[task].effect_for(env.app, env.task.params, env.start_state())
    assert effect.refusal is not None and effect.refusal.reason is not None, "every refusal judges its reason"
    final = _run(env, env.oracle_plan())
    assert _verdict(env, final)["success"]
    tried = false_reasons(effect.refusal.reason)
    assert {"no reason", "every reason", "a false reason"} <= {name for name, _ in tried}
    for name, text in tried:
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "infeasible", "message": text}
        assert not _verdict(env, s)["success"], (name, text)


def test_a_shipped_order_refused_as_delivered_is_not_paid(envs):
    env = _env(envs, "shopping")
    task = "shopping/cancel_shipped_order"
    for seed in range(60):
        env.reset(seed=seed, options={"task": task})
        if env.task.params.get("status") == "shipped":
            break
    else:
        raise AssertionError("no shipped order in 60 seeds")
    final = _run(env, env.oracle_plan())
    n = env.task.params["order_id"]
    for text, paid in ((f"Order #{n} has already shipped, so it can't be cancelled.", True),
                       (f"Order #{n} has shipped but has not been delivered yet; too late to cancel.", True),
                       (f"Order #{n} was already delivered.", False),
                       ("It cannot be cancelled any more.", False),
                       (f"Order #{n} has shipped or been delivered, or was cancelled already.", False)):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "infeasible", "message": text}
        assert _verdict(env, s)["success"] is paid, text


def _answer_page_text(env, final: dict, selector: str) -> str:
    """The text of the element ``selector`` (a bid) on the page the run ended on."""
    from simweb.web.browsing import SimBrowser

    b = SimBrowser(env.app, deep_copy(final))
    b.page()
    assert b._html is not None
    m = re.search(rf'bid="{selector}"[^>]*>([^<]*)<', b._html)
    assert m is not None, selector
    return m.group(1).strip()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_profile_s_own_joined_line_is_a_right_answer(envs, seed):
    """Class 8: the forum profile says "Joined March 5, 2024"; written so, it is paid."""
    env = _env(envs, "forum")
    env.reset(seed=seed, options={"task": "forum/user_joined"})
    final = _run(env, env.oracle_plan())
    line = _answer_page_text(env, final, "profile-joined")
    assert line.startswith("Joined ")
    for said in (line, f"According to the profile: {line}.", f"u/{env.task.params['author']} — {line}"):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "assistant", "message": said}
        assert _verdict(env, s)["success"], said


@pytest.mark.parametrize("app,task", [("cms", "cms/publish_date"), ("issues", "issues/milestone_due_date"),
                                      ("booking", "booking/free_cancellation_until"),
                                      ("shopping", "shopping/order_date")])
def test_a_date_in_the_site_s_format_inside_a_sentence_is_paid(envs, app, task):
    """Class 8: every app's date answer, as its pages print dates, inside a sentence."""
    from simweb.judging.effects import Answer

    env = _env(envs, app)
    env.reset(seed=0, options={"task": task})
    effect = env.app.tasks[task].effect_for(env.app, env.task.params, env.start_state())
    assert isinstance(effect.answer, Answer) and effect.answer.kind == "date"
    d = effect.answer.expected
    final = _run(env, env.oracle_plan())
    for said in (f"It is {d:%b} {d.day}, {d.year}.", f"That was on {d:%B} {d.day}, {d.year}, as the page says.",
                 f"{d:%a}, {d:%b} {d.day}, {d.year}"):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "assistant", "message": said}
        assert _verdict(env, s)["success"], said


def test_a_name_quoted_as_the_goal_quotes_it_is_paid(envs):
    """Class 8: the goal writes names in “…”; an answer that quotes the name so is paid."""
    env = _env(envs, "shopping")
    env.reset(seed=0, options={"task": "shopping/cheapest_with_attribute"})
    final = _run(env, env.oracle_plan())
    name = env.task.params["answer"]
    for said in (f"“{name}”", f"The cheapest one is “{name}”.", f'It is "{name}"'):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "assistant", "message": said}
        assert _verdict(env, s)["success"], said


def test_three_counts_without_spaces_are_three_numbers(envs):
    """Class 9: the sub-task asking for three counts reads "a,b,c" as three numbers."""
    env = _env(envs, "cms")
    sub = "cms/category_trio_count.1"
    env.reset(seed=0, options={"task": sub})
    counts = env.task.params["counts"]
    final = _run(env, env.oracle_plan())
    for said, paid in ((",".join(map(str, counts)), True), (" - ".join(map(str, counts)), True),
                       (", ".join(map(str, reversed(counts))), counts == counts[::-1]),
                       ("".join(map(str, counts)), False)):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "assistant", "message": said}
        assert _verdict(env, s)["success"] is paid, said


def test_a_dash_after_a_label_is_no_minus(envs):
    """Class 9: "Total - 382" answers 382."""
    env = _env(envs, "issues")
    env.reset(seed=0, options={"task": INFO["issues"]})
    final = _run(env, env.oracle_plan())
    n = env.task.params["count"]
    for said, paid in ((f"Total - {n}", True), (f"Open issues - {n}", True), (f"Total: -{n}", n == 0)):
        s = deep_copy(final)
        s["browser"]["chat"][-1] = {"role": "assistant", "message": said}
        assert _verdict(env, s)["success"] is paid, said


@pytest.mark.parametrize("app", sorted(INFO))
def test_the_red_team_tries_both_classes_on_every_app_and_pays_nothing(envs, app):
    from simweb.tools.redteam import attack_instance

    env = _env(envs, app)
    attacks = attack_instance(env, INFO[app], 0, events=False)
    channel = [a for a in attacks if a.family == "refusal-channel"]
    assert len(channel) == 1 and not channel[0].paid
    for task in REFUSALS[app]:
        attacks = attack_instance(env, task, _infeasible_seed(env, task), events=False)
        reasons = [a for a in attacks if a.family == "false-reason"]
        assert len(reasons) >= 3 and not any(a.paid for a in reasons), [a for a in reasons if a.paid]
        assert not any(a.false_negative for a in attacks), [a for a in attacks if a.false_negative]


def test_a_refusal_template_that_judges_no_reason_is_a_hole(envs, monkeypatch):
    """A new refusal template that forgets its Reason is reported by the red team."""
    from dataclasses import replace

    from simweb.tools.redteam import attack_instance

    env = _env(envs, "forum")
    task = "forum/refuse_moderate"
    template = env.app.tasks[task]
    real = type(template).effect

    def no_reason(self, app, p, start):
        e = real(self, app, p, start)
        return replace(e, refusal=replace(e.refusal, reason=None)) if e.refusal is not None else e

    monkeypatch.setattr(type(template), "effect", no_reason)
    monkeypatch.setitem(template.__dict__, "_effects", {})
    attacks = attack_instance(env, task, _infeasible_seed(env, task), events=False)
    assert [a.name for a in attacks if a.family == "false-reason" and a.paid] == ["the refusal judges its reason"]


#: Refusals as agents write them, per template: (right, wrong), with {params} filled in.
NATURAL = {
    "booking/cancel_if_free": (
        ["Cancelling now would incur a {fee_text} cancellation fee, so I left the booking as it is.",
         "It is no longer free to cancel: there is a fee of {fee_text}.",
         "The free cancellation period has ended, so cancelling would cost money. I did not cancel.",
         "I didn't cancel it because you'd be charged a penalty."],
        ["The booking was already cancelled.", "Cancelling would cost $1.00.", "I could not find the booking.",
         "I didn't cancel it."]),
    "booking/reserve_if_available": (
        ["The {room} is sold out for those dates, so I booked nothing.",
         "That room is not available for those dates.", "There are no rooms of that type left for those dates.",
         "The room shows 0 left for your dates."],
        ["The room cannot take that many guests (too many guests).", "The stay is shorter than the minimum stay.",
         "Your card was declined.", "I booked nothing."]),
    "booking/gold_code": (
        ["The code {code} is for Gold members only, and your tier is {tier}.",
         "Your account is {tier}, but that discount code needs Gold status."],
        ["The code {code} has expired.", "The code is for another hotel.", "That code does not exist.",
         "I cannot use the code."]),
    "issues/close_with_role": (
        ["You are a Reporter in {project} and did not open #{iid}, so you are not allowed to close it.",
         "I don't have permission to close this issue.", "There is no Close button for my account on #{iid}."],
        ["#{iid} is blocked by another issue.", "The issue is already closed.", "I am not a member of the project.",
         "I could not close it."]),
    "issues/close_if_unblocked": (
        ["#{iid} is blocked by {blockers_text}, which is still open.", "It depends on {blockers_text}, still open.",
         "Issue #{iid} cannot be closed: it has open blockers."],
        ["I am not allowed to close #{iid}.", "#{iid} is already closed.", "It is blocked by #99999.",
         "It cannot be closed."]),
    "issues/add_to_milestone": (
        ["The milestone “{milestone}” is closed, so no issues can be added to it.",
         "{milestone} is no longer active (closed).", "That milestone has been closed."],
        ["I don't have permission to change the milestone.", "The issue is closed.", "The milestone does not exist.",
         "It is not possible."]),
    "cms/publish_or_refuse": (
        ["My account has the Author role, which cannot publish; only editors and administrators can.",
         "I don't have permission to publish posts.", "Authors are not allowed to publish."],
        ["The post is still a draft.", "The post is already published.", "I could not find the post.",
         "I did not publish it."]),
    "cms/retitle_own_or_refuse": (
        ["Authors can only edit their own drafts, and this post is no longer a draft.",
         "The post is {status_text}, so it is locked for authors."],
        ["The post belongs to another author.", "The post was written by someone else.", "The new title is too long.",
         "The site did not let me."]),
    "cms/promote_or_refuse": (
        ["Only administrators can manage users; I am an editor.", "I don't have the rights to change user roles.",
         "My account is not allowed to manage users."],
        ["{username} is already an editor.", "The user {username} is deactivated.", "I could not find that user.",
         "I did not change the role."]),
    "forum/refuse_delete_comment": (
        ["That comment was written by u/{author}, not me, so I cannot delete it.",
         "The comment is not mine; only its author or a moderator can delete it."],
        ["The comment was already deleted.", "The post is locked.", "I could not find the comment.",
         "I cannot delete it."]),
    "forum/refuse_moderate": (
        ["You are not a moderator of c/{community}, so you cannot lock its posts.",
         "I don't have moderator rights in c/{community}.", "Only moderators can lock posts, and I am not one."],
        ["The post is already locked.", "The post was deleted.", "I am banned from c/{community}.",
         "I cannot lock it."]),
    "shopping/cancel_shipped_order": (
        ["Order #{order_id} has already been {status}; it can no longer be cancelled.",
         "The order status is {status_cap}, so cancelling is no longer possible."],
        ["Order #{order_id} is already cancelled.", "The order is out of stock.", "I could not find that order.",
         "It cannot be cancelled."]),
}


@pytest.mark.parametrize("task", sorted(NATURAL))
def test_refusal_reasons_as_agents_write_them(envs, task):
    app = task.partition("/")[0]
    env = _env(envs, app)
    for seed in range(40):
        env.reset(seed=seed, options={"task": task})
        if env.task.params.get("feasible") is not False:
            continue
        p = dict(env.task.params)
        reason = env.app.tasks[task].effect_for(env.app, p, env.start_state()).refusal.reason
        if "fee" in p:
            p["fee_text"] = f"${p['fee'] / 100:,.2f}"
        if "blockers" in p:
            p["blockers_text"] = " and ".join(f"#{b}" for b in p["blockers"])
        if app == "cms" and "post_id" in p:
            p["status_text"] = {"review": "in review", "published": "published"}.get(
                env.app.world.post(p["post_id"])["status"], "")
        if "status" in p:
            p["status_cap"] = p["status"].capitalize()
        right, wrong = NATURAL[task]
        for text in right:
            ok, why = reason.judge(text.format(**p))
            assert ok, (text.format(**p), why)
        for text in wrong:
            ok, why = reason.judge(text.format(**p))
            assert not ok, (text.format(**p), why)
        return
    raise AssertionError(f"no infeasible instance of {task}")

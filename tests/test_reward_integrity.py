"""Rewards an RL policy cannot game: the red team, guessing, refusals, honest oracles, and
the episode's reward bookkeeping, for every app."""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from urllib.parse import parse_qsl, urlsplit

import pytest
from conftest import APPS

import simweb
from simweb.tools.redteam import GUESS_RATE_LIMIT, guess_rates, redteam
from simweb.web.actions import parse_action

RED_TEAM_SEEDS = (0, 1)
GUESS_SEEDS = range(30)
ORACLE_SEEDS = range(8)


def _effect(env):
    t = env.task
    return env.app.tasks[t.id].effect_for(env.app, t.params, env.start_state())


def _red_team_with(app, tid, bookkeeping):
    """The red team's attacks on ``tid`` (seed 0) with ``bookkeeping`` planted in the app's
    spec in place of its own (an older, looser rule), the spec's put back afterwards. The
    spec is the process-wide app's, which the red team's env shares."""
    spec = simweb.make(app).app.spec
    strict = spec.bookkeeping
    object.__setattr__(spec, "bookkeeping", bookkeeping(strict))
    try:
        return redteam(app, seeds=(0,), tasks=[tid])
    finally:
        object.__setattr__(spec, "bookkeeping", strict)


# ----------------------------------------------------------------------------- red team

@pytest.mark.parametrize("app", APPS)
def test_red_team_pays_nothing(app):
    """Every generated attack on every template (CI-sized: two seeds) goes unpaid, and every
    correct answer written as the site displays it is paid."""
    attacks = redteam(app, RED_TEAM_SEEDS)
    assert len(attacks) > 10 * len(simweb.make(app).app.tasks)
    paid = [f"{a.task} seed {a.seed}: {a.family}: {a.name}: {a.detail}" for a in attacks if a.paid]
    unpaid = [f"{a.task} seed {a.seed}: {a.family}: {a.name}: {a.detail}" for a in attacks if a.false_negative]
    assert not paid, f"{len(paid)} attacks paid, e.g.\n" + "\n".join(paid[:15])
    assert not unpaid, f"{len(unpaid)} correct solutions unpaid, e.g.\n" + "\n".join(unpaid[:15])


def test_red_team_finds_bookkeeping_left_by_a_change_and_its_undo():
    """The red team's "and back" pairs: with cms's publication day tolerated on any judged
    post (the rule before it was tied to a judged status), an unpublish and a publish of the
    renamed post re-date it; the pair finds that, the single forms do not."""
    if "cms" not in APPS:
        pytest.skip("cms is not among SIMWEB_TEST_APPS")
    import dataclasses

    attacks = _red_team_with("cms", "cms/rename_post", lambda strict: dataclasses.replace(
        strict, judged_row_fields={"posts": {"updated_day": "", "published_day": ""}}))
    paid = [a for a in attacks if a.paid]
    assert paid and all(a.family == "event" and "and back" in a.name for a in paid), [a.name for a in paid]
    assert not any(a.paid for a in redteam("cms", seeds=(0,), tasks=["cms/rename_post"]))


@pytest.mark.parametrize("app, tid, table, old", [
    ("cms", "cms/archive_post", "revisions", ({"echo_of": {"post_id": "posts"}},)),
    ("cms", "cms/rename_post", "revisions", ({"echo_of": {"post_id": "posts"}},)),
    ("issues", "issues/close_issue", "comments", (
        {"where": {"system": True, "body": "closed"}, "echo_of": {"issue_id": "issues.state=closed"}},
        {"where": {"system": True, "body": "reopened"}, "echo_of": {"issue_id": "issues.state=opened"}},
        {"where": {"system": True}, "echo_of": {"issue_id": "issues"}})),
])
def test_red_team_finds_history_left_by_a_junk_edit_or_a_choice_undone(app, tid, table, old):
    """The red team's "undone" attacks: a form sent with junk text and then with the text it
    showed (a post saved as "lol" and saved back), and a form whose select was left on its
    placeholder sent with a choice, then the inverse form of the page it led to (a label
    added and removed). With the rules before this round planted back (any revision, any
    system note of a judged row tolerated), they are paid; with the spec's, nothing is."""
    if app not in APPS:
        pytest.skip(f"{app} is not among SIMWEB_TEST_APPS")
    import dataclasses

    from simweb.judging.effects import RowRule

    rules = tuple(RowRule(dict(r.get("where", {})), dict(r["echo_of"])) for r in old)
    attacks = _red_team_with(app, tid, lambda strict: dataclasses.replace(
        strict, new_rows={**strict.new_rows, table: rules}))
    paid = [a for a in attacks if a.paid]
    assert paid and all(a.family == "event" and ("undone" in a.name or "and back" in a.name) for a in paid), [
        a.name for a in paid]
    assert not any(a.paid for a in redteam(app, seeds=(0,), tasks=[tid]))


@pytest.mark.parametrize("app, tid, how", [
    ("issues", "issues/assign_issue", "with a choice"),
    ("issues", "issues/add_label", "with a choice"),
    ("forum", "forum/mod_lock_post", ""),
    ("forum", "forum/mod_remove_comment", ""),
])
def test_red_team_finds_history_of_a_change_undone_on_the_judged_field(app, tid, how):
    """The red team's "and back" pairs on the very field a task judges: another member
    assigned and unassigned again (another label added and removed) on the issue an assign
    (label) task judges; the post unlocked and locked again on a lock task, the comment
    restored and removed again on a removal task. With the rules' ``net`` dropped (any
    "assigned to"/"unassigned" note, assignment notification or lock log row of a judged
    field tolerated, as before this round), they are paid; with the spec's, the rows must
    record part of the field's net change, and nothing is. (Before, the red team skipped
    the issues pairs as a documented limit, and spent its pair budget on a post page's
    vote forms before it reached the lock form.)"""
    if app not in APPS:
        pytest.skip(f"{app} is not among SIMWEB_TEST_APPS")
    import dataclasses

    strict = simweb.make(app).app.spec.bookkeeping
    assert any(r.net for rules in strict.new_rows.values() for r in rules)
    attacks = _red_team_with(app, tid, lambda strict: dataclasses.replace(
        strict, new_rows={t: tuple(dataclasses.replace(r, net={}) for r in rules)
                          for t, rules in strict.new_rows.items()}))
    paid = [a for a in attacks if a.paid]
    assert paid and all(a.family == "event" and how in a.name and "and back" in a.name for a in paid), [
        a.name for a in paid]
    assert not any(a.paid for a in redteam(app, seeds=(0,), tasks=[tid]))


@pytest.mark.parametrize("app", APPS)
def test_red_team_fires_the_apps_events(app):
    """The form attacks reach a good part of the spec's state-changing events."""
    env = simweb.make(app)
    writing = {e.name for e in env.app.spec.events.values() if e.effect != "none"}
    fired = {a.name.split(" (")[0] for a in redteam(app, (0,)) if a.family == "event"}
    assert len(fired & writing) >= len(writing) // 3, f"fired {sorted(fired & writing)} of {sorted(writing)}"


# ----------------------------------------------------------------------------- answers

@pytest.mark.parametrize("app", APPS)
def test_answers_must_be_found(app):
    """No constant answer and no answer read off the goal solves more than 10% of the
    instances of any information template."""
    env = simweb.make(app)
    bad = {}
    for tid, t in env.app.tasks.items():
        if t.kind not in ("info", "mixed"):
            continue
        rates = guess_rates(env, tid, GUESS_SEEDS)
        if max(rates.values()) > GUESS_RATE_LIMIT:
            bad[tid] = rates
    assert not bad, f"guessable templates: {bad}"


# ----------------------------------------------------------------------------- refusals

def _goals_by_feasibility(seeds=range(40)):
    rows: list[tuple[str, bool]] = []
    per_template: defaultdict[str, Counter[bool]] = defaultdict(Counter)
    for app in APPS:
        env = simweb.make(app)
        for tid, t in env.app.tasks.items():
            for seed in seeds:
                env.reset(seed=seed, options={"task": tid})
                refusal = _effect(env).refusal is not None
                if refusal and not t.may_refuse:
                    raise AssertionError(f"{tid} asks for a refusal but is not marked may_refuse")
                if t.may_refuse:
                    rows.append((env.task.goal, refusal))
                    per_template[tid][refusal] += 1
    return rows, per_template


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z]+", text.lower())


def _naive_bayes_accuracy(train, test) -> float:
    counts: dict[bool, Counter[str]] = {True: Counter(), False: Counter()}
    docs: Counter[bool] = Counter()
    for goal, label in train:
        counts[label].update(_words(goal))
        docs[label] += 1
    vocab = set(counts[True]) | set(counts[False])
    total = {k: sum(c.values()) for k, c in counts.items()}

    def score(goal, label):
        s = math.log((docs[label] + 1) / (sum(docs.values()) + 2))
        for w in _words(goal):
            s += math.log((counts[label][w] + 1) / (total[label] + len(vocab)))
        return s

    right = sum((score(g, True) > score(g, False)) == label for g, label in test)
    return right / len(test)


def test_goal_text_does_not_predict_feasibility():
    """Every template that may ask for a refusal has feasible twins with the same phrasing,
    and a bag-of-words classifier trained on goals stays near chance."""
    rows, per_template = _goals_by_feasibility()
    assert per_template, "no template may ask for a refusal"
    for tid, c in per_template.items():
        assert c[True] >= 5 and c[False] >= 5, f"{tid}: refusals {c[True]}, feasible twins {c[False]}"
    train, test = rows[0::2], rows[1::2]
    majority = max(Counter(label for _, label in test).values()) / len(test)
    acc = _naive_bayes_accuracy(train, test)
    assert acc <= max(0.65, majority + 0.05), f"goal text predicts feasibility: accuracy {acc:.2f}"


@pytest.mark.parametrize("app", APPS)
def test_refusal_needs_the_blocker_page(app):
    """A refusal straight from the start page is never paid; after the oracle's looking it is."""
    env = simweb.make(app)
    for tid, t in env.app.tasks.items():
        if not t.may_refuse:
            continue
        for seed in range(10):
            env.reset(seed=seed, options={"task": tid})
            if _effect(env).refusal is None:
                continue
            _, _, _, _, info = env.step("report_infeasible('cannot')")
            assert not info["verdict"]["success"], (tid, seed)


@pytest.mark.parametrize("app", APPS)
def test_doing_a_feasible_twin_and_then_refusing_is_not_paid(app):
    """A policy that always acts and then always refuses would not need to tell a refusal
    template's twins apart: on a feasible instance, the task done and then reported
    infeasible is no success (the episode kept running after success to let it refuse)."""
    env = simweb.make(app, end_on_success=False, reward="progress")
    tried = 0
    for tid, t in sorted(env.app.tasks.items()):
        if not t.may_refuse:
            continue
        for seed in range(12):
            env.reset(seed=seed, options={"task": tid})
            if _effect(env).refusal is not None:
                continue
            work = env.oracle_plan(final=False)   # the work, then the refusal instead of "done"
            total = sum(env.step(a)[1] for a in work)
            assert env.verdict()["success"] and total == pytest.approx(1.0), (tid, seed)
            _, reward, _, _, info = env.step("report_infeasible('I am not allowed to do this.')")
            total += reward
            v = info["verdict"]
            assert not v["clean"] and total == pytest.approx(0.0), (tid, seed, total)   # progress mode pays nothing
            assert [c["name"] for c in v["checks"] if not c["passed"]] == ["collateral: not reported as infeasible"]
            tried += 1
            break
    assert tried == sum(1 for t in env.app.tasks.values() if t.may_refuse) >= 1


@pytest.mark.parametrize("app", APPS)
def test_no_progress_before_any_action(app):
    """No fact holds at the start of an episode, for any template or sub-task: a start that
    already meets one would pay progress for nothing (a revision to restore whose title is
    the post's title already)."""
    env = simweb.make(app)
    ids = [t.id for parent, subs in env.app.tasks.with_sub_tasks() for t in (parent, *subs)]
    for tid in ids:
        for seed in range(12):
            try:
                _, info = env.reset(seed=seed, options={"task": tid})
            except RuntimeError:   # a sampler that finds no instance at this seed
                continue
            assert info["verdict"]["progress"] == 0, (tid, seed, info["verdict"]["checks"])


# Valid cards other than the goals' (4111 1111 1111 1111, 12/29, 123): another network with
# the same last four digits, and the same network with another number.
OTHER_CARDS = (("5000 0000 0003 1111", "07/31", "987", "Someone Else"),
               ("5555 5555 5555 4444", "07/31", "987", "Someone Else"),
               ("4111 1111 1111 1111", "07/31", "123", "Someone Else"))


@pytest.mark.parametrize("app", APPS)
def test_paying_with_another_card_than_the_goals_is_not_paid(app):
    """The goal names the card: an order or booking paid with any other valid card (or
    another expiry, or another name where the goal gives one) does not count."""
    env = simweb.make(app)
    tried = 0
    for tid in sorted(env.app.tasks):
        for seed in (0, 1):
            env.reset(seed=seed, options={"task": tid})
            plan = env.oracle_plan()
            if not any(a.startswith("fill('card-number'") for a in plan):
                continue
            for number, expiry, cvv, name in OTHER_CARDS:
                swap = {"card-number": number, "card-expiry": expiry, "card-cvv": cvv, "card-name": name}
                attack = []
                for a in plan:
                    m = re.fullmatch(r"fill\('(card-[a-z]+)', .*\)", a)
                    attack.append(f"fill({m.group(1)!r}, {swap[m.group(1)]!r})" if m else a)
                env.reset(seed=seed, options={"task": tid})
                for a in attack:
                    obs, reward, terminated, truncated, info = env.step(a)
                    if terminated or truncated:
                        break
                tried += 1
                assert not info["verdict"]["success"] and reward == 0, (tid, seed, number, info["verdict"])
    if app in ("shopping", "booking"):
        assert tried >= 6
    else:
        assert tried == 0   # no card form


# ----------------------------------------------------------------------------- oracles

def _visible_problem(action: str, obs: dict, page, start_url: str) -> str | None:
    a = parse_action(action)
    bids = set(re.findall(r"^\s*\[([^\]]+)\]", obs["axtree"], re.M))
    if a.name in ("click", "fill", "select_option", "check", "uncheck", "press", "hover", "focus", "clear",
                  "dblclick"):
        bid = str(a.args[0])
        if bid not in bids:
            return f"{action}: bid {bid!r} is not in the observation"
        if a.name == "select_option":
            el = page.elements[bid]
            wanted = a.args[1] if isinstance(a.args[1], list) else [a.args[1]]
            offered = {o[0] for o in el.options} | {o[1] for o in el.options}
            missing = [w for w in wanted if w not in offered]
            if missing:
                return f"{action}: options {missing} are not offered"
        return None
    if a.name == "goto":
        url = str(a.args[0])
        path = urlsplit(url).path
        if url == start_url:
            return None
        links = {el.href for el in page.elements.values() if el.href}
        if url in links:
            return None
        for form in page.forms:
            if form.method.lower() == "get" and urlsplit(form.action).path == path:
                names = {c.field_name for c in form.controls if c.field_name}
                keys = {k for k, _ in parse_qsl(urlsplit(url).query, keep_blank_values=True)}
                if keys <= names:
                    return None
        return f"{action}: the page shows no link or search form for it"
    return None


@pytest.mark.parametrize("app", APPS)
def test_oracles_use_only_what_the_agent_sees(app):
    """Every oracle action targets what the observation before it shows: its bid, its
    option, or a URL that is linked, the start URL, or a search form's URL."""
    env = simweb.make(app)
    problems = []
    for tid in env.app.tasks:
        for seed in ORACLE_SEEDS:
            obs, _ = env.reset(seed=seed, options={"task": tid})
            start_url = env.task.start_url
            for action in env.oracle_plan():
                why = _visible_problem(action, obs, env.browser.page(), start_url)
                if why:
                    problems.append(f"{tid} seed {seed}: {why}")
                    break
                obs, *_ = env.step(action)
    assert not problems, f"{len(problems)} oracle plans act on hidden things, e.g.\n" + "\n".join(problems[:15])


# ----------------------------------------------------------------------------- episode bookkeeping

def _state_task(app: str) -> str:
    env = simweb.make(app)
    return next(t for t, tmpl in env.app.tasks.items() if tmpl.kind == "state")


@pytest.mark.parametrize("app", APPS)
def test_progress_reward_adds_up_to_clean_progress(app):
    """In progress mode an oracle episode's rewards add up to 1; restarting from a restored
    start pays it again once (the baseline is the restored state), never twice."""
    env = simweb.make(app, reward="progress")
    tid = _state_task(app)
    env.reset(seed=2, options={"task": tid})
    start = env.snapshot()
    plan = env.oracle_plan()
    total = sum(env.step(a)[1] for a in plan)
    assert total == pytest.approx(1.0)
    env.restore(start)
    again = sum(env.step(a)[1] for a in plan)
    assert again == pytest.approx(1.0)


def test_collateral_damage_takes_back_progress():
    """Progress reward is paid only while the state is clean: a junk comment on the issue
    costs what the close earned, and the episode's rewards add up to 0."""
    env = simweb.make("issues", reward="progress")
    env.reset(seed=1, options={"task": "issues/close_issue"})
    *nav, close, done = env.oracle_plan()     # the way to the issue, its Close button, then "done"
    rewards = [env.step(a)[1] for a in nav]
    rewards.append(env.step("fill('comment-body', 'lol')")[1])
    rewards.append(env.step("click('comment-submit')")[1])
    obs, r, terminated, _, info = env.step(close)
    rewards.append(r)
    v = info["verdict"]
    assert v["success"] and not v["clean"] and v["progress"] == 1.0
    assert [c["name"] for c in v["checks"] if c["name"].startswith("collateral: ")] == [
        f"collateral: runtime.entities.comments.{env.app.world.max_id('comments') + 1}"]
    assert sum(rewards) == pytest.approx(0.0)


@pytest.mark.parametrize("app", APPS)
def test_no_reward_after_the_episode_ended(app):
    env = simweb.make(app)
    tid = _state_task(app)
    env.reset(seed=0, options={"task": tid})
    for a in env.oracle_plan():
        obs, reward, terminated, truncated, info = env.step(a)
    assert terminated and reward == 1.0
    before = env.snapshot()
    for _ in range(3):
        obs, reward, terminated, truncated, info = env.step("noop()")
        assert reward == 0.0 and terminated and info["episode_over"]
        assert obs["last_action_error"]
    assert env.snapshot() == before
    # a fork of an ended episode has ended too; reset starts afresh
    assert env.fork().step("noop()")[1] == 0.0
    env.reset(seed=0, options={"task": tid})
    assert env.step("noop()")[4].get("episode_over") is None


# ----------------------------------------------------------------------------- probes: notes and logs of undone changes

def _play(app: str, tid: str, seed: int, actions) -> dict:
    """The verdict of an episode that plays ``actions(plan, params)`` (episodes go on after
    a success, so what a policy does after the goal is met counts)."""
    env = simweb.make(app, seed=0, end_on_success=False)
    env.reset(seed=seed, options={"task": tid})
    steps = actions(env.oracle_plan(final=False), env.task.params)
    env.reset(seed=seed, options={"task": tid})
    info: dict = {}
    for a in steps:
        obs, _, _, _, info = env.step(a)
        assert obs["last_action_error"] == "", (a, obs["last_action_error"])
    return info["verdict"]


def _collateral(v: dict) -> list[str]:
    return [c["name"] for c in v["checks"] if c["name"].startswith("collateral:")]


def test_a_ban_placed_and_lifted_on_a_user_no_task_names_leaves_its_log_rows_as_damage():
    """forum: a moderator task done, then another user banned "for spam" and unbanned again.
    The ban record ends as it was (the world had none), but the community's public
    moderation log keeps both rows ("ban: spam (permanently)", "unban"): they echo no
    judged ban, so they are damage. Before, every log row but the post and comment
    actions was tolerated, so this was a clean success."""
    if "forum" not in APPS:
        pytest.skip("forum is not among SIMWEB_TEST_APPS")

    def attack(plan, p):
        return plan + ["goto('/c/aquariums/mod')", "fill('ban-username', 'bold_wombat48')", "fill('ban-days', '0')",
                       "fill('ban-reason', 'spam')", "click('ban-submit')", "click('unban-675')"]
    v = _play("forum", "forum/mod_lock_post", 0, attack)
    assert v["success"] and not v["clean"]
    assert len([n for n in _collateral(v) if n.startswith("collateral: runtime.entities.mod_log.")]) == 2
    # the oracle alone is clean, and a ban task's own log row is its echo
    assert _play("forum", "forum/mod_lock_post", 0, lambda plan, p: plan)["clean"]
    v = _play("forum", "forum/mod_ban_user", 0, lambda plan, p: plan)
    assert v["success"] and v["clean"]


@pytest.mark.parametrize("tid, undo", [
    ("forum/mod_lock_post", lambda p: ["click('mod-unlock')", "click('mod-lock')"]),
    ("forum/mod_pin_post", lambda p: ["click('mod-unpin')", "click('mod-pin')"]),
    ("forum/mod_remove_comment", lambda p: [f"click('comment-{p['comment_id']}-restore')",
                                            f"click('comment-{p['comment_id']}-remove')"]),
])
def test_a_moderation_undone_and_redone_on_the_judged_post_leaves_its_log_row_as_damage(tid, undo):
    """forum: the post locked (pinned, the comment removed) as asked, then unlocked and
    locked again. The post ends as asked, but the public moderation log keeps an
    "unlock_post" row: a log row is about the value it sets (``about``), and echoes the
    judged field only when that value is part of its net change (``net``), so the unlock
    is damage. Before, any lock or unlock row of the judged post was tolerated: a clean
    success."""
    if "forum" not in APPS:
        pytest.skip("forum is not among SIMWEB_TEST_APPS")
    v = _play("forum", tid, 0, lambda plan, p: plan + undo(p))
    assert v["success"] and not v["clean"], v
    assert len([n for n in _collateral(v) if n.startswith("collateral: runtime.entities.mod_log.")]) == 1, v
    assert _play("forum", tid, 0, lambda plan, p: plan)["clean"]


@pytest.mark.parametrize("tid", ["forum/mod_ban_user", "forum/mod_unban_user"])
def test_a_ban_undone_and_redone_on_the_judged_user_leaves_its_log_row_as_damage(tid):
    """forum: the asked user banned, then unbanned and banned again the same way (or the
    asked user unbanned, then banned "for x" and unbanned again). The ban record ends as
    asked, but the log keeps an "unban" (a "ban: x (for 1 days)") row that records no
    part of the record's net change (``value_net``): damage. Before, every ban and unban
    row of the judged record was tolerated."""
    if "forum" not in APPS:
        pytest.skip("forum is not among SIMWEB_TEST_APPS")

    def attack(plan, p):
        ban = [f"fill('ban-username', {p['target']!r})", f"fill('ban-days', {str(p.get('days', 1))!r})",
               f"fill('ban-reason', {p.get('reason', 'x')!r})", "click('ban-submit')"]
        unban = [f"click('unban-{p['target_id']}')"]
        return plan + (unban + ban if tid == "forum/mod_ban_user" else ban + unban)
    v = _play("forum", tid, 0, attack)
    assert v["success"] and not v["clean"], v
    assert len([n for n in _collateral(v) if n.startswith("collateral: runtime.entities.mod_log.")]) == 1, v
    assert _play("forum", tid, 0, lambda plan, p: plan)["clean"]


@pytest.mark.parametrize("tid", ["cms/archive_post", "cms/publish_in_review"])
def test_a_junk_edit_undone_on_the_judged_post_leaves_its_revisions_as_damage(tid):
    """cms: on the very post a status task judges, save a junk title and text, then save the
    original back, then do the task. The post ends as asked, but its revision history keeps
    a revision titled "lol": a revision echoes a judged change of the post's title or text
    and records what the post ends with. Before, any revision of a
    judged post was tolerated, so this was a clean success."""
    if "cms" not in APPS:
        pytest.skip("cms is not among SIMWEB_TEST_APPS")
    env = simweb.make("cms", seed=0)
    env.reset(seed=0, options={"task": tid})
    post = env.app.world.post(env.task.params["post_id"])

    def attack(plan, p):
        return plan[:-1] + ["fill('title-input', 'lol')", "fill('body-input', 'lol')", "click('save-post')",
                            f"fill('title-input', {post['title']!r})", f"fill('body-input', {post['body']!r})",
                            "click('save-post')", plan[-1]]
    v = _play("cms", tid, 0, attack)
    assert v["success"] and not v["clean"], v
    assert sum(n.startswith("collateral: runtime.entities.revisions.") for n in _collateral(v)) == 2
    assert _play("cms", tid, 0, lambda plan, p: plan)["clean"]


def test_a_junk_title_on_the_way_to_the_asked_one_leaves_its_revision_as_damage():
    """cms/rename_post: renamed to "lol" first, then to the asked title. The title is judged,
    so the last revision (the asked title) is the rename's echo; the "lol" revision records
    a title the post does not end with."""
    if "cms" not in APPS:
        pytest.skip("cms is not among SIMWEB_TEST_APPS")

    def attack(plan, p):
        fill = next(a for a in plan if a.startswith("fill('title-input'"))
        i = plan.index(fill)
        return plan[:i] + ["fill('title-input', 'lol')", "click('save-post')"] + plan[i:]
    v = _play("cms", "cms/rename_post", 0, attack)
    assert v["success"] and not v["clean"], v
    assert sum(n.startswith("collateral: runtime.entities.revisions.") for n in _collateral(v)) == 1
    assert _play("cms", "cms/rename_post", 0, lambda plan, p: plan)["clean"]


@pytest.mark.parametrize("undo", [
    ["select_option('label-select', 'accessibility')", "click('label-submit')", "click('label-remove-150')"],
    ["select_option('milestone-select', '')", "click('milestone-submit')", "select_option('milestone-select', '62')",
     "click('milestone-submit')"],
])
def test_a_change_undone_on_the_judged_issue_leaves_its_system_notes_as_damage(undo):
    """issues/close_issue: the issue is closed as asked, and on the way a label added and
    removed again (or the milestone dropped and set back). The issue's fields end as they
    were, but its timeline keeps the two system notes ("added ~accessibility label",
    "removed ~accessibility label"). A system note echoes a judged change of the field it
    records; before, any system note on a judged issue was tolerated, so this was a clean
    success."""
    if "issues" not in APPS:
        pytest.skip("issues is not among SIMWEB_TEST_APPS")
    v = _play("issues", "issues/close_issue", 0, lambda plan, p: plan + undo)
    assert v["success"] and not v["clean"], v
    assert sum(n.startswith("collateral: runtime.entities.comments.") for n in _collateral(v)) == 2
    assert _play("issues", "issues/close_issue", 0, lambda plan, p: plan)["clean"]


def test_another_comment_edited_and_put_back_keeps_its_edited_mark_as_damage():
    """forum/edit_comment: the asked comment edited, and another of my comments edited to
    "lol" and back again. Its text ends as it was, but every reader now sees it marked
    "edited": the edit time echoes only a judged text. Before, the mark was tolerated on
    any post or comment, so this was a clean success."""
    if "forum" not in APPS:
        pytest.skip("forum is not among SIMWEB_TEST_APPS")
    env = simweb.make("forum", seed=0)
    env.reset(seed=0, options={"task": "forum/edit_comment"})
    p = env.task.params
    other = next(c for c in env.app.world.user_comments(p["user_id"], 10)
                 if c["id"] != p["comment_id"] and c["status"] == "live")
    edit = f"goto('/comment/{other['id']}/edit')"

    def attack(plan, p):
        return plan + [edit, "fill('edit-body', 'lol')", "click('edit-submit')",
                       edit, f"fill('edit-body', {other['body']!r})", "click('edit-submit')"]
    v = _play("forum", "forum/edit_comment", 0, attack)
    assert v["success"] and not v["clean"], v
    assert _collateral(v) == [f"collateral: runtime.entities.comments.{other['id']}.edited"]
    assert _play("forum", "forum/edit_comment", 0, lambda plan, p: plan)["clean"]


# ----------------------------------------------------------------------------- termination is no oracle

@pytest.mark.parametrize("app", APPS)
def test_success_does_not_end_the_episode_by_default(app):
    """Issue 23, class 7: by default an episode ends when the agent says it is done, never
    at the site's first success, so a policy that tries each candidate and undoes it
    while the episode goes on is not stopped (and paid) at the right one. Nothing before
    the final action pays; the final action pays a clean success."""
    env = simweb.make(app)
    for tid, template in env.app.tasks.items():
        if template.kind != "state":
            continue
        env.reset(seed=0, options={"task": tid})
        *work, final = env.oracle_plan()
        assert final.startswith(("send_msg_to_user", "report_infeasible")), (tid, final)
        for a in work:
            obs, reward, terminated, truncated, info = env.step(a)
            assert not terminated and not truncated and reward == 0.0, (tid, a)
        assert env.verdict()["success"], tid      # done, and the episode goes on
        obs, reward, terminated, truncated, info = env.step(final)
        assert terminated and reward == 1.0, tid


@pytest.mark.parametrize("app", APPS)
def test_red_team_tries_forged_states_and_termination(app):
    """The red team attacks offline verification with forged final states and the episode's
    end with the work minus its final action, on every template; none is paid. An env that
    ends at success (end_on_success=True) is reported as paying the termination attack."""
    from simweb.tools.redteam import attack_instance

    env = simweb.make(app)
    families: Counter[str] = Counter()
    for tid in env.app.tasks:
        for a in attack_instance(env, tid, 0, events=False):
            if a.family in ("forged-state", "termination"):
                families[a.family] += 1
                assert not a.paid and not a.false_negative, (tid, a.name, a.detail)
    assert families["termination"] == len(env.app.tasks)
    assert families["forged-state"] >= 3 * len(env.app.tasks)
    eager = simweb.make(app, end_on_success=True)
    tid = _state_task(app)
    hit = [a for a in attack_instance(eager, tid, 0, events=False) if a.family == "termination"]
    assert hit and hit[0].paid, hit

"""A red team for every task template, generated from the tasks' effects and the pages.

An RL policy optimises whatever the reward pays for. For one task instance the red team
runs the oracle, then tries what such a policy would try instead of (or on top of) the
task, and records each attempt that the verifier still pays for:

* ``zero-work``: refuse at step 0; answer with a constant or with a value taken from the
  goal text; (over many seeds) answer every instance with the most common answer.
* ``undo``: the oracle's run with the runtime put back as it started (do-then-undo).
* ``wrong-content`` / ``deleted``: each row the task created, with its text replaced by
  junk, or deleted again: it must stop counting.
* ``over-doing``: a created row twice; a changed row's new values copied to another row;
  another field of a changed row altered.
* ``event``: on every page the oracle visited, each form of the page submitted as it stands
  and with junk in its text fields (the spec's events, with parameters drawn from the page):
  whenever the runtime changes beyond the app's bookkeeping, the verdict must no longer be
  a clean success.
* ``refusal-channel``: the oracle's answer sent with ``report_infeasible`` instead of
  ``send_msg_to_user`` (BrowserGym and WebArena read a refusal as "N/A: cannot be done").
* ``false-reason``: on an infeasible instance, the oracle's run refused with a false reason
  (each other candidate reason the task's :class:`~simweb.effects.Reason` names, alone and
  beside the true one), with no reason, with every reason at once, with a wrong amount or
  issue number; a refusal template whose refusal judges no reason is itself a hole.
* ``as-another-user``: sign in as another member, with a password guessed from what pages
  show, and (white box) with the account's real one, then do the task there.
* ``card``: the payment made with another card that shares the goal card's brand, last
  four and expiry, or with the goal's card and a wrong security code.
* ``unasked``: a field of a created row that the goal does not name, written with junk (a
  stranger's e-mail on the user's booking, "lol" in a notes field), in the state and
  through the forms of the oracle's plan.
* ``forged-state``: final states handed to offline verification (``simweb verify
  --state``, how served, browser and external runs are judged) that no run made: the
  start state with the oracle's final runtime edited in, the final state with its task
  removed or its history cut or shortened. Verification must refuse them
  (:func:`simweb.episodes.replay.verify_state`); the oracle's own final state must verify.
* ``termination``: the oracle's work without its final action (the answer, "done"),
  stepped in an env with the red team's env's settings: the episode must go on and pay
  nothing, or a policy could try each candidate, undo it while the episode goes on, and be
  stopped and paid at the right one without ever finding it.
* ``answer-form`` and ``route`` (false negatives): the right answer written the ways a
  site displays it, and the oracle's last form sent from another page that offers it,
  must still be paid.
* ``variant-chrome`` (a site variant's own links: docs/variants.md): the decoy banner's
  ``promo-*`` links and the breadcrumb trail's ``site-crumb*`` links of the start page
  followed instead of the task must pay nothing; followed before the task, or on the
  oracle's last page before its final action, they must not keep the task from being
  paid (a link of the site's chrome that changed the state would show there).
* ``confirm-step`` (a variant's confirmation page: docs/variants.md): the oracle's plan
  with its Confirm clicks left out, or Cancel in their place, must pay nothing, and a
  Confirm posted to any other token's address without its page must change nothing.

``redteam(app, variant=K)`` attacks site variant ``K`` (every family runs on that
variant's pages; each Attack records its variant).

An attack is *paid* when the verifier rewards it: success and clean for an attack that did
damage or skipped the work; progress kept for junk or deleted content. The hacking rate of
an app (attacks paid / attacks tried) must be 0.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from datetime import date
from typing import Any

from ..core.state import deep_copy
from ..judging.effects import Effect, NewRow, Reason, Row, Value, reason_phrase, runtime_changes
from ..judging.verify import answer_of
from ..runtime import variant_confirm, variant_steps
from ..runtime.variants import confirm_step, shown_url, url_scheme
from ..web.browsing import SimBrowser

#: Answers a policy would try without looking.
CONSTANT_ANSWERS = ("0", "1", "2", "3", "5", "10", "yes", "no", "none", "true", "false", "n/a")
JUNK = "x"
#: A template's zero-work guess may be right on at most this share of instances.
GUESS_RATE_LIMIT = 0.10
#: Guessing is judged over at least this many instances (one collision in ten is already 20%).
GUESS_MIN_SEEDS = 30


@dataclass(frozen=True)
class Attack:
    """One attempt and what the verifier said."""

    task: str
    seed: int
    family: str
    name: str
    paid: bool                     # a hole: rewarded without the task, or damage left clean
    detail: str = ""
    false_negative: bool = False   # the opposite failure: a correct solution left unpaid
    variant: int = 0               # the site variant attacked (simweb.runtime.variants; 0: today's site)


# ----------------------------------------------------------------------------- running

def _confirmed(b: SimBrowser) -> None:
    """On a site variant with a confirmation step, the form the site just held for
    confirmation confirmed, as an agent's next click does (simweb.runtime.variant_confirm);
    on one with multi-step forms, the second page of the form just held sent as it stands
    (simweb.runtime.variant_steps): the attacks that send a form judge what the form does,
    not the pages in between."""
    if variant_steps.awaiting(b.state):
        sub = next((c for f in b.page().forms if variant_steps.is_page(f.action) for c in f.controls
                    if c.bid and SimBrowser._is_submitter(c)), None)
        if sub is not None:
            b.execute(f"click({sub.bid!r})")
    if variant_confirm.awaiting(b.state, confirm_step(b.app, b.state) == variant_confirm.INLINE):
        b.execute(variant_confirm.CONFIRM_ACTION)


def _run(env: Any, actions: Iterable[str]) -> dict:
    """The state after ``actions`` from the env's current state (a private browser, so the
    env's episode bookkeeping is untouched)."""
    state = env.snapshot()
    browser = SimBrowser(env.app, state)
    for a in actions:
        browser.execute(a)
    return state


def _verdict(env: Any, state: dict) -> dict:
    t = env.task
    return env.app.tasks[t.id].verify(env.app, t.params, env.start_state(), state, answer_of(state))


def _judged_changes(env: Any, before: dict, after: dict) -> list[str]:
    """Runtime changes from ``before`` to ``after`` that are not the app's bookkeeping."""
    keep = env.app.spec.bookkeeping
    return [c.path for c in runtime_changes(env.app, before, after) if not keep.tolerates(c)]


def attack_instance(env: Any, task_id: str, seed: int, *, events: bool = True,
                    max_forms: int = 200) -> list[Attack]:
    """Every attack on one instance (``env`` is a SimEnv of the task's app)."""
    env.reset(seed=seed, options={"task": task_id})
    template = env.app.tasks[task_id]
    start = env.start_state()
    out: list[Attack] = []

    def add(family: str, name: str, paid: bool, detail: str = "", fn: bool = False) -> None:
        out.append(Attack(task_id, seed, family, name, paid, detail, fn))

    try:
        effect: Effect = template.effect_for(env.app, env.task.params, start)
    except NotImplementedError:
        add("effect", "the template declares an intended effect", True, "no effect(): judged by an allowed list")
        return out

    # zero work: refusing at once
    v = _verdict(env, _run(env, ["report_infeasible('I cannot do this.')"]))
    add("zero-work", "refuse at step 0", v["success"], _why(v))
    # (answers guessed without looking are judged over many instances: see guess_rates)

    final = _run(env, env.oracle_plan())
    fv = _verdict(env, final)
    if not (fv["success"] and fv["clean"]):
        add("oracle", "the oracle solves the task", False, f"oracle verdict: {_why(fv)}", fn=True)
        return out

    # the right answer sent through the refusal channel
    said = answer_of(final)
    if said is not None:
        s = deep_copy(final)
        s["browser"]["chat"].append({"role": "infeasible", "message": said})
        v = _verdict(env, s)
        # paid is what a reward pays: a state task's work followed by a refusal still holds
        # its facts (success) but is not clean (NOT_REFUSED), so every reward mode pays 0
        add("refusal-channel", f"report_infeasible({said!r}) with the oracle's answer", v["success"] and v["clean"],
            _why(v))
    # a refusal for a false reason, for none, for every reason
    if effect.refusal is not None:
        reason = effect.refusal.reason
        if reason is None:
            add("false-reason", "the refusal judges its reason", True, "Refusal(reason=None): any reason is paid")
        else:
            for name, text in false_reasons(reason):
                s = deep_copy(final)
                _replace_refusal(s, text)
                v = _verdict(env, s)
                add("false-reason", f"{name}: {text!r}", v["success"], _why(v))

    # false negatives: the right answer in the forms a site displays
    if effect.answer is not None:
        for form in answer_forms(effect.answer.kind, effect.answer.expected):
            s = deep_copy(final)
            _replace_answer(s, form)
            v = _verdict(env, s)
            add("answer-form", f"answer written {form!r}", False, _why(v), fn=not v["success"])

    out.extend(_forged_states(env, task_id, seed, effect, start, final))
    out.extend(_termination(env, task_id, seed))

    if effect.targets:
        s = deep_copy(final)
        s["runtime"] = deep_copy(start["runtime"])
        v = _verdict(env, s)
        add("undo", "the work done, then undone", v["success"], _why(v))
        out.extend(_mutations(env, task_id, seed, effect, start, final, fv))

    out.extend(_as_another_user(env, task_id, seed, start))
    out.extend(_signed_out_starts(env, task_id, seed, start, effect))
    out.extend(_another_card(env, task_id, seed))
    if effect.targets:
        out.extend(_unasked_fields(env, task_id, seed, effect, start, final))
    if events:
        out.extend(_event_attacks(env, task_id, seed, final, max_forms))
        out.extend(_other_routes(env, task_id, seed, env.oracle_plan()))
    out.extend(_variant_chrome(env, task_id, seed))
    out.extend(_confirm_skips(env, task_id, seed))
    out.extend(_step_skips(env, task_id, seed))
    return out


def _why(v: dict) -> str:
    failed = [c["name"] for c in v["checks"] if not c["passed"]][:3]
    return f"success={v['success']} clean={v['clean']} progress={v['progress']}" + (
        f"; failed: {', '.join(failed)}" if failed else "")


def false_reasons(reason: Reason) -> list[tuple[str, str]]:
    """Refusals that give a false reason, or none, or every reason (name, message)."""
    true = reason_phrase(reason.says[0])
    out = [("no reason", "I cannot do this."),
           ("every reason", "I cannot do this: " + "; ".join(reason_phrase(w) for w in reason.says + reason.wrong) + ".")]
    for w in reason.wrong:
        out.append(("a false reason", f"I cannot do this: {reason_phrase(w)}."))
    if reason.wrong:
        out.append(("the true reason and a false one", f"I cannot do this: {true}, and {reason_phrase(reason.wrong[0])}."))
    if reason.amounts:
        wrong = max(reason.amounts) + 100
        out.append(("a wrong amount", f"I cannot do this: {true} ${wrong // 100:,}.{wrong % 100:02d}."))
    if reason.refs is not None:
        out.append(("a wrong issue", f"I cannot do this: {true} #{max(reason.refs, default=0) + 1}."))
    return out


def _replace_refusal(state: dict, text: str) -> None:
    chat = state["browser"]["chat"]
    for m in reversed(chat):
        if m["role"] in ("assistant", "infeasible"):
            m["role"], m["message"] = "infeasible", text
            return
    chat.append({"role": "infeasible", "message": text})


def _replace_answer(state: dict, text: str) -> None:
    chat = state["browser"]["chat"]
    for m in reversed(chat):
        if m["role"] == "assistant":
            m["message"] = text
            return
    chat.append({"role": "assistant", "message": text})


# ----------------------------------------------------------------------------- forged states, termination

def _offline(env: Any, task_id: str, seed: int, state: dict) -> tuple[dict | None, str]:
    """(verdict, why) of ``state`` handed to offline verification; verdict None if refused."""
    from ..core.state import StateError
    from ..episodes.replay import verify_state

    try:
        v = verify_state(env.app, task_id, seed, state)
    except StateError as exc:
        return None, f"refused: {exc}"
    return v, _why(v)


def _forged_states(env: Any, task_id: str, seed: int, effect: Effect, start: dict, final: dict) -> Iterator[Attack]:
    """Final states no run made, handed to offline verification: each must be refused
    (paid when one is accepted as a success); the oracle's own final state must verify."""
    v, why = _offline(env, task_id, seed, final)
    yield Attack(task_id, seed, "forged-state", "the oracle's final state, verified offline", False, why,
                 v is None or not (v["success"] and v["clean"]))
    forgeries: list[tuple[str, dict]] = []
    if effect.targets:
        s = deep_copy(start)
        s["runtime"] = deep_copy(final["runtime"])
        s["browser"]["chat"] = deep_copy(final["browser"]["chat"])
        forgeries.append(("the start state with the final runtime edited in", s))
        s = deep_copy(final)
        s["meta"]["history"] = deep_copy(start["meta"]["history"])
        forgeries.append(("the final state with its history cut to the start", s))
    s = deep_copy(final)
    s["meta"]["task"] = None
    forgeries.append(("the final state with its task removed", s))
    log = final["meta"]["history"]["log"]
    posts = [i for i, text in enumerate(log) if text.startswith('["post"')]
    if posts:
        s = deep_copy(final)
        del s["meta"]["history"]["log"][posts[-1]]
        forgeries.append(("the final state with its last form post left out of the history", s))
    for name, forged in forgeries:
        v, why = _offline(env, task_id, seed, forged)
        yield Attack(task_id, seed, "forged-state", name, v is not None and v["success"], why)


def _termination(env: Any, task_id: str, seed: int) -> Iterator[Attack]:
    """The oracle's plan without its final action, stepped in a fork of the freshly reset
    env (its settings): paid if the episode ends (or sparse reward is paid) before the
    agent says it is done. The stop would be an oracle: try a candidate, undo it while the
    episode goes on, and be stopped and paid at the right one."""
    plan = env.oracle_plan()
    child = env.fork()
    for i, action in enumerate(plan[:-1]):
        _, reward, terminated, truncated, _ = child.step(action)
        if terminated or (child.reward_mode == "sparse" and reward):
            yield Attack(task_id, seed, "termination", "the work without the final action", True,
                         f"the episode ended at step {i + 1} of {len(plan) - 1} (reward {reward}) before the "
                         f"agent said it was done")
            return
        if truncated:
            break
    yield Attack(task_id, seed, "termination", "the work without the final action", False,
                 "the episode went on until the agent's final action")


# ----------------------------------------------------------------------------- mutations

def _new_rows_of(env: Any, start: dict, final: dict, t: NewRow) -> list[tuple[str, dict]]:
    """The rows the run created in t.table that match the target (path key, row)."""
    rows = []
    for c in runtime_changes(env.app, start, final):
        if c.kind == "new" and c.table == t.table and all(e.holds(c.after.get(f)) for f, e in t.where.items()):
            rows.append((str(c.id), c.after))
    return rows


def _mutations(env: Any, task_id: str, seed: int, effect: Effect, start: dict, final: dict,
               fv: dict) -> Iterator[Attack]:
    ents = lambda s: s["runtime"].setdefault("entities", {})  # noqa: E731
    for t in effect.targets:
        if isinstance(t, NewRow):
            for key, row in _new_rows_of(env, start, final, t)[:t.count]:
                texts = [f for f, e in t.where.items() if e.is_goal and isinstance(row.get(f), str)]
                if texts:
                    s = deep_copy(final)
                    for f in texts:
                        ents(s)[t.table][key][f] = JUNK
                    v = _verdict(env, s)
                    yield Attack(task_id, seed, "wrong-content", f"{t.table} {key} with junk {', '.join(texts)}",
                                 v["progress"] >= fv["progress"], _why(v))
                s = deep_copy(final)
                del ents(s)[t.table][key]
                v = _verdict(env, s)
                yield Attack(task_id, seed, "deleted", f"{t.table} {key} deleted again",
                             v["progress"] >= fv["progress"], _why(v))
                s = deep_copy(final)
                table = ents(s)[t.table]
                new_id = max([int(k) for k in table] + [env.app.world.max_id(t.table)]) + 1
                table[str(new_id)] = {**deep_copy(row), "id": new_id}
                v = _verdict(env, s)
                yield Attack(task_id, seed, "over-doing", f"{t.table} {key} created twice",
                             v["success"] and v["clean"], _why(v))
        elif isinstance(t, Row):
            yield from _row_mutations(env, task_id, seed, t, start, final)
        elif isinstance(t, Value):
            cur = _value_parent(final["runtime"], t.path)
            if cur is not None and isinstance(cur[0].get(cur[1]), list) and cur[0][cur[1]]:
                s = deep_copy(final)
                parent, key = _value_parent(s["runtime"], t.path) or cur   # the copy's, found as in final
                parent[key].append(deep_copy(parent[key][-1]))
                v = _verdict(env, s)
                yield Attack(task_id, seed, "over-doing", f"{t.path}: last item twice", v["success"] and v["clean"],
                             _why(v))


def _value_parent(runtime: dict, path: str) -> tuple[dict, str] | None:
    *head, last = path.split(".")
    cur: Any = runtime
    for seg in head:
        if not isinstance(cur, dict) or seg not in cur:
            return None
        cur = cur[seg]
    return (cur, last) if isinstance(cur, dict) else None


def _row_mutations(env: Any, task_id: str, seed: int, t: Row, start: dict, final: dict) -> Iterator[Attack]:
    from ..judging.effects import entity

    row = entity(env.app, final, t.table, t.id)
    if row is None:
        return
    keep = env.app.spec.bookkeeping
    judged = keep.judged_row_fields.get(t.table, {})
    # another field of the changed row
    for f in sorted(row):
        if f in t.fields or f == "id" or f in keep.fields.get(t.table, ()) or (
                f in judged and (not judged[f] or judged[f] in t.fields)):
            continue   # bookkeeping of this row: the site's own echo of its judged change
        junk = _junk_like(row[f])
        if junk is None:
            continue
        s = deep_copy(final)
        s["runtime"].setdefault("entities", {}).setdefault(t.table, {})[str(t.id)] = {**deep_copy(row), f: junk}
        v = _verdict(env, s)
        yield Attack(task_id, seed, "over-doing", f"{t.table} {t.id}: {f} changed too", v["success"] and v["clean"],
                     _why(v))
    # the same change on another row of the table
    yield from _on_a_neighbour(env, task_id, seed, t, final, {f: row.get(f) for f in t.fields},
                               lambda other_id: f"the change also made to {t.table} {other_id}")
    # the judged row's own bookkeeping (a publication day) written on another row
    echo = {f: row.get(f) for f in judged if f in row}
    yield from _on_a_neighbour(env, task_id, seed, t, final, echo, lambda other_id: (
        f"{', '.join(sorted(echo))} of the judged row also set on {t.table} {other_id}"))


def _on_a_neighbour(env: Any, task_id: str, seed: int, t: Row, final: dict, values: dict[str, Any],
                    name: Callable[[int], str]) -> Iterator[Attack]:
    """``values`` written on the first neighbouring row of ``t`` they would change."""
    from ..judging.effects import entity

    for other_id in _neighbours(env, t.table, t.id):
        other = entity(env.app, final, t.table, other_id)
        if other is None or all(other.get(f) == val for f, val in values.items()):
            continue
        s = deep_copy(final)
        s["runtime"].setdefault("entities", {}).setdefault(t.table, {})[str(other_id)] = {**deep_copy(other),
                                                                                          **deep_copy(values)}
        v = _verdict(env, s)
        yield Attack(task_id, seed, "over-doing", name(other_id), v["success"] and v["clean"], _why(v))
        return


def _neighbours(env: Any, table: str, eid: int) -> list[int]:
    top = env.app.world.max_id(table)
    return [i for i in (eid + 1, eid - 1, eid + 2, eid - 2, 1) if 1 <= i <= top and i != eid]


def _junk_like(v: Any) -> Any:
    if isinstance(v, bool):
        return not v
    if isinstance(v, int):
        return v + 1
    if isinstance(v, str):
        return v + " (edited)"
    if isinstance(v, list):
        return v[:-1] if v else None
    return None


# ----------------------------------------------------------------------------- another account

#: Other accounts the as-another-user family signs in as, per instance.
OTHER_ACCOUNTS = 3


def password_guesses(row: dict) -> list[str]:
    """Passwords a policy could derive from what pages show of an account (its user name
    and id): the patterns seeded worlds once used, and the usual weak ones."""
    name, uid = str(row.get("username") or ""), row.get("id")
    return list(dict.fromkeys([f"Passw0rd!{uid}", f"pw-{name}", name, f"{name}123", f"{name}{uid}", "password",
                               "Passw0rd!", "12345678"]))


def _sign_in(login: str, password: str) -> list[str]:
    return ["goto('/login')", f"fill('login-user', {login!r})", f"fill('login-password', {password!r})",
            "click('login-submit')"]


def _other_accounts(env: Any, start: dict) -> list[int]:
    """Accounts other than the goal's user: those the task's parameters name (an issue's
    author, a post's moderator), then the goal user's neighbours by id."""
    from ..judging.effects import goal_user

    own = goal_user(start)
    named = [v for k, v in sorted(env.task.params.items()) if "user" in k and isinstance(v, int)
             and not isinstance(v, bool)]
    near = [own + 1, own - 1] if own is not None else [1, 2, 3]
    top = env.app.world.max_id("users")
    return [u for u in dict.fromkeys(named + near) if u != own and 1 <= u <= top][:OTHER_ACCOUNTS]


def _as_another_user(env: Any, task_id: str, seed: int, start: dict) -> Iterator[Attack]:
    """Doing it as somebody else: sign in as another member, with a password guessed from
    what pages show (paid when the sign-in works), and with the account's real password
    (the red team reads the world; paid when the oracle's plan done there is a clean
    success). Apps without the auth kit have no accounts to take over."""
    from ..judging.effects import entity

    if "auth" not in getattr(env.app.spec, "kits", {}):
        return
    back = _goto(env, start, env.task.start_url)
    for uid in _other_accounts(env, start):
        row = entity(env.app, start, "users", uid)
        if row is None or not row.get("username"):
            continue
        login = str(row["username"])
        took = [g for g in password_guesses(row) if _run(env, _sign_in(login, g))["browser"]["user"] == uid]
        yield Attack(task_id, seed, "as-another-user", f"sign in as {login} with a password guessed from pages",
                     bool(took), f"signed in with {took[0]!r}" if took else "no guess signed in")
        sign_in = _sign_in(login, str(row.get("password") or ""))
        if _run(env, sign_in)["browser"]["user"] != uid:
            continue   # (a deactivated account)
        s = _run(env, [*sign_in, back, *env.oracle_plan()])
        v = _verdict(env, s)
        yield Attack(task_id, seed, "as-another-user", f"signed in as {login} (user {uid}), then the task",
                     v["success"] and v["clean"], _why(v))


def _signed_out_starts(env: Any, task_id: str, seed: int, start: dict, effect: Effect) -> Iterator[Attack]:
    """A task that starts signed out and signs in itself (simweb.runtime.variant_login: its
    goal states the account): the oracle's work without its sign-in (the work attempted as
    a visitor; a task that changes the site only, an answer being the same words signed in
    or not) must pay nothing unless it leaves the very site the oracle's does (a form that
    needs no account, as cms's comment under a name and e-mail: the same work), and the oracle's work followed by a sign-in as another
    account (the session left to somebody else) must not be a clean success."""
    from ..episodes.episode import signed_in_plan
    from ..judging.effects import SIGN_IN_LOG, entity
    from ..judging.tasks import starts_signed_out

    if not starts_signed_out(env.task.params) or start["browser"]["user"] is not None:
        return
    plan = env.oracle_plan()
    signing = len(signed_in_plan(env.app, start, [])) if plan else 0
    if effect.targets:
        visitor, oracle = _run(env, plan[signing:]), _run(env, plan)
        v = _verdict(env, visitor)
        # the same site as the oracle's (the sign-in log aside) is the same work, rightly paid:
        # a form that needs no account (cms's comment under a name and e-mail)
        same = {k: x for k, x in visitor["runtime"].items() if k != SIGN_IN_LOG} == {
            k: x for k, x in oracle["runtime"].items() if k != SIGN_IN_LOG}
        yield Attack(task_id, seed, "sign-in", "the oracle's work without signing in first",
                     v["success"] and not same, _why(v) + ("; the same site as the oracle's" if same else ""))
    for uid in _other_accounts(env, start):
        row = entity(env.app, start, "users", uid)
        if row is None or not row.get("username"):
            continue
        s = _run(env, [*plan, *_sign_in(str(row["username"]), str(row.get("password") or ""))])
        if s["browser"]["user"] != uid:
            continue   # (a deactivated account: nobody else took the session)
        v = _verdict(env, s)
        yield Attack(task_id, seed, "sign-in", f"the oracle's work, then signed in as user {uid}",
                     v["success"] and v["clean"], _why(v))
        break   # one other account is enough


# ----------------------------------------------------------------------------- the card a goal names

_CARD_DIGITS = re.compile(r"^[0-9 ]{13,23}$")


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


def twin_card(number: str) -> str | None:
    """Another valid card number with the same brand (first two digits) and last four: what
    a summary (brand, last four, expiry) cannot tell from the goal's card."""
    digits = number.replace(" ", "")
    for i in range(2, len(digits) - 5):
        for j in range(i + 1, len(digits) - 4):
            for a in "0123456789":
                for b in "0123456789":
                    cand = digits[:i] + a + digits[i + 1:j] + b + digits[j + 1:]
                    if cand != digits and _luhn(cand):
                        return " ".join(cand[k:k + 4] for k in range(0, len(cand), 4))
    return None


def _another_card(env: Any, task_id: str, seed: int) -> Iterator[Attack]:
    """A requirement judged by a summary: the oracle's payment made with another card that
    shares the goal card's brand, last four digits and expiry, and with the goal's card
    but a wrong security code. Paid when either is still a success."""
    from ..web.actions import parse_action

    plan = env.oracle_plan()
    number = code = None
    for i, a in enumerate(plan):
        act = parse_action(a)
        if act.name != "fill" or len(act.args) < 2:
            continue
        bid, value = str(act.args[0]), str(act.args[1])
        if _CARD_DIGITS.match(value) and _luhn(value.replace(" ", "")):
            number = (i, value)
        elif any(k in bid.lower() for k in ("cvv", "cvc", "security")):
            code = (i, bid, value)
    if number is None:
        return
    twin = twin_card(number[1])
    if twin is not None:
        swapped = list(plan)
        swapped[number[0]] = plan[number[0]].replace(repr(number[1]), repr(twin))
        v = _verdict(env, _run(env, swapped))
        yield Attack(task_id, seed, "card", f"paid with {twin} (same brand, last four and expiry)", v["success"],
                     _why(v))
    if code is not None:
        wrong = f"{(int(code[2]) + 1) % 10 ** len(code[2]):0{len(code[2])}d}"
        swapped = list(plan)
        swapped[code[0]] = f"fill({code[1]!r}, {wrong!r})"
        v = _verdict(env, _run(env, swapped))
        yield Attack(task_id, seed, "card", f"paid with the goal's card and security code {wrong}", v["success"],
                     _why(v))


# ----------------------------------------------------------------------------- fields nobody asked for

def _unasked_fields(env: Any, task_id: str, seed: int, effect: Effect, start: dict, final: dict
                    ) -> Iterator[Attack]:
    """Unrequested fields of a new row: (1) each field of a row the task creates that the
    goal does not name and the site does not compute, written with junk (a stranger's
    e-mail, "lol" in a notes field), and each leaf of a value the task claims whole that
    the app declares a default for; (2) the oracle's plan with junk typed into every text
    field of its POST forms that the plan leaves as the page filled it. Paid when still a
    clean success while the runtime differs from the oracle's."""
    from ..judging.effects import Fill

    keep = env.app.spec.bookkeeping
    ents = lambda s: s["runtime"].setdefault("entities", {})  # noqa: E731
    for t in effect.targets:
        if isinstance(t, NewRow):
            rules = keep.defaults.get(t.table, {})
            for key, row in _new_rows_of(env, start, final, t)[:t.count]:
                for f in sorted(row):
                    rule = rules.get(f)
                    if f == "id" or f in t.where or (rule is not None and rule.kind == "site"):
                        continue
                    s = deep_copy(final)
                    ents(s)[t.table][key][f] = _unasked_junk(f, row[f])
                    v = _verdict(env, s)
                    yield Attack(task_id, seed, "unasked", f"{t.table} {key}: {f} written unasked",
                                 v["success"] and v["clean"], _why(v))
        elif isinstance(t, Value) and keep.value_defaults:
            for c in runtime_changes(env.app, start, final):
                sub = c.path[len(t.path) + 1:]
                if not c.path.startswith(t.path + ".") or c.kind != "value" or sub in t.names:
                    continue
                fill: Fill | None = next((r for p, r in keep.value_defaults if _same_shape(p, c.path)), None)
                if fill is None or fill.kind == "site":
                    continue
                s = deep_copy(final)
                parent, leaf = _value_parent(s["runtime"], c.path) or ({}, "")
                if leaf not in parent:
                    continue
                parent[leaf] = _unasked_junk(leaf, parent[leaf])
                v = _verdict(env, s)
                yield Attack(task_id, seed, "unasked", f"{c.path} written unasked", v["success"] and v["clean"],
                             _why(v))
    yield from _junk_in_untouched_fields(env, task_id, seed, final)


def _same_shape(pattern: str, path: str) -> bool:
    p, s = pattern.split("."), path.split(".")
    return len(p) == len(s) and all(a == "*" or a == b for a, b in zip(p, s))


def _unasked_junk(name: str, value: Any) -> Any:
    if "email" in name:
        return "stranger@example.com"
    if isinstance(value, str) or value is None:
        return (value or "") + " lol"
    return _junk_like(value)


#: Fields the "unasked" family types junk into, one at a time, per instance.
UNASKED_FORM_FIELDS = 4


def _junk_in_untouched_fields(env: Any, task_id: str, seed: int, final: dict) -> Iterator[Attack]:
    """The oracle's plan with junk typed, one field at a time, into a text field of one of
    its POST forms that the plan leaves as the page filled it."""
    from ..web.actions import parse_action

    plan = env.oracle_plan()
    acts = [parse_action(a) for a in plan]
    touched = {str(a.args[0]) for a in acts if a.name in ("fill", "select_option") and a.args}
    b = SimBrowser(env.app, env.snapshot())
    spots: list[tuple[int, str, str]] = []
    for i, (a, act) in enumerate(zip(plan, acts)):
        if act.name == "click" and act.args:
            el = b.page().elements.get(str(act.args[0]))
            if el is not None and el.form is not None and SimBrowser._is_submitter(el) \
                    and b.page().forms[el.form].method.lower() == "post":
                for c in b.page().forms[el.form].controls:
                    if c.bid and c.bid not in touched and not c.hidden and not c.disabled and (
                            c.tag == "textarea" or (c.tag == "input" and (c.input_type or "text")
                                                    in ("text", "email", "tel"))):
                        spots.append((i, c.bid, "stranger@example.com" if c.input_type == "email" else "lol"))
        b.execute(a)
    for i, bid, junk in spots[:UNASKED_FORM_FIELDS]:
        s = _run(env, [*plan[:i], f"fill({bid!r}, {junk!r})", *plan[i:]])
        left = [c.path for c in runtime_changes(env.app, final, s) if c.path.partition(".")[0] not in
                ("counters", "timers")]
        if not left:
            continue   # the site kept none of it
        v = _verdict(env, s)
        yield Attack(task_id, seed, "unasked", f"the plan with {junk!r} typed into {bid}, which it leaves alone",
                     v["success"] and v["clean"], f"changed {left[:3]}; {_why(v)}")


# ----------------------------------------------------------------------------- events from the pages

def _event_attacks(env: Any, task_id: str, seed: int, final: dict, max_forms: int) -> Iterator[Attack]:
    """Submit every form of every page the run visited, and of the pages they link to,
    as it stands and with junk text."""
    urls = list(dict.fromkeys(u for tab in final["browser"]["tabs"] for u in tab["history"]
                              if u.startswith("/")))
    urls += _linked(env, final, urls)
    tried = 0
    pairs = [max_forms // 2]   # the "and back" submissions left for this instance (shared)
    # pair rounds per event: the vote forms of every comment on a page must not use up the
    # budget before the page's one lock, pin or label form is paired
    rounds: Counter[str] = Counter()
    for url in urls:
        base = deep_copy(final)
        b = SimBrowser(env.app, base)
        if b.execute(_goto(env, base, url)):
            continue
        page = b.page()
        for form in page.forms:
            if form.method.lower() != "post":
                continue
            submitters = [c for c in form.controls if c.bid and SimBrowser._is_submitter(c)] or []
            texts = [c for c in form.controls if c.bid and c.tag in ("input", "textarea")
                     and (c.input_type or "text") in ("text", "search", "email", "url", "textarea", "number", "date")
                     and not c.hidden]
            # selects left on their placeholder ("Choose a label"): the form does nothing as it stands
            choices = [(c.bid, opt) for c in form.controls if c.bid and c.tag == "select" and not c.value
                       and (opt := next((v for v, _, _ in c.options if v), None)) is not None]
            variants = ["as it stands"] + (["with junk"] if texts else []) + (["with a choice"] if choices else [])
            for sub in submitters[:3]:
                for variant in variants:
                    if tried >= max_forms:
                        return
                    tried += 1
                    s = deep_copy(base)
                    sb = SimBrowser(env.app, s)
                    sb._html, sb._page = b._html, page
                    if variant == "with junk":
                        for c in texts:
                            sb.execute(f"fill({c.bid!r}, {_junk_for(c)!r})")
                    elif variant == "with a choice":
                        for bid, opt in choices:
                            sb.execute(f"select_option({bid!r}, {opt!r})")
                    err = sb.execute(f"click({sub.bid!r})")
                    _confirmed(sb)
                    changed = _judged_changes(env, final, s)
                    if err or not changed:
                        continue
                    v = _verdict(env, s)
                    hit = env.app.spec.match_event(form.action.partition("?")[0])
                    event = hit[0].name if hit else form.action
                    name = f"{event} ({form.action}) from {url}" + ("" if variant == "as it stands" else f" {variant}")
                    yield Attack(task_id, seed, "event", name, v["success"] and v["clean"],
                                 f"changed {changed[:3]}; {_why(v)}")
                    if pairs[0] <= 0 or rounds[f"{event} {variant}"] >= PAIR_ROUNDS_PER_EVENT:
                        continue
                    rounds[f"{event} {variant}"] += 1
                    if variant == "with junk":
                        yield from _junk_undone(env, task_id, seed, final, s, url, form, texts, sub, name, pairs)
                    else:
                        sent = {(c.field_name, c.value) for c in form.controls if c.field_name and c.value}
                        if variant == "with a choice":
                            names = {c.bid: c.field_name for c in form.controls if c.bid and c.field_name}
                            sent |= {(names[bid], opt) for bid, opt in choices if bid in names}
                        yield from _and_back(env, task_id, seed, final, s, name, pairs, form.action, sent)


#: "and back" rounds per event and variant in one instance, and forms tried per round
PAIR_ROUNDS_PER_EVENT = 2
PAIR_FORMS_PER_ROUND = 4


def _and_back(env: Any, task_id: str, seed: int, final: dict, after: dict, first: str,
              budget: list[int], action: str = "", sent: set[tuple[str, str]] | None = None) -> Iterator[Attack]:
    """After a form that changed something, each POST form of the page it led to, as it
    stands: an inverse there (publish after unpublish, restore after remove, reopen after
    close) puts the judged fields back, and whatever else stays (a publication day, a log
    row, a notification) is bookkeeping left without the change it echoes. Paid when
    anything beyond the always-tolerated counters and timers stays changed and the verdict
    is still a clean success. ``budget`` ([n]) is shared by every call for one instance.
    The forms nearest the first one come first, at most ``PAIR_FORMS_PER_ROUND``: its own
    ``action`` (unlock after lock), then a form of the same thing that carries a value the
    first one ``sent`` (unassign @b after assigning @b, the removal of the label added),
    then the other forms of the same thing."""
    b = SimBrowser(env.app, after)
    heads = {"counters", "timers"}
    forms = [f for f in b.page().forms if f.method.lower() == "post"]
    parent = action.rpartition("/")[0]
    values = sent or set()

    def nearness(f: Any) -> int:
        if f.action == action:
            return 0
        if not (parent and f.action.startswith(parent + "/")):
            return 3
        return 1 if any((c.field_name, c.value) in values for c in f.controls if c.field_name) else 2

    forms.sort(key=nearness)
    for form in forms[:PAIR_FORMS_PER_ROUND]:
        sub = next((c for c in form.controls if c.bid and SimBrowser._is_submitter(c)), None)
        if sub is None:
            continue
        if budget[0] <= 0:
            return
        budget[0] -= 1
        s = deep_copy(after)
        sb = SimBrowser(env.app, s)
        sb._html, sb._page = b._html, b._page
        if sb.execute(f"click({sub.bid!r})"):
            continue
        _confirmed(sb)
        left = [c.path for c in runtime_changes(env.app, final, s) if c.path.partition(".")[0] not in heads]
        if not left or _judged_changes(env, final, s):
            continue   # nothing stays, or a judged change stays (the single-form attack covers it)
        v = _verdict(env, s)
        yield Attack(task_id, seed, "event", f"{first}, then {form.action} and back", v["success"] and v["clean"],
                     f"left {left[:3]}; {_why(v)}")


def _junk_undone(env: Any, task_id: str, seed: int, final: dict, after: dict, url: str, form: Any, texts: list,
                 sub: Any, first: str, budget: list[int]) -> Iterator[Attack]:
    """After a form sent with junk text, the same page opened again and the form sent with
    the text it first showed (an edit undone: the title saved as "lol", then saved back).
    The judged fields end as they were; whatever else stays (a revision recording "lol", an
    "edited" mark, a system note "changed title from ...") is bookkeeping left without the
    change it echoes. Paid as an "and back" pair is. ``budget`` ([n]) is shared."""
    budget[0] -= 1
    s = deep_copy(after)
    sb = SimBrowser(env.app, s)
    if sb.execute(_goto(env, s, url)):
        return
    again = next((f for f in sb.page().forms if f.action == form.action and f.method == form.method), None)
    if again is None or sub.bid not in sb.page().elements:
        return
    for c in texts:
        if c.bid in sb.page().elements:
            sb.execute(f"fill({c.bid!r}, {c.value or ''!r})")
    if sb.execute(f"click({sub.bid!r})"):
        return
    _confirmed(sb)
    # What stays beyond the rows and values the task judges (their own echoes, a new edit
    # time on the judged comment, are the task's), the counters and the timers.
    t = env.task
    effect = env.app.tasks[t.id].effect_for(env.app, t.params, env.start_state())
    rows = {(x.table, x.id) for x in effect.targets if isinstance(x, Row)}
    values = [x.path for x in effect.targets if isinstance(x, Value)]
    left = [c.path for c in runtime_changes(env.app, final, s) if c.path.partition(".")[0] not in {"counters", "timers"}
            and (c.table, c.id) not in rows and not any(c.path == p or c.path.startswith(p + ".") for p in values)]
    if not left or _judged_changes(env, final, s):
        return
    v = _verdict(env, s)
    yield Attack(task_id, seed, "event", f"{first}, then undone from {url}", v["success"] and v["clean"],
                 f"left {left[:3]}; {_why(v)}")


def _other_routes(env: Any, task_id: str, seed: int, plan: list[str], max_pages: int = 12) -> Iterator[Attack]:
    """The oracle's last form, sent from another page that offers the same form (same
    action, same values), then the rest of the plan: a correct solution by another route
    must be paid as the oracle's is."""
    from ..web.actions import parse_action

    state = env.snapshot()
    b = SimBrowser(env.app, state)
    posts = []
    for i, a in enumerate(plan):
        act = parse_action(a)
        if act.name == "click":
            el = b.page().elements.get(str(act.args[0]))
            if el is not None and el.form is not None and SimBrowser._is_submitter(el) \
                    and b.page().forms[el.form].method.lower() == "post" \
                    and variant_confirm.parse_path(b.page().forms[el.form].action.partition("?")[0]) is None \
                    and not variant_steps.is_page(b.page().forms[el.form].action):
                # (a variant's confirmation page, or a multi-step form's second page, holds no
                # form of the site: the one it confirms or continues is)
                form = b.page().forms[el.form]
                posts.append((deep_copy(state), form.action, b.form_entries(form, el), b.tab["url"], i))
        b.execute(a)
    if not posts:
        return
    before, action, entries, url, i = posts[-1]
    values: dict[str, list[str]] = {}
    for name, value in entries:
        values.setdefault(name, []).append(value)
    seen = [u for tab in before["browser"]["tabs"] for u in tab["history"] if u.startswith("/")]
    pages = [u for u in dict.fromkeys(seen + _linked(env, before, list(dict.fromkeys(seen)))) if u != url]
    for page_url in pages[:max_pages]:
        s = deep_copy(before)
        sb = SimBrowser(env.app, s)
        if sb.execute(_goto(env, s, page_url)):
            continue
        for form in sb.page().forms:
            if form.action != action or form.method.lower() != "post":
                continue
            submitter = next((c for c in form.controls if c.bid and SimBrowser._is_submitter(c)), None)
            if submitter is None or not _fill_like(sb, form, values):
                continue
            sb._submit(form, submitter)
            for a in plan[i + 1:]:
                sb.execute(a)
            v = _verdict(env, s)
            yield Attack(task_id, seed, "route", f"{action} sent from {page_url}", False, _why(v),
                         not (v["success"] and v["clean"]))
            break


#: Bid prefixes of the links a site variant adds to every page (simweb.runtime.variants):
#: the decoy banner's and the breadcrumb trail's.
CHROME_BIDS = ("promo-", "site-crumb")


def _chrome_links(b: SimBrowser) -> list[str]:
    """The bids of the variant's own links on the browser's current page."""
    page = b.page()
    return [bid for bid in page.elements if bid.startswith(CHROME_BIDS) and page.elements[bid].href]


def _variant_chrome(env: Any, task_id: str, seed: int) -> Iterator[Attack]:
    """A site variant's own links (banner, breadcrumb trail) as a way to the reward: each
    link of the start page followed instead of the task (paid if the verdict is a
    success); every one followed, then the task (correct work: unpaid if not a clean
    success); and the oracle's work, then every such link of its last page, then its
    final action (likewise). Nothing on today's site (variant 0 has no such links)."""
    if not getattr(env, "variant", 0):
        return
    start = SimBrowser(env.app, env.snapshot())
    links = _chrome_links(start)
    if not links:
        return
    back = _goto(env, start.state, env.task.start_url)   # in the variant's URL form
    for bid in links:
        v = _verdict(env, _run(env, [f"click({bid!r})"]))
        yield Attack(task_id, seed, "variant-chrome", f"the start page's {bid} link instead of the task",
                     v["success"], _why(v))
    plan = env.oracle_plan()
    v = _verdict(env, _run(env, [a for bid in links for a in (f"click({bid!r})", back)] + plan))
    yield Attack(task_id, seed, "variant-chrome", f"every link of {', '.join(links)} followed, then the task", False,
                 _why(v), not (v["success"] and v["clean"]))
    state = env.snapshot()
    b = SimBrowser(env.app, state)
    for a in plan[:-1]:
        b.execute(a)
    last = _chrome_links(b)
    if not last or not plan:
        return
    url = b.tab["url"]
    for bid in last:
        b.execute(f"click({bid!r})")
        b.execute(_goto(env, state, url))
    b.execute(plan[-1])
    v = _verdict(env, state)
    yield Attack(task_id, seed, "variant-chrome", f"the work, then {', '.join(last)} on its last page, then its final "
                 "action", False, _why(v), not (v["success"] and v["clean"]))


def _confirm_skips(env: Any, task_id: str, seed: int) -> Iterator[Attack]:
    """A variant's confirmation step (simweb.runtime.variant_confirm) as a way around the
    work: the oracle's plan with every Confirm click left out, or with Cancel in its
    place, must pay nothing (a held form is no change); and with the Confirms left out, a
    Confirm posted to every other token's address (a guessed one, without its page) must
    change nothing. Nothing on a site without the step (no Confirm in the plan)."""
    plan = env.oracle_plan()
    yes = variant_confirm.CONFIRM_ACTION
    if yes not in plan:
        return
    no = f"click('{variant_confirm.CANCEL_BID}')"
    skipped = _run(env, [a for a in plan if a != yes])
    v = _verdict(env, skipped)
    yield Attack(task_id, seed, "confirm-step", "the work with every Confirm left out", v["success"], _why(v))
    v = _verdict(env, _run(env, [no if a == yes else a for a in plan]))
    yield Attack(task_id, seed, "confirm-step", "the work with Cancel for every Confirm", v["success"], _why(v))
    pending = skipped["browser"].get("confirm")
    held = pending["token"] if pending else -1
    if pending is not None:   # the held token's own Confirm, posted from a page that does not show it
        other = next(u for u in ("/", "/?from=elsewhere") if u != pending["back"])
        s = deep_copy(skipped)
        env.app.submit(s, variant_confirm.page_url(held), {}, referrer=other)
        changed = _judged_changes(env, skipped, s)
        yield Attack(task_id, seed, "confirm-step", f"the held Confirm posted from {other}", bool(changed),
                     f"changed {changed[:3]}" if changed else "nothing changed")
    for token in range(skipped["meta"]["requests"] + 2):
        if token == held:
            continue
        url = variant_confirm.page_url(token)
        s = deep_copy(skipped)
        env.app.submit(s, url, {}, referrer=url)
        if _judged_changes(env, skipped, s):
            v = _verdict(env, s)
            yield Attack(task_id, seed, "confirm-step", f"a Confirm posted to {url} without its page", True,
                         f"changed the site; {_why(v)}")
            return
    yield Attack(task_id, seed, "confirm-step", "a Confirm posted to every other token's address without its page",
                 False, "nothing changed")


def _step_skips(env: Any, task_id: str, seed: int) -> Iterator[Attack]:
    """A variant's multi-step forms (simweb.runtime.variant_steps) as a way around the work,
    on every template whose plan meets a form's first page (a Continue click): the plan
    with each second page left unsent must pay nothing (a held first page is no change);
    the whole form (the first page's fields and the second's) posted straight to the
    event's address from the first page must change nothing but a new held entry (a POST
    there is always a first page); a second page's POST to every other token's address
    (without its first page) must change nothing; the second page's POST sent again after
    the work (a replayed token) must change nothing more; and the first page continued
    with junk, then the second page's POST carrying the right first-page values, must pay
    nothing (the held values are the ones sent). Nothing on a site without them."""
    plan = env.oracle_plan()
    if variant_steps.CONTINUE_ACTION not in plan:
        return
    state = env.snapshot()
    b = SimBrowser(env.app, state)
    sends: list[int] = []   # the plan's actions that sent a held form's second page
    seconds: list[tuple[dict, dict, dict, str]] = []   # (state before, held entry, second page's form, its URL)
    before_continue: dict | None = None
    for i, a in enumerate(plan):
        if a == variant_steps.CONTINUE_ACTION and before_continue is None:
            before_continue = deep_copy(state)
        entry = state["browser"].get("steps")
        if entry is not None and variant_steps.awaiting(state) and a.lstrip().startswith("click("):
            el = b.page().elements.get(a.split("'")[1]) if "'" in a else None
            if el is not None and el.form is not None and SimBrowser._is_submitter(el):
                form = b.page().forms[el.form]
                values: dict[str, Any] = {}
                for name, value in b.form_entries(form, el):
                    values.setdefault(name, []).append(value)
                seconds.append((deep_copy(state), deep_copy(entry),
                                {k: v[0] if len(v) == 1 else v for k, v in values.items()}, b.tab["url"]))
        b.execute(a)
        if entry is not None and "steps" not in state["browser"]:
            sends.append(i)
    final = state
    skipped = _run(env, [a for i, a in enumerate(plan) if i not in sends])
    v = _verdict(env, skipped)
    yield Attack(task_id, seed, "form-steps", "the work with every second page left unsent", v["success"], _why(v))
    if not seconds or before_continue is None:
        return
    at, entry, second, page = seconds[0]
    whole = {**second, **entry["form"]}
    s = deep_copy(at)
    s["browser"].pop("steps", None)
    env.app.submit(s, entry["url"], whole, referrer=entry["back"])
    changed = _judged_changes(env, at, s)
    yield Attack(task_id, seed, "form-steps", f"the whole form posted to {entry['url']}, skipping its second page",
                 bool(changed), f"changed {changed[:3]}" if changed else "held again, nothing changed")
    for token in range(at["meta"]["requests"] + 2):
        if token == entry["token"]:
            continue
        url = variant_steps.page_url(token)
        s = deep_copy(at)
        env.app.submit(s, url, whole, referrer=url)
        if _judged_changes(env, at, s):
            yield Attack(task_id, seed, "form-steps", f"a second page posted to {url} without its first", True,
                         f"changed the site; {_why(_verdict(env, s))}")
            break
    else:
        yield Attack(task_id, seed, "form-steps", "a second page posted to every other token's address", False,
                     "nothing changed")
    s = deep_copy(final)
    env.app.submit(s, page, second, referrer=page)
    changed = _judged_changes(env, final, s)
    yield Attack(task_id, seed, "form-steps", f"the second page's POST to {page} sent again after the work",
                 bool(changed), f"changed {changed[:3]}" if changed else "nothing changed")
    # from before the first Continue (no held entry yet): each first-page value changed
    for how, change in (("junk", lambda v: JUNK), ("changed", lambda v: v + "x")):
        s = deep_copy(before_continue)
        wrong = {k: v if isinstance(v, list) else change(v) for k, v in entry["form"].items()}
        env.app.submit(s, entry["url"], {**second, **wrong}, referrer=entry["back"])
        forged = s["browser"].get("steps")
        if forged is None:
            continue   # refused on the first page: nothing held
        url = variant_steps.page_url(forged["token"])
        env.app.submit(s, url, whole, referrer=url)
        v = _verdict(env, s)
        yield Attack(task_id, seed, "form-steps", f"the first page continued with {how} values, the right ones "
                     "forged into the second page's POST", v["success"], _why(v))
        break


def _fill_like(b: SimBrowser, form: Any, values: dict[str, list[str]]) -> bool:
    """Give the form's controls the submitted values; False if one cannot take its value
    (another form that only shares the action)."""
    names = {c.field_name for c in form.controls if c.field_name}
    if not set(values) <= names | {""}:
        return False
    for c in form.controls:
        if not c.field_name or c.field_name not in values:
            continue
        want = values[c.field_name]
        if c.input_type == "hidden":   # hidden inputs carry no bid: they say which thing the form is about
            if c.value not in want:
                return False
            continue
        if not c.bid:
            continue
        if c.input_type in ("checkbox", "radio"):
            b.tab["fields"][c.bid] = (c.value if c.value is not None else "on") in want
        elif c.tag == "select":
            offered = {o[0] for o in c.options}
            if not set(want) <= offered:
                return False
            b.tab["fields"][c.bid] = "\x1f".join(want)
        elif c.tag in ("input", "textarea") and c.input_type not in ("submit", "image", "button", "reset", "hidden"):
            b.tab["fields"][c.bid] = want[0]
    return True


def _goto(env: Any, state: dict, url: str) -> str:
    """The action that opens ``url`` (a URL as the state keeps it) on ``state``'s site: on a
    variant with its own URL scheme, the URL its pages show (simweb.runtime.url_schemes)."""
    return f"goto({shown_url(env.app, state, url)!r})"


def _linked(env: Any, final: dict, urls: list[str], per_page: int = 8) -> list[str]:
    """Up to ``per_page`` pages linked from each of ``urls`` (one hop further)."""
    seen, out = set(urls), []
    for url in urls:
        b = SimBrowser(env.app, deep_copy(final))
        if b.execute(_goto(env, final, url)):
            continue
        n = 0
        scheme = url_scheme(env.app, final["meta"].get("variant", 0))
        for el in b.page().elements.values():
            href = el.href
            if not href or not href.startswith("/"):
                continue
            href = href if scheme is None else scheme.to_canonical(href)   # as the state keeps URLs
            if href in seen:
                continue
            seen.add(href)
            out.append(href)
            n += 1
            if n >= per_page:
                break
    return out


def _junk_for(el: Any) -> str:
    kind = el.input_type or "text"
    if kind == "number":
        return "7"
    if kind == "date":
        return "2031-01-01"
    if kind == "email":
        return "junk@example.com"
    if kind == "url":
        return "https://example.com/junk"
    return "lol"


# ----------------------------------------------------------------------------- answers

_QUOTED = re.compile(r"[“\"']([^”\"']{1,80})[”\"']")
_NUMBERS = re.compile(r"\$?\d[\d,]*(?:\.\d+)?")
_HANDLES = re.compile(r"[@#][\w.\-/]+")


def goal_guesses(goal: str) -> list[str]:
    """Answers a policy could read off the goal text without browsing."""
    out = _QUOTED.findall(goal) + _NUMBERS.findall(goal) + _HANDLES.findall(goal)
    out += [w for w in re.findall(r"\b[A-Z][\w\-]+\b", goal)]
    return list(dict.fromkeys(g.strip() for g in out if g.strip()))


def answer_forms(kind: str, expected: Any) -> list[str]:
    """The right answer written as sites and people write it: alone, in the formats the
    apps display, and inside a sentence ("Total - 382", "Joined Mar 5, 2026", a name in
    the goal's quotes)."""
    if kind == "money":
        v = expected / 100
        return [f"${v:,.2f}", f"{v:.2f}", f"{v:,.2f} USD", f"The total is ${v:,.2f}.", f"Total - ${v:,.2f}",
                f"It comes to ${v:,.2f} in all (as of Mar 5, 2026)."]
    if kind == "number":
        n = int(expected) if float(expected).is_integer() else expected
        return [f"{n}", f"{n:,}" if isinstance(n, int) else f"{n}", f"The answer is {n}.", f"Total - {n}",
                f"I count {n} of them."]
    if kind == "percent":
        n = int(expected) if float(expected).is_integer() else expected
        return [f"{n}", f"{n}%", f"{n} percent", f"{n}% complete · 3 of 7 issues closed · 4 open",
                f"It is {n}% done."]
    if kind == "date":
        d: date = expected
        site = f"{d:%b} {d.day}, {d.year}"
        return [d.isoformat(), f"{d:%B} {d.day}, {d.year}", site, d.strftime("%d %B %Y"), f"Joined {site}",
                f"It is {d:%A}, {d:%B} {d.day}, {d.year}.", f"{d.month}/{d.day}/{d.year}"]
    if kind == "set":
        items = sorted(expected)
        return [", ".join(items), ", ".join(reversed(items)), " and ".join(items) if len(items) <= 2
                else ", ".join(items[:-1]) + " and " + items[-1], "\n".join(items),
                ",".join(items), "\n".join(f"- {i}" for i in items), "They are: " + "; ".join(f"“{i}”" for i in items)]
    if kind == "numbers":
        return [", ".join(map(str, expected)), ",".join(map(str, expected)), " - ".join(map(str, expected))]
    if kind == "text":
        return [str(expected), str(expected).upper(), f"{expected}.", f"“{expected}”", f"The answer is “{expected}”.",
                f'It is "{expected}".']
    return []


def guess_rates(env: Any, task_id: str, seeds: Iterable[int]) -> dict[str, float]:
    """Over many instances of a template, the share of instances solved without looking:
    by the most common right answer, by the best constant answer, and by some value
    taken from the goal text."""
    seeds = list(seeds)
    answers: list[str] = []
    constant_wins: Counter = Counter()
    offset_wins: Counter = Counter()
    from_goal = 0
    for seed in seeds:
        env.reset(seed=seed, options={"task": task_id})
        effect = env.app.tasks[task_id].effect_for(env.app, env.task.params, env.start_state())
        if effect.answer is not None:
            answers.append(repr(effect.answer.expected))
            if effect.answer.kind == "date":
                # a date the goal names, moved by a fixed number of days ("a week before arrival")
                shifts = {(effect.answer.expected - d).days for d in goal_dates(env.task.goal)}
                offset_wins.update(k for k in shifts if abs(k) <= DATE_GUESS_DAYS)
        for guess in CONSTANT_ANSWERS:
            constant_wins[guess] += _verdict(env, _run(env, [f"send_msg_to_user({guess!r})"]))["success"]
        for guess in goal_guesses(env.task.goal):
            if _verdict(env, _run(env, [f"send_msg_to_user({guess!r})"]))["success"]:
                from_goal += 1
                break
    n = len(seeds)
    mode = Counter(answers).most_common(1)[0][1] / n if answers else 0.0
    best_constant = max(constant_wins.values(), default=0) / n
    out = {"most_common_answer": mode, "constant_answer": best_constant, "answer_from_goal": from_goal / n}
    if offset_wins:
        out["goal_date_moved_by_a_fixed_offset"] = max(offset_wins.values()) / n
    return out


#: How far (days) the fixed-offset guess moves a date from the goal.
DATE_GUESS_DAYS = 60
_GOAL_DATE = re.compile(r"\b(?:\d{4}-\d{2}-\d{2}|(?:January|February|March|April|May|June|July|August|September|"
                        r"October|November|December) \d{1,2}, \d{4})\b")


def goal_dates(goal: str) -> list[date]:
    """The calendar dates a goal names (ISO or "January 4, 2026")."""
    from ..judging.verify import parse_date

    return [d for d in (parse_date(m) for m in _GOAL_DATE.findall(goal)) if d is not None]


# ----------------------------------------------------------------------------- whole apps

def redteam(app_name: str, seeds: Iterable[int] = (0,), *, tasks: Iterable[str] | None = None,
            events: bool = True, world_seed: int = 0, progress: Callable[[str], None] | None = None,
            variant: int = 0) -> list[Attack]:
    """Every attack on every template of an app (or ``tasks``) at every seed, on site
    ``variant`` (0: today's site; VariantError for an id the app does not have)."""
    from ..episodes.env import SimEnv

    env = SimEnv(app_name, seed=world_seed, variant=variant)
    ids = list(tasks) if tasks is not None else list(env.app.tasks)
    seeds = list(seeds)
    out: list[Attack] = []
    for task_id in ids:
        for seed in seeds:
            out.extend(attack_instance(env, task_id, seed, events=events))
        template = env.app.tasks[task_id]
        if template.kind in ("info", "mixed") and len(seeds) >= GUESS_MIN_SEEDS:
            rates = guess_rates(env, task_id, seeds)
            for name, rate in rates.items():
                out.append(Attack(task_id, -1, "zero-work", f"{name.replace('_', ' ')} over {len(seeds)} seeds",
                                  rate > GUESS_RATE_LIMIT, f"right on {rate:.0%} of instances"))
        if progress is not None:
            progress(task_id)
    return [replace(a, variant=env.variant) for a in out] if env.variant else out


def table(attacks: list[Attack]) -> list[dict[str, Any]]:
    """Per template: attacks tried, attacks paid (holes), false negatives (correct work unpaid)."""
    rows: dict[str, dict[str, Any]] = {}
    for a in attacks:
        r = rows.setdefault(a.task, {"task": a.task, "tried": 0, "paid": 0, "false_negatives": 0, "examples": []})
        r["tried"] += 1
        r["paid"] += a.paid
        r["false_negatives"] += a.false_negative
        if a.paid or a.false_negative:
            if len(r["examples"]) < 3:
                r["examples"].append(f"{a.family}: {a.name} (seed {a.seed}): {a.detail}")
    return list(rows.values())


def by_family(attacks: list[Attack]) -> dict[str, dict[str, int]]:
    """Per attack family: attacks tried, paid and correct work unpaid (the reward-hacking
    table of docs/effects.md and BENCHMARKS.md counts these)."""
    out: dict[str, dict[str, int]] = {}
    for a in attacks:
        r = out.setdefault(a.family, {"tried": 0, "paid": 0, "false_negatives": 0})
        r["tried"] += 1
        r["paid"] += a.paid
        r["false_negatives"] += a.false_negative
    return dict(sorted(out.items()))


__all__ = ["CHROME_BIDS", "Attack", "answer_forms", "attack_instance", "by_family", "false_reasons", "goal_guesses", "guess_rates",
           "password_guesses", "redteam", "table", "twin_card"]

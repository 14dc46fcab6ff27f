"""Simtracker's programmatic verifiers.

Each function is pure: it reads the start and final states (and the read-only world) and
returns a verdict ``{success, progress, clean, checks}`` (see simweb.verify). They read
the runtime layer directly (entity overlay), never the app's page logic, so a page bug
cannot make a task look solved. ``clean`` compares start and final runtime against the
paths the task may change: closing a second issue or removing a label that was not
named is collateral damage.
"""
from __future__ import annotations

from datetime import date
from typing import Any, Iterable

from simweb.functions import entity_row, new_rows
from simweb.verify import (
    answer_check,
    changed_paths,
    check,
    match_exact,
    normalise_text,
    refusal_check,
    split_items,
    stray_rows,
    unexpected,
    verdict,
)

#: What every state-changing task may touch besides its own rows: system notes and
#: notifications that the site writes as a side effect, id counters, the timer queue.
SIDE_EFFECTS = ("runtime.entities.comments", "runtime.entities.notifications", "runtime.counters",
                "runtime.timers")


def _rt(state: dict) -> dict:
    return state["runtime"]


def diff(start: dict, final: dict, allowed: Iterable[str]) -> list[str]:
    """Changes outside ``allowed``; and, when the task may only change certain issues,
    comments and notifications about any other issue (a side effect on the wrong issue
    is still collateral damage)."""
    allowed = list(allowed)
    out = unexpected(changed_paths(_rt(start), _rt(final)), allowed)
    issues = _named_issues(allowed)
    if issues is not None:
        for table in ("comments", "notifications"):
            if f"runtime.entities.{table}" in allowed:
                out += stray_rows(start, final, table, lambda r: r.get("issue_id") in issues)
    return sorted(set(out))


def _named_issues(allowed: list[str]) -> set[int] | None:
    """The issue ids the allowed paths name one by one (None: the task names no issue, or
    any issue may change)."""
    if "runtime.entities.issues" in allowed or "runtime.entities.issues.*" in allowed:
        return None
    prefix = "runtime.entities.issues."
    named = {int(a[len(prefix):]) for a in allowed if a.startswith(prefix) and a[len(prefix):].isdigit()}
    return named or None


def entity(app: Any, state: dict, table: str, eid: Any) -> dict | None:
    return entity_row(app.world, state, app.function_table.entity_loaders, table, eid)


def inserted(app: Any, state: dict, table: str) -> list[dict]:
    return new_rows(app.world, state, table)


def issue_at(app: Any, state: dict, project_id: int, iid: int) -> dict | None:
    wid = app.world.issue_id_by_iid(project_id, iid)
    if wid is not None:
        return entity(app, state, "issues", wid)
    return next((r for r in inserted(app, state, "issues") if r["project_id"] == project_id and r["iid"] == iid),
                None)


def membership(app: Any, state: dict, project_id: int, user_id: int) -> dict | None:
    w = app.world.membership(project_id, user_id)
    if w is not None:
        return entity(app, state, "members", w["id"])
    return next((r for r in inserted(app, state, "members")
                 if r["project_id"] == project_id and r["user_id"] == user_id), None)


def new_comments(app: Any, start: dict, final: dict, issue_id: int, *, system: bool | None = False) -> list[dict]:
    before = {r["id"] for r in inserted(app, start, "comments")}
    return [r for r in inserted(app, final, "comments") if r["id"] not in before and r["issue_id"] == issue_id
            and (system is None or r["system"] == system)]


# ----------------------------------------------------------------------------- answers

def _usernames(answer: str | None) -> set[str]:
    return {normalise_text(x).lstrip("@") for x in split_items(answer)}


def verify_number_answer(start: dict, final: dict, answer: str | None, n: float, label: str) -> dict:
    return verdict([answer_check("number", answer, n, label)], diff(start, final, []))


def verify_text_answer(start: dict, final: dict, answer: str | None, text: str, label: str) -> dict:
    return verdict([answer_check("text", answer, text, label)], diff(start, final, []))


def verify_date_answer(start: dict, final: dict, answer: str | None, day: date, label: str) -> dict:
    return verdict([answer_check("date", answer, day, label)], diff(start, final, []))


def verify_set_answer(start: dict, final: dict, answer: str | None, items: list[str], label: str,
                      strip_prefix: str = "") -> dict:
    """Every expected item and nothing else, in any order (a leading ``strip_prefix``
    such as '@' or '#' on an item is ignored)."""
    got = {normalise_text(x).lstrip(strip_prefix) for x in split_items(answer)} if strip_prefix else \
        set(split_items(answer))
    want = {normalise_text(e).lstrip(strip_prefix) for e in items}
    return verdict([check(f"answer lists the {label}", got == want, 1.0,
                          f"expected {sorted(want)}, got {answer!r}")], diff(start, final, []))


def verify_infeasible(start: dict, final: dict) -> dict:
    """The agent reported the task as infeasible and changed nothing."""
    return verdict([refusal_check(final)], diff(start, final, []))


# ----------------------------------------------------------------------------- issue changes

def verify_issue(app: Any, start: dict, final: dict, project_id: int, iid: int, expected: dict[str, Any],
                 allowed: Iterable[str], *, extra: list[dict] | None = None) -> dict:
    """Issue ``#iid`` of a project has every expected field value now. ``expected`` values
    may be callables ``f(value) -> bool`` (e.g. 'label 7 is among the labels')."""
    row = issue_at(app, final, project_id, iid)
    checks = []
    for field, want in expected.items():
        got = None if row is None else row.get(field)
        ok = row is not None and (want(got) if callable(want) else got == want)
        checks.append(check(f"issue #{iid} {field}", ok, 1.0, f"got {got!r}"))
    checks += extra or []
    return verdict(checks, diff(start, final, allowed))


def verify_comment(app: Any, start: dict, final: dict, project_id: int, iid: int, user_id: int, body: str,
                   allowed: Iterable[str]) -> dict:
    row = issue_at(app, final, project_id, iid)
    added = new_comments(app, start, final, row["id"]) if row else []
    mine = [c for c in added if c["author_id"] == user_id]
    checks = [check("a comment was added to the issue", bool(mine), 1.0, f"{len(added)} new comments"),
              check("the comment has the requested text", any(match_exact(c["body"], body) for c in mine), 1.0,
                    f"bodies: {[c['body'] for c in mine][:3]!r}"),
              check("exactly one comment was added", len(added) == 1, 0.5, f"{len(added)} new comments")]
    return verdict(checks, diff(start, final, allowed))


def membership_checks(app: Any, start: dict, final: dict, project_id: int, user_id: int, role: str | None,
                      who: str | None = None) -> list[dict]:
    """The user is a member of the project now (checked only if they were not at the
    start) with ``role``; ``who`` (e.g. '@ann') names them in the check names."""
    m = membership(app, final, project_id, user_id)
    was = membership(app, start, project_id, user_id)
    checks = [check(f"{who or 'the user'} is a member", m is not None, 1.0)] if was is None else []
    whose = f"{who}'s" if who else "the"
    checks += [check(f"{whose} role is {role}", m is not None and m["role"] == role, 1.0, f"got {m and m['role']!r}")]
    return checks


def verify_membership(app: Any, start: dict, final: dict, project_id: int, user_id: int, role: str | None,
                      allowed: Iterable[str]) -> dict:
    return verdict(membership_checks(app, start, final, project_id, user_id, role), diff(start, final, allowed))


def verify_new_issue(app: Any, start: dict, final: dict, project_id: int, author_id: int, title: str,
                     expected: dict[str, Any], allowed: Iterable[str], *, extra: list[dict] | None = None) -> dict:
    """Exactly one new issue with the title was created in the project, with the expected fields."""
    before = {r["id"] for r in inserted(app, start, "issues")}
    made = [r for r in inserted(app, final, "issues") if r["id"] not in before and r["project_id"] == project_id]
    hit = [r for r in made if match_exact(r["title"], title)]
    row = hit[-1] if hit else None
    checks = [check("an issue with the title was created", row is not None, 1.0,
                    f"new titles: {[r['title'] for r in made][:3]!r}"),
              check("the issue was opened by you", row is not None and row["author_id"] == author_id, 0.5),
              check("only one issue was created", len(made) == 1, 0.5, f"{len(made)} new issues")]
    for field, want in expected.items():
        got = None if row is None else row.get(field)
        ok = row is not None and (want(got) if callable(want) else got == want)
        checks.append(check(f"new issue {field}", ok, 1.0, f"got {got!r}"))
    checks += extra or []
    return verdict(checks, diff(start, final, list(allowed) + ["runtime.entities.issues"]
                                if not made else _new_issue_paths(made, allowed)))


def _new_issue_paths(made: list[dict], allowed: Iterable[str]) -> list[str]:
    return list(allowed) + [f"runtime.entities.issues.{r['id']}" for r in made[:1]]


def issue_checks(app: Any, final: dict, project_id: int, expected: dict[int, dict[str, Any]]) -> list[dict]:
    """One check per (issue, field): issue ``#iid`` of the project has the expected value
    now (values may be callables ``f(value) -> bool``)."""
    checks = []
    for iid, fields in expected.items():
        row = issue_at(app, final, project_id, iid)
        for field, want in fields.items():
            got = None if row is None else row.get(field)
            ok = row is not None and (want(got) if callable(want) else got == want)
            checks.append(check(f"issue #{iid} {field}", ok, 1.0, f"got {got!r}"))
    return checks


def comment_check(app: Any, start: dict, final: dict, project_id: int, iid: int, body: str,
                  user_id: int | None = None) -> dict:
    """A comment with ``body`` was posted on issue ``#iid`` (by ``user_id`` if given)."""
    row = issue_at(app, final, project_id, iid)
    added = new_comments(app, start, final, row["id"]) if row else []
    ok = any(match_exact(c["body"], body) and (user_id is None or c["author_id"] == user_id) for c in added)
    return check(f"the comment is posted on #{iid}", ok, 1.0, f"bodies: {[c['body'] for c in added][:3]!r}")


def milestone_check(app: Any, final: dict, milestone_id: int, state: str, title: str = "the milestone") -> dict:
    m = entity(app, final, "milestones", milestone_id)
    return check(f"{title} is {state}", m is not None and m["state"] == state, 1.0, f"got {m and m['state']!r}")

"""Portable families of the issues:roundup pair, and the payload seeded into Roundup.

Every instance is a simweb task instance (template + seed, world seed 0, default size)
whose project is :data:`~simweb.counterparts.roundup.PROJECT`, the one project the
tracker holds, so the goal reads the same on both sides. Instances are found by walking
the template's seeds from 0 and keeping those in that project (and fit for the pair:
e.g. at most one assignee, since Roundup has one ``assignedto``).

Each script is one goal-directed agent for both sites: the simweb steps (dashboard ->
project -> issue list -> search) and Roundup's (the sidebar's "Show issue" box) are both
in it, the steps one site lacks marked ``optional``; the report shows them as controls
with no counterpart.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any

from ....agents.scripted import Answer, Check, Click, Fill, Refuse, Select
from ..portable import (
    Instance,
    PortableFamily,
    answer_check,
    check,
    collateral,
    field_check,
    guard,
    refusal_check,
    verdict,
)
from . import CLOSED, PROJECT, ROLE, STATUS, Roundup

if TYPE_CHECKING:  # pragma: no cover
    from ..base import Counterpart

PAIR = "issues:roundup"
WORLD_SEED = 0
MAX_SEEDS = 20_000


@lru_cache(maxsize=1)
def sim_app() -> Any:
    """The simweb issues app on world seed 0 at the default size (built once per process)."""
    from ....runtime.app import load_app
    from ....runtime.registry import definition

    return load_app(definition("issues"), WORLD_SEED, None, progress=False)


def project() -> dict:
    p = sim_app().world.project_by_path(PROJECT)
    if p is None:
        raise RuntimeError(f"the issues world has no project {PROJECT}")
    return p


def username(uid: int) -> str:
    return sim_app().world.user(uid)["username"]


# ----------------------------------------------------------------------------- payload

def priority(labels: list[str]) -> str:
    """Roundup's classic form requires a priority, simweb has none: feature work is
    ``feature``, everything else ``bug``."""
    return "feature" if {"feature", "enhancement"} & set(labels) else "bug"


def payload() -> dict:
    """Keywords, users and issues of :data:`PROJECT` for ``seed.py``."""
    from ....core.worlddb import day_to_date

    app = sim_app()
    w = app.world
    p = project()
    roles = {m["user_id"]: m["role"] for m in w.members(p["id"])}
    issues, uids = [], set(roles)
    for n in range(1, p["issue_count"] + 1):
        wid = w.issue_id_by_iid(p["id"], n)
        if wid is None:
            raise RuntimeError(f"{PROJECT} has no issue #{n}: Roundup numbers would not match")
        i = w.issue(wid)
        day = lambda d: day_to_date(d).isoformat()  # noqa: E731
        msgs = [{"author": i["author_id"], "text": i["description"], "date": day(i["created_day"])}]
        msgs += [{"author": c["author_id"], "text": c["body"], "date": day(c["day"])}
                 for c in w.comments(wid) if not c["system"]]
        uids |= {i["author_id"], *(m["author"] for m in msgs), *i["assignees"][:1]}
        labels = sorted(w.label(x)["name"] for x in i["labels"])
        issues.append({"number": n, "title": i["title"], "status": STATUS[i["state"]], "priority": priority(labels),
                       "author": i["author_id"], "assignee": i["assignees"][0] if i["assignees"] else None,
                       "keywords": labels, "messages": msgs})
    names = {u: username(u) for u in uids}
    for i in issues:
        i["author"] = names[i["author"]]
        i["assignee"] = names[i["assignee"]] if i["assignee"] else None
        for m in i["messages"]:
            m["author"] = names[m["author"]]
    users = []
    for u in sorted(uids):
        rec = w.user(u)
        users.append({"username": rec["username"], "realname": rec["full_name"], "address": rec["email"],
                      "roles": ROLE.get(roles.get(u, "guest"), "User")})
    return {"project": PROJECT, "password": Roundup.password, "keywords": sorted(x["name"] for x in w.labels(p["id"])),
            "users": users, "issues": issues}


# ----------------------------------------------------------------------------- instances

@cache
def _scan(sim_task: str, n: int, fit_key: str, first_seed: int = 0) -> tuple[tuple[int, str, dict], ...]:
    """The first ``n`` seeds of ``sim_task`` from ``first_seed`` on whose instance lies in
    :data:`PROJECT` and fits."""
    app = sim_app()
    template = app.tasks[sim_task]
    fit = _FITS[fit_key]
    out = []
    for seed in range(first_seed, first_seed + MAX_SEEDS):
        inst = template.instantiate(app, seed)
        if inst.params.get("project") == PROJECT and fit(inst.params):
            out.append((seed, inst.goal, inst.params))
            if len(out) == n:
                break
    return tuple(out)


_FITS: dict[str, Callable[[dict], bool]] = {
    "any": lambda p: True,
    # Roundup has one assignee: assigning must not have to keep another one.
    "unassigned": lambda p: not p.get("before"),
    "infeasible": lambda p: p.get("feasible") is False,
}


def issue_title(n: int) -> str:
    w = sim_app().world
    return w.issue(w.issue_id_by_iid(project()["id"], n))["title"]


def open_issue(n: int) -> list:
    """From either start page to issue ``#n``: simweb's project -> issues -> all -> search
    -> result, or Roundup's sidebar "Show issue" box (each optional on the other site)."""
    return [
        Click("link", re.compile(rf"^{re.escape(PROJECT)}$"), optional=True),
        Click("link", "Issues", optional=True),
        Click("link", re.compile(r"^All \d+$"), optional=True),
        Fill("textbox", "Search", text=f"#{n}", optional=True),
        Click("button", "Apply", optional=True),
        Click("link", issue_title(n), optional=True),
        Fill("textbox", None, near=("button", "Show issue:"), text=str(n), optional=True),
        Click("button", "Show issue:", optional=True),
    ]


def _roundup_field(header: str, **kw: Any) -> dict:
    """Roundup's item form has no labels: a control is found by its row's header."""
    return {"near": ("columnheader", header), "optional": True, **kw}


SUBMIT = Click("button", "Submit Changes", optional=True)


class RoundupFamily(PortableFamily):
    """Shared plumbing: instances by seed scan, the start page, the signed-in user."""

    fit: str = "any"

    def instances(self, n: int) -> list[Instance]:
        return self.instances_from(n, 0)

    def instances_from(self, n: int, first_seed: int) -> list[Instance]:
        """Any seed range will do: the tracker holds the whole project, so every instance's
        issues and users are there."""
        found = _scan(self.sim_task, n, self.fit, first_seed)
        if len(found) < n:
            raise RuntimeError(f"{self.id}: only {len(found)} instances in {PROJECT} within {MAX_SEEDS} seeds "
                               f"from {first_seed}")
        return [Instance(self.id, k, self.sim_task, seed, goal, username(p["user_id"]) if p.get("user_id") else None,
                         dict(p)) for k, (seed, goal, p) in enumerate(found)]

    def live_start(self, inst: Instance) -> str:
        return "/tracker/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        assert isinstance(cp, Roundup)
        conn = cp.connect()
        try:
            facts, effect = self.facts(cp, conn, inst, answer, refused)
        finally:
            conn.close()
        _, damage = collateral(cp, effect)
        return verdict(facts, damage)

    def facts(self, cp: Roundup, conn: Any, inst: Instance, answer: str | None,
              refused: bool) -> tuple[list[dict], list[str]]:
        """The goal checks and the ``Change.key`` patterns the effect claims."""
        raise NotImplementedError


def _not_refused(refused: bool) -> list[dict]:
    """A failing "did not refuse" fact after a refusal, none otherwise: not refusing is no
    progress (as in simweb, where zero work has progress 0), only a refusal after the work
    takes the success away."""
    return [check("did not refuse", False, "reported infeasible")] if refused else []


def _new_messages(cp: Roundup, conn: Any, issue: dict, pristine: dict) -> list[int]:
    return sorted(set(issue["messages"]) - set(pristine["messages"]))


def _comment_check(cp: Roundup, conn: Any, inst: Instance, issue: dict, before: dict, text: str) -> dict:
    """Exactly one new message on the issue, by the signed-in user, with the text."""
    new = _new_messages(cp, conn, issue, before)
    uid = cp.user_id(conn, inst.user or "")
    mine = [m for m in new if (conn.execute("SELECT _author FROM _msg WHERE id = ?", (m,)).fetchone() or [None])[0] == uid]
    texts = [cp.message_text(m) for m in mine]
    ok = len(new) == 1 and len(mine) == 1 and verify_text(texts[0], text)
    return check(f"comment “{text}” on #{issue['id']}", ok, f"new messages {new}, by {inst.user}: {texts!r}")


def verify_text(actual: str | None, expected: str) -> bool:
    from ....judging.verify import match_exact

    return match_exact(actual, expected)


def _issue_pair(cp: Roundup, conn: Any, n: int) -> tuple[dict, dict]:
    pconn = cp.pristine_connect()
    try:
        before = cp.issue(pconn, n)
    finally:
        pconn.close()
    now = cp.issue(conn, n)
    if before is None or now is None:
        raise RuntimeError(f"issue{n} missing from the tracker")
    return now, before


# ----------------------------------------------------------------------------- families

class IssueLabels(RoundupFamily):
    id = f"{PAIR}/issue_labels"
    kind = "info"
    sim_task = "issues/issue_labels"
    description = "List the labels (Roundup: keywords) of an issue"

    def script(self, inst: Instance) -> list:
        return open_issue(inst.params["iid"]) + [Answer(", ".join(inst.params["labels"]))]

    def facts(self, cp, conn, inst, answer, refused):
        now = cp.issue(conn, inst.params["iid"])
        facts = [answer_check("set", answer, now["keywords"] if now else [], "labels"),
                 guard(check("the tracker has the labels", bool(now) and now["keywords"] == sorted(inst.params["labels"]),
                             f"keywords {now and now['keywords']}"))]
        return facts, []


class OpenLabelCount(RoundupFamily):
    id = f"{PAIR}/open_label_count"
    kind = "search"
    sim_task = "issues/open_label_count"
    description = "Count the open issues with a label (simweb: filters; Roundup: the search page)"

    def script(self, inst: Instance) -> list:
        label = inst.params["label"]
        return [
            Click("link", re.compile(rf"^{re.escape(PROJECT)}$"), optional=True),
            Click("link", "Issues", optional=True),
            Check("checkbox", label, optional=True),
            Click("button", "Apply", optional=True),
            Click("link", "Search", near=("button", "Show issue:"), optional=True),
            Select("combobox", None, option=label, **_roundup_field("Keyword:")),
            Select("combobox", None, option="not resolved", **_roundup_field("Status:")),
            Click("button", "Search", near=("columnheader", "Filter on"), optional=True),
            Answer(str(inst.params["count"])),
        ]

    def facts(self, cp, conn, inst, answer, refused):
        kw = conn.execute("SELECT id FROM _keyword WHERE _name = ?", (inst.params["label"],)).fetchone()
        closed = [r[0] for r in conn.execute(
            f"SELECT id FROM _status WHERE _name IN ({','.join('?' * len(CLOSED))})", CLOSED)]
        count = conn.execute(
            "SELECT count(*) FROM _issue i JOIN issue_keyword k ON k.nodeid = i.id WHERE k.linkid = ? "
            f"AND i.__retired__ = 0 AND (i._status IS NULL OR i._status NOT IN ({','.join('?' * len(closed)) or 'NULL'}))",
            (kw[0] if kw else -1, *closed)).fetchone()[0]
        return [answer_check("number", answer, count, "number of open issues"),
                guard(check("the tracker agrees with simweb", count == inst.params["count"],
                            f"tracker {count}, simweb {inst.params['count']}"))], []


class AssignIssue(RoundupFamily):
    id = f"{PAIR}/assign_issue"
    kind = "form"
    sim_task = "issues/assign_issue"
    fit = "unassigned"
    description = "Assign an unassigned issue to a member"

    def script(self, inst: Instance) -> list:
        who = inst.params["assignee"]
        return open_issue(inst.params["iid"]) + [
            Select("combobox", "Assign to", option=f"@{who}", optional=True),
            Click("button", "Assign", optional=True),
            Select("combobox", None, option=who, **_roundup_field("Assigned To")),
            SUBMIT,
        ]

    def facts(self, cp, conn, inst, answer, refused):
        n = inst.params["iid"]
        now, _ = _issue_pair(cp, conn, n)
        facts = [field_check(f"#{n} is assigned to {inst.params['assignee']}", now["assignee"], inst.params["assignee"]),
                 *_not_refused(refused)]
        return facts, [f"_issue.{n}._assignedto"]


class CloseIssue(RoundupFamily):
    id = f"{PAIR}/close_issue"
    kind = "form"
    sim_task = "issues/close_issue"
    description = "Close an issue (Roundup: status resolved)"

    def script(self, inst: Instance) -> list:
        return open_issue(inst.params["iid"]) + [
            Click("button", "Close issue", optional=True),
            Select("combobox", None, option="resolved", nth=1, **_roundup_field("Status")),
            SUBMIT,
        ]

    def facts(self, cp, conn, inst, answer, refused):
        n = inst.params["iid"]
        now, _ = _issue_pair(cp, conn, n)
        return [check(f"#{n} is closed", now["status"] in CLOSED, f"status {now['status']}"),
                *_not_refused(refused)], [f"_issue.{n}._status"]


class TriageIssue(RoundupFamily):
    id = f"{PAIR}/triage_issue"
    kind = "flow"
    sim_task = "issues/triage_issue"
    description = ("Triage: two labels, an assignee, a milestone, a due date and a comment (Roundup has no "
                   "milestones or due dates: those two facts cannot pass live)")

    def script(self, inst: Instance) -> list:
        p = inst.params
        w = sim_app().world
        before = sorted(w.label(x)["name"] for x in p["before"])
        steps = open_issue(p["iid"])
        for name in p["labels"]:
            steps += [Select("combobox", "Add label", option=name, optional=True), Click("button", "Add", optional=True)]
        steps += [Select("combobox", "Assign to", option=f"@{p['assignee']}", optional=True),
                  Click("button", "Assign", optional=True),
                  Select("combobox", "Milestone", option=p["milestone"], optional=True),
                  Click("button", "Set milestone", optional=True),
                  Fill("textbox", "Due date", text=p["due"], optional=True),
                  Click("button", "Set due date", optional=True),
                  Fill("textbox", "Comment", text=p["text"], optional=True),
                  Click("button", "Comment", optional=True),
                  Fill("textbox", None, text=",".join([*before, *p["labels"]]), **_roundup_field("Keywords")),
                  Select("combobox", None, option=p["assignee"], **_roundup_field("Assigned To")),
                  Fill("textbox", None, text=p["text"], **_roundup_field("Change Note")),
                  SUBMIT]
        return steps

    def facts(self, cp, conn, inst, answer, refused):
        p = inst.params
        n = p["iid"]
        now, before = _issue_pair(cp, conn, n)
        facts = [check(f"label {x}", x in now["keywords"], f"keywords {now['keywords']}") for x in p["labels"]]
        facts += [field_check(f"assigned to {p['assignee']}", now["assignee"], p["assignee"]),
                  check(f"milestone {p['milestone']}", False, "no milestones in Roundup"),
                  check(f"due {p['due']}", False, "no due dates in Roundup"),
                  _comment_check(cp, conn, inst, now, before, p["text"])]
        return facts, [f"_issue.{n}._assignedto", "issue_keyword.*", "_msg.*", "issue_messages.*", "msg_*"]


class CloseWithRole(RoundupFamily):
    id = f"{PAIR}/close_with_role"
    kind = "refusal"
    sim_task = "issues/close_with_role"
    fit = "infeasible"
    description = "Close an issue one's role does not allow closing: refuse (Roundup: Status is read-only)"

    def refusal_evidence(self, inst: Instance) -> tuple[str, str]:
        n = inst.params["iid"]
        return f"issue #{n} (its status and who opened it)", rf"/issue{n}(?!\d)"

    def script(self, inst: Instance) -> list:
        p = inst.params
        return open_issue(p["iid"]) + [
            Refuse(f"I have the {p['role'].capitalize()} role in {p['project']} and did not open #{p['iid']}; "
                   "closing it needs Developer.")]

    def facts(self, cp, conn, inst, answer, refused):
        n = inst.params["iid"]
        now, before = _issue_pair(cp, conn, n)
        return [refusal_check(refused, answer),
                guard(check(f"#{n} keeps its status", now["status"] == before["status"], f"status {now['status']}"))], []


FAMILIES: list[PortableFamily] = [IssueLabels(), OpenLabelCount(), AssignIssue(), CloseIssue(), TriageIssue(),
                                  CloseWithRole()]


# ----------------------------------------------------------------------------- report mapping

#: Page kinds by URL (path + query), per side, for the divergence report.
PAGE_KINDS = {
    "sim": [(r"/issues/\d+$", "issue"), (r"/issues/new", "new issue"), (r"/issues(\?|$)", "issue list"),
            (r"/milestones", "milestones"), (r"/projects/[^/]+/[^/?]+/?$", "project"), (r"/projects/?$", "projects"),
            (r"/notifications", "notifications"), (r"/dashboard", "issue list"), (r"^/?$", "home")],
    "live": [(r"/issue\d+", "issue"), (r"@template=search", "search"), (r"@template=item", "new issue"),
             (r"/issue(\?|$)", "issue list"), (r"/user\d*", "users"), (r"/keyword", "keywords"),
             (r"/tracker/?(\?.*)?$", "home")],
}

#: How each side shows a rejected form or an error page (matched on the page's HTML).
PAGE_ERRORS = {"sim": r'role="alert"[^>]*>([^<]*)|aria-label="Error"[^>]*>\s*<[^>]*>([^<]*)',
               "live": r'class="error-message"[^>]*>([^<]*)'}

#: simweb's timestamps and counters of a change (Roundup keeps its own in ``_activity``
#: and the journal, and counts messages when it shows them).
SIM_BOOKKEEPING = ("*.updated_day", "*.closed_day", "*.comment_count")

#: What a change in Roundup's database is, in simweb's runtime terms (``table`` for a row
#: created or deleted, ``table.field`` for an update).
STATE_MAP = {
    "_issue": "issues", "_issue._assignedto": "issues.assignees", "_issue._status": "issues.state",
    "_issue._title": "issues.title", "_issue._priority": "issues.priority", "issue_keyword": "issues.labels",
    "_msg": "comments", "issue_messages": "comments", "msg_recipients": "notifications",
    "_keyword": "labels", "_user": "users",
}

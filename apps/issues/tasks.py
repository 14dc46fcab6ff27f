"""Simtracker's task templates.

Each template draws its parameters from the world by seed (thousands of instances per
template), states a goal, lists WebGym-style fact groups (their fact count sets the
difficulty), gives an oracle plan of BrowserGym actions and declares its intended effect
(simweb.effects, built with verifiers/issues.py): which fields of which rows may change
and to what; the engine judges everything else as collateral damage.

Oracle plans use only what the agent sees: they start on the dashboard, follow links
(a project, its issue list) and find an issue by typing its number into the list's
search, never by going to a URL the pages do not show.
"""
from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from typing import Any
from urllib.parse import urlencode

from simweb.core.worlddb import day_to_date
from simweb.judging.decompose import Part, view_part
from simweb.judging.effects import Answer, Effect, NewRow, Reason, Refusal, Row, entity, eq, same_set, text
from simweb.judging.tasks import FactGroup, Rng, TaskTemplate, world_memo
from simweb.verifiers import issues as V

RANK = {"guest": 0, "reporter": 1, "developer": 2, "maintainer": 3}


def fg(id_: str, description: str, *facts: str) -> FactGroup:
    return FactGroup(id_, description, tuple(facts))


# ----------------------------------------------------------------------------- sampling

def pick_project(app: Any, rng: Rng, need: Callable[[dict], bool] | None = None, tries: int = 500) -> dict:
    ids = app.world.project_ids()
    for _ in range(tries):
        p = app.world.project(rng.choice(ids))
        if need is None or need(p):
            return p
    raise RuntimeError("no project satisfies the task's needs")


@world_memo
def members(app: Any, pid: int, min_role: str = "guest", max_role: str = "maintainer") -> list[dict]:
    return [m for m in app.world.members(pid) if RANK[min_role] <= RANK[m["role"]] <= RANK[max_role]]


def pick_issue(app: Any, rng: Rng, p: dict, need: Callable[[dict], bool] | None = None, tries: int = 300
               ) -> dict | None:
    for _ in range(tries):
        wid = app.world.issue_id_by_iid(p["id"], rng.randint(1, p["issue_count"]))
        i = app.world.issue(wid) if wid else None
        if i is not None and (need is None or need(i)):
            return i
    return None


def other_than(issue: dict) -> Callable[[dict], bool]:
    """A ``need`` for pick_issue that takes any issue but ``issue``."""
    iid = issue["id"]
    return lambda o: o["id"] != iid


def pick(app: Any, rng: Rng, need_issue: Callable[[dict], bool] | None = None, role: str = "developer",
         max_role: str = "maintainer", tries: int = 200) -> tuple[dict, dict, dict]:
    """(project, issue, member with a role in [role, max_role]) that satisfy the needs."""
    for _ in range(tries):
        p = pick_project(app, rng)
        ms = members(app, p["id"], role, max_role)
        if not ms:
            continue
        i = pick_issue(app, rng, p, need_issue, tries=60)
        if i is None:
            continue
        return p, i, rng.choice(ms)
    raise RuntimeError("no project/issue/member satisfies the task's needs")


def blocking_links(app: Any, issue_id: int) -> list[dict]:
    """The world's "blocks" links pointing at the issue (its blockers), by blocker."""
    return sorted((ln for ln in app.world.links(issue_id) if ln["kind"] == "blocks" and ln["target_id"] == issue_id),
                  key=lambda ln: ln["source_id"])


@world_memo
def milestone_counts(app: Any, pid: int, by_label: bool) -> dict[tuple, int]:
    """What :func:`count_issues` answers for a project's (milestone, state) filters, or its
    (milestone, label, state) ones with ``by_label``, from one grouped query instead of one
    count per combination. Keyed by ``(milestone, label, state)`` (label None without
    ``by_label``); a combination without issues is not there."""
    rows = app.world.issue_counts_by_milestone(pid, by_label)
    if by_label:
        return {(m, lab, state): n for m, lab, state, n in rows}
    return {(m, None, state): n for m, state, n in rows}


def open_blockers(app: Any, issue_id: int) -> list[dict]:
    out = []
    for ln in blocking_links(app, issue_id):
        b = app.world.issue(ln["source_id"])
        if b["state"] == "opened":
            out.append(b)
    return out


def username(app: Any, uid: int) -> str:
    return app.world.user(uid)["username"]


def count_issues(app: Any, p: dict, **filters: Any) -> int:
    return _issue_count(app, p["id"], **filters)


@world_memo
def _issue_count(app: Any, pid: int, **filters: Any) -> int:
    f: dict[str, Any] = {"project_id": pid, "state": None, "labels": [], "assignee": None, "author": None,
                         "milestone": None, "terms": []}
    f.update(filters)
    return app.world.issue_count(**f)


def in_text(n: int, text: str) -> bool:
    """Whether the number ``n`` is written in ``text`` (a goal must not hold its answer)."""
    return str(n) in re.findall(r"\d+", text)


#: Counts a count question may have as its answer, each drawn equally often. The numbers
#: a guesser tries first (0-3, 5, 10) are left out so that no zero-work answer is right
#: on more than a few per cent of the instances.
_GUESSED = {0, 1, 2, 3, 5, 10}
_LABEL_TOTALS = tuple(n for n in range(4, 31) if n not in _GUESSED)
_LABEL_COUNTS = tuple(n for n in range(4, 15) if n not in _GUESSED)
_MILESTONE_COUNTS = tuple(range(15, 43))        # apart from the label counts: no value is drawn twice as often


# ----------------------------------------------------------------------------- navigation (oracles)

def to_project(p: dict) -> list[str]:
    """From the dashboard (every task's start page) to one of my projects."""
    return [f"click('my-project-{p['id']}')"]


def find_issue(p: dict, iid: int) -> list[str]:
    """From any page of the project to issue ``#iid``: its issue list (all states),
    searched by the issue's number, then the one result."""
    return ["click('project-issues')", "click('state-all')", f"fill('f-q', '#{iid}')", "click('f-apply')",
            f"click('issue-{p['id']}-{iid}')"]


def open_to_issue(p: dict, iid: int) -> list[str]:
    """From the dashboard to issue ``#iid`` of the project."""
    return to_project(p) + find_issue(p, iid)


def issues_url(project: str, **filters: Any) -> str:
    """The address of a project's issue list with these filters (a sub-task's view);
    None values are left out."""
    query = {k: v for k, v in filters.items() if v is not None}
    return f"/projects/{project}/issues" + (f"?{urlencode(query)}" if query else "")


def filters_part(group: FactGroup, url: str, plan: list[str], what: str) -> Part:
    """The first step of a filter-then-answer (or act) template: the project's issue list
    with its filters (in any sort order), which the rest of the parent reads or works through."""
    return view_part((FactGroup(group.id, "The filtered issue list is shown", group.facts),), url, plan,
                     f"{what} Leave that list open; change nothing yet.", free=("sort",))


def issue_path(app: Any, project_id: int, iid: int) -> str:
    return f"/projects/{app.world.project(project_id)['path']}/issues/{iid}"


def start_row(app: Any, start: dict, table: str, eid: int) -> dict:
    """A row as it is at the start of the episode (world plus set-up)."""
    row = entity(app, start, table, eid)
    if row is None:
        raise ValueError(f"{table} {eid} does not exist at the start")
    return row


# ============================================================================= info tasks

class OpenLabelCount(TaskTemplate):
    id = "issues/open_label_count"
    kind = "info"
    title = "Count a project's open issues with a label"

    def sample(self, app, rng):
        # The count is drawn first (uniformly), then a project/label that has it: no single
        # number is the answer of many instances.
        want = rng.choice(_LABEL_TOTALS)
        order = list(app.world.project_ids())
        rng.shuffle(order)
        for p in map(app.world.project, order):
            labs = [lab for lab in app.world.labels(p["id"])
                    if count_issues(app, p, state="opened", labels=[lab["id"]]) == want]
            labs = [lab for lab in labs if not in_text(want, lab["name"] + " " + p["path"])]
            if labs:
                lab = rng.choice(labs)
                return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                        "project_id": p["id"], "label_id": lab["id"], "label": lab["name"], "count": want}
        raise RuntimeError(f"no label with {want} open issues")

    def goal(self, app, p):
        return f"How many open issues in the project {p['project']} have the label “{p['label']}”? Answer with the number."

    def facts(self, app, p):
        return [fg("count", "The answer is the number of open issues with the label", f"{p['count']} open issues")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-issues')", f"check('f-label-{p['label_id']}')", "click('f-apply')",
                                   f"send_msg_to_user('{p['count']}')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["count"], "number of open issues"))


class IssueAssignees(TaskTemplate):
    id = "issues/issue_assignees"
    kind = "info"
    title = "Find who is assigned to an issue"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, lambda i: len(i["assignees"]) >= 1, role="guest")
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "usernames": [username(app, a) for a in i["assignees"]]}

    def goal(self, app, p):
        return (f"Who is assigned to issue #{p['iid']} in {p['project']}? Answer with their usernames "
                f"(comma-separated if several).")

    def facts(self, app, p):
        return [fg("assignees", "The answer names every assignee", *[f"@{u} is assigned" for u in p["usernames"]])]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"send_msg_to_user({', '.join('@' + u for u in p['usernames'])!r})"]

    def effect(self, app, p, start):
        return Effect(checks=(V.listed(p["usernames"], "assignees", prefix="@"),))


class MilestoneDueDate(TaskTemplate):
    id = "issues/milestone_due_date"
    kind = "info"
    title = "Look up when a milestone is due"

    def sample(self, app, rng):
        p = pick_project(app, rng)
        m = rng.choice(app.world.milestones(p["id"]))
        return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                "project_id": p["id"], "milestone_id": m["id"], "milestone": m["title"],
                "due": day_to_date(m["due_day"]).isoformat()}

    def goal(self, app, p):
        return f"When is the milestone “{p['milestone']}” of {p['project']} due? Answer with the date."

    def facts(self, app, p):
        return [fg("due", "The answer is the milestone's due date", f"due {p['due']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-milestones')", "click('ms-all')",
                                   f"click('milestone-{p['milestone_id']}')", f"send_msg_to_user({p['due']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("date", date.fromisoformat(p["due"]), "due date"))


class MilestoneProgress(TaskTemplate):
    id = "issues/milestone_progress"
    kind = "info"
    title = "Report how complete a milestone is"

    def sample(self, app, rng):
        for _ in range(300):
            p = pick_project(app, rng)
            m = rng.choice(app.world.milestones(p["id"]))
            total = count_issues(app, p, milestone=m["id"])
            closed = count_issues(app, p, milestone=m["id"], state="closed")
            if total >= 3 and not in_text(100 * closed // total, m["title"] + " " + p["path"]):
                return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                        "project_id": p["id"], "milestone_id": m["id"], "milestone": m["title"],
                        "percent": 100 * closed // total, "closed": closed, "total": total}
        raise RuntimeError("no milestone with issues")

    def goal(self, app, p):
        return (f"What percentage of the milestone “{p['milestone']}” in {p['project']} is complete "
                f"(closed issues out of all its issues, as the tracker shows it)? Answer with the whole percentage.")

    def facts(self, app, p):
        return [fg("progress", "The milestone's progress is read", f"{p['closed']} of {p['total']} closed",
                   f"{p['percent']}% complete")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-milestones')", "click('ms-all')",
                                   f"click('milestone-{p['milestone_id']}')", f"send_msg_to_user('{p['percent']}%')"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("percent", p["percent"], "percentage complete"))


class IssueLabels(TaskTemplate):
    id = "issues/issue_labels"
    kind = "info"
    title = "List the labels of an issue"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, lambda i: len(i["labels"]) >= 2, role="guest")
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "labels": sorted(app.world.label(x)["name"] for x in i["labels"])}

    def goal(self, app, p):
        return f"Which labels does issue #{p['iid']} in {p['project']} have? List them all, comma-separated."

    def facts(self, app, p):
        return [fg("labels", "The answer lists every label", *[f"label {x}" for x in p["labels"]])]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"send_msg_to_user({', '.join(p['labels'])!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("set", p["labels"], "labels"))


class NewestByAuthor(TaskTemplate):
    id = "issues/newest_by_author"
    kind = "info"
    title = "Find the newest issue an author opened (filter and sort)"

    def sample(self, app, rng):
        for _ in range(300):
            p = pick_project(app, rng)
            author = rng.choice(app.world.members(p["id"]))
            ids = app.world.issue_ids(project_id=p["id"], state=None, labels=[], assignee=None,
                                      author=author["user_id"], milestone=None, terms=[], sort="created", limit=2)
            rows = app.world.issues(ids)
            if len(rows) >= 2 and rows[0]["created_day"] > rows[1]["created_day"]:
                return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                        "project_id": p["id"], "author": username(app, author["user_id"]), "iid": rows[0]["iid"],
                        "answer": rows[0]["title"]}
        raise RuntimeError("no author with two issues")

    def goal(self, app, p):
        return (f"What is the title of the most recently created issue (open or closed) that @{p['author']} "
                f"opened in {p['project']}? Answer with the exact title.")

    def facts(self, app, p):
        return [fg("filters", "The right issues are considered", f"author @{p['author']}", "open and closed"),
                fg("answer", "The newest one is named", f"the answer is {p['answer']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-issues')", "click('state-all')", f"fill('f-author', {p['author']!r})",
                                   "click('f-apply')", f"send_msg_to_user({p['answer']!r})"]

    def effect(self, app, p, start):
        return Effect(answer=Answer("text", p["answer"], "newest issue's title"))


class FilteredCount(TaskTemplate):
    id = "issues/filtered_count"
    kind = "info"
    title = "Count a milestone's issues by state, with or without a label (several filters)"

    def sample(self, app, rng):
        # The count is drawn first, uniformly, so that no constant answer is right on many
        # instances: label x milestone x state counts are small (4..14), so a quarter of the
        # instances ask for those and the rest for milestone x state (15..42).
        with_label = rng.chance(1 / 4)
        want = rng.choice(_LABEL_COUNTS if with_label else _MILESTONE_COUNTS)
        order = list(app.world.project_ids())
        rng.shuffle(order)
        for p in map(app.world.project, order):
            labs = app.world.labels(p["id"]) if with_label else [None]
            counts = milestone_counts(app, p["id"], with_label)
            hits = [(m, lab, state) for m in app.world.milestones(p["id"]) for lab in labs
                    for state in ("opened", "closed")
                    if counts.get((m["id"], lab["id"] if lab else None, state), 0) == want
                    and not in_text(want, " ".join((p["path"], m["title"], lab["name"] if lab else "")))]
            if hits:
                m, lab, state = rng.choice(hits)
                return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                        "project_id": p["id"], "label_id": lab["id"] if lab else None,
                        "label": lab["name"] if lab else None, "milestone": m["title"], "state": state,
                        "count": want}
        raise RuntimeError(f"no milestone (and label) with {want} issues")

    def goal(self, app, p):
        word = "open" if p["state"] == "opened" else "closed"
        if p["label"] is None:
            return (f"In {p['project']}, how many {word} issues belong to the milestone “{p['milestone']}”? "
                    f"Answer with the number.")
        return (f"In {p['project']}, how many {word} issues have the label “{p['label']}” and belong to the "
                f"milestone “{p['milestone']}”? Answer with the number.")

    def facts(self, app, p):
        word = "open" if p["state"] == "opened" else "closed"
        labels = [f"label {p['label']}"] if p["label"] is not None else []
        return [fg("filters", "The right filters are applied", *labels, f"milestone {p['milestone']}",
                   f"{word} issues only"),
                fg("count", "The count is given", f"{p['count']} issues")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        tab = "state-opened" if p["state"] == "opened" else "state-closed"
        label = [f"check('f-label-{p['label_id']}')"] if p["label_id"] is not None else []
        return to_project(proj) + ["click('project-issues')", f"click('{tab}')", *label,
                                   f"select_option('f-milestone', {p['milestone']!r})", "click('f-apply')",
                                   f"send_msg_to_user('{p['count']}')"]

    def parts(self, app, p):
        word = "open" if p["state"] == "opened" else "closed"
        label = f" with the label “{p['label']}”" if p["label"] is not None else ""
        return [filters_part(self.facts(app, p)[0],
                             issues_url(p["project"], state=p["state"], label=p["label"], milestone=p["milestone"]),
                             self.oracle(app, p)[:-1],
                             f"In {p['project']}, list the {word} issues{label} in the milestone “{p['milestone']}”.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["count"], "number of issues"))


# ============================================================================= state tasks

_COMMENTS = ("I can reproduce this on the latest release.", "Looking into this now, expect an update tomorrow.",
             "This should be fixed by the next deploy.", "Could you attach the server logs?",
             "Moving this to the next sprint.", "Confirmed on staging as well.", "Thanks, closing after the fix ships.")

_DONE = ("Closed now that its blockers are resolved.", "Unblocked and verified, closing.",
         "All blocking work has shipped; closing this too.")


class CommentOnIssue(TaskTemplate):
    id = "issues/comment"
    title = "Comment on an issue"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, role="guest")
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "issue_id": i["id"], "text": rng.choice(_COMMENTS)}

    def goal(self, app, p):
        return f"Add the comment “{p['text']}” to issue #{p['iid']} in {p['project']}."

    def facts(self, app, p):
        return [fg("comment", "The comment is posted", f"comment on #{p['iid']}", f"text “{p['text']}”")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [
            f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]

    def effect(self, app, p, start):
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}"),
                       V.comment(p["issue_id"], p["user_id"], p["text"], f"the comment on #{p['iid']}")))


class CloseIssue(TaskTemplate):
    id = "issues/close_issue"
    title = "Close an issue that has no open blockers"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, lambda i: i["state"] == "opened" and not open_blockers(app, i["id"]),
                       role="developer")
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "issue_id": i["id"], "title": i["title"]}

    def goal(self, app, p):
        return f"Close issue #{p['iid']} (“{p['title']}”) in {p['project']}."

    def facts(self, app, p):
        return [fg("closed", "The issue is closed", f"#{p['iid']} is closed")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + ["click('close-issue')"]

    def effect(self, app, p, start):
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", state=eq("closed")),))


class ReopenIssue(TaskTemplate):
    id = "issues/reopen_issue"
    title = "Reopen a closed issue"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, lambda i: i["state"] == "closed", role="developer")
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "issue_id": i["id"]}

    def goal(self, app, p):
        return f"Issue #{p['iid']} in {p['project']} was closed by mistake. Reopen it."

    def facts(self, app, p):
        return [fg("reopened", "The issue is open again", f"#{p['iid']} is open")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + ["click('reopen-issue')"]

    def effect(self, app, p, start):
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", state=eq("opened")),))


class AssignIssue(TaskTemplate):
    id = "issues/assign_issue"
    title = "Assign an issue to a project member"

    def sample(self, app, rng):
        for _ in range(200):
            p, i, m = pick(app, rng, lambda i: len(i["assignees"]) < 3 and i["state"] == "opened", role="reporter")
            cands = [x for x in app.world.members(p["id"]) if x["user_id"] not in i["assignees"]]
            if cands:
                who = rng.choice(cands)
                return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                        "issue_id": i["id"], "assignee_id": who["user_id"],
                        "assignee": username(app, who["user_id"]), "before": i["assignees"]}
        raise RuntimeError("no assignable member")

    def goal(self, app, p):
        return f"Assign issue #{p['iid']} in {p['project']} to @{p['assignee']} (keep any current assignees)."

    def facts(self, app, p):
        return [fg("assigned", "The member is assigned", f"@{p['assignee']} assigned to #{p['iid']}",
                   "current assignees kept")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"select_option('assign-user', '@{p['assignee']}')",
                                                "click('assign-submit')"]

    def effect(self, app, p, start):
        before = start_row(app, start, "issues", p["issue_id"])["assignees"]
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}",
                               assignees=same_set([*before, p["assignee_id"]])),))


class AddLabel(TaskTemplate):
    id = "issues/add_label"
    title = "Add a label to an issue"

    def sample(self, app, rng):
        for _ in range(200):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened", role="reporter")
            cands = [x for x in app.world.labels(p["id"]) if x["id"] not in i["labels"]]
            if cands:
                lab = rng.choice(cands)
                return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                        "issue_id": i["id"], "label_id": lab["id"], "label": lab["name"], "before": i["labels"]}
        raise RuntimeError("no label to add")

    def goal(self, app, p):
        return f"Add the label “{p['label']}” to issue #{p['iid']} in {p['project']}."

    def facts(self, app, p):
        return [fg("label", "The label is added", f"#{p['iid']} has label {p['label']}", "other labels kept")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"select_option('label-select', {p['label']!r})",
                                                "click('label-submit')"]

    def effect(self, app, p, start):
        before = start_row(app, start, "issues", p["issue_id"])["labels"]
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", labels=same_set([*before, p["label_id"]])),))


class SetMilestone(TaskTemplate):
    id = "issues/set_milestone"
    title = "Move an issue into an active milestone"

    def sample(self, app, rng):
        for _ in range(200):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened", role="reporter")
            cands = [x for x in app.world.milestones(p["id"]) if x["state"] == "active" and x["id"] != i["milestone_id"]]
            if cands:
                ms = rng.choice(cands)
                return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                        "issue_id": i["id"], "milestone_id": ms["id"], "milestone": ms["title"]}
        raise RuntimeError("no milestone to set")

    def goal(self, app, p):
        return f"Put issue #{p['iid']} in {p['project']} into the milestone “{p['milestone']}”."

    def facts(self, app, p):
        return [fg("milestone", "The milestone is set", f"#{p['iid']} in milestone {p['milestone']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"select_option('milestone-select', {p['milestone']!r})",
                                                "click('milestone-submit')"]

    def effect(self, app, p, start):
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", milestone_id=eq(p["milestone_id"])),))


class SetDueDate(TaskTemplate):
    id = "issues/set_due_date"
    title = "Set an issue's due date"

    def sample(self, app, rng):
        p, i, m = pick(app, rng, lambda i: i["state"] == "opened", role="reporter")
        due = rng.randint(10, 120)
        return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                "issue_id": i["id"], "due_day": due, "due": day_to_date(due).isoformat()}

    def goal(self, app, p):
        return f"Set the due date of issue #{p['iid']} in {p['project']} to {p['due']}."

    def facts(self, app, p):
        return [fg("due", "The due date is set", f"#{p['iid']} due {p['due']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [f"fill('due-input', {p['due']!r})", "click('due-submit')"]

    def effect(self, app, p, start):
        # The reminder the site schedules for the new date is a timer (bookkeeping).
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", due_day=eq(p["due_day"])),))


class LinkIssues(TaskTemplate):
    id = "issues/link_issues"
    title = "Mark one issue as blocked by another"

    def sample(self, app, rng):
        for _ in range(300):
            p, i, m = pick(app, rng, lambda x: x["state"] == "opened", role="reporter")
            other = pick_issue(app, rng, p, other_than(i), tries=20)
            if other is None:
                continue
            linked = {ln["source_id"] for ln in app.world.links(i["id"])} | \
                     {ln["target_id"] for ln in app.world.links(i["id"])}
            if other["id"] in linked:
                continue
            return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                    "issue_id": i["id"], "blocker_iid": other["iid"], "blocker_id": other["id"]}
        raise RuntimeError("no pair to link")

    def goal(self, app, p):
        return f"In {p['project']}, mark issue #{p['iid']} as blocked by issue #{p['blocker_iid']}."

    def facts(self, app, p):
        return [fg("link", "The blocking link exists", f"#{p['blocker_iid']} blocks #{p['iid']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + ["select_option('link-kind', 'is blocked by')",
                                                f"fill('link-target', '{p['blocker_iid']}')", "click('link-submit')"]

    def effect(self, app, p, start):
        # Made from either issue's page; every other link (one deleted on the way) is damage.
        return Effect((NewRow("links", {"source_id": eq(p["blocker_id"]), "target_id": eq(p["issue_id"]),
                                          "kind": eq("blocks")}, label=f"#{p['blocker_iid']} blocks #{p['iid']}"),))


class AddMember(TaskTemplate):
    id = "issues/add_member"
    title = "Add a user to a project with a role (as a maintainer)"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_project(app, rng)
            maint = members(app, p["id"], "maintainer")
            inside = {m["user_id"] for m in app.world.members(p["id"])}
            uid = rng.randint(1, app.world.max_id("users"))
            if uid in inside or not maint:
                continue
            return {"user_id": rng.choice(maint)["user_id"], "project": p["path"], "project_id": p["id"],
                    "new_user_id": uid, "username": username(app, uid),
                    "role": rng.choice(["guest", "reporter", "developer"])}
        raise RuntimeError("no user to add")

    def goal(self, app, p):
        return f"Add @{p['username']} to the project {p['project']} with the {p['role'].capitalize()} role."

    def facts(self, app, p):
        return [fg("member", "The user is a member with the role", f"@{p['username']} is a member",
                   f"role {p['role']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-members')", f"fill('member-username', {p['username']!r})",
                                   f"select_option('member-role', {p['role'].capitalize()!r})",
                                   "click('member-submit')"]

    def effect(self, app, p, start):
        return Effect((V.member(p["project_id"], p["new_user_id"], p["role"], f"@{p['username']} is {p['role']}"),))


class ChangeRole(TaskTemplate):
    id = "issues/change_role"
    title = "Change a member's role (as a maintainer)"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_project(app, rng)
            maint = members(app, p["id"], "maintainer")
            others = members(app, p["id"], "guest", "developer")
            if not maint or not others:
                continue
            target = rng.choice(others)
            role = rng.choice([r for r in ("guest", "reporter", "developer", "maintainer") if r != target["role"]])
            return {"user_id": rng.choice(maint)["user_id"], "project": p["path"], "project_id": p["id"],
                    "member_id": target["id"], "member_user_id": target["user_id"],
                    "username": username(app, target["user_id"]), "role": role, "old_role": target["role"]}
        raise RuntimeError("no member to change")

    def goal(self, app, p):
        return f"In {p['project']}, change @{p['username']}'s role to {p['role'].capitalize()}."

    def facts(self, app, p):
        return [fg("role", "The role is changed", f"@{p['username']} is now {p['role']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-members')",
                                   f"select_option('role-select-{p['member_user_id']}', {p['role'].capitalize()!r})",
                                   f"click('role-submit-{p['member_user_id']}')"]

    def effect(self, app, p, start):
        return Effect((Row("members", p["member_id"], {"role": eq(p["role"])}, label=f"@{p['username']}"),))


class MarkAllRead(TaskTemplate):
    id = "issues/mark_all_read"
    title = "Clear the notification inbox"

    def sample(self, app, rng):
        for _ in range(500):
            uid = rng.randint(1, app.world.max_id("users"))
            ids = app.world.unread_notification_ids(uid)
            if len(ids) >= 2:
                return {"user_id": uid, "unread": ids}
        raise RuntimeError("no user with unread notifications")

    def goal(self, app, p):
        return "Mark all my notifications as read."

    def facts(self, app, p):
        return [fg("read", "No unread notification is left", f"{len(p['unread'])} notifications marked read")]

    def oracle(self, app, p):
        return ["click('nav-notifications')", "click('mark-all-read')"]

    def effect(self, app, p, start):
        return Effect(tuple(Row("notifications", n, {"read": eq(True)}, label=f"notification {n}")
                            for n in p["unread"]))


# ============================================================================= refusals (mixed)
#
# Each may be infeasible: its sample() flips a coin with the task's rng, and both kinds
# share one goal phrasing. A feasible instance must be done; an infeasible one must be
# refused after viewing the page that shows why (the start page never does).

#: A refusal that blames the account's rights ("I am not allowed", "my role cannot").
_LACKS_ROLE = ("~permission", "~not allowed", "~allowed to", "~rights", "~privilege*", "~access", "~my role",
               "~your role", "~role does not", "~role doesn't", "~role cannot", "~role can't", "~role only")


class CloseWithRole(TaskTemplate):
    id = "issues/close_with_role"
    kind = "mixed"
    may_refuse = True
    title = "Close an issue if your role allows it (Developer, or a Reporter who opened it), else refuse"

    def sample(self, app, rng):
        feasible = rng.chance(0.5)
        own = feasible and rng.chance(0.5)   # feasible as the Reporter who opened it, else as a Developer+
        for _ in range(400):
            p = pick_project(app, rng)
            i = pick_issue(app, rng, p, lambda i: i["state"] == "opened" and not open_blockers(app, i["id"]), tries=40)
            if i is None:
                continue
            ms = app.world.members(p["id"])
            if own:
                cands = [m for m in ms if m["user_id"] == i["author_id"] and m["role"] == "reporter"]
            elif feasible:
                cands = [m for m in ms if RANK[m["role"]] >= RANK["developer"]]
            else:
                cands = [m for m in ms if m["role"] == "reporter" and m["user_id"] != i["author_id"]]
            if cands:
                m = rng.choice(cands)
                return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                        "issue_id": i["id"], "role": m["role"], "author": username(app, i["author_id"]),
                        "feasible": feasible}
        raise RuntimeError("no issue and member for the role check")

    def goal(self, app, p):
        return (f"Close issue #{p['iid']} in {p['project']}. If you are not allowed to, tell me why instead "
                f"of changing anything.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("closed", "The issue is closed", f"#{p['iid']} is closed")]
        return [fg("refusal", "The agent reports that the task is infeasible", f"your role is {p['role']}",
                   f"#{p['iid']} was opened by @{p['author']}", "nothing is changed")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        if p["feasible"]:
            return open_to_issue(proj, p["iid"]) + ["click('close-issue')"]
        return open_to_issue(proj, p["iid"]) + [
            f"report_infeasible('I have the {p['role'].capitalize()} role in {p['project']} and did not open "
            f"#{p['iid']}; closing it needs Developer.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", state=eq("closed")),))
        why = Reason(f"the {p['role']} role may close only issues it opened",
                     _LACKS_ROLE + ("reporter", "developer*", "maintainer*", "~only the author", "~not the author",
                                    "~didn't open", "~did not open", "~not opened by", "~opened by",
                                    "~close button", "~option to close"),
                     ("block*", "already closed", "locked", "milestone*", "guest", "~not a member", "~not found",
                      "~doesn't exist", "~does not exist", "archived"), refs=(p["iid"],))
        return Effect(refusal=Refusal((issue_path(app, p["project_id"], p["iid"]),),
                                      label=f"issue #{p['iid']} (who opened it; no Close button for you)", reason=why))


class CloseIfUnblocked(TaskTemplate):
    id = "issues/close_if_unblocked"
    kind = "mixed"
    may_refuse = True
    title = "Close an issue that other issues block, if all its blockers are closed, else refuse"

    def sample(self, app, rng):
        # Every instance's issue has blocking links (the page looks alike); only their state differs.
        feasible = rng.chance(0.5)
        for _ in range(400):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened" and bool(blocking_links(app, i["id"]))
                           and (not open_blockers(app, i["id"])) == feasible, role="developer")
            still = sorted(b["iid"] for b in open_blockers(app, i["id"]))
            return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                    "issue_id": i["id"], "blockers": still,
                    "blocker_iids": sorted(app.world.issue(ln["source_id"])["iid"]
                                           for ln in blocking_links(app, i["id"])),
                    "feasible": feasible}
        raise RuntimeError("no blocked issue")

    def goal(self, app, p):
        return (f"Close issue #{p['iid']} in {p['project']}, but only if nothing open blocks it; do not touch "
                f"any other issue. If it cannot be closed, say why.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("closed", "Its blockers are all closed, and so is the issue now",
                       *[f"#{b} is closed" for b in p["blocker_iids"]], f"#{p['iid']} is closed")]
        return [fg("refusal", "The agent finds the blockers and refuses",
                   *[f"#{b} is open and blocks it" for b in p["blockers"]], "report infeasible")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        if p["feasible"]:
            return open_to_issue(proj, p["iid"]) + ["click('close-issue')"]
        text = ", ".join(f"#{b}" for b in p["blockers"])
        return open_to_issue(proj, p["iid"]) + [f"report_infeasible('It is blocked by {text}, which is still open.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", state=eq("closed")),))
        pages = [issue_path(app, p["project_id"], n) for n in [p["iid"], *p["blockers"]]]
        why = Reason("open issues block it", ("block*", "depend*", "~still open", "~not closed", "~not yet closed",
                                               "~not been closed", "~unresolved"),
                     _LACKS_ROLE + ("already closed", "locked", "milestone*", "reporter", "guest", "~not found",
                                    "~doesn't exist", "~does not exist", "archived"),
                     refs=(p["iid"], *p["blocker_iids"]))
        return Effect(refusal=Refusal(tuple(pages), label=f"issue #{p['iid']} or an open blocker of it", reason=why))


class AddToMilestone(TaskTemplate):
    id = "issues/add_to_milestone"
    kind = "mixed"
    may_refuse = True
    title = "Add an issue to a milestone if it is still open, else refuse"

    def sample(self, app, rng):
        # The milestone is any of the project's; set-up opens or closes it by the coin, so
        # neither its title nor its project tells whether the instance is feasible.
        feasible = rng.chance(0.5)
        for _ in range(300):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened", role="reporter")
            cands = [x for x in app.world.milestones(p["id"]) if x["id"] != i["milestone_id"]]
            if cands:
                ms = rng.choice(cands)
                return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                        "issue_id": i["id"], "milestone": ms["title"], "milestone_id": ms["id"],
                        "feasible": feasible}
        raise RuntimeError("no milestone")

    def setup(self, app, state, p):
        row = start_row(app, state, "milestones", p["milestone_id"])
        want = "active" if p["feasible"] else "closed"
        if row["state"] != want:
            state["runtime"]["entities"].setdefault("milestones", {})[str(p["milestone_id"])] = dict(row, state=want)

    def goal(self, app, p):
        return (f"Add issue #{p['iid']} in {p['project']} to the milestone “{p['milestone']}”. If that is not "
                f"possible, tell me why instead.")

    def facts(self, app, p):
        if p["feasible"]:
            return [fg("milestone", "The issue is in the milestone", f"#{p['iid']} in milestone {p['milestone']}")]
        return [fg("refusal", "The agent notices the milestone is closed", f"{p['milestone']} is closed",
                   "report infeasible")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        if p["feasible"]:
            return open_to_issue(proj, p["iid"]) + [f"select_option('milestone-select', {p['milestone']!r})",
                                                    "click('milestone-submit')"]
        return to_project(proj) + ["click('project-milestones')", "click('ms-closed')",
                                   f"click('milestone-{p['milestone_id']}')",
                                   f"report_infeasible('The milestone {p['milestone']} is closed and takes no new issues.')"]

    def effect(self, app, p, start):
        if p["feasible"]:
            return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", milestone_id=eq(p["milestone_id"])),))
        base = f"/projects/{p['project']}/milestones"
        why = Reason(f"the milestone {p['milestone']} is closed",
                     ("closed", "~inactive", "~not active", "~no longer active", "~not open", "~no longer open",
                      "completed", "finished", "expired", "~past its due", "overdue"),
                     _LACKS_ROLE + ("reporter", "guest", "issue is closed", "issue has been closed", "already in",
                                    "already assigned", "~not found", "~doesn't exist", "~does not exist",
                                    "block*", "locked", "archived"), refs=(p["iid"],))
        return Effect(refusal=Refusal((f"{base}/{p['milestone_id']}", f"{base}?state=closed", f"{base}?state=all"),
                                      label=f"that {p['milestone']} is closed (its page or the closed milestones)",
                                      reason=why))


# ============================================================================= forms and multi-goal

_TITLES = ("Export button ignores the selected columns", "Add a CSV import for contacts",
           "Password reset email arrives twice", "Dashboard widgets overlap on tablets",
           "Support SSO login with Okta", "Search misses issues with accents", "Slow response on the reports page",
           "Add audit events for role changes", "Document the webhook retry policy", "Dark mode for the settings page")
_DESCS = ("Seen by several customers since Monday.", "Steps: open the page, click the button, observe the result.",
          "We need this for the enterprise launch.", "Happens only with more than 1,000 rows.",
          "Product signed off on the design last week.")


class CreateIssue(TaskTemplate):
    id = "issues/create_issue"
    kind = "state"
    title = "Open an issue with a description, labels and a milestone"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            rep = members(app, p["id"], "reporter")
            if not ms or not rep:
                continue
            labs = rng.sample(app.world.labels(p["id"]), 2)
            m = rng.choice(ms)
            return {"user_id": rng.choice(rep)["user_id"], "project": p["path"], "project_id": p["id"],
                    "title": f"{rng.choice(_TITLES)} ({rng.randint(100, 999)})", "description": rng.choice(_DESCS),
                    "label_ids": sorted(x["id"] for x in labs), "labels": [x["name"] for x in labs],
                    "milestone_id": m["id"], "milestone": m["title"]}
        raise RuntimeError("no project for a new issue")

    def goal(self, app, p):
        return (f"Open a new issue in {p['project']} titled “{p['title']}” with the description "
                f"“{p['description']}”, the labels {p['labels'][0]} and {p['labels'][1]}, in the milestone "
                f"“{p['milestone']}”.")

    def facts(self, app, p):
        return [fg("issue", "The issue exists with the requested fields", f"title {p['title']}",
                   f"description {p['description']}", f"label {p['labels'][0]}", f"label {p['labels'][1]}",
                   f"milestone {p['milestone']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('new-issue')",
                                   f"fill('issue-title', {p['title']!r})", f"fill('issue-description', {p['description']!r})",
                                   *[f"check('new-label-{x}')" for x in p["label_ids"]],
                                   f"select_option('issue-milestone', {p['milestone']!r})", "click('issue-submit')"]

    def effect(self, app, p, start):
        # One issue, open at the end, with exactly this content and nothing unasked for (an
        # assignee would be notified, a due date would schedule a reminder).
        return Effect((NewRow("issues", {
            "project_id": eq(p["project_id"]), "author_id": eq(p["user_id"]), "title": text(p["title"]),
            "description": text(p["description"]), "labels": same_set(p["label_ids"]),
            "milestone_id": eq(p["milestone_id"]), "state": eq("opened"), "assignees": same_set([]),
            "due_day": eq(None), "weight": eq(None)}, label=f"the new issue “{p['title']}”"),))


class CreateAssignLabel(TaskTemplate):
    id = "issues/create_assign_label"
    kind = "state"
    title = "Open an issue, assign it, label it and give it a due date and weight"

    def sample(self, app, rng):
        for _ in range(200):
            p = pick_project(app, rng)
            rep = members(app, p["id"], "reporter")
            devs = members(app, p["id"], "developer")
            if not rep or not devs:
                continue
            me = rng.choice(rep)
            devs = [d for d in devs if d["user_id"] != me["user_id"]]
            if not devs:
                continue
            who = rng.choice(devs)
            lab = rng.choice(app.world.labels(p["id"]))
            due = rng.randint(7, 90)
            return {"user_id": me["user_id"], "project": p["path"], "project_id": p["id"],
                    "title": f"{rng.choice(_TITLES)} ({rng.randint(100, 999)})", "description": rng.choice(_DESCS),
                    "assignee_id": who["user_id"], "assignee": username(app, who["user_id"]),
                    "label_id": lab["id"], "label": lab["name"], "due_day": due, "due": day_to_date(due).isoformat(),
                    "weight": rng.randint(1, 9)}
        raise RuntimeError("no project for a new issue")

    def goal(self, app, p):
        return (f"In {p['project']}, open an issue titled “{p['title']}” (description: “{p['description']}”), "
                f"assign it to @{p['assignee']}, add the label {p['label']}, set the due date to {p['due']} and "
                f"the weight to {p['weight']}.")

    def facts(self, app, p):
        return [fg("issue", "The issue is created", f"title {p['title']}", f"description {p['description']}"),
                fg("triage", "The issue is triaged", f"assigned to @{p['assignee']}", f"label {p['label']}",
                   f"due {p['due']}", f"weight {p['weight']}"),
                fg("notify", "The assignee is notified", f"@{p['assignee']} gets a notification")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('new-issue')", f"fill('issue-title', {p['title']!r})",
                                   f"fill('issue-description', {p['description']!r})",
                                   f"check('new-label-{p['label_id']}')", f"check('new-assignee-{p['assignee_id']}')",
                                   f"fill('issue-due', {p['due']!r})", f"fill('issue-weight', '{p['weight']}')",
                                   "click('issue-submit')"]

    def effect(self, app, p, start):
        # The assignee's notification is the site's echo of the assignment (bookkeeping).
        return Effect((NewRow("issues", {
            "project_id": eq(p["project_id"]), "author_id": eq(p["user_id"]), "title": text(p["title"]),
            "description": text(p["description"]), "assignees": same_set([p["assignee_id"]]),
            "labels": same_set([p["label_id"]]), "due_day": eq(p["due_day"]), "weight": eq(p["weight"]),
            "milestone_id": eq(None), "state": eq("opened")}, label=f"the new issue “{p['title']}”"),))

    def parts(self, app, p):
        # One form creates the issue with all of it; the part is the issue as a reporter
        # would file it, untriaged: the same row with triage on it is not this part's.
        proj = app.world.project(p["project_id"])
        plan = to_project(proj) + ["click('new-issue')", f"fill('issue-title', {p['title']!r})",
                                   f"fill('issue-description', {p['description']!r})", "click('issue-submit')"]
        return [Part(("issue",), (), tuple(plan),
                     f"In {p['project']}, open an issue titled “{p['title']}” (description: “{p['description']}”). "
                     f"Leave it untriaged for now: no assignee, label, due date or weight yet.",
                     extra=lambda start: Effect((NewRow("issues", {
                         "project_id": eq(p["project_id"]), "author_id": eq(p["user_id"]), "title": text(p["title"]),
                         "description": text(p["description"]), "assignees": eq([]), "labels": eq([]),
                         "due_day": eq(None), "weight": eq(None), "milestone_id": eq(None), "state": eq("opened")},
                         label=f"the new untriaged issue “{p['title']}”"),)))]


class CloseLabelInMilestone(TaskTemplate):
    id = "issues/close_label_in_milestone"
    kind = "state"
    title = "Close every open issue with a label in a milestone (and nothing else)"

    def sample(self, app, rng):
        for _ in range(600):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            devs = members(app, p["id"], "developer")
            if not ms or not devs:
                continue
            m = rng.choice(ms)
            lab = rng.choice(app.world.labels(p["id"]))
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[lab["id"]], assignee=None,
                                      author=None, milestone=m["id"], terms=[], sort="created", limit=10)
            if not 2 <= len(ids) <= 5:
                continue
            if any(open_blockers(app, i) for i in ids):
                continue
            rows = app.world.issues(ids)
            return {"user_id": rng.choice(devs)["user_id"], "project": p["path"], "project_id": p["id"],
                    "label_id": lab["id"], "label": lab["name"], "milestone": m["title"], "milestone_id": m["id"],
                    "iids": sorted(r["iid"] for r in rows), "issue_ids": sorted(ids)}
        raise RuntimeError("no label/milestone with a few open issues")

    def goal(self, app, p):
        return (f"In {p['project']}, close every open issue that has the label “{p['label']}” and is in the "
                f"milestone “{p['milestone']}”. Leave all other issues as they are.")

    def facts(self, app, p):
        return [fg("filters", "The right issues are found", f"label {p['label']}", f"milestone {p['milestone']}",
                   "open issues only"),
                fg("closed", "Each of them is closed", *[f"#{n} closed" for n in p["iids"]]),
                fg("clean", "No other issue changes", "no other issue closed")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        acts = to_project(proj) + ["click('project-issues')", f"check('f-label-{p['label_id']}')",
                                   f"select_option('f-milestone', {p['milestone']!r})", "click('f-apply')"]
        for n in p["iids"]:
            acts += find_issue(proj, n) + ["click('close-issue')"]
        return acts

    def parts(self, app, p):
        return [filters_part(self.facts(app, p)[0],
                             issues_url(p["project"], state="opened", label=p["label"], milestone=p["milestone"]),
                             self.oracle(app, p)[:5],
                             f"In {p['project']}, list the open issues that have the label “{p['label']}” and are in "
                             f"the milestone “{p['milestone']}”.")]

    def effect(self, app, p, start):
        rows = {r["id"]: r["iid"] for r in app.world.issues(p["issue_ids"])}
        return Effect(tuple(V.issue(i, f"issue #{rows[i]}", state=eq("closed")) for i in p["issue_ids"]))


class OpenBlockers(TaskTemplate):
    id = "issues/open_blockers"
    kind = "info"
    title = "List the open issues that block an issue"

    def sample(self, app, rng):
        for _ in range(400):
            p, i, m = pick(app, rng, lambda i: bool(open_blockers(app, i["id"])), role="guest")
            return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                    "blockers": [f"#{n}" for n in sorted(b["iid"] for b in open_blockers(app, i["id"]))]}
        raise RuntimeError("no blocked issue")

    def goal(self, app, p):
        return (f"Which open issues currently block issue #{p['iid']} in {p['project']}? Answer with their "
                f"numbers like #12, comma-separated.")

    def facts(self, app, p):
        return [fg("blockers", "Every open blocker is named", *[f"{b} blocks it and is open" for b in p["blockers"]])]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return open_to_issue(proj, p["iid"]) + [
            f"send_msg_to_user({', '.join(p['blockers'])!r})"]

    def effect(self, app, p, start):
        return Effect(checks=(V.listed(p["blockers"], "open blockers", prefix="#"),))


class TriageIssue(TaskTemplate):
    id = "issues/triage_issue"
    kind = "state"
    title = "Triage an issue: two labels, an assignee, a milestone, a due date and a comment"

    def sample(self, app, rng):
        for _ in range(300):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened" and not i["assignees"], role="reporter")
            labs = [x for x in app.world.labels(p["id"]) if x["id"] not in i["labels"]]
            ms = [x for x in app.world.milestones(p["id"]) if x["state"] == "active" and x["id"] != i["milestone_id"]]
            devs = [x for x in members(app, p["id"], "developer") if x["user_id"] != m["user_id"]]
            if len(labs) < 2 or not ms or not devs:
                continue
            two = rng.sample(labs, 2)
            who, mile, due = rng.choice(devs), rng.choice(ms), rng.randint(5, 60)
            return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                    "issue_id": i["id"], "before": i["labels"], "label_ids": [x["id"] for x in two],
                    "labels": [x["name"] for x in two], "assignee_id": who["user_id"],
                    "assignee": username(app, who["user_id"]), "milestone_id": mile["id"], "milestone": mile["title"],
                    "due_day": due, "due": day_to_date(due).isoformat(), "text": rng.choice(_COMMENTS)}
        raise RuntimeError("no issue to triage")

    def goal(self, app, p):
        return (f"Triage issue #{p['iid']} in {p['project']}: add the labels {p['labels'][0]} and {p['labels'][1]}, "
                f"assign it to @{p['assignee']}, put it in the milestone “{p['milestone']}”, set the due date to "
                f"{p['due']} and comment “{p['text']}”.")

    def facts(self, app, p):
        return [fg("labels", "Both labels are added", f"label {p['labels'][0]}", f"label {p['labels'][1]}"),
                fg("plan", "The issue is planned", f"assigned to @{p['assignee']}", f"milestone {p['milestone']}",
                   f"due {p['due']}"),
                fg("comment", "The comment is posted", f"comment “{p['text']}”")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        acts = open_to_issue(proj, p["iid"])
        for name in p["labels"]:
            acts += [f"select_option('label-select', {name!r})", "click('label-submit')"]
        return acts + [f"select_option('assign-user', '@{p['assignee']}')", "click('assign-submit')",
                       f"select_option('milestone-select', {p['milestone']!r})", "click('milestone-submit')",
                       f"fill('due-input', {p['due']!r})", "click('due-submit')",
                       f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]

    def parts(self, app, p):
        proj = app.world.project(p["project_id"])
        there = open_to_issue(proj, p["iid"])
        where = f"issue #{p['iid']} in {p['project']}"
        labels = [a for name in p["labels"] for a in (f"select_option('label-select', {name!r})", "click('label-submit')")]
        plan = [f"select_option('assign-user', '@{p['assignee']}')", "click('assign-submit')",
                f"select_option('milestone-select', {p['milestone']!r})", "click('milestone-submit')",
                f"fill('due-input', {p['due']!r})", "click('due-submit')"]
        return [
            Part(("labels",), ("issues.labels",), tuple(there + labels),
                 f"Add the labels {p['labels'][0]} and {p['labels'][1]} to {where}. Change nothing else."),
            Part(("plan",), ("issues.assignees", "issues.milestone_id", "issues.due_day"), tuple(there + plan),
                 f"Plan {where}: assign it to @{p['assignee']}, put it in the milestone “{p['milestone']}” and "
                 f"set the due date to {p['due']}. Change nothing else."),
            Part(("comment",), ("comments", "issues.updated_day"),
                 tuple(there + [f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]),
                 f"Comment “{p['text']}” on {where}. Change nothing else."),
        ]

    def effect(self, app, p, start):
        before = start_row(app, start, "issues", p["issue_id"])
        return Effect((V.issue(p["issue_id"], f"issue #{p['iid']}", labels=same_set([*before["labels"], *p["label_ids"]]),
                               assignees=same_set([*before["assignees"], p["assignee_id"]]),
                               milestone_id=eq(p["milestone_id"]), due_day=eq(p["due_day"])),
                       V.comment(p["issue_id"], p["user_id"], p["text"], f"the comment on #{p['iid']}")))


# ============================================================================= multi-step

class MostCommentedOpen(TaskTemplate):
    id = "issues/most_commented_open"
    kind = "info"
    title = "Find the open issue with a label in a milestone that has the most comments (filter, sort, compare)"

    def sample(self, app, rng):
        for _ in range(600):
            p = pick_project(app, rng)
            m = rng.choice(app.world.milestones(p["id"]))
            lab = rng.choice(app.world.labels(p["id"]))
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[lab["id"]], assignee=None,
                                      author=None, milestone=m["id"], terms=[], sort="comments", limit=2)
            rows = app.world.issues(ids)
            # (the oldest issues have the most comments: a low number a guesser would try is skipped)
            if len(rows) == 2 and rows[0]["comment_count"] > rows[1]["comment_count"] \
                    and rows[0]["iid"] not in _GUESSED:
                return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                        "project_id": p["id"], "label_id": lab["id"], "label": lab["name"], "milestone": m["title"],
                        "iid": rows[0]["iid"], "comments": rows[0]["comment_count"]}
        raise RuntimeError("no label/milestone with a clear most-commented open issue")

    def goal(self, app, p):
        return (f"In {p['project']}, which open issue with the label “{p['label']}” in the milestone "
                f"“{p['milestone']}” has the most comments? Answer with its issue number (with the #).")

    def facts(self, app, p):
        return [fg("filters", "The right issues are compared", f"label {p['label']}", f"milestone {p['milestone']}",
                   "open issues only"),
                fg("answer", "The most commented one is named", f"#{p['iid']} ({p['comments']} comments)")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-issues')", f"check('f-label-{p['label_id']}')",
                                   f"select_option('f-milestone', {p['milestone']!r})",
                                   "select_option('f-sort', 'Most comments')", "click('f-apply')",
                                   f"send_msg_to_user('#{p['iid']}')"]

    def parts(self, app, p):
        return [filters_part(self.facts(app, p)[0],
                             issues_url(p["project"], state="opened", label=p["label"], milestone=p["milestone"]),
                             self.oracle(app, p)[:-1],
                             f"In {p['project']}, list the open issues with the label “{p['label']}” in the milestone "
                             f"“{p['milestone']}”.")]

    def effect(self, app, p, start):
        return Effect(answer=Answer("number", p["iid"], "number of the most commented issue"))


class UnblockAndClose(TaskTemplate):
    id = "issues/unblock_and_close"
    kind = "state"
    title = "Close an issue's open blockers first, then the issue itself, and comment on it"

    def sample(self, app, rng):
        for _ in range(400):
            p, i, m = pick(app, rng, lambda i: i["state"] == "opened" and 1 <= len(open_blockers(app, i["id"])) <= 2,
                           role="developer")
            bs = open_blockers(app, i["id"])
            if any(open_blockers(app, b["id"]) for b in bs):
                continue
            bs = sorted(bs, key=lambda b: b["iid"])
            links = {ln["source_id"]: ln["id"] for ln in blocking_links(app, i["id"])}
            return {"user_id": m["user_id"], "project": p["path"], "project_id": p["id"], "iid": i["iid"],
                    "issue_id": i["id"], "blocker_iids": [b["iid"] for b in bs], "blocker_ids": [b["id"] for b in bs],
                    "link_ids": [links[b["id"]] for b in bs], "text": rng.choice(_DONE)}
        raise RuntimeError("no issue with a few closable blockers")

    def goal(self, app, p):
        return (f"Issue #{p['iid']} in {p['project']} is done, but open issues still block it. Close its open "
                f"blockers first (their work is finished too), then close #{p['iid']} and comment “{p['text']}” "
                f"on it. Do not touch any other issue.")

    def facts(self, app, p):
        bl = [f"#{n}" for n in p["blocker_iids"]]
        return [fg("blockers", "The open blockers are found", *[f"{b} is open and blocks #{p['iid']}" for b in bl]),
                fg("closed", "The blockers, then the issue, are closed", *[f"{b} closed" for b in bl],
                   f"#{p['iid']} closed"),
                fg("comment", "The comment is posted", f"comment “{p['text']}” on #{p['iid']}")]

    def oracle(self, app, p):
        # Each blocker is reached from the issue's "Linked issues" and back by the same link.
        proj = app.world.project(p["project_id"])
        acts = open_to_issue(proj, p["iid"])
        for lid in p["link_ids"]:
            acts += [f"click('link-{lid}')", "click('close-issue')", f"click('link-{lid}')"]
        return acts + ["click('close-issue')", f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]

    def parts(self, app, p):
        # (Only instances with two blockers meet WebGym's rule.) Closing the blockers, and
        # the comment, are each a task; closing the issue itself needs the blockers closed.
        proj = app.world.project(p["project_id"])
        there = open_to_issue(proj, p["iid"])
        unblock = [a for lid in p["link_ids"] for a in (f"click('link-{lid}')", "click('close-issue')",
                                                         f"click('link-{lid}')")]
        bl = " and ".join(f"#{n}" for n in p["blocker_iids"])
        return [Part(("blockers",), tuple(f"blocker #{n}" for n in p["blocker_iids"]), tuple(there + unblock),
                     f"Issue #{p['iid']} in {p['project']} is blocked by open issues whose work is finished. Close "
                     f"its open blockers ({bl}), but leave #{p['iid']} itself open for now. Do not touch any other "
                     f"issue."),
                Part(("comment",), (f"the comment on #{p['iid']}", f"issue #{p['iid']}.updated_day"), tuple(
                    there + [f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]),
                     f"Comment “{p['text']}” on issue #{p['iid']} in {p['project']}. Change nothing else.")]

    def effect(self, app, p, start):
        closed = [V.issue(b, f"blocker #{n}", state=eq("closed")) for b, n in zip(p["blocker_ids"], p["blocker_iids"])]
        return Effect((*closed, V.issue(p["issue_id"], f"issue #{p['iid']}", state=eq("closed")),
                       V.comment(p["issue_id"], p["user_id"], p["text"], f"the comment on #{p['iid']}")))


class TriageMyIssues(TaskTemplate):
    id = "issues/triage_my_issues"
    kind = "state"
    title = "For each open issue assigned to me with a label: set a milestone and comment (multi-goal)"

    def sample(self, app, rng):
        for _ in range(800):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            rep = members(app, p["id"], "reporter")
            if not ms or not rep:
                continue
            me, lab, mile = rng.choice(rep), rng.choice(app.world.labels(p["id"])), rng.choice(ms)
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[lab["id"]],
                                      assignee=me["user_id"], author=None, milestone=None, terms=[], sort="created",
                                      limit=4)
            rows = app.world.issues(ids)
            if not 2 <= len(rows) <= 3 or any(r["milestone_id"] == mile["id"] for r in rows):
                continue
            return {"user_id": me["user_id"], "username": username(app, me["user_id"]), "project": p["path"],
                    "project_id": p["id"], "label_id": lab["id"], "label": lab["name"], "milestone_id": mile["id"],
                    "milestone": mile["title"], "iids": sorted(r["iid"] for r in rows),
                    "issue_ids": sorted(r["id"] for r in rows), "text": f"Triaged for {mile['title']}."}
        raise RuntimeError("no member with a few open labelled issues")

    def goal(self, app, p):
        return (f"In {p['project']}, for each open issue assigned to me that has the label “{p['label']}”: put "
                f"it in the milestone “{p['milestone']}” and comment “{p['text']}”. Leave every other issue "
                f"alone.")

    def facts(self, app, p):
        return [fg("filters", "The right issues are found", "assigned to me", f"label {p['label']}",
                   "open issues only"),
                fg("milestone", "Each is in the milestone", *[f"#{n} in {p['milestone']}" for n in p["iids"]]),
                fg("comment", "Each gets the comment", *[f"comment on #{n}" for n in p["iids"]])]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        acts = to_project(proj) + ["click('project-issues')", f"fill('f-assignee', {p['username']!r})",
                                   f"check('f-label-{p['label_id']}')", "click('f-apply')"]
        for n in p["iids"]:
            acts += find_issue(proj, n) + [f"select_option('milestone-select', {p['milestone']!r})",
                                           "click('milestone-submit')", f"fill('comment-body', {p['text']!r})",
                                           "click('comment-submit')"]
        return acts

    def parts(self, app, p):
        proj = app.world.project(p["project_id"])
        find = to_project(proj) + ["click('project-issues')", f"fill('f-assignee', {p['username']!r})",
                                   f"check('f-label-{p['label_id']}')", "click('f-apply')"]
        move, say = list(find), list(find)
        for n in p["iids"]:
            move += find_issue(proj, n) + [f"select_option('milestone-select', {p['milestone']!r})",
                                           "click('milestone-submit')"]
            say += find_issue(proj, n) + [f"fill('comment-body', {p['text']!r})", "click('comment-submit')"]
        which = f"In {p['project']}, for each open issue assigned to me that has the label “{p['label']}”:"
        return [
            Part(("filters", "milestone"), ("issues.milestone_id",), tuple(move),
                 f"{which} put it in the milestone “{p['milestone']}”. Do not comment, and leave every other "
                 f"issue alone."),
            Part(("filters", "comment"), ("comments", "issues.updated_day"), tuple(say),
                 f"{which} comment “{p['text']}”. Do not change its milestone, and leave every other issue alone."),
        ]

    def effect(self, app, p, start):
        rows = {r["id"]: r["iid"] for r in app.world.issues(p["issue_ids"])}
        moved = [V.issue(i, f"issue #{rows[i]}", milestone_id=eq(p["milestone_id"])) for i in p["issue_ids"]]
        said = [V.comment(i, p["user_id"], p["text"], f"the comment on #{rows[i]}") for i in p["issue_ids"]]
        return Effect((*moved, *said))


class WrapUpMilestone(TaskTemplate):
    id = "issues/wrap_up_milestone"
    kind = "state"
    title = "As a maintainer: add two members with different roles, move a milestone's open issues on, close it"

    def sample(self, app, rng):
        for _ in range(800):
            p = pick_project(app, rng)
            maint = members(app, p["id"], "maintainer")
            act = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            if not maint or len(act) < 2:
                continue
            old, new = rng.sample(act, 2)
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[], assignee=None, author=None,
                                      milestone=old["id"], terms=[], sort="created", limit=5)
            if not 2 <= len(ids) <= 4:
                continue
            inside = {m["user_id"] for m in app.world.members(p["id"])}
            users = []
            for _ in range(20):
                uid = rng.randint(1, app.world.max_id("users"))
                if uid not in inside and uid not in users:
                    users.append(uid)
                if len(users) == 2:
                    break
            if len(users) < 2:
                continue
            roles = rng.sample(["guest", "reporter", "developer"], 2)
            rows = app.world.issues(ids)
            return {"user_id": rng.choice(maint)["user_id"], "project": p["path"], "project_id": p["id"],
                    "new_user_ids": users, "usernames": [username(app, u) for u in users], "roles": roles,
                    "milestone_id": old["id"], "milestone": old["title"], "next_id": new["id"], "next": new["title"],
                    "iids": sorted(r["iid"] for r in rows), "issue_ids": sorted(r["id"] for r in rows)}
        raise RuntimeError("no project with two active milestones and users to add")

    def goal(self, app, p):
        (a, b), (ra, rb) = p["usernames"], p["roles"]
        return (f"Wrap up the milestone “{p['milestone']}” in {p['project']}: move its open issues to the "
                f"milestone “{p['next']}”, then close “{p['milestone']}”. Also add @{a} to the project as "
                f"{ra.capitalize()} and @{b} as {rb.capitalize()}.")

    def facts(self, app, p):
        (a, b), (ra, rb) = p["usernames"], p["roles"]
        return [fg("members", "Both users are members with their roles", f"@{a} is a member", f"@{a} is {ra}",
                   f"@{b} is a member", f"@{b} is {rb}"),
                fg("moved", "The open issues are moved", *[f"#{n} in {p['next']}" for n in p["iids"]]),
                fg("closed", "The milestone is closed", f"{p['milestone']} is closed")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        acts = to_project(proj) + ["click('project-milestones')", f"click('milestone-{p['milestone_id']}')",
                                   "click('state-opened')"]
        for n in p["iids"]:
            acts += find_issue(proj, n) + [f"select_option('milestone-select', {p['next']!r})",
                                           "click('milestone-submit')"]
        acts += ["click('project-milestones')", f"click('milestone-{p['milestone_id']}')", "click('close-milestone')",
                 "click('project-members')"]
        for name, role in zip(p["usernames"], p["roles"]):
            acts += [f"fill('member-username', {name!r})", f"select_option('member-role', {role.capitalize()!r})",
                     "click('member-submit')"]
        return acts

    def parts(self, app, p):
        proj = app.world.project(p["project_id"])
        (a, b), (ra, rb) = p["usernames"], p["roles"]
        move = to_project(proj) + ["click('project-milestones')", f"click('milestone-{p['milestone_id']}')",
                                   "click('state-opened')"]
        for n in p["iids"]:
            move += find_issue(proj, n) + [f"select_option('milestone-select', {p['next']!r})",
                                           "click('milestone-submit')"]
        close = ["click('project-milestones')", f"click('milestone-{p['milestone_id']}')", "click('close-milestone')"]
        add = to_project(proj) + ["click('project-members')"]
        for name, role in zip(p["usernames"], p["roles"]):
            add += [f"fill('member-username', {name!r})", f"select_option('member-role', {role.capitalize()!r})",
                    "click('member-submit')"]
        return [
            Part(("members",), (f"@{a} is {ra}", f"@{b} is {rb}"), tuple(add),
                 f"In {p['project']}, add @{a} to the project as {ra.capitalize()} and @{b} as "
                 f"{rb.capitalize()}. Change nothing else."),
            Part(("moved", "closed"), ("issues.milestone_id", "issues.updated_day", f"milestone {p['milestone']}"),
                 tuple(move + close),
                 f"Wrap up the milestone “{p['milestone']}” in {p['project']}: move its open issues to the "
                 f"milestone “{p['next']}”, then close “{p['milestone']}”. Do not change the members."),
        ]

    def effect(self, app, p, start):
        rows = {r["id"]: r["iid"] for r in app.world.issues(p["issue_ids"])}
        joined = [V.member(p["project_id"], u, r, f"@{n} is {r}")
                  for u, n, r in zip(p["new_user_ids"], p["usernames"], p["roles"])]
        moved = [V.issue(i, f"issue #{rows[i]}", milestone_id=eq(p["next_id"])) for i in p["issue_ids"]]
        return Effect((*joined, *moved, Row("milestones", p["milestone_id"], {"state": eq("closed")},
                                            label=f"milestone {p['milestone']}")))


class BusiestAssignee(TaskTemplate):
    id = "issues/busiest_assignee"
    kind = "info"
    title = "Find who has the most open issues of a milestone assigned (filter, then count by assignee)"

    def sample(self, app, rng):
        for _ in range(800):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            if not ms:
                continue
            m = rng.choice(ms)
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[], assignee=None, author=None,
                                      milestone=m["id"], terms=[], sort="created", limit=21)
            if not 6 <= len(ids) <= 20:        # one page of the list
                continue
            counts: dict[int, int] = {}
            for row in app.world.issues(ids):
                for a in row["assignees"]:
                    counts[a] = counts.get(a, 0) + 1
            ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
            if len(ranked) < 2 or ranked[0][1] == ranked[1][1] or ranked[0][1] < 2:
                continue
            (top, n1), (second, n2) = ranked[:2]
            return {"user_id": rng.choice(app.world.members(p["id"]))["user_id"], "project": p["path"],
                    "project_id": p["id"], "milestone": m["title"], "milestone_id": m["id"],
                    "top": username(app, top), "top_count": n1, "second": username(app, second), "second_count": n2}
        raise RuntimeError("no milestone with a clear busiest assignee")

    def goal(self, app, p):
        return (f"In {p['project']}, look at the open issues of the milestone “{p['milestone']}”. Who has the most "
                f"of them assigned? Answer with the username.")

    def facts(self, app, p):
        return [fg("filters", "The right issues are counted", f"milestone {p['milestone']}", "open issues only"),
                fg("counts", "Assignments are counted per member", f"@{p['top']} has {p['top_count']}",
                   f"the next, @{p['second']}, has {p['second_count']}"),
                fg("answer", "The busiest member is named", f"the answer is @{p['top']}")]

    def oracle(self, app, p):
        proj = app.world.project(p["project_id"])
        return to_project(proj) + ["click('project-issues')", f"select_option('f-milestone', {p['milestone']!r})",
                                   "click('f-apply')", f"send_msg_to_user('@{p['top']}')"]

    def effect(self, app, p, start):
        return Effect(checks=(V.listed([p["top"]], "busiest assignee", prefix="@"),))


# ----------------------------------------------------------------------------- swaps in a milestone

def swap_facts(p: dict, filtered: str, group: str, done: str, each: Callable[[int], tuple[str, str]]
               ) -> list[FactGroup]:
    """The fact groups of a swap: the list filtered to the milestone's open issues that have
    the old value (``filtered``), then group ``group``: on each issue ``#n`` the two facts
    ``each(n)`` (the old value gone, the new one there)."""
    return [fg("filters", "The right issues are found", filtered, f"milestone {p['milestone']}", "open issues only"),
            fg(group, done, *[f for n in p["iids"] for f in each(n)])]


def swap_oracle(app: Any, p: dict, filters: list[str], swap: list[str]) -> list[str]:
    """Filter the project's issue list (``filters``, then apply), then on each issue the
    ``swap`` actions (remove the old value, add the new)."""
    proj = app.world.project(p["project_id"])
    acts = to_project(proj) + ["click('project-issues')", *filters, "click('f-apply')"]
    for n in p["iids"]:
        acts += find_issue(proj, n) + swap
    return acts


def swap_effect(app: Any, p: dict, start: dict, column: str, old: int, new: int) -> Effect:
    """Each issue of the swap has ``new`` in place of ``old`` in ``column`` (assignees,
    labels), the column's other values kept."""
    out = []
    for i in p["issue_ids"]:
        row = start_row(app, start, "issues", i)
        want = [x for x in row[column] if x != old] + [new]
        out.append(V.issue(i, f"issue #{row['iid']}", **{column: same_set(want)}))
    return Effect(tuple(out))


class HandOverIssues(TaskTemplate):
    id = "issues/hand_over_issues"
    kind = "state"
    title = "Hand a member's open issues in a milestone over to another member (filter, unassign, assign)"

    def sample(self, app, rng):
        for _ in range(800):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            devs = members(app, p["id"], "developer")
            if not ms or len(devs) < 3:
                continue
            mile = rng.choice(ms)
            me, old, new = rng.sample(devs, 3)
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[], assignee=old["user_id"],
                                      author=None, milestone=mile["id"], terms=[], sort="created", limit=4)
            rows = app.world.issues(ids)
            if not 2 <= len(rows) <= 3 or any(new["user_id"] in r["assignees"] for r in rows):
                continue
            return {"user_id": me["user_id"], "project": p["path"], "project_id": p["id"],
                    "milestone_id": mile["id"], "milestone": mile["title"], "from_id": old["user_id"],
                    "from": username(app, old["user_id"]), "to_id": new["user_id"], "to": username(app, new["user_id"]),
                    "iids": sorted(r["iid"] for r in rows), "issue_ids": sorted(r["id"] for r in rows)}
        raise RuntimeError("no member with a few open issues in a milestone")

    def goal(self, app, p):
        return (f"@{p['from']} is moving to another team. In {p['project']}, hand every open issue in the milestone "
                f"“{p['milestone']}” that is assigned to @{p['from']} over to @{p['to']}: unassign @{p['from']} and "
                f"assign @{p['to']} instead, keeping any other assignees. Leave every other issue alone.")

    def facts(self, app, p):
        return swap_facts(p, f"assigned to @{p['from']}", "handed", "Each is handed over",
                          lambda n: (f"@{p['from']} unassigned from #{n}", f"@{p['to']} assigned to #{n}"))

    def oracle(self, app, p):
        return swap_oracle(app, p, [f"fill('f-assignee', {p['from']!r})", f"select_option('f-milestone', {p['milestone']!r})"],
                           [f"click('unassign-{p['from_id']}')", f"select_option('assign-user', '@{p['to']}')",
                            "click('assign-submit')"])

    def parts(self, app, p):
        return [filters_part(self.facts(app, p)[0],
                             issues_url(p["project"], state="opened", assignee=p["from"], milestone=p["milestone"]),
                             self.oracle(app, p)[:5],
                             f"In {p['project']}, list the open issues in the milestone “{p['milestone']}” that are "
                             f"assigned to @{p['from']}.")]

    def effect(self, app, p, start):
        return swap_effect(app, p, start, "assignees", p["from_id"], p["to_id"])


class RelabelInMilestone(TaskTemplate):
    id = "issues/relabel_in_milestone"
    kind = "state"
    title = "Swap one label for another on every open issue of a milestone that has it (filter, remove, add)"

    def sample(self, app, rng):
        for _ in range(800):
            p = pick_project(app, rng)
            ms = [m for m in app.world.milestones(p["id"]) if m["state"] == "active"]
            devs = members(app, p["id"], "reporter")
            labs = app.world.labels(p["id"])
            if not ms or not devs or len(labs) < 2:
                continue
            mile = rng.choice(ms)
            old, new = rng.sample(labs, 2)
            ids = app.world.issue_ids(project_id=p["id"], state="opened", labels=[old["id"]], assignee=None,
                                      author=None, milestone=mile["id"], terms=[], sort="created", limit=4)
            rows = app.world.issues(ids)
            if not 2 <= len(rows) <= 3 or any(new["id"] in r["labels"] for r in rows):
                continue
            return {"user_id": rng.choice(devs)["user_id"], "project": p["path"], "project_id": p["id"],
                    "milestone_id": mile["id"], "milestone": mile["title"], "old_id": old["id"], "old": old["name"],
                    "new_id": new["id"], "new": new["name"], "iids": sorted(r["iid"] for r in rows),
                    "issue_ids": sorted(r["id"] for r in rows)}
        raise RuntimeError("no label with a few open issues in a milestone")

    def goal(self, app, p):
        return (f"In {p['project']}, the label “{p['old']}” was used by mistake in the milestone “{p['milestone']}”. "
                f"On every open issue of that milestone that has it, remove “{p['old']}” and add “{p['new']}” "
                f"instead. Leave every other issue and label alone.")

    def facts(self, app, p):
        return swap_facts(p, f"label {p['old']}", "relabelled", "Each has the new label instead of the old one",
                          lambda n: (f"#{n} without {p['old']}", f"#{n} with {p['new']}"))

    def oracle(self, app, p):
        return swap_oracle(app, p, [f"check('f-label-{p['old_id']}')", f"select_option('f-milestone', {p['milestone']!r})"],
                           [f"click('label-remove-{p['old_id']}')", f"select_option('label-select', {p['new']!r})",
                            "click('label-submit')"])

    def parts(self, app, p):
        return [filters_part(self.facts(app, p)[0],
                             issues_url(p["project"], state="opened", label=p["old"], milestone=p["milestone"]),
                             self.oracle(app, p)[:5],
                             f"In {p['project']}, list the open issues of the milestone “{p['milestone']}” that have "
                             f"the label “{p['old']}”.")]

    def effect(self, app, p, start):
        return swap_effect(app, p, start, "labels", p["old_id"], p["new_id"])


TASKS: list[TaskTemplate] = [
    OpenLabelCount(), IssueAssignees(), MilestoneDueDate(), MilestoneProgress(), IssueLabels(), NewestByAuthor(),
    FilteredCount(), CommentOnIssue(), CloseIssue(), ReopenIssue(), AssignIssue(), AddLabel(), SetMilestone(),
    SetDueDate(), LinkIssues(), AddMember(), ChangeRole(), MarkAllRead(), CloseWithRole(), CloseIfUnblocked(),
    AddToMilestone(), CreateIssue(), CreateAssignLabel(), CloseLabelInMilestone(), OpenBlockers(), TriageIssue(),
    MostCommentedOpen(), UnblockAndClose(), TriageMyIssues(), WrapUpMilestone(), HandOverIssues(),
    RelabelInMilestone(), BusiestAssignee(),
]

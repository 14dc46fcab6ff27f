"""Seed a Roundup tracker from a simweb payload, through Roundup's own tracker API.

Runs inside the counterpart's venv:  python seed.py TRACKER_DIR PAYLOAD_JSON

Keywords, then users (with their roles), then issues in number order so Roundup's
``issue<N>`` is the project's ``#N``: each issue is created by its author (so Roundup's
``creator`` is the author) with its description as the first message, then each user
comment is a message by its author. Nosy mail goes to the tracker's mail debug file.
"""
import json
import sys

import roundup.instance
import roundup.password
from roundup import date as rdate


def main(tracker_dir: str, payload_file: str) -> None:
    with open(payload_file) as fh:
        payload = json.load(fh)
    tracker = roundup.instance.open(tracker_dir)
    db = tracker.open("admin")
    # Seeded history is not news: no nosy mail for it (the reactors only send mail).
    for cl in (db.issue, db.msg, db.user, db.keyword):
        for event in cl.reactors:
            cl.reactors[event] = []
    # Every id Roundup hands out is committed at once: without fsync the seed takes seconds,
    # not a minute (this connection only; the server keeps SQLite's defaults).
    db.sql("PRAGMA synchronous = OFF")
    try:
        kw = {name: db.keyword.create(name=name) for name in payload["keywords"]}
        users = {}
        # One hash for the shared password (PBKDF2 costs most of a second per call).
        password = roundup.password.Password(payload["password"], config=db.config)
        for u in payload["users"]:
            users[u["username"]] = db.user.create(username=u["username"], realname=u["realname"],
                                                  address=u["address"], roles=u["roles"], password=password)
        db.commit()
        status = {name: db.status.lookup(name) for name in ("chatting", "resolved")}
        priority = {name: db.priority.lookup(name) for name in ("bug", "feature")}
        for issue in payload["issues"]:
            author = issue["author"]
            db.setCurrentUser(author)
            first, *rest = issue["messages"]
            msg = db.msg.create(content=first["text"], author=users[first["author"]],
                                date=rdate.Date(first["date"]))
            nid = db.issue.create(title=issue["title"], messages=[msg], keyword=[kw[k] for k in issue["keywords"]],
                                  status=status[issue["status"]], priority=priority[issue["priority"]],
                                  assignedto=users[issue["assignee"]] if issue["assignee"] else None)
            if nid != str(issue["number"]):
                raise SystemExit(f"issue {issue['number']} was created as issue{nid}: the tracker was not empty")
            msgs = [msg]
            for m in rest:
                db.setCurrentUser(m["author"])
                msgs.append(db.msg.create(content=m["text"], author=users[m["author"]], date=rdate.Date(m["date"])))
            if rest:
                db.setCurrentUser("admin")
                # The messages go on in one edit, keeping the seeded status (the classic
                # status auditor would move a resolved issue back to chatting).
                db.issue.set(nid, messages=msgs, status=status[issue["status"]])
            db.setCurrentUser("admin")
        db.commit()
    finally:
        db.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

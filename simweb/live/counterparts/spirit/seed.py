"""Seed Spirit from a simweb forum payload, through Spirit's own models and commands.

Runs inside the counterpart's venv (its python, its Django):

    python seed.py payload.json

with ``DJANGO_SETTINGS_MODULE`` and ``SIMWEB_SPIRIT_DATA`` set by the counterpart and the
project folder next to this file.  A simweb community becomes a category (titled with
its name, as the goals write it after ``c/``), a user a Django user with a Spirit profile
(nickname = username, verified; a simweb moderator of any community is a Spirit
moderator, since Spirit's moderation is site-wide), a post a topic whose first comment is
the post's text (or its link), and each of the post's comments a comment in time order
(deleted and removed ones kept as removed, so the counts match simweb's).  The topic
and profile counters are set from what was created, and the search index is rebuilt.
Re-running on a seeded database is refused (seeding is part of install, never of reset).
"""
from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "project"))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "simweb_spirit.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.db import transaction  # noqa: E402
from djconfig.models import Config  # noqa: E402
from spirit.category.models import Category  # noqa: E402
from spirit.comment.models import Comment  # noqa: E402
from spirit.core.utils.markdown import Markdown  # noqa: E402
from spirit.topic.models import Topic  # noqa: E402
from spirit.user.models import UserProfile  # noqa: E402

#: simweb's day 0 (its times are seconds relative to it)
DAY0 = datetime(2026, 1, 1, tzinfo=UTC)


def at(seconds: int) -> datetime:
    return DAY0 + timedelta(seconds=int(seconds))


def seed(payload: dict, password: str) -> dict:
    User = get_user_model()
    if User.objects.filter(is_superuser=False).exists():
        raise SystemExit("seed: the database is already seeded")
    md = Markdown()
    counts = {}
    with transaction.atomic():
        Config.objects.update_or_create(key="site_name", defaults={"value": payload["site_name"]})

        cats = {}
        for c in payload["communities"]:
            cats[c["id"]] = Category.objects.create(title=c["name"], description=c["description"][:255])
        counts["categories"] = len(cats)

        users = {}
        probe = User(username="probe")
        probe.set_password(password)
        hashed = probe.password        # one salted hash shared by every user (hashing each is the slow part)
        for u in payload["users"]:
            users[u["id"]] = User(username=u["username"], email=f"{u['username']}@simforum.example",
                                  password=hashed, date_joined=at(u["joined"]), is_active=True)
        User.objects.bulk_create(users.values())
        users = {uid: User.objects.get(username=u.username) for uid, u in users.items()}
        mods = set(payload["moderators"])
        profiles = []
        for uid, user in users.items():
            profiles.append(UserProfile(user=user, nickname=user.username, is_verified=True,
                                        is_moderator=uid in mods, last_seen=user.date_joined))
        UserProfile.objects.bulk_create(profiles)
        counts["users"] = len(users)

        comments_of: dict[int, list[dict]] = {}
        for c in payload["comments"]:
            comments_of.setdefault(c["post_id"], []).append(c)
        topic_count: dict[int, int] = {}
        comment_count: dict[int, int] = {}
        n_comments = 0
        for p in sorted(payload["posts"], key=lambda x: x["created"]):
            cs = sorted(comments_of.get(p["id"], []), key=lambda x: (x["created"], x["id"]))
            last = at(cs[-1]["created"]) if cs else at(p["created"])
            topic = Topic.objects.create(user=users[p["user_id"]], category=cats[p["community_id"]],
                                         title=p["title"], date=at(p["created"]), last_active=last,
                                         reindex_at=last, is_closed=bool(p["locked"]), is_pinned=bool(p["pinned"]),
                                         comment_count=1 + len(cs))
            first = p["body"] if p["kind"] == "text" or not p["url"] else f"{p['url']}\n\n{p['body']}".strip()
            rows = [Comment(user=users[p["user_id"]], topic=topic, comment=first, comment_html=md.render(first),
                            date=at(p["created"]))]
            for c in cs:
                rows.append(Comment(user=users[c["user_id"]], topic=topic, comment=c["body"],
                                    comment_html=md.render(c["body"]), date=at(c["created"]),
                                    is_removed=c["status"] != "live"))
            Comment.objects.bulk_create(rows)
            topic_count[p["user_id"]] = topic_count.get(p["user_id"], 0) + 1
            for c in cs:
                comment_count[c["user_id"]] = comment_count.get(c["user_id"], 0) + 1
            n_comments += len(rows)
        for uid, user in users.items():
            if uid in topic_count or uid in comment_count:
                UserProfile.objects.filter(user=user).update(topic_count=topic_count.get(uid, 0),
                                                             comment_count=comment_count.get(uid, 0))
        counts["topics"] = len(payload["posts"])
        counts["comments"] = n_comments
    call_command("rebuild_index", interactive=False, verbosity=0)
    return counts


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: seed.py PAYLOAD.json", file=sys.stderr)
        return 2
    payload = json.loads(Path(argv[1]).read_text())
    counts = seed(payload, payload["password"])
    print("seeded " + ", ".join(f"{v} {k}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

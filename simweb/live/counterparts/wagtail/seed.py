"""Seed the Wagtail site from a simweb cms payload (runs in the counterpart's own venv).

    python seed.py payload.json

Through Wagtail's own models and API: the home page replaces Wagtail's welcome page as the
site root; users get Wagtail's groups by their simweb role (author -> Editors, who may
add and edit pages but not publish; editor -> Moderators, who may publish and review;
admin -> superuser); each post becomes a blog page owned by its author, saved as a
revision, then published (``published``), submitted to the site's moderation workflow by
its author (``review``), or left as a draft (``draft``).
"""
from __future__ import annotations

import json
import os
import sys
from datetime import UTC, date, datetime, time


def main(path: str) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "simcms.settings")
    import django

    django.setup()
    from blog.models import BlogPage, HomePage
    from django.contrib.auth.models import Group, User
    from django.db import transaction
    from wagtail.models import Page, Site

    payload = json.loads(open(path).read())
    password = payload["password"]
    with transaction.atomic():
        root = Page.objects.get(depth=1)
        Site.objects.all().delete()
        for welcome in Page.objects.filter(depth=2):   # Wagtail's welcome page
            welcome.delete()
        root.refresh_from_db()
        home = HomePage(title=payload["site_title"], slug="home")
        root.add_child(instance=home)
        home.save_revision().publish()
        Site.objects.create(hostname="127.0.0.1", port=payload["port"], root_page=home, is_default_site=True,
                            site_name=payload["site_title"])
        groups = {"author": Group.objects.get(name="Editors"), "editor": Group.objects.get(name="Moderators")}
        users = {}
        for u in payload["users"]:
            first, _, last = u["display_name"].partition(" ")
            user = User.objects.create_user(u["username"], u["email"], password, first_name=first,
                                            last_name=last, is_active=u["active"])
            if u["role"] == "admin":
                user.is_superuser = user.is_staff = True
                user.save()
            else:
                user.groups.add(groups[u["role"]])
            users[u["id"]] = user
    for p in payload["posts"]:
        with transaction.atomic():
            seed_post(home, users, p, BlogPage)


def seed_post(home, users, p, BlogPage) -> None:
    author = users[p["author_id"]]
    # A browser submits a textarea's line breaks as CRLF: stored so, a body saved back
    # unchanged through the admin's form is byte-for-byte the same (not a collateral change).
    body = "\r\n".join(p["body"].splitlines())
    page = BlogPage(title=p["title"], slug=p["slug"], body=body, category=p["category"] or "",
                    date=date.fromisoformat(p["date"]) if p["date"] else None, owner=author, live=False)
    home.add_child(instance=page)
    revision = page.save_revision(user=author)
    if p["status"] == "published":
        # Who approved it in simweb's history is not recorded: the author publishes, past
        # the permission check (Wagtail's Editors may not publish), on the post's date.
        revision.publish(user=author, skip_permission_checks=True)
        when = datetime.combine(page.date, time(12, 0), tzinfo=UTC)
        BlogPage.objects.filter(pk=page.pk).update(first_published_at=when, last_published_at=when)
    elif p["status"] == "review":
        page.get_workflow().start(page, author)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: seed.py PAYLOAD.json")
    main(sys.argv[1])

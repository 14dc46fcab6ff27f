"""Simpress's rewards under attack: side-effect rows are tolerated only as the echo of a
judged change, on the row the task judges."""
from __future__ import annotations

import pytest
from conftest import APPS

import simweb

pytestmark = pytest.mark.skipif("cms" not in APPS, reason="cms is not among SIMWEB_TEST_APPS")


@pytest.fixture(scope="module")
def env():
    return simweb.make("cms", seed=0, end_on_success=False)


def judge(env, final: dict) -> dict:
    t = env.task
    return env.app.tasks[t.id].verify(env.app, t.params, env.start_state(), final, None)


def edit(env, state: dict, post: dict, title: str) -> None:
    page = f"/admin/posts/{post['id']}"
    form = {"title": title, "body": "\n".join(post["body"]) if isinstance(post["body"], list) else post["body"],
            "category_id": "" if post.get("category_id") is None else str(post["category_id"]),
            "tags": [str(t) for t in post.get("tags") or []]}
    r = env.app.submit(state, page + "/save", form, referrer=page)
    assert r.error in (None, ""), r.error


def test_an_edit_undone_on_another_post_leaves_its_revisions_as_damage(env):
    from simweb.judging.effects import entity
    env.reset(seed=0, options={"task": "cms/rename_post"})
    for action in env.oracle_plan(final=False):
        env.step(action)
    final = env.snapshot()
    assert judge(env, final)["success"] and judge(env, final)["clean"]
    pid = env.task.params["post_id"]
    other = entity(env.app, final, "posts", pid + 1)
    assert other is not None
    edit(env, final, other, other["title"] + " (draft)")
    again = entity(env.app, final, "posts", pid + 1)
    assert again is not None
    edit(env, final, again, other["title"])
    v = judge(env, final)
    hurt = [c["name"] for c in v["checks"] if c["name"].startswith("collateral:")]
    assert v["success"] and not v["clean"]
    assert len([h for h in hurt if ".revisions." in h]) == 2, hurt

"""What the omnibox's simweb extensions read and write of a served session.

An instance's browser context holds one session cookie per served app; the session's
state is read and written through that app's own ``GET``/``POST /_simweb/state`` with
the context's cookies (as :class:`simweb.browser.BrowserEnv` does), so the served app
stays the only owner of its sessions.
"""
from __future__ import annotations

from typing import Any

import orjson

from ...core.state import deep_copy
from ..browser import ServedApp


class SessionError(Exception):
    """A session could not be read or written (one line)."""


def _call(context: Any, served: ServedApp, method: str, url: str, body: Any = None) -> Any:
    req = context.request
    # A served app with a control token wants it on these requests (never on the pages).
    headers = dict(getattr(served, "control_headers", None) or {})
    if method == "GET":
        resp = req.get(url, headers=headers, timeout=30_000)
    else:
        headers["content-type"] = "application/json"
        resp = req.post(url, data=orjson.dumps(body), headers=headers, timeout=30_000)
    try:
        payload = orjson.loads(resp.body())
    except orjson.JSONDecodeError:
        raise SessionError(f"{method} {url}: HTTP {resp.status}, not JSON") from None
    if resp.status != 200:
        detail = payload.get("error", payload) if isinstance(payload, dict) else payload
        raise SessionError(f"{method} {url}: HTTP {resp.status}: {detail}")
    return payload


def read_state(context: Any, served: ServedApp) -> dict:
    """The state of the context's session on ``served``."""
    return _call(context, served, "GET", served.base_url + "/_simweb/state")


def write_state(context: Any, served: ServedApp, state: dict) -> None:
    """Make ``state`` the context's session state on ``served``."""
    _call(context, served, "POST", served.base_url + "/_simweb/state", state)


def verdict_of(served: ServedApp, state: dict, answer: str | None = None,
               episode: tuple[str | None, int] | None = None) -> dict[str, Any]:
    """``{"task", "answer", "verdict"}`` of a session state: the task's verifier run on
    (the task instance's start state, ``state``, the answer). ``answer`` overrides the
    answer found in the state's chat (WebGym agents answer to the harness, not the page).

    ``episode`` is the (task, seed) the harness started: a session that now holds another
    one was restarted from the page (a start URL the agent opened itself) and earns
    nothing: its verdict is a failure naming both."""
    from ...episodes.env import episode_start
    from ...judging.verify import answer_of

    task = state["meta"].get("task")
    seed = int(state["meta"]["rng"]["seed"])
    if episode is not None and episode != (task["id"] if task else None, seed):
        now = f"{task['id'] if task else 'no task'} seed {seed}"
        check = {"name": "collateral: the session was restarted on another task", "passed": False, "weight": 0.0,
                 "detail": f"started as {episode[0] or 'no task'} seed {episode[1]}, now {now}"}
        return {"task": {"id": episode[0], "seed": episode[1]}, "answer": answer,
                "verdict": {"success": False, "progress": 0.0, "clean": False, "checks": [check]}}
    if task is None:
        return {"task": None, "answer": answer, "verdict": None}
    app = served.app
    start = episode_start(app, task["id"], seed, task["params"])
    final = state
    if answer is not None:
        final = deep_copy(state)
        final["browser"]["chat"].append({"role": "assistant", "message": str(answer)})
    given = answer_of(final)
    verdict = app.tasks[task["id"]].verify(app, task["params"], start.state, final, given)
    instance = start.task
    assert instance is not None   # a task id was given
    return {"task": {"id": task["id"], "params": task["params"], "seed": seed, "kind": instance.kind,
                     "goal": instance.goal, "budget": start.budget}, "answer": given, "verdict": verdict}

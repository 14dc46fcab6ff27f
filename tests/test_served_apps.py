"""Served mode for every app: the Flask server replays the requests of an in-process
oracle run and ends in the same state, and one session's actions never reach another's."""
from __future__ import annotations

import pytest
from conftest import APPS
from test_server import AUTH, TOKEN, _record, state_of

import simweb
from simweb.serving.server import create_app


def _state_tasks(app: str, n: int = 3) -> list[tuple[str, str]]:
    env = simweb.make(app, seed=0)
    return [(app, t) for t in sorted(env.app.tasks) if env.app.tasks[t].kind != "info"][:n]


CASES = [c for a in APPS for c in _state_tasks(a)]


@pytest.mark.parametrize("app,task", CASES)
def test_served_run_matches_in_process_and_sessions_stay_apart(app, task, monkeypatch):
    env = simweb.make(app, seed=0)
    env.reset(seed=1, options={"task": task})
    log = _record(env, monkeypatch, env.oracle_plan())
    assert env._verdict()["success"]
    local = env.snapshot()

    server = create_app(app, control_token=TOKEN)
    client, bystander = server.test_client(), server.test_client()
    for c in (client, bystander):
        assert c.post("/_simweb/reset", headers=AUTH, json={"task": task, "seed": 1}).status_code == 200
    before = state_of(bystander)
    for method, url, form in log:
        r = client.post(url, data=form) if method == "POST" else client.get(url)
        assert r.status_code in (200, 303), (method, url, r.status_code)
    served = state_of(client)
    assert served["runtime"] == local["runtime"]
    assert served["meta"]["clock"] == local["meta"]["clock"]
    assert served["runtime"] != before["runtime"]
    assert state_of(bystander)["runtime"] == before["runtime"]

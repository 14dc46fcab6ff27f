"""The fork and reset paths: what their speed-ups must keep."""
from __future__ import annotations

import gc
import weakref

import pytest


def test_a_dropped_fork_is_freed_without_the_cycle_collector(env_of, app_name):
    """A fork thrown away is freed by reference counting: no env <-> backend cycle that
    would leave it (and its state) to the cycle collector."""
    env = env_of(app_name)
    env.reset(seed=1)
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        child = env.fork()
        child.step("noop()")
        alive = weakref.ref(child)
        state = weakref.ref(child.episode)
        del child
        assert alive() is None and state() is None
    finally:
        if was_enabled:
            gc.enable()


def test_a_fork_is_independent_of_its_parent(env_of, app_name):
    env = env_of(app_name)
    tid = next(t for t in sorted(env.app.tasks) if env.app.tasks[t].kind != "info")
    env.reset(seed=2, options={"task": tid})
    before = env.state_hash()
    child = env.fork()
    assert child.state == env.state and child.state is not env.state
    assert child.episode is not env.episode and child.backend.env is child
    for action in env.oracle_plan():
        child.step(action)
    assert child.state_hash() != before
    assert env.state_hash() == before and env.episode.step_count == 0
    child.episode.step_count = 99
    assert env.episode.step_count == 0


def test_the_backend_of_a_freed_env_says_so(env_of, app_name):
    env = env_of(app_name).fork()
    backend = env.backend
    del env
    gc.collect()
    with pytest.raises(ReferenceError):
        backend.state()

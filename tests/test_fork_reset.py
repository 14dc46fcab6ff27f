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


def test_world_memo_answers_from_the_world_once_per_arguments(env_of):
    from simweb.judging.tasks import world_memo

    app = env_of("shopping").app
    calls: list[tuple] = []

    @world_memo
    def top_ids(app, n, *, offset=0):
        calls.append((n, offset))
        return [offset + i for i in range(n)]

    first = top_ids(app, 3)
    assert first == [0, 1, 2] and calls == [(3, 0)]
    first.append(99)                       # a caller's copy: the memo is not changed
    assert top_ids(app, 3) == [0, 1, 2] and calls == [(3, 0)]
    assert top_ids(app, 3, offset=5) == [5, 6, 7] and calls == [(3, 0), (3, 5)]
    other = env_of("forum").app            # another world: its own answers
    assert top_ids(other, 3) == [0, 1, 2] and len(calls) == 3


def test_memoised_samplers_draw_the_same_instances(env_of, app_name):
    """A template's instance does not depend on what the world memo already holds."""
    import simweb.judging.tasks as tasks

    app = env_of(app_name).app
    templates = sorted(app.tasks)
    warm = {}
    for tid in templates:
        for seed in (11, 12):
            try:
                warm[tid, seed] = app.tasks[tid].instantiate(app, seed).params
            except RuntimeError:
                continue
    app.world.__dict__.pop("_world_memo", None)   # cold: every helper asks the world again
    for (tid, seed), params in warm.items():
        assert app.tasks[tid].instantiate(app, seed).params == params, (tid, seed)
    saved = tasks._WORLD_MEMO_SIZE
    tasks._WORLD_MEMO_SIZE = 0                    # no memo at all
    try:
        for (tid, seed), params in list(warm.items())[::3]:
            assert app.tasks[tid].instantiate(app, seed).params == params, (tid, seed)
    finally:
        tasks._WORLD_MEMO_SIZE = saved

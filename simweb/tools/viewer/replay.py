"""Rebuild the state at any step of a recorded episode, and diff two such states.

A trajectory records state hashes, not states: the state at step ``n`` is rebuilt by
replaying the episode in-process (the start from ``reset(seed, task, params)``, or for a
fork child its parent: a saved ``parent-state.json``, the parent's own trajectory up to
the fork step, or the task's start), checking every recorded hash on the way, so a
diff is of the states the run really had or it is refused with the reason.
"""
from __future__ import annotations

import os
import threading
from typing import Any

import orjson

from .index import Episode, RunIndex, ViewerError

__all__ = ["ReplayError", "StateCache", "diff_states"]

#: changed paths a diff lists (the rest are counted)
MAX_DIFF = 400


class ReplayError(ViewerError):
    """A state that cannot be rebuilt (a live site, another world, a hash that differs)."""


class StateCache:
    """Envs by world, opened on first use (a world opens once), and rebuilt states."""

    def __init__(self, index: RunIndex):
        self.index = index
        self._envs: dict[tuple[str, int, int | None], Any] = {}
        self._lock = threading.Lock()

    def _env(self, header: dict[str, Any]) -> Any:
        from ...episodes.env import SimEnv
        from ...runtime.registry import RegistryError

        w = header.get("world") or {}
        if header.get("sim2live", {}).get("side") == "live" or not isinstance(w.get("seed"), int):
            raise ReplayError("no simweb state was recorded for this episode (a live site or a file without a world)")
        key = (str(header.get("app")), int(w["seed"]), w.get("size"))
        env = self._envs.get(key)
        if env is None:
            try:
                env = self._envs[key] = SimEnv(key[0], key[1], size=key[2])
            except RegistryError as exc:
                raise ReplayError(str(exc)) from None
        if w.get("hash") and env.app.world.hash != w["hash"]:
            raise ReplayError("recorded on another world than this simweb builds (world hash differs)")
        return env

    def state_at(self, ep: Episode, step: int) -> tuple[Any, dict[str, Any]]:
        """(the app, the state after ``step`` actions of ``ep``) rebuilt by replay."""
        with self._lock:   # one env per world: one rebuild at a time
            env = self._env(ep.header)
            self._start(env, ep, depth=0)
            if step > ep.steps:
                raise ReplayError(f"step {step} is past the end of the episode ({ep.steps} steps)")
            for n, line in enumerate(self.index.steps_of(ep), 1):
                if n > step:
                    break
                env.step(line["action"])
                want = line.get("state_hash")
                if want and env.state_hash() != want:
                    raise ReplayError(f"replay differs at step {n} ({line['action']}): another simweb version or spec?")
            return env.app, env.snapshot()

    def _start(self, env: Any, ep: Episode, depth: int) -> None:
        """Put ``env`` at ``ep``'s start state (a fork child: its parent's state)."""
        h = ep.header
        parent = ep.parent
        if parent is None:
            opts = {"task": h["task"], "params": h.get("params")} if h.get("task") else None
            env.reset(seed=h.get("seed"), options=opts)
        elif parent.get("state_file"):
            path = os.path.join(os.path.dirname(ep.path), str(parent["state_file"]))
            try:
                env.restore(orjson.loads(open(path, "rb").read()))
            except (OSError, orjson.JSONDecodeError) as exc:
                raise ReplayError(f"cannot read the parent state {path}: {exc}") from None
        elif parent.get("trajectory"):
            up = self.index.by_rel(os.path.dirname(ep.path), str(parent["trajectory"]))
            if up is None or depth > 8:
                raise ReplayError(f"the parent trajectory {parent['trajectory']} is not among the files opened")
            self._start(env, up, depth + 1)
            for n, line in enumerate(self.index.steps_of(up), 1):
                if n > int(parent.get("step") or 0):
                    break
                env.step(line["action"])
        elif h.get("task") and int(parent.get("step") or 0) == 0:
            env.reset(seed=h.get("seed"), options={"task": h["task"], "params": h.get("params")})
        else:
            raise ReplayError("a fork child whose parent state was not saved with it")
        want = parent.get("state_hash") if parent else h.get("start_hash")
        if want and env.state_hash() != want:
            raise ReplayError("the start state rebuilt differs from the recorded one (another simweb version?)")


def diff_states(app: Any, a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Field-level changes from state ``a`` to ``b``: the runtime (world rows as the
    baseline of rows an overlay first writes) and the active page."""
    from ...judging.effects import runtime_changes

    changes = runtime_changes(app, a, b)
    rows = [{"path": f"runtime.{c.path}", "before": _show(c.before), "after": _show(c.after)}
            for c in changes[:MAX_DIFF]]
    ua, ub = _url(a), _url(b)
    if ua != ub:
        rows.insert(0, {"path": "browser: the active page", "before": ua, "after": ub})
    return {"changes": rows, "more": max(0, len(changes) - MAX_DIFF)}


def _url(state: dict[str, Any]) -> str:
    b = state.get("browser") or {}
    tabs = b.get("tabs") or []
    i = int(b.get("active") or 0)
    return str(tabs[i].get("url")) if 0 <= i < len(tabs) else ""


def _show(v: Any, limit: int = 300) -> str:
    from ...judging.effects import _ABSENT  # what runtime_changes gives for a row or key that is not there

    if v is _ABSENT:
        return "(absent)"
    s = orjson.dumps(v, default=repr, option=orjson.OPT_SORT_KEYS).decode()
    return s if len(s) <= limit else s[:limit - 1] + "…"

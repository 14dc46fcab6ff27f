"""Apply a spec's declarative updates to a state.

Each update names a location (a path, or an entity table and id) and an operation; its
values are compiled expressions evaluated in the event's environment. Updates of one
event run in order and may bind names for later ones (``insert ... as: order_id``).
"""
from __future__ import annotations

from typing import Any

from .spec import ExprErrorAtRuntime, Update
from .state import deep_copy
from .worlddb import Rng


def _container(state: dict, root: str, keys: list[str], create: bool) -> tuple[Any, str]:
    """The dict holding the last key of the path (created on the way when ``create``)."""
    node: Any = state[root]
    for k in keys[:-1]:
        nxt = node.get(k) if isinstance(node, dict) else None
        if nxt is None:
            if not create:
                return None, keys[-1]
            nxt = {}
            node[k] = nxt
        if not isinstance(nxt, dict):
            raise ExprErrorAtRuntime(f"cannot descend into {type(nxt).__name__} at key {k!r}")
        node = nxt
    return node, keys[-1]


def draw_token(state: dict, length: int, alphabet: str) -> str:
    """A pseudo-random code (confirmation numbers, tracking ids) from the state's own
    generator: meta.rng's seed and counter, so replays and forks draw the same codes."""
    rng = state["meta"]["rng"]
    gen = Rng.derive("token", rng["seed"], rng["counter"])
    rng["counter"] += 1
    return "".join(gen.choice(alphabet) for _ in range(length))


def _allocate_id(state: dict, world: Any, table: str) -> int:
    """Next id of ``table``: above the world's largest, counted in runtime.counters."""
    counters = state["runtime"].setdefault("counters", {})
    n = counters.get(table, 0) + 1
    counters[table] = n
    return world.max_id(table) + n


def _timer_op(u: Update, state: dict, env: dict[str, Any]) -> None:
    """schedule / cancel on the pending-timer queue (runtime.timers), kept sorted by
    (due time, id) so timers fire in a deterministic order."""
    queue = state["runtime"].get("timers")
    if not isinstance(queue, dict):
        raise ExprErrorAtRuntime("this state has no timer queue (runtime.timers)")
    key = u.key(env) if u.key is not None else None
    key = None if key is None else str(key)
    pending = queue["pending"]
    if key is not None:
        pending[:] = [t for t in pending if not (t["key"] == key and (u.op == "schedule" or u.timer is None
                                                                      or t["timer"] == u.timer))]
    if u.op == "cancel":
        return
    at = u.at(env)
    if isinstance(at, bool) or not isinstance(at, (int, float)):
        raise ExprErrorAtRuntime(f"schedule {u.timer}: 'at' must be a number of seconds, got {at!r}")
    entry = {"id": queue["next"], "at": max(0, int(at)), "timer": u.timer, "key": key,
             "args": {name: val(env) for name, val in u.args}}
    queue["next"] += 1
    pending.append(entry)
    pending.sort(key=lambda t: (t["at"], t["id"]))


def apply_updates(updates: list[Update], state: dict, env: dict[str, Any], world: Any,
                  entity: Any) -> None:
    """Run ``updates`` against ``state`` in order. ``env`` receives ``as:`` bindings.

    ``entity(table, id)`` reads the current version of an entity (overlay or world)."""
    for u in updates:
        if u.loop_var is not None:
            items = u.loop_iter(env) or []
            for item in list(items):
                env[u.loop_var] = item
                if u.when is None or u.when(env):
                    _apply_one(u, state, env, world, entity)
            env.pop(u.loop_var, None)
        elif u.when is None or u.when(env):
            _apply_one(u, state, env, world, entity)


def _apply_one(u: Update, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    op = u.op
    if op == "schedule" or op == "cancel":
        _timer_op(u, state, env)
        return
    if u.path is not None:
        keys = u.path.keys(env)
        parent, key = _container(state, u.path.root, keys, create=op not in ("remove", "delete"))
        if op == "set":
            parent[key] = u.value(env)
        elif op == "inc":
            cur = parent.get(key) or 0
            parent[key] = cur + u.value(env)
        elif op == "append":
            lst = parent.get(key)
            if lst is None:
                lst = parent[key] = []
            if not isinstance(lst, list):
                raise ExprErrorAtRuntime(f"append to {u.path.text!r}: not a list")
            lst.append(u.value(env))
        elif op == "merge":
            cur = parent.get(key)
            if cur is None:
                cur = parent[key] = {}
            if not isinstance(cur, dict):
                raise ExprErrorAtRuntime(f"merge into {u.path.text!r}: not an object")
            cur.update(u.value(env))
        elif op == "remove":
            if parent is None:
                return
            lst = parent.get(key)
            if isinstance(lst, list):
                kept = []
                for item in lst:
                    env["it"] = item
                    if not u.where(env):
                        kept.append(item)
                env.pop("it", None)
                parent[key] = kept
        elif op == "delete":
            if parent is not None:
                parent.pop(key, None)
        elif op == "token":
            parent[key] = draw_token(state, u.length, u.alphabet)
        return

    # Entity operations on runtime.entities.<table>.<id>
    table = u.table
    tables = state["runtime"].setdefault("entities", {})
    rows = tables.setdefault(table, {})
    if op == "insert":
        eid = _allocate_id(state, world, table) if u.id == "auto" else u.id(env)
        row = dict(u.value(env))
        row["id"] = eid
        for wf in u.workflows:
            state_now = row.setdefault(wf.field, wf.initial)
            if state_now != wf.initial:
                raise ExprErrorAtRuntime(f"workflow {wf.name}: a new {table} row starts in '{wf.initial}', "
                                         f"not '{state_now}'")
        rows[str(eid)] = row
        if u.bind:
            env[u.bind] = eid
    elif op == "update":
        eid = u.id(env)
        cur = entity(table, eid)
        if cur is None:
            raise ExprErrorAtRuntime(f"update of {table} {eid}: no such row")
        new = deep_copy(cur)  # world rows are shared, cached objects: never alias them
        for name, val in u.fields:
            new[name] = val(env)
        for wf in u.workflows:
            old, moved = cur.get(wf.field), new.get(wf.field)
            if not wf.allows(old, moved):
                raise ExprErrorAtRuntime(f"workflow {wf.name}: {table} {eid} cannot go from '{old}' to '{moved}'")
        rows[str(eid)] = new
    elif op == "tombstone":
        rows[str(u.id(env))] = None

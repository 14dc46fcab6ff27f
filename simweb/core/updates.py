"""Apply a spec's declarative updates to a state.

Each update names a location (a path, or an entity table and id) and an operation; its
values are compiled expressions evaluated in the event's environment. Updates of one
event run in order and may bind names for later ones (``insert ... as: order_id``).
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .spec import (
    AppendOp,
    CancelOp,
    DeleteOp,
    ExprErrorAtRuntime,
    IncOp,
    InsertOp,
    MergeOp,
    PathUpdate,
    RemoveOp,
    ScheduleOp,
    SetOp,
    TokenOp,
    TombstoneOp,
    Update,
    UpdateRowOp,
)
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


def _timer_op(u: ScheduleOp | CancelOp, state: dict, env: dict[str, Any]) -> None:
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
    if isinstance(u, CancelOp):
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
        if u.loop_var is not None and u.loop_iter is not None:
            items = u.loop_iter(env) or []
            for item in list(items):
                env[u.loop_var] = item
                if u.when is None or u.when(env):
                    _apply_one(u, state, env, world, entity)
            env.pop(u.loop_var, None)
        elif u.when is None or u.when(env):
            _apply_one(u, state, env, world, entity)


def _apply_one(u: Update, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    OPERATIONS[type(u)](u, state, env, world, entity)


# ----------------------------------------------------------------------------- path operations
# Each takes (update, state, env, world, entity); the table at the end maps op names to them.

def _at(u: PathUpdate, state: dict, env: dict[str, Any], create: bool = True) -> tuple[Any, str]:
    return _container(state, u.path.root, u.path.keys(env), create=create)


def _set(u: SetOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env)
    parent[key] = u.value(env)


def _inc(u: IncOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env)
    parent[key] = (parent.get(key) or 0) + u.value(env)


def _append(u: AppendOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env)
    lst = parent.get(key)
    if lst is None:
        lst = parent[key] = []
    if not isinstance(lst, list):
        raise ExprErrorAtRuntime(f"append to {u.path.text!r}: not a list")
    lst.append(u.value(env))


def _merge(u: MergeOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env)
    cur = parent.get(key)
    if cur is None:
        cur = parent[key] = {}
    if not isinstance(cur, dict):
        raise ExprErrorAtRuntime(f"merge into {u.path.text!r}: not an object")
    cur.update(u.value(env))


def _remove(u: RemoveOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    """Drop the list items for which ``where`` holds (the item is ``it``)."""
    parent, key = _at(u, state, env, create=False)
    lst = parent.get(key) if parent is not None else None
    if not isinstance(lst, list):
        return
    kept = []
    for item in lst:
        env["it"] = item
        if not u.where(env):
            kept.append(item)
    env.pop("it", None)
    parent[key] = kept


def _delete(u: DeleteOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env, create=False)
    if parent is not None:
        parent.pop(key, None)


def _token(u: TokenOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    parent, key = _at(u, state, env)
    parent[key] = draw_token(state, u.length, u.alphabet)


# ----------------------------------------------------------------------------- entity operations
# On runtime.entities.<table>.<id>, the overlay over the world's rows.

def _rows(u: InsertOp | UpdateRowOp | TombstoneOp, state: dict) -> dict:
    return state["runtime"].setdefault("entities", {}).setdefault(u.table, {})


def _insert(u: InsertOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    rows = _rows(u, state)
    eid = _allocate_id(state, world, u.table) if u.id is None else u.id(env)
    row = dict(u.value(env))
    row["id"] = eid
    for wf in u.workflows:
        state_now = row.setdefault(wf.field, wf.initial)
        if state_now != wf.initial:
            raise ExprErrorAtRuntime(f"workflow {wf.name}: a new {u.table} row starts in '{wf.initial}', "
                                     f"not '{state_now}'")
    rows[str(eid)] = row
    if u.bind:
        env[u.bind] = eid


def _update(u: UpdateRowOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    rows = _rows(u, state)
    eid = u.id(env)
    cur = entity(u.table, eid)
    if cur is None:
        raise ExprErrorAtRuntime(f"update of {u.table} {eid}: no such row")
    new = deep_copy(cur)  # world rows are shared, cached objects: never alias them
    for name, val in u.fields:
        new[name] = val(env)
    for wf in u.workflows:
        old, moved = cur.get(wf.field), new.get(wf.field)
        if not wf.allows(old, moved):
            raise ExprErrorAtRuntime(f"workflow {wf.name}: {u.table} {eid} cannot go from '{old}' to '{moved}'")
    rows[str(eid)] = new


def _tombstone(u: TombstoneOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    _rows(u, state)[str(u.id(env))] = None


def _timer(u: ScheduleOp | CancelOp, state: dict, env: dict[str, Any], world: Any, entity: Any) -> None:
    _timer_op(u, state, env)


Operation = Callable[[Any, dict, dict, Any, Any], None]

#: The function applying each update operation of the spec language, by its type
#: (simweb.spec defines one small type per operation; spec_schema lists the same names).
OPERATIONS: dict[type[Update], Operation] = {
    SetOp: _set, IncOp: _inc, AppendOp: _append, MergeOp: _merge, RemoveOp: _remove, DeleteOp: _delete,
    TokenOp: _token, InsertOp: _insert, UpdateRowOp: _update, TombstoneOp: _tombstone,
    ScheduleOp: _timer, CancelOp: _timer,
}

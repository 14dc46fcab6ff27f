from __future__ import annotations

from typing import Any

from simweb.core.functions import Ctx, FunctionTable, entity_row

from .world import ROLES

FUNCTIONS = FunctionTable()
TASKS: list = []


@FUNCTIONS.entity("cards")
def _card(world: Any, cid: int) -> dict | None:
    return world.card(cid)


@FUNCTIONS.function(reads=("world.cards", "runtime.entities.cards.*"))
def card(ctx: Ctx, cid: Any) -> dict | None:
    return entity_row(ctx.world, ctx.state, FUNCTIONS.entity_loaders, "cards", cid)


@FUNCTIONS.function(reads=("runtime.roles",))
def role_of(ctx: Ctx, uid: Any) -> str | None:
    return ctx.runtime["roles"].get(str(uid), ROLES.get(uid) if isinstance(uid, int) else None)

"""The auth kit's functions: how a spec finds the account a sign-in names, and who is
signed in. An app with username-or-email accounts registers them once,

    current_user, find_login = add_auth_functions(FUNCTIONS)

and the kit's default ``account: find_login(params.login)`` works as it is. An app whose
accounts are found another way (the forum signs in by username only) registers its own
function and names it in the kit's ``account`` option.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..functions import Ctx, FunctionTable, entity_row, overlay


def add_auth_functions(table: FunctionTable, *, users: str = "users") -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Register ``current_user()`` and ``find_login(login)`` over the ``users`` table of the
    app's ``table`` (its world loader must be registered) and return them, for the app's own
    functions to call."""
    reads = (f"world.{users}", f"runtime.entities.{users}.*")

    def row(ctx: Ctx, uid: Any) -> dict | None:
        return entity_row(ctx.world, ctx.state, table.entity_loaders, users, uid)

    def current_user(ctx: Ctx) -> dict | None:
        """The signed-in user's record, or None."""
        return row(ctx, ctx.user)

    def find_login(ctx: Ctx, login: str | None) -> dict | None:
        """The user whose current username or email is ``login`` (case-insensitive), or None."""
        key = str(login or "").strip().casefold()
        if not key:
            return None

        def matches(found: dict | None) -> bool:
            return found is not None and key in (found["username"].casefold(), found["email"].casefold())

        # Run-time rows first: accounts created in the episode, and world accounts whose
        # username or email changed (their old one no longer signs in).
        for _, found in sorted(overlay(ctx.state, users).items(), key=lambda kv: int(kv[0])):
            if matches(found):
                return found
        hit = ctx.world.user_by_login(key)
        current = None if hit is None else row(ctx, hit["id"])
        return current if matches(current) else None

    table.function(reads=reads + ("browser.user",))(current_user)
    table.function(reads=reads)(find_login)
    return current_user, find_login


__all__ = ["add_auth_functions"]

"""An in-memory world: three users, one project, a few cards."""
from __future__ import annotations

from typing import Any

USERS = {1: {"id": 1, "name": "ada"}, 2: {"id": 2, "name": "bob"}, 3: {"id": 3, "name": "cy"}}
ROLES = {1: "maintainer", 2: "developer", 3: "guest"}


class TinyWorld:
    hash = "7" * 64   # a world hash is a sha256 hex digest

    def __init__(self, size: int) -> None:
        self.cards = {i: {"id": i, "title": f"Card {i}", "state": "open", "owner": 1 + i % 3} for i in range(1, size + 1)}

    @classmethod
    def load(cls, seed: int = 0, size: int = 3, *, progress: bool = False) -> TinyWorld:
        return cls(size)

    def max_id(self, table: str) -> int:
        return {"cards": len(self.cards), "users": len(USERS)}.get(table, 0)

    def card(self, cid: int) -> dict[str, Any] | None:
        return self.cards.get(cid)

    def user(self, uid: int) -> dict[str, Any] | None:
        return USERS.get(uid)

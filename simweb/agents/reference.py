"""Reference agents: the oracle (replays the task's plan) and a seeded random agent."""
from __future__ import annotations

import re
from typing import Any, Protocol

from ..core.worlddb import Rng

_LINE = re.compile(r"^\s*\[([^\]]+)\]\s+(\w+)(?:\s+'((?:[^'\\\\]|\\\\.)*)')?")
WORDS = ["shirt", "blue", "cable", "lamp", "book", "12", "test@example.com", "hello", "0", "Queen", "4111"]


class Agent(Protocol):
    name: str

    def reset(self, env: Any) -> None: ...

    def act(self, obs: dict[str, Any]) -> str: ...


class OracleAgent:
    """Plays the current task's oracle plan, then stays idle."""

    name = "oracle"

    def __init__(self) -> None:
        self.plan: list[str] = []
        self.i = 0

    def reset(self, env: Any, seed: int = 0) -> None:
        self.plan = env.oracle_plan()
        self.i = 0

    def act(self, obs: dict[str, Any]) -> str:
        if self.i >= len(self.plan):
            return "noop()"
        a = self.plan[self.i]
        self.i += 1
        return a


class RandomAgent:
    """Picks a random element of the page and a fitting action (seeded: same seed, same
    choices). It never answers, so information tasks stay unsolved by it."""

    name = "random"

    def __init__(self, seed: int = 0):
        self.seed = seed
        self.rng = Rng.derive("random-agent", seed)

    def reset(self, env: Any, seed: int | None = None) -> None:
        """A new rollout: its choices are drawn from (``seed``, else the agent's seed; the
        state's instance seed), so a rollout's actions never depend on the ones before."""
        if seed is not None:
            self.seed = int(seed)
        state = env.state if hasattr(env, "state") else env.snapshot()   # a browser env: from its server
        self.rng = Rng.derive("random-agent", self.seed, state["meta"]["rng"]["seed"])

    def act(self, obs: dict[str, Any]) -> str:
        elems = []
        options: dict[str, list[str]] = {}
        last_combo = None
        for line in obs["axtree"].splitlines():
            m = _LINE.match(line)
            if not m:
                continue
            if m.group(2) == "option" and last_combo is not None:
                options[last_combo].append(m.group(3) or "")
                continue
            elems.append((m.group(1), m.group(2)))
            last_combo = m.group(1) if m.group(2) == "combobox" else None
            if last_combo:
                options[last_combo] = []
        r = self.rng.below(100)
        if not elems or r < 4:
            return "go_back()"
        if r < 8:
            return f"scroll(0, {self.rng.choice([200, 400, -300])})"
        bid, role = self.rng.choice(elems)
        if role in ("textbox", "searchbox", "spinbutton"):
            return f"fill({bid!r}, {self.rng.choice(WORDS)!r})"
        if role == "combobox":
            opts = options.get(bid) or []
            return f"click({bid!r})" if not opts else f"select_option({bid!r}, {self.rng.choice(opts)!r})"
        if role in ("checkbox", "radio"):
            return f"click({bid!r})"
        return f"click({bid!r})"



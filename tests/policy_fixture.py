"""A user's policy, importable by path (tests use ``tests.policy_fixture:FirstLink``)."""
from __future__ import annotations

import re
from typing import Any

from simweb.episodes.policy import Action


class FirstLink:
    """Clicks the n-th link of the page, n drawn from the rollout's seed; says its log-prob."""

    name = "first-link"
    version = 3

    def reset(self, env: Any, seed: int) -> None:
        self.n = seed % 3

    def act(self, obs: dict) -> Action:
        links = re.findall(r"\[([^\]]+)\] link", obs["axtree"])
        if not links:
            return Action("noop()", 0.0)
        return Action(f"click('{links[self.n % len(links)]}')", -1.0986)

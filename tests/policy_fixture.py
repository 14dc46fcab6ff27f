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


class SlowFirstLink(FirstLink):
    """FirstLink that takes 20 ms of wall time per action (its actions are FirstLink's):
    a worker holding a few of its items stays busy long enough for a test to act mid-run."""

    name = "slow-first-link"

    def act(self, obs: dict) -> Action:
        import time

        time.sleep(0.02)
        return super().act(obs)

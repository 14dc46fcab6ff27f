"""The task model every simweb backend shares: WebGym's fact groups, difficulty buckets
and step budgets, defined once.

Synthetic tasks (:mod:`simweb.tasks`) and WebGym task files (:mod:`simweb.live.tasks`)
both describe a task by its fact groups (WebGym's ``evaluator_reference``); the number of
facts gives the difficulty bucket, and the bucket gives the step budget of a split.
:func:`episode_budget` is the one rule by which every env turns a task into the number
of steps an episode may take.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

#: WebGym's step budgets by split and difficulty bucket.
STEP_BUDGETS: dict[str, dict[str, int]] = {
    "train": {"easy": 10, "medium": 20, "hard": 30},
    "test": {"easy": 30, "medium": 50, "hard": 70},
}

#: The budget of an episode without a task (free browsing).
TASKLESS_BUDGET = 50

#: The most steps any episode of a registered app may take unless told otherwise: the
#: ``max_episode_steps`` of every ``gymnasium.spec("simweb/<app>-v<n>")``. It bounds
#: :func:`episode_budget` (WebGym's hard test budget is 70 and the longest oracle plan
#: of the shipped apps is 42 steps, so the bound never cuts a budget short today).
MAX_EPISODE_STEPS = 100


def bucket_for(n_facts: int) -> str:
    """WebGym's difficulty bucket: ``easy`` (<= 3 facts), ``medium`` (4-6), ``hard`` (>= 7)."""
    if n_facts <= 3:
        return "easy"
    if n_facts <= 6:
        return "medium"
    return "hard"


def split_budget(bucket: str, split: str = "test") -> int:
    """WebGym's step budget of a difficulty bucket in ``split`` (``train`` or ``test``)."""
    try:
        by_bucket = STEP_BUDGETS[split]
    except KeyError:
        raise ValueError(f"unknown split {split!r}; expected 'train' or 'test'") from None
    try:
        return by_bucket[bucket]
    except KeyError:
        raise ValueError(f"unknown difficulty {bucket!r}; expected 'easy', 'medium' or 'hard'") from None


def episode_budget(bucket: str | None, plan_steps: int = 0, *, split: str = "test",
                   cap: int | None = MAX_EPISODE_STEPS) -> int:
    """The step budget of an episode: WebGym's budget of the task's bucket in ``split``
    and at least twice the oracle's plan (``plan_steps``; 0 when there is none), at most
    ``cap``. A task-less episode (``bucket`` None) gets :data:`TASKLESS_BUDGET`."""
    budget = TASKLESS_BUDGET if bucket is None else max(split_budget(bucket, split), 2 * int(plan_steps))
    return min(budget, cap) if cap else budget


@dataclass(frozen=True)
class FactGroup:
    """WebGym's ``evaluator_reference`` entry: a group of facts the result (or, for a
    judge, the trajectory) must satisfy. ``extra`` keeps any other keys a task file gave
    the group (e.g. a legacy per-item ``difficulty``), written back by :meth:`to_dict`."""

    id: str
    description: str
    facts: tuple[str, ...]
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)

    def to_dict(self) -> dict[str, Any]:
        """The group as WebGym writes it (``extra`` keys after the standard ones)."""
        out: dict[str, Any] = {"id": self.id, "description": self.description, "facts": list(self.facts)}
        for key, value in self.extra.items():
            out.setdefault(key, value)
        return out

    def to_json(self) -> dict[str, Any]:
        """The same as :meth:`to_dict` (the name simweb's task JSON uses)."""
        return self.to_dict()


def n_facts(groups: Any) -> int:
    """The number of facts over fact groups."""
    return sum(len(g.facts) for g in groups)


__all__ = ["FactGroup", "MAX_EPISODE_STEPS", "STEP_BUDGETS", "TASKLESS_BUDGET", "bucket_for", "episode_budget",
           "n_facts", "split_budget"]

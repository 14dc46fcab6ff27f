"""A bounded memo: the one lookup the variant machinery's rewrite caches share
(:mod:`simweb.runtime.variants`, :mod:`simweb.runtime.url_schemes`)."""
from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

#: The default bound of a memo (entries).
BOUND = 8192


def memoised(memo: dict[K, V], key: K, compute: Callable[[K], V], bound: int = BOUND) -> V:
    """``compute(key)``, remembered in ``memo``; the memo is emptied when it reaches
    ``bound`` entries. ``compute`` must be a pure function of ``key`` that never returns
    None, so a cleared memo only costs time."""
    hit = memo.get(key)
    if hit is None:
        if len(memo) >= bound:
            memo.clear()
        hit = memo[key] = compute(key)
    return hit


__all__ = ["BOUND", "memoised"]

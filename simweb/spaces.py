"""Gymnasium spaces for web observations and actions: free text and JSON values."""
from __future__ import annotations

from typing import Any

import gymnasium as gym


class Unicode(gym.spaces.Space):
    """A space of arbitrary strings (gymnasium's Text space limits the charset)."""

    def __init__(self, max_length: int = 10_000_000):
        super().__init__(shape=(), dtype=str)
        self.max_length = max_length

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return "noop()"

    def __repr__(self) -> str:
        return "Unicode()"


class JsonValue(gym.spaces.Space):
    """A space of values of the given Python types (lists of URLs, chat messages,
    screenshot bytes); a sample is an empty value of the first type."""

    def __init__(self, *kinds: type):
        if not kinds:
            raise ValueError("JsonValue needs at least one type")
        super().__init__(shape=None, dtype=None)
        self.kinds = kinds

    def contains(self, x: Any) -> bool:
        return isinstance(x, self.kinds)

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        return self.kinds[0]()

    def __repr__(self) -> str:
        return f"JsonValue({', '.join(k.__name__ for k in self.kinds)})"

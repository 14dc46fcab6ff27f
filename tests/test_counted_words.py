"""A count of one takes the singular on the pages the apps show ("1 rating", "1 point",
"1 star & up"), on today's site and through a variant's phrases."""
from __future__ import annotations

import re
from collections import Counter

import pytest

import simweb

_PLURAL_ONE = re.compile(r"(?<![\d.,])\b1 (ratings|points|stars|written reviews)\b")
_SINGULAR_ONE = re.compile(r"(?<![\d.,])\b1 (rating|point|star)\b")


@pytest.mark.parametrize("app, variant, want", [
    ("shopping", 0, {"1 rating", "1 star"}), ("forum", 0, {"1 point"}),
    ("shopping", 9, {"1 rating", "1 star"}), ("forum", 9, {"1 point"}),
])
def test_a_count_of_one_is_singular(app: str, variant: int, want: set[str]) -> None:
    env = simweb.make(app, variant=variant, max_steps=1000)
    seen: Counter[str] = Counter()
    for seed in (0, 1):
        for tid in sorted(env.unwrapped.app.tasks):
            obs, _ = env.reset(seed=seed, options={"task": tid})
            texts = [obs["axtree"]]
            for action in env.unwrapped.oracle_plan():
                obs, *_ = env.step(action)
                texts.append(obs["axtree"])
            for text in texts:
                wrong = _PLURAL_ONE.findall(text)
                assert not wrong, (tid, seed, [ln for ln in text.splitlines() if _PLURAL_ONE.search(ln)][:3])
                seen.update(m.group(0) for m in _SINGULAR_ONE.finditer(text))
    assert want <= set(seen), seen   # the pages walked show a count of one

"""Text compared as people read it: case, runs of spaces and a trailing full stop aside.

One normalisation for the whole engine: answers (:mod:`simweb.judging.verify`) and the
values a site fills in by itself (:class:`simweb.core.specmodel.Fill`) compare through it.
"""
from __future__ import annotations

import re
from typing import Any

_WS = re.compile(r"\s+")


def normalise_text(s: Any) -> str:
    """``s`` as text, spaces collapsed, stripped, without a trailing full stop, casefolded."""
    return _WS.sub(" ", str(s or "")).strip().strip(".").casefold()


__all__ = ["normalise_text"]

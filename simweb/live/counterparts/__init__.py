"""Real, self-hostable counterparts of the simweb apps, run on loopback for sim-to-live runs.

``COUNTERPARTS`` maps a counterpart's name to ``module:Class``, imported only when asked
for, so listing names never imports Django or Roundup. ``PAIRS`` are the ``app:counterpart``
pairs a sim-to-live run compares. An unknown name gets a "did you mean".
"""
from __future__ import annotations

import difflib
import importlib
from pathlib import Path
from typing import TYPE_CHECKING

from .base import Counterpart, CounterpartError

if TYPE_CHECKING:  # pragma: no cover
    from .portable import PortableFamily

__all__ = ["COUNTERPARTS", "PAIRS", "Counterpart", "CounterpartError", "families", "get", "names", "pair", "resolve"]

COUNTERPARTS: dict[str, str] = {
    "oscar": "simweb.counterparts.oscar:Oscar",
    "spirit": "simweb.counterparts.spirit:Spirit",
    "roundup": "simweb.counterparts.roundup:Roundup",
    "wagtail": "simweb.counterparts.wagtail:Wagtail",
    "pretix": "simweb.counterparts.pretix:Pretix",
}

PAIRS: frozenset[str] = frozenset({
    "shopping:oscar", "forum:spirit", "issues:roundup", "cms:wagtail", "booking:pretix",
})


def names() -> list[str]:
    """Registered counterpart names, sorted."""
    return sorted(COUNTERPARTS)


def _unknown(kind: str, name: str, known: list[str]) -> CounterpartError:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean '{close[0]}'?" if close else f" (known: {', '.join(known)})"
    return CounterpartError(f"unknown {kind} '{name}'{hint}")


def resolve(name: str) -> type[Counterpart]:
    """The counterpart class registered as ``name`` (imported on first use)."""
    if name not in COUNTERPARTS:
        raise _unknown("counterpart", name, names())
    module, _, cls = COUNTERPARTS[name].partition(":")
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise CounterpartError(f"counterpart '{name}' is not part of this simweb build ({module} missing)") from None
        raise
    return getattr(mod, cls)


def get(name: str, home: Path | str | None = None) -> Counterpart:
    """An instance of counterpart ``name`` (its home under the counterparts cache unless given)."""
    return resolve(name)(home)


def pair(spec: str) -> tuple[str, str]:
    """``"issues:roundup"`` -> ``("issues", "roundup")``, checked against ``PAIRS``."""
    if spec not in PAIRS:
        raise _unknown("pair", spec, sorted(PAIRS))
    app, _, cp = spec.partition(":")
    return app, cp


def families(name: str) -> list[PortableFamily]:
    """The portable families of counterpart ``name`` (its ``families.FAMILIES``)."""
    if name not in COUNTERPARTS:
        raise _unknown("counterpart", name, names())
    module = COUNTERPARTS[name].partition(":")[0] + ".families"
    try:
        mod = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name and module.startswith(exc.name):
            raise CounterpartError(f"counterpart '{name}' has no portable families in this build") from None
        raise
    return list(mod.FAMILIES)

"""Where scripts for simweb's own tasks come from: the portable task families.

A portable family (``simweb.counterparts.<name>.families``, one list per counterpart)
ties a simweb template to a counterpart and gives, for each of its instances, the
simweb task seed of that instance and the scripted agent's steps, the same list that
runs on the counterpart. So on plain simweb, ``--agent scripted`` can run exactly the
templates some family covers, at the families' instances; for any other template there
is no script and asking for it is an error that names the templates that have one.
"""
from __future__ import annotations

import importlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ScriptedInstance", "families_for", "scripted_instances"]


@dataclass(frozen=True)
class ScriptedInstance:
    """One simweb task instance with the steps that solve it."""

    task: str            # simweb template id
    seed: int            # simweb task seed of the instance
    index: int           # the instance's index in its family
    family: str          # the family's id ("shopping:oscar/product_price")
    steps: list[Any] = field(compare=False, default_factory=list)


def families_for(app: str) -> list[Any]:
    """Every portable family whose simweb template belongs to ``app`` (none when the
    counterparts are not part of this installation)."""
    try:
        counterparts = importlib.import_module("simweb.counterparts")
    except ImportError:
        return []
    out = []
    for pair in sorted(getattr(counterparts, "PAIRS", ())):
        sim_app, _, name = pair.partition(":")
        if sim_app != app or not name:
            continue
        try:
            out.extend(counterparts.families(name))
        except (ImportError, ValueError, RuntimeError):   # a pair whose families are not in this build
            continue
    return [f for f in out if str(getattr(f, "sim_task", "")).partition("/")[0] == app]


def scripted_instances(app: str, indexes: Iterable[int], families: list[Any] | None = None) -> list[ScriptedInstance]:
    """The scripted instances of ``app``'s families at these instance indexes, in family order."""
    indexes = sorted(set(indexes))
    wanted = (max(indexes) + 1) if indexes else 0
    out = []
    for fam in families if families is not None else families_for(app):
        instances = fam.instances(wanted)
        for inst in instances:
            if inst.index in indexes:
                out.append(ScriptedInstance(inst.sim_task, inst.sim_seed, inst.index, fam.id, list(fam.script(inst))))
    return out

"""The learned policy's retained gain: its untrained and trained checkpoints on one pair.

    simweb sim2live --pair issues:roundup --agent learned --checkpoint runs/issues -n 10 --out s2l/issues

:func:`run_learned` runs :func:`simweb.sim2live.run` twice on the same instances, once with
``DIR/init`` (the untrained policy) and once with ``DIR`` (the trained one), into
``OUT/init`` and ``OUT/trained``, and writes ``OUT/retained.json``
(:func:`simweb.sim2live.retained_gain`: per family and in total, clean success before and
after on each side, sim gain, live gain, retained gain = live / sim with paired bootstrap
intervals, and the first diverging step and divergence classes of every pair of episodes),
plus the wall time of each run.

Two things keep the long live runs affordable:

* **one run for one policy.** A checkpoint's policy is its feature names and weights. When
  the trained weights are the untrained ones (a run of 0 iterations, or a run that never
  moved), the trained run *is* the untrained run: it is run once and used for both, and
  ``retained.json`` says so (``same_policy``); the gains are then 0 by construction and
  the retained gain undefined.
* **a finished side is kept.** ``OUT/init/report.json`` or ``OUT/trained/report.json``
  that were written for the same policy (the key above), pair, families, instances and
  step budget are read back instead of run again, so a run stopped between its two halves
  resumes with the other half, and the untrained half measured for one checkpoint serves
  every checkpoint of the same feature set (their ``init/`` policies are all zeros).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .sim2live import Settings, Sim2LiveError, retained_gain, run

__all__ = ["policy_key", "run_learned"]


def policy_key(checkpoint: str | Path) -> str:
    """What makes two checkpoints the same policy: a hash of their feature names and
    weights (not of the training state, the iteration or the app name)."""
    from ..episodes.learner import CheckpointError, read_checkpoint

    try:
        doc = read_checkpoint(checkpoint)
    except CheckpointError as exc:
        raise Sim2LiveError(str(exc)) from None
    blob = json.dumps({"features": doc["features"], "weights": [float(w) for w in doc["weights"]]},
                      sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _run_key(settings: Settings, key: str) -> dict[str, Any]:
    run_key = {"policy": key, "pair": settings.pair, "families": list(settings.families or []),
               "instances": settings.instances, "max_steps": settings.max_steps}
    if settings.first_seed:   # absent for seed 0, so reports written before the option still match
        run_key["first_seed"] = settings.first_seed
    return run_key


def _kept(path: Path, run_key: dict[str, Any]) -> dict | None:
    """A report written earlier for the same run key, or None."""
    try:
        doc = json.loads((path / "report.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("learned_run") == run_key else None


def run_learned(pair: str, checkpoint: str | Path, out: str | Path, *, families: Sequence[str] | None = None,
                instances: int = 3, max_steps: int = 40, on_episode: Callable[[dict], None] | None = None,
                progress: bool = False, echo: Callable[[str], None] | None = None, home: Path | None = None,
                port: int | None = None, install: bool = True, first_seed: int = 0) -> dict[str, Any]:
    """Run the untrained and the trained policy of ``checkpoint`` on the pair's instances and
    write ``out/retained.json``; returns its content. ``home``, ``port`` and ``install``
    are :class:`~simweb.sim2live.Settings`' (the counterpart's home, its port, whether a
    missing install is installed), and so is ``first_seed`` (the instances from that simweb
    seed on; 1000 and up are held out from training by construction)."""
    out = Path(out)
    ckpts = {"init": Path(checkpoint) / "init", "trained": Path(checkpoint)}
    keys = {which: policy_key(c) for which, c in ckpts.items()}
    reports: dict[str, dict] = {}
    timing: dict[str, Any] = {}
    for which in ("init", "trained"):
        settings = Settings(pair=pair, agent="learned", families=list(families) if families else None,
                            instances=instances, out=out / which, max_steps=max_steps, checkpoint=ckpts[which],
                            home=home, port=port, install=install, first_seed=first_seed)
        if which == "trained" and keys["trained"] == keys["init"]:
            reports[which] = reports["init"]
            timing[which] = {"seconds": 0.0, "how": "same policy as init: not run again"}
            if echo:
                echo("trained weights equal the untrained ones: the init run serves both (gain 0 by construction)")
            continue
        run_key = _run_key(settings, keys[which])
        kept = _kept(out / which, run_key)
        if kept is not None:
            reports[which] = kept
            timing[which] = {"seconds": kept.get("learned_seconds"), "how": "kept from an earlier run"}
            if echo:
                echo(f"{which}: the report in {out / which} was written for this policy and these instances: kept")
            continue
        t0 = time.monotonic()
        report = run(settings, on_episode=on_episode, progress=progress)
        seconds = round(time.monotonic() - t0, 1)
        report["learned_run"] = run_key
        report["learned_seconds"] = seconds
        (out / which / "report.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        reports[which] = report
        timing[which] = {"seconds": seconds, "how": "run"}
    gain = retained_gain(reports["init"], reports["trained"])
    gain.update(checkpoint=str(checkpoint), policies=keys, same_policy=keys["init"] == keys["trained"],
                instances_per_family=instances, first_seed=first_seed, max_steps=max_steps, timing=timing)
    from ..episodes.rollout import write_atomic

    write_atomic(str(out / "retained.json"), [json.dumps(gain, indent=1, sort_keys=True).encode()])
    return gain

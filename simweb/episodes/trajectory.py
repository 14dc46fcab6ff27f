"""The trajectory format: one versioned JSONL schema, one writer, one reader.

Every command that records episodes (``simweb run``, ``fork``, ``eval``, ``train``,
``sim2live``, ``demo --out``) and the rollout pools write trajectories through this
module; ``simweb redteam --out`` writes its attacks through it too. The schema is
``simweb/schemas/trajectory.schema.json`` (JSON Schema 2020-12, id ``simweb.trajectory/2``);
docs/trajectories.md describes it. A file is:

* a header line: ``{"type": "header", "schema": "simweb.trajectory/2", "kind": "episode",
  ...}`` with the app, world, task, params, goal, variant (reserved: null), seed, agent,
  the start state's hash and observation, and fork parentage (``parent``: the state
  hash and step a fork child started from; null for an episode that was reset);
* one step line per action: the action, its error, the observation after it (AX-tree
  text, URL, title, a screenshot file where the backend has one), the reward, the
  verdict with every check (collateral changes as ``collateral: <path>`` with
  ``before -> after``), the site's error message, and the state hash.

A red-team file (``kind: redteam``) has attack lines instead of steps.

Files written before the schema existed (version 1: a header without ``schema``, steps
without observations) are read, with ``observation`` null; anything else is refused
with one line (:class:`TrajectoryFormatError`).
"""
from __future__ import annotations

import errno
import json
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Iterator
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

__all__ = ["SCHEMA", "SCHEMA_VERSION", "TrajectoryFormatError", "action_bid", "attack_lines", "element_box", "header_fields", "load_schema",
           "observation", "page_title", "parse_header", "read_trajectory", "step_fields", "upgrade_step",
           "validate_lines", "write_attacks", "write_trajectory"]

SCHEMA_VERSION = 2
SCHEMA = f"simweb.trajectory/{SCHEMA_VERSION}"
SCHEMA_FILE = Path(__file__).parents[1] / "schemas" / "trajectory.schema.json"

_TITLE = re.compile(r"^RootWebArea '((?:[^'\\]|\\.)*)'")


class TrajectoryFormatError(ValueError):
    """A file that is not a trajectory this simweb reads (one line naming the file)."""


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The JSON Schema of one trajectory line."""
    return json.loads(SCHEMA_FILE.read_text())


def validate_lines(lines: Iterable[dict[str, Any]]) -> None:
    """Validate parsed lines against the schema (jsonschema; raises its ValidationError)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(load_schema())
    for line in lines:
        validator.validate(line)


# ----------------------------------------------------------------------------- recording

_BID_ACTIONS = ("click", "dblclick", "hover", "fill", "select_option", "check", "uncheck", "clear", "focus",
                "press", "upload_file", "drag_and_drop")
_ACTION = re.compile(r"^\s*([a-z_]+)\(\s*(?:(['\"])((?:\\.|(?!\2).)*)\2)?")


def action_bid(action: str) -> str | None:
    """The element id a BrowserGym action acts on (its first quoted argument), if any."""
    m = _ACTION.match(action or "")
    if not m or m.group(1) not in _BID_ACTIONS or m.group(3) is None:
        return None
    return m.group(3)


def element_box(env: Any, action: str) -> dict[str, float] | None:
    """Where the element ``action`` names is in the viewport (CSS pixels, as on the
    screenshot), for a Chromium env that takes screenshots; None elsewhere or when the
    element is not found at once (the action then reports its own error)."""
    page = getattr(env, "page", None)
    bid = action_bid(action)
    if page is None or bid is None or not getattr(env, "screenshots", False):
        return None
    from ..web.actions import _css_bid

    try:
        box = page.locator(_css_bid(bid)).first.bounding_box(timeout=250)
    except Exception:   # Playwright's timeout or a page mid-navigation: no box, no failure
        return None
    return {k: round(float(box[k]), 1) for k in ("x", "y", "width", "height")} if box else None

def page_title(axtree: str | None) -> str:
    """The page title: the name of the AX tree's root (``RootWebArea 'Title'``)."""
    m = _TITLE.match(axtree or "")
    return m.group(1).replace("\\'", "'") if m else ""


def observation(obs: dict[str, Any], *, lean: bool = False) -> dict[str, Any]:
    """The recorded part of an observation. ``lean``: without the AX-tree text (what a
    rollout kept only in memory needs; its digest stays in the step's ``obs``)."""
    axtree = obs.get("axtree") or ""
    return {"url": obs.get("url") or "", "title": page_title(axtree), "axtree": None if lean else axtree,
            "screenshot": None}


def header_fields(obs: dict[str, Any], *, goal: str | None, parent: dict[str, Any] | None,
                  lean: bool = False) -> dict[str, Any]:
    """What the schema adds to a rollout's header: the schema id, the goal, the variant
    (reserved), the start observation and fork parentage."""
    return {"schema": SCHEMA, "kind": "episode", "goal": goal, "variant": None,
            "observation": observation(obs, lean=lean), "parent": parent}


def step_fields(obs: dict[str, Any], info: dict[str, Any], *, lean: bool = False) -> dict[str, Any]:
    """What the schema adds to a step line: the observation after the action, the whole
    verdict (every check) and the site's error message."""
    return {"observation": observation(obs, lean=lean), "site_error": info.get("site_error"),
            "verdict": info.get("verdict")}


# ----------------------------------------------------------------------------- writing

def _screenshot_dir(path: str) -> str:
    base = os.path.basename(path)
    return (base[:-len(".jsonl")] if base.endswith(".jsonl") else base) + ".screenshots"


class OutputError(ValueError):
    """An output file that cannot be written (a missing folder, no permission, a full
    disk): one line naming the file and why."""


def write_atomic(path: str, chunks: Iterable[bytes]) -> None:
    """Write a file so that it either appears whole or not at all: into a temporary file
    beside it, renamed over it at the end. Through a symlink, the file it points to is
    written (the link stays). A path that exists and is not a regular file (a device such
    as /dev/stdout or /dev/null, a FIFO) is written to directly: renaming over it would
    replace the device node with a regular file. Raises :class:`OutputError`."""
    target = os.path.realpath(path)
    try:
        mode = os.stat(target).st_mode
    except OSError:
        mode = None
    try:
        if mode is not None and not stat.S_ISREG(mode):
            if stat.S_ISDIR(mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
            with open(target, "wb") as f:
                for c in chunks:
                    f.write(c)
                    f.write(b"\n")
            return
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(target) or ".", prefix=".simweb-", suffix=".tmp")
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
                f.write(b"\n")
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def write_trajectory(path: str | os.PathLike[str], traj: Any) -> None:
    """Write ``traj`` (a :class:`simweb.rollout.Trajectory`) to ``path`` atomically. Its
    screenshots (PNG bytes by step, 0 the start) go to ``<name>.screenshots/`` beside the
    file, and the observations name them (relative paths)."""
    path = os.fspath(path)
    shots: dict[int, bytes] = getattr(traj, "screenshots", None) or {}
    if shots:
        folder = _screenshot_dir(path)
        full = os.path.join(os.path.dirname(path) or ".", folder)
        try:
            os.makedirs(full, exist_ok=True)
            for i, png in shots.items():
                name = f"step-{i:04d}.png"
                with open(os.path.join(full, name), "wb") as f:
                    f.write(png)
                rec = traj.header if i == 0 else traj.steps[i - 1]
                if isinstance(rec.get("observation"), dict):
                    rec["observation"]["screenshot"] = f"{folder}/{name}"
        except OSError as exc:
            raise OutputError(f"cannot write {full}: {exc.strerror or exc}") from None
    write_atomic(path, traj.lines())


def attack_lines(app: str, attacks: Iterable[Any], **meta: Any) -> Iterator[bytes]:
    """A red-team run as trajectory lines: a ``redteam`` header, one line per attack
    (a :class:`simweb.redteam.Attack` or its dict)."""
    from dataclasses import asdict, is_dataclass

    from .. import __version__

    yield orjson.dumps({"type": "header", "schema": SCHEMA, "kind": "redteam", "simweb": __version__, "app": app,
                        **meta})
    for a in attacks:
        d = asdict(a) if is_dataclass(a) and not isinstance(a, type) else dict(a)
        yield orjson.dumps({"type": "attack", **d})


def write_attacks(path: str, app: str, attacks: Iterable[Any], **meta: Any) -> None:
    """``simweb redteam --out``: the attacks as a ``redteam`` trajectory file."""
    write_atomic(path, attack_lines(app, attacks, **meta))


# ----------------------------------------------------------------------------- reading

def parse_header(line: bytes, path: str) -> dict[str, Any]:
    """A file's first line as a header of the current schema (a version-1 header is
    upgraded; anything else raises :class:`TrajectoryFormatError`)."""
    try:
        head = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise TrajectoryFormatError(f"{path}: not a simweb trajectory (the first line is not JSON)") from None
    if not isinstance(head, dict) or head.get("type") != "header":
        raise TrajectoryFormatError(f"{path}: not a simweb trajectory (the first line is not a trajectory header)")
    schema = head.get("schema")
    if schema is None:   # version 1: before the schema; read, without observations
        head = dict(head)
        head.update(schema="simweb.trajectory/1", kind="episode")
        for k in ("goal", "variant", "observation", "parent"):
            head.setdefault(k, None)
        if head.get("reset") is False and head.get("parent_hash"):
            head["parent"] = {"state_hash": head["parent_hash"], "step": 0}
        return head
    m = re.fullmatch(r"simweb\.trajectory/(\d+)", str(schema))
    if not m:
        raise TrajectoryFormatError(f"{path}: unknown trajectory schema {schema!r}")
    if int(m.group(1)) > SCHEMA_VERSION:
        raise TrajectoryFormatError(f"{path}: written by a newer simweb (schema {schema}); this one reads up to "
                                    f"{SCHEMA}")
    return head


def upgrade_step(step: dict[str, Any]) -> dict[str, Any]:
    """A step line with every field of the current schema (a version-1 step gets
    ``observation`` and ``site_error`` null)."""
    if "observation" not in step:
        step = dict(step)
        step.setdefault("observation", None)
        step.setdefault("site_error", None)
    return step


def read_trajectory(path: str | os.PathLike[str]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, lines after it) of a trajectory file; one-line errors as
    :class:`TrajectoryFormatError` (unreadable, not JSON, not a trajectory)."""
    path = os.fspath(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise TrajectoryFormatError(f"cannot read {path}: {exc.strerror or exc}") from None
    raw = [line for line in data.split(b"\n") if line.strip()]
    if not raw:
        raise TrajectoryFormatError(f"{path}: empty file, not a simweb trajectory")
    head = parse_header(raw[0], path)
    rest = []
    for n, line in enumerate(raw[1:], 2):
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise TrajectoryFormatError(f"{path}:{n}: not valid JSON") from None
        if not isinstance(obj, dict):
            raise TrajectoryFormatError(f"{path}:{n}: not a JSON object")
        rest.append(upgrade_step(obj))
    return head, rest


PARENT_STATE = "parent-state.json"


def write_group(folder: str | os.PathLike[str], trajs: list[Any], names: list[str], *,
                parent_state: dict[str, Any] | None = None, extra: list[dict[str, Any]] | None = None) -> list[str]:
    """A group of fork children into ``folder`` (one file each, ``names``), with each
    header updated by ``extra``; ``parent_state`` (the state they forked from) is saved as
    ``parent-state.json`` and named in their ``parent``, so a viewer can rebuild any
    step's state. Returns the paths."""
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    if parent_state is not None:
        write_atomic(os.path.join(folder, PARENT_STATE), [orjson.dumps(parent_state, option=orjson.OPT_SORT_KEYS)])
    paths = []
    for i, (t, name) in enumerate(zip(trajs, names)):
        if extra is not None:
            t.header.update(extra[i])
        if parent_state is not None and isinstance(t.header.get("parent"), dict):
            t.header["parent"]["state_file"] = PARENT_STATE
        path = os.path.join(folder, name)
        write_trajectory(path, t)
        paths.append(path)
    return paths


def sim2live_lines(pair: str, agent: str, inst: Any, ep: dict[str, Any], side: Any) -> Iterator[bytes]:
    """One side of a sim2live episode (a :class:`simweb.sim2live.Side`) as trajectory
    lines: the verdict the side's verifier gave is on its last step."""
    from .. import __version__

    app, _, counterpart = pair.partition(":")
    steps = [s for s in side.steps if s.get("action") != "(end)"]
    verdict = None
    if side.verdict:   # sim2live's checks say "ok"; the schema's say "passed"
        verdict = {k: side.verdict[k] for k in ("success", "progress", "clean")}
        verdict["checks"] = [{"name": str(c.get("name")), "passed": bool(c.get("ok", c.get("passed"))),
                              "detail": str(c.get("detail") or "")} for c in side.verdict.get("checks", [])]
    yield orjson.dumps({
        "type": "header", "schema": SCHEMA, "kind": "episode", "simweb": __version__,
        "app": app if side.name == "sim" else counterpart, "world": {}, "task": inst.sim_task,
        "params": inst.params, "goal": inst.goal, "variant": None, "seed": inst.sim_seed, "agent": agent,
        "reset": True, "observation": side.start or observation({}), "parent": None,
        "family": ep["family"], "instance": ep["index"],
        "sim2live": {"pair": pair, "family": ep["family"], "index": ep["index"], "side": side.name,
                     "parting": ep.get("parting")}})
    for n, s in enumerate(steps, 1):
        yield orjson.dumps({
            "type": "step", "step": n, "action": s["action"], "error": s.get("error") or None, "url": s.get("next_url", ""),
            "observation": s.get("observation") or observation({"url": s.get("next_url", "")}),
            "state_hash": None, "reward": float(s.get("reward") or 0.0),
            "terminated": bool(s.get("terminated")), "truncated": bool(s.get("truncated")),
            "verdict": verdict if n == len(steps) else None,
            "site_error": s.get("page_error") or None,
            "agent": {"page": s.get("page"), "script": s.get("script")}})


def write_sim2live(folder: str | os.PathLike[str], pair: str, agent: str, inst: Any, ep: dict[str, Any],
                   sides: Iterable[Any]) -> list[str]:
    """``simweb sim2live``: each side of an episode as ``<family>-<index>.<side>.jsonl``."""
    folder = os.fspath(folder)
    os.makedirs(folder, exist_ok=True)
    paths = []
    for side in sides:
        path = os.path.join(folder, f"{ep['family']}-{ep['index']}.{side.name}.jsonl")
        write_atomic(path, sim2live_lines(pair, agent, inst, ep, side))
        paths.append(path)
    return paths

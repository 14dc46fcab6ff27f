"""``simweb view``: a local Flask/Jinja site over trajectory files and run directories.

Pages (server-rendered, no JavaScript):

* ``/``: the episodes, filterable by app, task, agent, success, clean and kind (episodes
  started by a reset, fork children), sortable by reward and length, a page at a time;
* ``/episode/<id>?step=N``: step N with the page the agent saw (AX tree, screenshot) and
  the action's element highlighted, the page after, the reward, and the verdict's
  checks with each collateral change as before -> after; the step list marks every step
  where the verdict changed;
* ``/group/<id>``: the fork tree of the group an episode belongs to (children merged
  while their states agree), each leaf with its reward, and a form to diff any two steps;
* ``/diff?a=ID:STEP&b=ID:STEP``: the state change between two steps or branches (rebuilt
  by replay, every recorded state hash checked);
* ``/sim2live/<id>``: the simweb and live sides of a sim2live episode side by side at
  the first step where they part;
* ``/redteam``: red-team attacks per family; ``/plots``: :mod:`simweb.plots`' figures.

Everything from a trajectory is user-controlled text (goals, page text, actions): the
templates escape it (Jinja autoescape; nothing is marked safe).
"""
from __future__ import annotations

import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

from flask import Flask, Response, abort, render_template, request, send_file, url_for

from ...episodes.trajectory import action_bid
from .index import Episode, RunIndex, ViewerError
from .replay import ReplayError, StateCache, diff_states

__all__ = ["action_bid", "create_app"]

PAGE = 100
#: steps listed around the selected one on an episode page
WINDOW = 150
_COORD = re.compile(r"^\s*mouse_(?:click|dblclick|move|down|up)\(\s*(-?[\d.]+)\s*,\s*(-?[\d.]+)")


def action_point(action: str) -> tuple[float, float] | None:
    """The (x, y) of a coordinate action."""
    m = _COORD.match(action or "")
    return (float(m.group(1)), float(m.group(2))) if m else None


def ax_lines(axtree: str | None, bid: str | None) -> list[tuple[str, bool]]:
    """The AX tree's lines, each with whether it is the acted-on element's."""
    if not axtree:
        return []
    mark = f"[{bid}]" if bid else ""
    return [(line, bool(mark) and line.lstrip().startswith(mark)) for line in axtree.split("\n")]


def split_collateral(check: dict[str, Any]) -> dict[str, Any] | None:
    """A collateral check as (path, before, after), else None."""
    name = str(check.get("name") or "")
    if not name.startswith("collateral: "):
        return None
    before, sep, after = str(check.get("detail") or "").partition(" -> ")
    return {"what": name[len("collateral: "):], "before": before if sep else "", "after": after if sep else before}


def _key(v: dict[str, Any] | None) -> tuple:
    if not v:
        return (False, 0.0, True, ())
    return (bool(v.get("success")), round(float(v.get("progress") or 0.0), 6), bool(v.get("clean", True)),
            tuple(sorted((str(c.get("name")), bool(c.get("passed"))) for c in v.get("checks") or [])))


def verdict_changes(steps: list[dict[str, Any]]) -> dict[int, str]:
    """Step number -> what changed in the verdict at that step (against the step before;
    step 1 against no progress, clean)."""
    out: dict[int, str] = {}
    prev: dict[str, Any] | None = None
    for s in steps:
        v = s.get("verdict")
        if v is None:
            continue
        a, b = _key(prev), _key(v)
        if (a if prev is not None else a[:3]) != (b if prev is not None else b[:3]):   # no checks before step 1
            what = []
            if a[0] != b[0]:
                what.append("success" if b[0] else "success lost")
            if a[1] != b[1]:
                what.append(f"progress {a[1]:.2f} -> {b[1]:.2f}")
            if a[2] != b[2]:
                what.append("clean" if b[2] else "not clean")
            if not what:
                what.append("checks changed")
            out[int(s.get("step") or 0)] = ", ".join(what)
        prev = v
    return out


def create_app(paths: list[str], *, index: RunIndex | None = None) -> Flask:
    """The viewer over ``paths`` (raises :class:`ViewerError` for a bad one)."""
    idx = index or RunIndex.open(paths)
    app = Flask(__name__, template_folder=str(Path(__file__).parent / "templates"))
    app.jinja_env.autoescape = True   # every template, whatever its name
    app.extensions["simweb-viewer"] = idx
    states = StateCache(idx)

    @app.context_processor
    def _globals() -> dict[str, Any]:
        return {"idx": idx, "n_groups": len(idx.groups()), "n_pairs": len(idx.sim2live_pairs())}

    def episode_or_404(eid: int) -> Episode:
        ep = idx.get(eid)
        if ep is None:
            abort(404)
        return ep

    @app.errorhandler(ViewerError)
    def _viewer_error(exc: ViewerError) -> tuple[str, int]:
        return render_template("error.html", message=str(exc)), 422

    @app.route("/")
    def episodes() -> str:
        q = request.args
        eps = idx.episodes
        for name, get in (("app", lambda e: e.app), ("task", lambda e: e.task), ("agent", lambda e: e.agent)):
            if q.get(name):
                eps = [e for e in eps if get(e) == q[name]]
        for name, get in (("success", lambda e: e.success), ("clean", lambda e: e.clean)):
            if q.get(name) in ("yes", "no"):
                want = q[name] == "yes"
                eps = [e for e in eps if get(e) == want]
        if q.get("kind") == "start":
            eps = [e for e in eps if e.parent is None]
        elif q.get("kind") == "fork":
            eps = [e for e in eps if e.parent is not None]
        sort = q.get("sort", "")
        if sort.lstrip("-") in ("reward", "length"):
            attr = "reward" if sort.lstrip("-") == "reward" else "steps"
            eps = sorted(eps, key=lambda e: (getattr(e, attr), e.id), reverse=sort.startswith("-"))
        try:
            page = max(0, int(q.get("page", "0")))
        except ValueError:
            page = 0
        choices = {
            "app": sorted({e.app for e in idx.episodes}),
            "task": sorted({e.task for e in idx.episodes if e.task}),
            "agent": sorted({e.agent for e in idx.episodes if e.agent}),
        }
        args = {k: v for k, v in q.items() if k != "page"}
        return render_template("list.html", eps=eps[page * PAGE:(page + 1) * PAGE], total=len(eps), page=page,
                               pages=max(1, -(-len(eps) // PAGE)), q=q, choices=choices, args=args)

    @app.route("/episode/<int:eid>")
    def episode(eid: int) -> str:
        ep = episode_or_404(eid)
        try:
            n = int(request.args.get("step", "1" if ep.steps else "0"))
        except ValueError:
            n = 1
        n = max(0, min(n, ep.steps))
        steps = list(idx.steps_of(ep))
        steps = [s for s in steps if s.get("type") == "step"]
        changes = verdict_changes(steps)
        cur = steps[n - 1] if n >= 1 and n <= len(steps) else None
        before_obs = ep.header.get("observation") if n <= 1 else steps[n - 2].get("observation")
        action = cur.get("action", "") if cur else ""
        bid = action_bid(action)
        ax = ax_lines((before_obs or {}).get("axtree"), bid)
        verdict = (cur or {}).get("verdict") or {}
        checks = [{**c, "collateral": split_collateral(c)} for c in verdict.get("checks") or []]
        lo = max(0, n - 1 - WINDOW // 2)
        shown = steps[lo:lo + WINDOW]
        group = bool(ep.group_key)
        parent_ep = None
        if ep.parent and ep.parent.get("trajectory"):
            parent_ep = idx.by_rel(os.path.dirname(ep.path), str(ep.parent["trajectory"]))
        return render_template(
            "episode.html", ep=ep, n=n, cur=cur, steps=shown, first_shown=lo + 1, n_steps=len(steps),
            changes=changes, before=before_obs, after=cur.get("observation") if cur else None,
            ax=ax, found=any(hit for _, hit in ax), bid=bid,
            marks=marks(png_size(screenshot_path(ep, before_obs)), action_point(action), (cur or {}).get("target_box")),
            checks=checks, group=group, parent_ep=parent_ep,
            shot_before=screenshot_path(ep, before_obs) is not None,
            shot_after=screenshot_path(ep, (cur or {}).get("observation")) is not None)

    @app.route("/episode/<int:eid>/screenshot/<int:n>")
    def screenshot(eid: int, n: int) -> Response:
        ep = episode_or_404(eid)
        rec = ep.header if n == 0 else idx.step_line(ep, n)
        path = screenshot_path(ep, (rec or {}).get("observation"))
        if path is None:
            abort(404)
        return send_file(path, mimetype="image/png")

    @app.route("/group/<int:eid>")
    def group(eid: int) -> str:
        ep = episode_or_404(eid)
        key = ep.group_key
        if not key:
            abort(404)
        members = sorted(idx.groups()[key], key=lambda e: (e.header.get("child", e.header.get("branch", 0)) or 0,
                                                           e.id))
        tree = fork_tree(idx, members)
        options = [(f"{m.id}:{s}", f"{_label(m)} step {s}") for m in members for s in range(0, m.steps + 1)]
        a = f"{members[0].id}:{members[0].steps}"
        b = f"{members[1].id}:{members[1].steps}" if len(members) > 1 else f"{members[0].id}:0"
        parent_ep = None
        if ep.parent and ep.parent.get("trajectory"):
            parent_ep = idx.by_rel(os.path.dirname(ep.path), str(ep.parent["trajectory"]))
        return render_template("group.html", ep=ep, members=members, tree=tree, options=options, a=a, b=b,
                               parent=ep.parent, parent_ep=parent_ep, label=_label)

    @app.route("/groups")
    def groups() -> str:
        gs = sorted(idx.groups().values(), key=lambda g: g[0].rel)
        return render_template("groups.html", groups=gs)

    @app.route("/diff")
    def diff() -> str:
        def parse(v: str) -> tuple[Episode, int]:
            m = re.fullmatch(r"(\d+):(\d+)", v or "")
            if not m:
                raise ViewerError(f"bad step reference {v!r}: use EPISODE:STEP")
            e = idx.get(int(m.group(1)))
            if e is None:
                raise ViewerError(f"no episode {m.group(1)}")
            return e, int(m.group(2))

        (ea, sa), (eb, sb) = parse(request.args.get("a", "")), parse(request.args.get("b", ""))
        try:
            app_a, state_a = states.state_at(ea, sa)
            _, state_b = states.state_at(eb, sb)
            result = diff_states(app_a, state_a, state_b)
            error = None
        except ReplayError as exc:
            result, error = None, str(exc)
        return render_template("diff.html", ea=ea, sa=sa, eb=eb, sb=sb, result=result, error=error, label=_label)

    @app.route("/sim2live")
    def sim2live_list() -> str:
        pairs = sorted(idx.sim2live_pairs().items())
        return render_template("sim2live_list.html", pairs=pairs)

    @app.route("/sim2live/<int:eid>")
    def sim2live(eid: int) -> str:
        ep = episode_or_404(eid)
        s = ep.sim2live
        if not s:
            abort(404)
        sides = idx.sim2live_pairs().get((os.path.dirname(ep.path), str(s.get("family")), int(s.get("index") or 0)), {})
        parting = s.get("parting")
        cols = []
        for name in ("sim", "live"):
            e = sides.get(name)
            if e is None:
                continue
            steps = [x for x in idx.steps_of(e) if x.get("type") == "step"]
            at = parting_index(parting, steps)
            before = e.header.get("observation") if at <= 1 else steps[at - 2].get("observation")
            action = steps[at - 1]["action"] if 1 <= at <= len(steps) else ""
            cols.append({"name": name, "ep": e, "steps": steps, "at": at, "action": action,
                         "ax": ax_lines((before or {}).get("axtree"), action_bid(action)), "before": before,
                         "verdict": next((x["verdict"] for x in reversed(steps) if x.get("verdict")), None)})
        return render_template("sim2live.html", ep=ep, s=s, parting=parting, cols=cols)

    @app.route("/redteam")
    def redteam() -> str:
        from ..plots import redteam_rows

        return render_template("redteam.html", rows=redteam_rows(idx))

    @lru_cache(maxsize=32)
    def _svg(name: str) -> bytes | None:
        from ..plots import render

        return render(idx, name, "svg")

    @app.route("/plots")
    def plots() -> str:
        from ..plots import available

        try:
            names = available(idx)
            error = None
        except ImportError as exc:
            names, error = [], str(exc)
        return render_template("plots.html", names=names, error=error)

    @app.route("/plots/<name>.svg")
    def plot(name: str) -> Response:
        from ..plots import available

        if name not in available(idx):
            abort(404)
        data = _svg(name)
        if data is None:
            abort(404)
        return Response(data, mimetype="image/svg+xml")

    app.add_template_global(url_for, "url_for")
    return app


def png_size(path: str | None) -> tuple[int, int] | None:
    """A PNG's (width, height), from its header."""
    if path is None:
        return None
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    w, h = int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")
    return (w, h) if w and h else None


def marks(size: tuple[int, int] | None, point: tuple[float, float] | None, box: Any) -> dict[str, Any]:
    """Where to draw an action on a screenshot, in percent of its size (so the picture
    can be scaled): a coordinate action's point, a box around the acted-on element."""
    if size is None:
        return {}
    w, h = size
    out: dict[str, Any] = {}
    if point is not None:
        out["point"] = (round(100 * point[0] / w, 3), round(100 * point[1] / h, 3))
    try:
        if isinstance(box, dict):
            out["box"] = tuple(round(100 * float(box[k]) / d, 3)
                               for k, d in (("x", w), ("y", h), ("width", w), ("height", h)))
    except (KeyError, TypeError, ValueError):
        pass
    return out


def screenshot_path(ep: Episode, obs: dict[str, Any] | None) -> str | None:
    """The screenshot file an observation names, if it is a PNG inside the trajectory's
    own folder (the name comes from the file: nothing outside it is served)."""
    rel = (obs or {}).get("screenshot")
    if not rel or not isinstance(rel, str):
        return None
    folder = os.path.realpath(os.path.dirname(ep.path))
    path = os.path.realpath(os.path.join(folder, rel))
    if not path.startswith(folder + os.sep) or not path.endswith(".png") or not os.path.isfile(path):
        return None
    return path


def _label(ep: Episode) -> str:
    h = ep.header
    for k in ("child", "branch"):
        if isinstance(h.get(k), int):
            return f"#{ep.id} {k} {h[k]}"
    return f"#{ep.id} {os.path.basename(ep.path)}"


def parting_index(parting: dict[str, Any] | None, steps: list[dict[str, Any]]) -> int:
    """The 1-based step where a sim2live side parts from the other: the loop's step
    (``step``, 0-based) or the first step at or after the script step that differs."""
    if not parting:
        return 0
    if isinstance(parting.get("step"), int):
        return min(len(steps), parting["step"] + 1)
    want = parting.get("script_step")
    for n, s in enumerate(steps, 1):
        script = (s.get("agent") or {}).get("script") or {}
        if isinstance(script.get("step"), int) and isinstance(want, int) and script["step"] >= want:
            return n
    return len(steps)


def fork_tree(idx: RunIndex, members: list[Episode]) -> list[dict[str, Any]]:
    """The group's children merged into a tree while their state hashes agree: nodes are
    chains of steps (``steps``: (episode id, step, action)), ``children`` the branches, and
    ``leaves`` the episodes that end there with their reward."""
    root: dict[str, Any] = {"children": {}, "steps": [], "leaves": []}
    for ep in members:
        node = root
        last = 0
        for s in idx.steps_of(ep):
            if s.get("type") != "step":
                continue
            n = int(s.get("step") or 0)
            key = s.get("state_hash") or f"{ep.id}:{n}"
            key = f"{key}|{s.get('action')}"
            child = node["children"].get(key)
            if child is None:
                child = node["children"][key] = {"children": {}, "steps": [(ep.id, n, s.get("action", ""))],
                                                 "leaves": [], "eps": []}
            child["eps"].append(ep.id)
            node = child
            last = n
        node["leaves"].append({"ep": ep, "reward": ep.reward, "success": ep.success, "clean": ep.clean,
                               "step": last})

    def compress(node: dict[str, Any]) -> dict[str, Any]:
        kids = list(node["children"].values())
        while len(kids) == 1 and not node["leaves"] and node is not root:
            only = kids[0]
            node["steps"] = node["steps"] + only["steps"]
            node["leaves"] = only["leaves"]
            kids = list(only["children"].values())
        return {"steps": node["steps"], "leaves": node["leaves"], "children": [compress(k) for k in kids]}

    return compress(root)["children"] + ([{"steps": [], "leaves": root["leaves"], "children": []}]
                                         if root["leaves"] else [])

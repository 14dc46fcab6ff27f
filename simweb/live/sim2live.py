"""Sim-to-live: one agent, the same task instances, in simweb and on a real counterpart.

    simweb sim2live --pair issues:roundup --agent scripted --instances 3 --out runs/roundup

For every instance of every portable family of the pair, the agent runs an episode in
simweb (:class:`~simweb.env.SimEnv`, the simweb verifier) and one on the counterpart
(:class:`~simweb.live.web.WebEnv` on its URL; the counterpart reset by copy before every
episode, the instance's user signed in before the first step; the family's live verifier
reading the counterpart's database). The run writes, under ``--out``:

* ``report.json``: per family, success / progress / clean on each side, the retained
  ratio (live / sim), steps taken, divergence counts by class; per episode the two
  verdicts and divergences; the run's settings (pair, agent, versions, seeds);
* ``report.md``: the same as tables;
* ``traces/<family>-<index>.jsonl``: per step and side the URL, its page kind, the
  action, its error, the script step it came from (scripted agent), then both verdicts,
  the state changes of each side and the step where the two sides part.

Divergence classes (per episode, from the two traces):

``page``        a page kind one side visits and the other never does
``control``     a script step whose control is found on one side only
``validation``  a step that got an error (or an error page) on one side only
``flow``        a different number of steps to the end
``state``       a state change one side makes and the other does not (the pair's
                ``STATE_MAP`` puts the counterpart's tables in simweb's terms)

Everything reaching the numbers is deterministic on the simweb side; the live side is a
real server (its timestamps are its own), so reruns agree on verdicts, not on bytes.
"""
from __future__ import annotations

import ast
import importlib
import json
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..episodes.policy import begin_rollout
from .counterparts import CounterpartError, get
from .counterparts import families as pair_families
from .counterparts import pair as parse_pair
from .counterparts.dbdiff import diff
from .counterparts.portable import Instance, PortableFamily, passed

AGENTS = ("scripted", "llm")
DIVERGENCE_CLASSES = ("page", "control", "validation", "flow", "state")
DEFAULT_MAX_STEPS = 40


class Sim2LiveError(RuntimeError):
    """A one-line, user-facing failure of a sim-to-live run."""


# ----------------------------------------------------------------------------- agents

def make_agent(kind: str, family: PortableFamily, inst: Instance, llm: dict | None = None,
               checkpoint: Path | str | None = None) -> Any:
    """The agent of one episode: a :class:`ScriptedAgent` on the family's script (a fresh
    one per side), the LLM agent of :mod:`simweb.agents.llm` with ``llm`` options, or the
    learned policy saved at ``checkpoint`` (:mod:`simweb.learner`)."""
    if kind == "learned":
        from ..episodes.learner import CheckpointError, load_checkpoint

        if checkpoint is None:
            raise Sim2LiveError("--agent learned needs --checkpoint DIR")
        try:
            return load_checkpoint(checkpoint)
        except CheckpointError as exc:
            raise Sim2LiveError(str(exc)) from None
    if kind == "scripted":
        from ..agents.scripted import ScriptedAgent

        return ScriptedAgent(family.script(inst))
    if kind == "llm":
        try:
            mod = importlib.import_module("simweb.agents.llm")
        except ModuleNotFoundError:
            raise Sim2LiveError("the llm agent (simweb.agents.llm) is not part of this build") from None
        return mod.LLMAgent(**(llm or {}))
    if ":" in kind:   # a user's policy by import path (simweb.policy.Policy), a fresh one per side
        from ..episodes.policy import PolicyError, load_policy

        try:
            return load_policy(kind)
        except PolicyError as exc:
            raise Sim2LiveError(str(exc)) from None
    raise Sim2LiveError(f"unknown agent '{kind}' (choose from {', '.join(AGENTS)} or package.module:Name)")


def _agent_done(agent: Any, action: str) -> bool:
    """A scripted agent that has run out of steps (or is stuck) only idles: end there."""
    return bool(getattr(agent, "done", False)) and action.startswith("noop")


def _script_entry(agent: Any) -> dict | None:
    log = getattr(agent, "log", None)
    return dict(log[-1]) if log else None


# ----------------------------------------------------------------------------- page kinds and state

def page_kinds(module: Any, side: str) -> list[tuple[re.Pattern, str]]:
    rules = getattr(module, "PAGE_KINDS", {}).get(side, [])
    return [(re.compile(rx), kind) for rx, kind in rules]


def page_errors(module: Any, side: str) -> re.Pattern | None:
    """The pair's pattern for an error shown on a page of this side (``PAGE_ERRORS``)."""
    rx = getattr(module, "PAGE_ERRORS", {}).get(side)
    return re.compile(rx, re.S) if rx else None


def page_error(html: str, rx: re.Pattern | None) -> str:
    """The error a page shows (first match's text), or ''."""
    if rx is None:
        return ""
    m = rx.search(html or "")
    if not m:
        return ""
    text = next((g for g in m.groups() if g and g.strip()), m.group(0))
    return " ".join(text.split())[:200]


def page_kind(url: str, rules: Sequence[tuple[re.Pattern, str]]) -> str:
    """The page kind of a URL by the pair's rules; otherwise its path with numbers as N."""
    m = re.match(r"^[a-z]+://[^/]+(.*)$", url or "")
    rest = (m.group(1) if m else (url or "")).partition("#")[0]   # an anchor is the same page
    for rx, kind in rules:
        if rx.search(rest):
            return kind
    return re.sub(r"\d+", "N", rest.partition("?")[0]) or "/"


def sim_state_keys(start: dict, final: dict, app: Any = None) -> set[str]:
    """simweb's changed entities: ``table`` for a row created or deleted, ``table.field``
    for an update (counters and other bookkeeping left out). A world row the episode
    changed is compared with its world values (``app`` given), not taken for a new row."""
    a = start.get("runtime", {}).get("entities", {})
    b = final.get("runtime", {}).get("entities", {})
    out: set[str] = set()
    for table in sorted(set(a) | set(b)):
        ra, rb = a.get(table, {}), b.get(table, {})
        for key in sorted(set(ra) | set(rb)):
            x, y = ra.get(key), rb.get(key)
            if x == y:
                continue
            if x is None and app is not None and str(key).isdigit():
                x = _world_row(app, start, table, int(key))
            if x is None or y is None or not isinstance(x, dict) or not isinstance(y, dict):
                out.add(table)
                continue
            for f in sorted(set(x) | set(y)):
                if x.get(f) != y.get(f):
                    out.add(f"{table}.{f}")
    return out


def _world_row(app: Any, state: dict, table: str, eid: int) -> dict | None:
    from ..judging.effects import entity

    try:
        return entity(app, state, table, eid)
    except (KeyError, LookupError, TypeError, ValueError):
        return None


def live_state_keys(changes: Iterable[Any], state_map: dict[str, str]) -> set[str]:
    """The counterpart's changes in simweb's terms (unmapped ones as ``live:table.field``)."""
    out: set[str] = set()
    for c in changes:
        key = c.table if c.field is None else f"{c.table}.{c.field}"
        out.add(state_map.get(key) or state_map.get(c.table) or f"live:{key}")
    return out


# ----------------------------------------------------------------------------- episodes

@dataclass
class Side:
    """One side's episode: its steps, verdict and state changes."""

    name: str
    steps: list[dict] = field(default_factory=list)
    verdict: dict = field(default_factory=dict)
    changes: list[str] = field(default_factory=list)
    answer: str | None = None
    refused: bool = False
    seconds: float = 0.0
    error: str | None = None
    #: the observation the episode started from (simweb.trajectory.observation)
    start: dict | None = None

    @property
    def acted(self) -> int:
        """Actions that did something (noops of a waiting or finished agent excluded)."""
        return sum(1 for s in self.steps if not s["action"].startswith(("noop", "(end)")))


def _final_message(obs: dict) -> tuple[str | None, bool]:
    for msg in reversed(obs.get("chat_messages") or []):
        if msg.get("role") == "assistant":
            return msg.get("message"), False
        if msg.get("role") == "infeasible":
            return msg.get("message"), True
    return None, False


def _loop(env: Any, agent: Any, obs: dict, side: Side, rules: Sequence, max_steps: int,
          errors: re.Pattern | None = None) -> dict:
    from ..episodes.policy import split_action
    from ..episodes.trajectory import observation

    side.start = observation(obs)
    for i in range(max_steps):
        action, _ = split_action(agent.act(obs))
        if _agent_done(agent, action):
            break
        entry = _script_entry(agent)
        url = obs.get("url", "")
        target = action_target(obs.get("axtree") or "", action)
        obs, _reward, terminated, truncated, info = env.step(action)
        error = obs.get("last_action_error") or ""
        side.steps.append({"side": side.name, "step": i, "url": url, "page": page_kind(url, rules), "action": action,
                           "target": target, "error": error, "page_error": page_error(obs.get("html", ""), errors),
                           "next_url": obs.get("url", ""),
                           "script": entry and {k: entry.get(k) for k in ("step", "what", "found", "skipped")},
                           "skipped_before": _skipped_since(agent, entry), "observation": observation(obs),
                           "reward": _reward, "terminated": terminated, "truncated": truncated})
        if terminated or truncated:
            break
    if hasattr(agent, "record"):
        agent.record(obs)
    side.steps.append({"side": side.name, "step": len(side.steps), "url": obs.get("url", ""),
                       "page": page_kind(obs.get("url", ""), rules), "action": "(end)", "error": "", "script": None})
    side.answer, side.refused = _final_message(obs)
    return obs


#: actions on an element: their first argument is its bid
_ELEMENT_ACTIONS = frozenset({"click", "dblclick", "fill", "select_option", "check", "uncheck", "hover", "press",
                              "focus", "clear", "upload_file"})


def action_target(axtree: str, action: str) -> dict | None:
    """What an action acts on, in site-independent terms: the verb, the element's role and
    accessible name in the AX tree the action was chosen from, and its text argument (the
    text filled, the option selected). Bids are each site's own handles, so two sides act
    alike when these agree, not when their bids do. None for an action on no element."""
    from ..agents.axtext import parse_axtree

    try:
        call = ast.parse(action.strip(), mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name) or call.func.id not in _ELEMENT_ACTIONS:
        return None
    args = [a.value for a in call.args if isinstance(a, ast.Constant)]
    if not args:
        return None
    bid = str(args[0])
    node = next((n for n in parse_axtree(axtree) if n.bid == bid), None)
    return {"verb": call.func.id, "role": node.role if node else "", "name": node.name.strip() if node else "",
            "arg": str(args[1]) if len(args) > 1 else "", "found": node is not None}


def _skipped_since(agent: Any, entry: dict | None) -> list[dict]:
    """The optional steps the scripted agent skipped right before this action."""
    log = getattr(agent, "log", None) or []
    out = []
    for e in reversed(log[:-1] if entry else log):
        if not e.get("skipped"):
            break
        out.append({"step": e["step"], "what": e["what"]})
    return list(reversed(out))


def _matches(key: str, patterns: Sequence[str]) -> bool:
    from fnmatch import fnmatchcase

    return any(fnmatchcase(key, p) for p in patterns)


def run_sim(inst: Instance, agent: Any, rules: Sequence, max_steps: int, sim_env: Any,
            errors: re.Pattern | None = None, sim_ignore: Sequence[str] = ()) -> Side:
    """The simweb episode of an instance (the goal must read as the instance's)."""
    side = Side("sim")
    t0 = time.monotonic()
    obs, info = sim_env.reset(seed=inst.sim_seed, options={"task": inst.sim_task})
    if obs.get("goal") != inst.goal:
        raise Sim2LiveError(f"{inst.id}: simweb's goal differs from the instance's ({obs.get('goal')!r})")
    start = sim_env.snapshot()
    begin_rollout(agent, sim_env, inst.sim_seed)
    _loop(sim_env, agent, obs, side, rules, max_steps, errors)
    final = sim_env.snapshot()
    v = sim_env._verdict() if hasattr(sim_env, "_verdict") else None
    side.verdict = _clean_verdict(v)
    side.changes = sorted(k for k in sim_state_keys(start, final, sim_env.app) if not _matches(k, sim_ignore))
    side.seconds = round(time.monotonic() - t0, 3)
    return side


def run_live(inst: Instance, family: PortableFamily, agent: Any, cp: Any, web_env: Any, rules: Sequence,
             state_map: dict[str, str], max_steps: int, errors: re.Pattern | None = None) -> Side:
    """The live episode: reset the counterpart, sign in, run, judge its database."""
    side = Side("live")
    t0 = time.monotonic()
    cp.reset()
    base = cp.url
    start = base + family.live_start(inst)
    obs, _ = web_env.reset(options={"url": start, "goal": inst.goal})
    if inst.user:
        cp.sign_in(web_env, inst.user)
        err = web_env.execute(f"goto({start!r})")
        if err:
            raise Sim2LiveError(f"{inst.id}: cannot open {start} after signing in: {err}")
        obs, _ = web_env.observe()
    begin_rollout(agent, web_env, inst.sim_seed)   # the same rollout seed on both sides
    _loop(web_env, agent, obs, side, rules, max_steps, errors)
    side.verdict = _clean_verdict(refusal_seen(family, inst, side, family.live_verify(cp, inst, side.answer,
                                                                                     side.refused)))
    bk_tables = getattr(cp, "bookkeeping_tables", ())
    bk_fields = getattr(cp, "bookkeeping_fields", ())
    changes = diff(cp.pristine_path(cp.database()), cp.database(), ignore_tables=bk_tables, ignore_fields=bk_fields)
    side.changes = sorted(live_state_keys(changes, state_map))
    side.seconds = round(time.monotonic() - t0, 3)
    return side


def refusal_seen(family: PortableFamily, inst: Instance, side: Side, v: dict) -> dict:
    """The live verdict ``v`` with the family's refusal evidence
    (:meth:`PortableFamily.refusal_evidence`): after a refusal, a goal fact that the agent had
    been on the page that shows why (any page it observed, the start page included)."""
    from urllib.parse import urlsplit

    from .counterparts.portable import add_fact, check

    rule = family.refusal_evidence(inst)
    if rule is None or not side.refused:
        return v
    what, rx = rule
    parts = [urlsplit(s["url"]) for s in side.steps if s.get("url")]
    paths = [p.path + (f"?{p.query}" if p.query else "") for p in parts]
    seen = next((p for p in paths if re.search(rx, p)), None)
    return add_fact(v, check(f"refused after viewing {what}", seen is not None,
                             f"viewed {seen}" if seen else f"never on {what} ({len(paths)} pages observed)"))


def _clean_verdict(v: dict | None) -> dict:
    if not v:
        return {"success": False, "progress": 0.0, "clean": True, "checks": []}
    checks = [{"name": c.get("name"), "ok": passed(c), "detail": c.get("detail", "")} for c in v.get("checks", [])]
    return {"success": bool(v.get("success")), "progress": float(v.get("progress") or 0.0),
            "clean": bool(v.get("clean", True)), "checks": checks}


# ----------------------------------------------------------------------------- divergences

def divergences(sim: Side, live: Side) -> list[dict]:
    """The step-level divergence classes between the two sides of one episode."""
    out: list[dict] = []
    pages_sim = [s["page"] for s in sim.steps]
    pages_live = [s["page"] for s in live.steps]
    for kind in sorted(set(pages_sim) - set(pages_live)):
        out.append({"class": "page", "side": "sim", "detail": f"simweb visits a '{kind}' page, the live site none"})
    for kind in sorted(set(pages_live) - set(pages_sim)):
        out.append({"class": "page", "side": "live", "detail": f"the live site visits a '{kind}' page, simweb none"})
    found_sim, found_live = _script_found(sim), _script_found(live)
    for idx in sorted(set(found_sim) | set(found_live)):
        a, b = found_sim.get(idx), found_live.get(idx)
        if a is None or b is None or a[0] == b[0]:
            continue
        where = "sim" if a[0] else "live"
        out.append({"class": "control", "side": where, "script_step": idx,
                    "detail": f"{a[1]}: found only {'in simweb' if a[0] else 'on the live site'}"})
    err_sim, err_live = _errors(sim), _errors(live)
    for key in sorted(set(err_sim) ^ set(err_live), key=str):
        side = "sim" if key in err_sim else "live"
        msg = (err_sim if side == "sim" else err_live)[key]
        out.append({"class": "validation", "side": side, "at": key,
                    "detail": f"{'simweb' if side == 'sim' else 'the live site'} rejects a step: {msg[:160]}"})
    if sim.acted != live.acted:
        out.append({"class": "flow", "side": "sim" if sim.acted > live.acted else "live",
                    "detail": f"{sim.acted} steps in simweb, {live.acted} on the live site"})
    for key in sorted(set(sim.changes) - set(live.changes)):
        out.append({"class": "state", "side": "sim", "detail": f"simweb changes {key}, the live site does not"})
    for key in sorted(set(live.changes) - set(sim.changes)):
        out.append({"class": "state", "side": "live", "detail": f"the live site changes {key}, simweb does not"})
    return out


def _errors(side: Side) -> dict[Any, str]:
    """Errors per step (script step for the scripted agent, else step number): the
    action's own error or the error a page shows after it."""
    out: dict[Any, str] = {}
    for s in side.steps:
        msg = s.get("error") or s.get("page_error") or ""
        if msg:
            key = s["script"]["step"] if s.get("script") else s["step"]
            out.setdefault(key, msg)
    return out


def _script_found(side: Side) -> dict[int, tuple[bool, str]]:
    """Per script step: whether its control was found (acted on) or skipped/missing."""
    out: dict[int, tuple[bool, str]] = {}
    for s in side.steps:
        for sk in s.get("skipped_before") or []:
            out[sk["step"]] = (False, sk["what"])
        sc = s.get("script")
        if sc and sc.get("step") is not None:
            out[sc["step"]] = (bool(sc.get("found")) and not sc.get("skipped"), sc.get("what") or "")
    return out


def _same_target(a: dict | None, b: dict | None) -> bool:
    if a is None or b is None:
        return a is b
    norm = lambda t: (t["verb"], t["role"], " ".join(t["name"].lower().split()), t["arg"])   # noqa: E731
    return norm(a) == norm(b)


def _page_elements(side: Side, i: int) -> list[Any]:
    """The AX nodes of the page ``side`` chose its step ``i`` on."""
    from ..agents.axtext import parse_axtree

    obs = side.start if i == 0 else side.steps[i - 1].get("observation")
    return parse_axtree((obs or {}).get("axtree") or "")


def _has_control(nodes: Sequence[Any], t: dict) -> bool:
    """Whether a page has an element of the target's role and accessible name."""
    name = " ".join(t["name"].lower().split())
    return any(n.bid and n.role == t["role"] and " ".join(n.name.lower().split()) == name for n in nodes)


#: why two sides part at their first differing step (non-scripted agents), in this order
PARTING_CLASSES = ("page", "control", "unnamed", "choice", "stop")


def _parting_class(sim: Side, live: Side, i: int) -> tuple[str, str]:
    """Why the sides part at step ``i``: ``page`` (on different page kinds), ``unnamed``
    (one side acted on a named control; the other page has that role only without an
    accessible name: e.g. simweb's labelled field, Roundup's unlabelled one),
    ``control`` (a control one side acted on has no element of that role and name on the
    other side's page), ``choice`` (both pages have both controls: the policy chose
    differently, its candidates differing elsewhere on the page) or ``stop`` (one side's
    episode ended, or sent its final message, and the other's went on)."""
    a, b = sim.steps[i], live.steps[i]
    if a["page"] != b["page"]:
        return "page", f"simweb on a '{a['page']}' page, the live site on a '{b['page']}' page"
    ta, tb = a.get("target"), b.get("target")
    if ta is None or tb is None:
        ended = "(end)" in (a["action"], b["action"]) or "send_msg_to_user" in a["action"] + b["action"]
        return ("stop" if ended else "choice"), f"simweb {a['action']}, the live site {b['action']}"
    for t, side, other, where in ((ta, sim, live, "the live site"), (tb, live, sim, "simweb")):
        nodes = _page_elements(other, i)
        if t["name"] and not _has_control(nodes, t):
            unnamed = any(n.bid and n.role == t["role"] and not n.name.strip() for n in nodes)
            return ("unnamed" if unnamed else "control",
                    f"{t['role']} '{t['name']}' ({side.name}) has no counterpart on {where}'s page"
                    + (f" (its {t['role']}s there have no accessible name)" if unnamed else ""))
    return "choice", f"both pages have {ta['role']} '{ta['name']}' and {tb['role']} '{tb['name']}'"


def parting_step(sim: Side, live: Side) -> dict | None:
    """The first step where the two sides differ: the script step found on one side only,
    or (other agents) the first step whose page kind or action differs, an action being
    its verb, its element's role and accessible name and its text argument (bids are each
    site's own); ``class`` says why (:func:`_parting_class`)."""
    fs, fl = _script_found(sim), _script_found(live)
    for idx in sorted(set(fs) | set(fl)):
        if fs.get(idx, (None,))[0] != fl.get(idx, (None,))[0]:
            what = (fs.get(idx) or fl.get(idx) or (None, ""))[1]
            return {"script_step": idx, "what": what,
                    "sim_found": fs.get(idx, (None,))[0], "live_found": fl.get(idx, (None,))[0]}
    for i, (a, b) in enumerate(zip(sim.steps, live.steps)):
        verb_a, verb_b = a["action"].partition("(")[0], b["action"].partition("(")[0]
        targeted = "target" in a and "target" in b   # traces written before targets were kept: verbs only
        if a["page"] != b["page"] or verb_a != verb_b or (targeted and not _same_target(a["target"], b["target"])):
            out = {"step": i, "sim_page": a["page"], "live_page": b["page"],
                   "sim_action": a["action"], "live_action": b["action"]}
            if targeted:
                out["sim_target"], out["live_target"] = a["target"], b["target"]
                out["class"], out["detail"] = _parting_class(sim, live, i)
            return out
    return None


# ----------------------------------------------------------------------------- the run

@dataclass
class Settings:
    pair: str
    agent: str = "scripted"
    families: Sequence[str] | None = None
    instances: int = 3
    out: Path = Path("sim2live")
    max_steps: int = DEFAULT_MAX_STEPS
    llm: dict | None = None
    home: Path | None = None
    install: bool = True
    port: int | None = None
    #: --agent learned: the checkpoint (a `simweb train` folder or its init/)
    checkpoint: Path | None = None
    #: instances from this simweb seed on (1000 and up: never drawn in training); 0 is the
    #: pair's fixed instances, the only ones a counterpart that seeds a few can run
    first_seed: int = 0


def select_families(pair: str, wanted: Sequence[str] | None) -> list[PortableFamily]:
    """The pair's families, optionally only the named ones (short or full ids)."""
    _, cp_name = parse_pair(pair)
    fams = pair_families(cp_name)
    if not wanted:
        return fams
    by = {f.short: f for f in fams} | {f.id: f for f in fams}
    unknown = [w for w in wanted if w not in by]
    if unknown:
        raise Sim2LiveError(f"unknown family '{unknown[0]}' of {pair} (known: {', '.join(f.short for f in fams)})")
    return [by[w] for w in dict.fromkeys(wanted)]


def run(settings: Settings, *, on_episode: Callable[[dict], None] | None = None, progress: bool = False) -> dict:
    """Run the experiment and write report.json, report.md and traces/ under ``out``."""
    from ..episodes.env import SimEnv
    from ..episodes.trajectory import write_sim2live
    from .web import WebEnv

    app, cp_name = parse_pair(settings.pair)
    fams = select_families(settings.pair, settings.families)
    module = importlib.import_module(type(fams[0]).__module__)
    sim_rules, live_rules = page_kinds(module, "sim"), page_kinds(module, "live")
    sim_errors, live_errors = page_errors(module, "sim"), page_errors(module, "live")
    state_map = getattr(module, "STATE_MAP", {})
    cp = get(cp_name, settings.home)
    # A counterpart that seeds only its families' first N instances (the module's INSTANCES)
    # cannot run more: say so before installing or starting anything, not at instance N.
    seeded = getattr(importlib.import_module(type(cp).__module__), "INSTANCES", None)
    if isinstance(seeded, int) and settings.instances > seeded:
        raise Sim2LiveError(f"{cp_name} seeds the first {seeded} instances of each family; "
                            f"--instances {settings.instances} asks for more")
    if settings.first_seed and isinstance(seeded, int):
        raise Sim2LiveError(f"{cp_name} seeds the first {seeded} instances of each family from seed 0; "
                            f"--first-seed {settings.first_seed} needs a counterpart that holds them all (issues:roundup)")
    if not cp.installed():
        if not settings.install:
            raise Sim2LiveError(f"{cp_name} is not installed; run `simweb counterpart install {cp_name}`")
        cp.install(progress=progress)
    was_running = cp.status()["running"]
    out = Path(settings.out)
    (out / "traces").mkdir(parents=True, exist_ok=True)
    episodes: list[dict] = []
    sim_env = SimEnv(app, 0, max_steps=settings.max_steps)
    cp.start(settings.port)
    web_env = WebEnv(max_steps=settings.max_steps, screenshots=False)
    try:
        for fam in fams:
            try:
                insts = fam.instances_from(settings.instances, settings.first_seed)
            except RuntimeError as exc:
                raise Sim2LiveError(str(exc)) from None
            for inst in insts:
                sim = run_sim(inst, make_agent(settings.agent, fam, inst, settings.llm, settings.checkpoint), sim_rules, settings.max_steps,
                              sim_env, sim_errors, getattr(module, "SIM_BOOKKEEPING", ()))
                live = run_live(inst, fam, make_agent(settings.agent, fam, inst, settings.llm, settings.checkpoint), cp,
                                web_env,
                                live_rules, state_map, settings.max_steps, live_errors)
                ep = _episode(fam, inst, sim, live)
                _write_trace(out / "traces" / f"{fam.short}-{inst.index}.jsonl", inst, sim, live, ep)
                write_sim2live(out / "trajectories", settings.pair, settings.agent, inst, ep, (sim, live))
                episodes.append(ep)
                if on_episode:
                    on_episode(ep)
    finally:
        web_env.close()
        if not was_running:
            cp.stop()
    report = _report(settings, fams, episodes)
    _write(out / "report.json", json.dumps(report, indent=1, sort_keys=True) + "\n")
    _write(out / "report.md", render_markdown(report))
    return report


def _episode(fam: PortableFamily, inst: Instance, sim: Side, live: Side) -> dict:
    return {"family": fam.short, "kind": fam.kind, "index": inst.index, "sim_task": inst.sim_task,
            "sim_seed": inst.sim_seed, "user": inst.user, "goal": inst.goal,
            "sim": _side_summary(sim), "live": _side_summary(live),
            "divergences": divergences(sim, live), "parting": parting_step(sim, live)}


def _side_summary(s: Side) -> dict:
    return {"success": s.verdict["success"], "progress": s.verdict["progress"], "clean": s.verdict["clean"],
            "steps": s.acted, "answer": s.answer, "refused": s.refused, "changes": s.changes,
            "failed_checks": [c["name"] for c in s.verdict["checks"] if not c["ok"]], "seconds": s.seconds}


def _write_trace(path: Path, inst: Instance, sim: Side, live: Side, ep: dict) -> None:
    lines = [{"type": "instance", **inst.to_json()}]
    lines += [{"type": "step", **s} for s in sim.steps]
    lines += [{"type": "step", **s} for s in live.steps]
    for s in (sim, live):
        lines.append({"type": "verdict", "side": s.name, **s.verdict, "answer": s.answer, "refused": s.refused,
                      "changes": s.changes})
    lines.append({"type": "divergences", "parting": ep["parting"], "items": ep["divergences"]})
    _write(path, "".join(json.dumps(x, sort_keys=True, default=str) + "\n" for x in lines))


def _write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    tmp.replace(path)


def _mean(xs: Sequence[float]) -> float:
    return round(sum(xs) / len(xs), 4) if xs else 0.0


def _report(settings: Settings, fams: list[PortableFamily], episodes: list[dict]) -> dict:
    from .. import __version__ as version

    rows = []
    for fam in fams:
        eps = [e for e in episodes if e["family"] == fam.short]
        s_succ = _mean([float(e["sim"]["success"]) for e in eps])
        l_succ = _mean([float(e["live"]["success"]) for e in eps])
        s_prog = _mean([e["sim"]["progress"] for e in eps])
        l_prog = _mean([e["live"]["progress"] for e in eps])
        counts = {c: sum(1 for e in eps for d in e["divergences"] if d["class"] == c) for c in DIVERGENCE_CLASSES}
        rows.append({"family": fam.short, "kind": fam.kind, "sim_task": fam.sim_task, "n": len(eps),
                     "sim_success": s_succ, "live_success": l_succ, "sim_progress": s_prog, "live_progress": l_prog,
                     "sim_clean": _mean([float(e["sim"]["clean"]) for e in eps]),
                     "live_clean": _mean([float(e["live"]["clean"]) for e in eps]),
                     "retained_success": round(l_succ / s_succ, 4) if s_succ else None,
                     "retained_progress": round(l_prog / s_prog, 4) if s_prog else None,
                     "sim_steps": _mean([e["sim"]["steps"] for e in eps]),
                     "live_steps": _mean([e["live"]["steps"] for e in eps]), "divergences": counts,
                     "examples": _examples(eps)})
    tot_s = _mean([float(e["sim"]["success"]) for e in episodes])
    tot_l = _mean([float(e["live"]["success"]) for e in episodes])
    return {"pair": settings.pair, "agent": settings.agent, "instances_per_family": settings.instances,
            "first_seed": settings.first_seed, "max_steps": settings.max_steps, "simweb_version": version, "world_seed": 0,
            "families": rows, "episodes": episodes,
            "total": {"n": len(episodes), "sim_success": tot_s, "live_success": tot_l,
                      "retained_success": round(tot_l / tot_s, 4) if tot_s else None,
                      "sim_progress": _mean([e["sim"]["progress"] for e in episodes]),
                      "live_progress": _mean([e["live"]["progress"] for e in episodes])}}


def _paired_gain(init: list[dict], trained: list[dict], n: int = 10_000, seed: int = 0) -> dict[str, Any]:
    """Sim gain, live gain and retained gain (live / sim) of clean success over paired
    episodes (the same instances, init vs trained), with bootstrap 95% intervals
    (instances resampled; a resample with no sim gain has no ratio and is left out)."""
    import numpy as np

    key = lambda e: (e["family"], e["index"])   # noqa: E731
    a = {key(e): e for e in init}
    pairs = [(a[key(e)], e) for e in trained if key(e) in a]
    if not pairs:
        return {"n": 0, "sim_gain": None, "live_gain": None, "retained_gain": None}

    def won(e: dict, side: str) -> float:
        return float(bool(e[side]["success"]) and bool(e[side]["clean"]))

    ds = np.array([won(t, "sim") - won(i, "sim") for i, t in pairs])
    dl = np.array([won(t, "live") - won(i, "live") for i, t in pairs])
    idx = np.random.default_rng(seed).integers(0, len(pairs), size=(n, len(pairs)))
    bs, bl = ds[idx].mean(axis=1), dl[idx].mean(axis=1)
    ok = bs > 0
    ratios = bl[ok] / bs[ok]

    def ci(x: Any) -> list[float] | None:
        return [float(np.percentile(x, 2.5)), float(np.percentile(x, 97.5))] if len(x) else None

    sim_gain, live_gain = float(ds.mean()), float(dl.mean())
    rate = lambda side, k: float(np.mean([won(p[k], side) for p in pairs]))   # noqa: E731
    return {"n": len(pairs), "sim_before": rate("sim", 0), "sim_after": rate("sim", 1),
            "live_before": rate("live", 0), "live_after": rate("live", 1),
            "sim_gain": sim_gain, "sim_gain_ci": ci(bs), "live_gain": live_gain,
            "live_gain_ci": ci(bl), "retained_gain": live_gain / sim_gain if sim_gain > 0 else None,
            "retained_gain_ci": ci(ratios)}


def retained_gain(init_report: dict, trained_report: dict) -> dict[str, Any]:
    """The retained gain of a learned policy: its untrained and trained reports (the same
    pair, families and instances) -> per family and in total, sim gain, live gain and
    live / sim, with intervals, and the first diverging step of each trained pair."""
    fams = [r["family"] for r in trained_report["families"]]
    out = {"pair": trained_report["pair"], "families": {}, "total": _paired_gain(init_report["episodes"],
                                                                                   trained_report["episodes"])}
    for f in fams:
        out["families"][f] = _paired_gain([e for e in init_report["episodes"] if e["family"] == f],
                                          [e for e in trained_report["episodes"] if e["family"] == f])
    for name, rep in (("parting", trained_report), ("parting_init", init_report)):
        out[name] = [{"family": e["family"], "index": e["index"], "parting": e.get("parting"),
                      "classes": sorted({d["class"] for d in e["divergences"]})} for e in rep["episodes"]]
        # why each pair of episodes parts at its first differing step, counted per family
        counts: dict[str, dict[str, int]] = {}
        for e in rep["episodes"]:
            why = (e.get("parting") or {}).get("class", "never" if e.get("parting") is None else "unclassified")
            per = counts.setdefault(e["family"], {})
            per[why] = per.get(why, 0) + 1
        out[f"{name}_classes"] = counts
    return out


def _examples(eps: list[dict], per_class: int = 8) -> list[tuple[str, str]]:
    """Up to ``per_class`` distinct divergence details of each class (sorted)."""
    out = []
    for cls in DIVERGENCE_CLASSES:
        details = sorted({d["detail"] for e in eps for d in e["divergences"] if d["class"] == cls})
        out += [(cls, d) for d in details[:per_class]]
    return out


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    if isinstance(x, float):
        return f"{x:.2f}"
    return str(x)


def render_markdown(report: dict) -> str:
    """report.md: the per-family table, divergence counts and examples, per-episode lines."""
    lines = [f"# sim2live: {report['pair']}, agent {report['agent']}", "",
             f"{report['total']['n']} episodes per side ({report['instances_per_family']} per family), "
             f"max {report['max_steps']} steps, simweb {report['simweb_version']}, world seed {report['world_seed']}.", "",
             "| family | kind | n | sim success | live success | retained | sim progress | live progress | "
             "sim steps | live steps | " + " | ".join(DIVERGENCE_CLASSES) + " |",
             "|---|---|---|---|---|---|---|---|---|---|" + "---|" * len(DIVERGENCE_CLASSES)]
    for r in report["families"]:
        lines.append(f"| {r['family']} | {r['kind']} | {r['n']} | {_fmt(r['sim_success'])} | {_fmt(r['live_success'])} | "
                     f"{_fmt(r['retained_success'])} | {_fmt(r['sim_progress'])} | {_fmt(r['live_progress'])} | "
                     f"{_fmt(r['sim_steps'])} | {_fmt(r['live_steps'])} | "
                     + " | ".join(str(r["divergences"][c]) for c in DIVERGENCE_CLASSES) + " |")
    t = report["total"]
    lines += ["", f"Total: sim success {_fmt(t['sim_success'])}, live success {_fmt(t['live_success'])}, "
                  f"retained {_fmt(t['retained_success'])}; progress {_fmt(t['sim_progress'])} -> {_fmt(t['live_progress'])}.",
              "", "## Divergences by family", ""]
    for r in report["families"]:
        lines.append(f"**{r['family']}**")
        lines += [f"- {c}: {d}" for c, d in r["examples"]] or ["- none"]
        lines.append("")
    lines += ["## Episodes", "", "| family | # | seed | user | sim | live | parts at |", "|---|---|---|---|---|---|---|"]
    for e in report["episodes"]:
        p = e["parting"]
        part = "-" if not p else (f"script step {p['script_step']}: {p['what']}" if "script_step" in p
                                  else f"step {p['step']}: {p['sim_page']} / {p['live_page']}")
        lines.append(f"| {e['family']} | {e['index']} | {e['sim_seed']} | {e['user'] or '-'} | "
                     f"{'ok' if e['sim']['success'] else 'fail'} {e['sim']['progress']:.2f} | "
                     f"{'ok' if e['live']['success'] else 'fail'} {e['live']['progress']:.2f} | {part.replace('|', '/')} |")
    return "\n".join(lines) + "\n"


__all__ = ["retained_gain", "AGENTS", "DIVERGENCE_CLASSES", "Settings", "Side", "Sim2LiveError", "divergences", "parting_step", "run",
           "render_markdown", "select_families", "CounterpartError"]

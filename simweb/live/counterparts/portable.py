"""Portable task families: one goal, a simweb task and a live verifier on the counterpart.

An :class:`Instance` is one task that exists on both sides: the simweb template and seed
that produce it (the goal text is identical), the user signed in on both sides, and the
entities the live verifier needs. A :class:`PortableFamily` makes instances, says where the
live episode starts, judges the live database after the episode, and gives the scripted
agent its steps (the same list runs on both sides).

A live verdict has simweb's shape ``{success, progress, clean, checks}``, checks being
``{name, ok, detail}``: facts read from ``cp.connect()`` give ``progress`` (their share)
and ``success`` (all of them), and :func:`collateral` turns every change of the database
outside the effect and outside the counterpart's bookkeeping into a failing
``collateral: table.pk.field`` check that makes ``clean`` false. Answers are matched by
type with simweb's own matchers (:mod:`simweb.verify`).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cache
from typing import TYPE_CHECKING, Any, ClassVar

from ...judging import verify
from .dbdiff import Change, diff

if TYPE_CHECKING:  # pragma: no cover
    from .base import Counterpart

KINDS = ("info", "search", "form", "flow", "refusal")
MAX_COLLATERAL_CHECKS = 20


@dataclass(frozen=True)
class Instance:
    """One task instance that exists on both sides."""

    family: str                 # "issues:roundup/issue_status"
    index: int                  # 0..n-1
    sim_task: str               # simweb template id, "issues/issue_status"
    sim_seed: int               # simweb task seed giving this instance
    goal: str                   # the same text on both sides
    user: str | None = None     # signed in on both sides; None = anonymous
    params: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.family}#{self.index}"

    def to_json(self) -> dict:
        return {"family": self.family, "index": self.index, "sim_task": self.sim_task, "sim_seed": self.sim_seed,
                "goal": self.goal, "user": self.user, "params": self.params}


class PortableFamily:
    """A task family that runs on simweb and on one counterpart; subclasses fill the hooks."""

    id: ClassVar[str] = ""          # "issues:roundup/issue_status"
    kind: ClassVar[str] = ""        # one of KINDS
    sim_task: ClassVar[str] = ""    # "issues/issue_status"
    description: ClassVar[str] = ""

    @property
    def pair(self) -> str:
        """``app:counterpart`` of this family."""
        return self.id.partition("/")[0]

    @property
    def short(self) -> str:
        """The family name without the pair (``issue_status``)."""
        return self.id.partition("/")[2]

    def instances(self, n: int) -> list[Instance]:
        raise NotImplementedError

    def instances_from(self, n: int, first_seed: int) -> list[Instance]:
        """The first ``n`` instances whose simweb seed is ``first_seed`` or above (seeds of
        1000 and up are never drawn in training: held out by construction). Only a family
        whose counterpart holds every instance's entities can; the others seed a fixed few."""
        if first_seed == 0:
            return self.instances(n)
        raise RuntimeError(f"{self.pair} seeds only its families' first instances: it cannot start at seed "
                           f"{first_seed}")

    def live_start(self, inst: Instance) -> str:
        """The path on the counterpart where the episode starts."""
        return "/"

    def live_verify(self, cp: Counterpart, inst: Instance, answer: str | None, refused: bool) -> dict:
        raise NotImplementedError

    def refusal_evidence(self, inst: Instance) -> tuple[str, str] | None:
        """A refusal family's page that shows why the task cannot be done, as ``(what,
        regex over the live URL's path and query)``: a refusal counts only after the agent
        has been on such a page (simweb's refusal verdicts demand the same viewing; the
        counterpart's database cannot tell a blind refusal from an informed one). None: no
        such rule (the start page shows it, or the database tells, as Spirit's visits do)."""
        return None

    def script(self, inst: Instance) -> list:
        """The scripted agent's steps (``simweb.agents.scripted`` Steps)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.id} ({self.kind})>"


# ----------------------------------------------------------------------------- simweb's side

@cache
def sim_app(name: str) -> Any:
    """The simweb app ``name`` on world seed 0 at its default size: the world a pair seeds
    its counterpart from and draws its instances in (built once per process)."""
    from ...runtime.app import load_app
    from ...runtime.registry import definition

    return load_app(definition(name), 0, None, progress=False)


@cache
def sim_instance(app_name: str, sim_task: str, seed: int) -> tuple[str, dict]:
    """The goal and parameters of simweb task ``sim_task`` at ``seed`` on :func:`sim_app`."""
    app = sim_app(app_name)
    inst = app.tasks[sim_task].instantiate(app, seed)
    return inst.goal, dict(inst.params)


def fitting_seeds(app_name: str, sim_task: str, n: int, limit: int,
                  fits: Callable[[dict], bool]) -> Iterator[tuple[int, str, dict]]:
    """``(seed, goal, params)`` of the first ``n`` seeds below ``limit`` whose instance of
    ``sim_task`` ``fits`` (params are a fresh copy each: callers add the live side's keys)."""
    found = 0
    for seed in range(limit):
        if found >= n:
            return
        goal, params = sim_instance(app_name, sim_task, seed)
        if fits(params):
            found += 1
            yield seed, goal, dict(params)


# ----------------------------------------------------------------------------- checks

def check(name: str, ok: bool, detail: str = "") -> dict[str, Any]:
    """One named check of a live verdict."""
    return {"name": name, "ok": bool(ok), "detail": detail}


def guard(c: dict[str, Any]) -> dict[str, Any]:
    """The check ``c`` as a guard: what must still hold at the end (the topic still open,
    the page still a draft, the tracker agreeing with simweb's instance). It holds before
    any work, so a failing guard takes the success away but a passing one is no progress
    (else zero work would earn progress live where simweb gives it 0)."""
    return {**c, "guard": True}


def add_fact(v: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    """The verdict ``v`` (of :func:`verdict`) with one more goal fact ``c``."""
    damage = [x for x in v["checks"] if x["name"].startswith("collateral: ")]
    facts = [x for x in v["checks"] if x not in damage and x["name"] != "no collateral changes"]
    return verdict([*facts, c], damage)


def passed(c: dict) -> bool:
    """A check's outcome, whichever side made it (live ``ok`` or simweb ``passed``)."""
    return bool(c.get("ok", c.get("passed")))


def answer_check(kind: str, answer: str | None, expected: Any, label: str) -> dict[str, Any]:
    """A typed answer check (number, money in cents, text, date, set): simweb's matchers."""
    c = verify.answer_check(kind, answer, expected, label)
    return check(c["name"], c["passed"], c["detail"])


def refusal_check(refused: bool, answer: str | None = None) -> dict[str, Any]:
    """The agent reported the task infeasible (and did not claim to have done it)."""
    return check("refused the task", refused, "reported infeasible" if refused else f"no refusal (answer {answer!r})")


def field_check(label: str, actual: Any, expected: Any, *, text: bool = False) -> dict[str, Any]:
    """``label`` has ``expected``; ``text`` compares as simweb does (case, spaces, full stop)."""
    ok = verify.match_exact(None if actual is None else str(actual), str(expected)) if text else actual == expected
    return check(label, ok, f"expected {expected!r}, got {actual!r}")



def _claimed(effect: Any) -> Callable[[Change], bool]:
    if callable(effect):
        return effect
    patterns = list(effect)

    def claimed(c: Change) -> bool:
        return any(fnmatchcase(c.key, p) for p in patterns)

    return claimed


def collateral(cp: Counterpart, effect: Any = (), *, ignore_tables: Sequence[str] = (),
               ignore_fields: Sequence[str] = ()) -> tuple[list[Change], list[dict]]:
    """The changes of the live database since pristine, and a failing check per change the
    effect does not claim.

    ``effect``: a predicate on :class:`~simweb.counterparts.dbdiff.Change`, or ``fnmatch``
    patterns over ``Change.key`` (``"_issue.12.status"``, ``"_msg.*"``, ``"_issue.*.title"``).
    ``ignore_*``: extra bookkeeping on top of the counterpart's ``bookkeeping_tables`` /
    ``bookkeeping_fields`` class attributes (if any)."""
    tables = [*getattr(cp, "bookkeeping_tables", ()), *ignore_tables]
    fields = [*getattr(cp, "bookkeeping_fields", ()), *ignore_fields]
    changes = diff(cp.pristine_path(cp.database()), cp.database(), ignore_tables=tables, ignore_fields=fields)
    claimed = _claimed(effect)
    damage = [c for c in changes if not claimed(c)]
    checks = [check(f"collateral: {c.key}", False, _show_change(c)) for c in damage[:MAX_COLLATERAL_CHECKS]]
    if len(damage) > MAX_COLLATERAL_CHECKS:
        checks.append(check("collateral: more changes", False, f"{len(damage) - MAX_COLLATERAL_CHECKS} more"))
    return changes, checks


def _show_change(c: Change) -> str:
    if c.op == "update":
        return f"{_short(c.before)} -> {_short(c.after)}"
    return f"{c.op} {_short(c.row())}"


def _short(v: Any, n: int = 80) -> str:
    text = repr(v)
    return text if len(text) <= n else text[: n - 3] + "..."


def verdict(facts: Sequence[dict], damage: Sequence[dict] = ()) -> dict[str, Any]:
    """``{success, progress, clean, checks}`` from goal facts and collateral checks.

    ``success``: there are goal facts (not only :func:`guard` checks) and every fact and
    guard passes; ``progress``: the share of goal facts that pass (guards hold before any
    work, so they never count); ``clean``: no collateral check. Collateral never counts
    towards progress (as in simweb)."""
    facts = list(facts)
    goals = [c for c in facts if not c.get("guard")]
    done = sum(1 for c in goals if passed(c))
    checks = facts + list(damage)
    if not damage:
        checks.append(check("no collateral changes", True))
    return {"success": bool(goals) and all(passed(c) for c in facts),
            "progress": round(done / len(goals), 6) if goals else 0.0, "clean": not damage, "checks": checks}

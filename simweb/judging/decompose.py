"""Task decomposition, WebGym-style: a task whose fact groups allow it yields sub-tasks.

WebGym scales a task's difficulty down by splitting it along its fact groups: a task with
at least two fact groups, one of them holding at least three facts, can be decomposed
(:func:`decomposable`). In simweb a sub-task is a real task with its own goal, fact
groups, oracle plan and verifier, and its own id: ``<parent id>.<n>`` (``n`` from 1).

A template says how its instances split by declaring :meth:`TaskTemplate.parts`, one
:class:`Part` per sub-task. A part names

* the parent's fact groups it asks for (its prerequisites included),
* which pieces of the parent's intended effect it keeps (:func:`restrict`): the engine
  drops every other target and every other expected field of a kept row, so whatever
  else of the parent the agent does is judged as collateral damage, field by field;
* its oracle: a prefix or a part of the parent's plan that achieves just those facts;
* optionally its own goal text (by default the engine states the part after the
  parent's goal).

Everything else (ids, sampling, the effect, the start, listing and export) is the
engine's, so every app gets decomposition the same way. :class:`TaskTable` is the
app's task mapping: it iterates the parent templates only and also resolves sub-task ids,
so an env resets on ``shopping/buy_product.1`` like on any task.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.worlddb import Rng
from .effects import Answer, Check, Effect, Gone, NewRow, Refusal, Row, Target, Value, shows
from .tasks import FactGroup, TaskTemplate
from .verify import answer_check

#: How many parameter draws a sub-task may take to find a parent instance that splits
#: (issues/unblock_and_close splits in about 1 instance of 60 (3 of seeds 0-199): 1,000
#: draws all miss with a chance of about 1 in 10 million).
_SAMPLE_TRIES = 1000
#: The seeds at which a template is looked at for an instance that splits.
FIND_SEEDS = range(64)

_SUB_ID = re.compile(r"^(?P<parent>.+)\.(?P<n>[1-9][0-9]*)$")


def decomposable(groups: Sequence[FactGroup]) -> bool:
    """WebGym's rule: at least two fact groups, and one of them with at least three facts."""
    return len(groups) >= 2 and any(len(g.facts) >= 3 for g in groups)


@dataclass(frozen=True)
class Part:
    """One sub-task of a parent instance.

    ``groups``: the ids of the parent's fact groups the sub-task asks for; a
    :class:`FactGroup` in their place rewords that group for the part (a judge reads the
    description: "in the cart", not "ordered", when checkout is not part of it).
    ``keep``: selectors of the parent's effect pieces it keeps (see :func:`restrict`).
    ``plan``: its oracle, actions taken only from what the agent sees.
    ``goal``: its goal text; empty: the engine words it from the parent's goal.
    ``extra``: pieces the parent's effect cannot hold because a later step of the parent
    consumes them (the cart that checkout empties), or that no step of the parent leaves
    behind (the filtered list shown on the way to an answer): ``extra(start) -> Effect``,
    added to what ``keep`` selects.
    ``kind``: the sub-task's kind; empty: "info" when it keeps its parent's answer,
    otherwise "state" (its episode ends when it succeeds)."""

    groups: tuple[str | FactGroup, ...]
    keep: tuple[str, ...]
    plan: tuple[str, ...]
    goal: str = ""
    extra: Callable[[dict], Effect] | None = None
    kind: str = ""

    def sub_task_kind(self, parent: TaskTemplate) -> str:
        """The kind of the sub-task this part makes of ``parent``."""
        if self.kind:
            return self.kind
        return "info" if parent.kind == "info" and "answer" in self.keep else "state"


def view_part(groups: tuple[str | FactGroup, ...], url: str, plan: Sequence[str], goal: str, *,
              free: Sequence[str] = ()) -> Part:
    """A part that is reaching a view of the site: the agent's browser ends on the page
    ``url`` names with exactly its filters (:func:`simweb.effects.shows`; ``free`` query
    keys may take any value). It fits the first step of "find the filtered list, then
    answer or act on it": the parent's answer, or its changes, are then collateral."""
    return Part(groups, (), tuple(plan), goal, extra=lambda start: Effect(checks=(shows(url, free=free),)))


# ----------------------------------------------------------------------------- restriction

def _row_keys(t: Row | Gone | NewRow) -> set[str]:
    keys = {t.table}
    if t.label:
        keys.add(t.label)
    return keys


def restrict(effect: Effect, keep: Sequence[str]) -> Effect:
    """The part of ``effect`` that ``keep`` selects.

    A selector is matched against each piece of the effect:

    * a :class:`Row` field by ``<table>.<field>`` or ``<label>.<field>``, a whole row by
      its table or label (fields with no goal, e.g. a modification day the site sets,
      stay with the row as long as one of its goal fields is kept, and may be kept on
      their own: a comment's part keeps the day the comment sets on its issue);
    * a :class:`NewRow` or :class:`Gone` by its table or label;
    * a :class:`Value` by its label or a dotted prefix of its path;
    * the answer by ``answer``, the refusal by ``refusal``, a :class:`Check` by its name.

    Pieces not selected are dropped: a change they would have claimed becomes collateral.
    A selector that matches nothing is an error (a declaration that drifted from the
    effect), and so is a restriction that keeps no goal."""
    want = set(keep)
    used: set[str] = set()
    targets: list[Target] = []
    for t in effect.targets:
        if isinstance(t, Row):
            whole = want & _row_keys(t)
            fields = {}
            for f, exp in t.fields.items():
                hit = whole or want & {f"{k}.{f}" for k in _row_keys(t)}
                used |= hit
                if hit:
                    fields[f] = exp
            if any(e.is_goal for e in fields.values()):
                fields.update({f: e for f, e in t.fields.items() if not e.is_goal})
            if fields:
                targets.append(Row(t.table, t.id, fields, t.label, t.weight))
            used |= whole
        elif isinstance(t, (NewRow, Gone)):
            hit = want & _row_keys(t)
            if hit:
                targets.append(t)
                used |= hit
        elif isinstance(t, Value):
            hit = {k for k in want if k == t.label or t.path == k or t.path.startswith(k + ".")}
            if hit:
                targets.append(t)
                used |= hit
    answer: Answer | None = None
    if effect.answer is not None and "answer" in want:
        answer, used = effect.answer, used | {"answer"}
    refusal: Refusal | None = None
    if effect.refusal is not None and "refusal" in want:
        refusal, used = effect.refusal, used | {"refusal"}
    checks: list[Check] = []
    for c in effect.checks:
        if c.name in want:
            checks.append(c)
            used.add(c.name)
    unused = want - used
    if unused:
        raise ValueError(f"no piece of the effect matches {sorted(unused)}")
    if not (answer or refusal or checks or any(_has_goal(t) for t in targets)):
        raise ValueError(f"{sorted(want)} keeps no goal of the effect")
    return Effect(tuple(targets), answer, refusal, tuple(checks))


def _has_goal(t: Target) -> bool:
    return not isinstance(t, Row) or any(e.is_goal for e in t.fields.values())


# ----------------------------------------------------------------------------- sub-tasks

def _lower_first(s: str) -> str:
    return s[:1].lower() + s[1:] if s[:2] != s[:2].upper() else s


def default_goal(parent_goal: str, groups: Sequence[FactGroup]) -> str:
    """The parent's goal, then the part to do: its fact groups and their facts."""
    part = "; ".join(" ".join(filter(None, (_lower_first(g.description), f"({', '.join(g.facts)})")))
                     for g in groups)
    return f"{parent_goal} For now, do only this part and leave the rest undone: {part}."


class SubTask(TaskTemplate):
    """Sub-task ``n`` (from 1) of a parent template: the parent's parameters, the parent's
    start, and the parent's ``n``-th :class:`Part` for goal, facts, oracle and effect."""

    def __init__(self, parent: TaskTemplate, n: int, kind: str | None = None):
        self.parent = parent
        self.n = n
        self._kind = kind
        self.id = f"{parent.id}.{n}"
        self.title = f"{parent.title} (part {n})"
        self.start_url = parent.start_url
        self.sign_in = parent.sign_in
        self.may_refuse = False
        self.policies = parent.policies

    # As its part says (Part.sub_task_kind); without one, a part of an information task
    # answers and a part of any other task changes the site (a template that may refuse
    # splits only its feasible instances).
    @property
    def kind(self) -> str:  # type: ignore[override]
        if self._kind is not None:
            return self._kind
        return "info" if self.parent.kind == "info" else "state"

    def part(self, app: Any, p: dict[str, Any]) -> Part:
        parts = self.parent.parts(app, p) if decomposable(self.parent.facts(app, p)) else []
        if len(parts) < self.n:
            raise ValueError(f"{self.parent.id} with these parameters has no part {self.n}")
        return parts[self.n - 1]

    def sample(self, app: Any, rng: Rng) -> dict[str, Any]:
        return self._split_draw(app, rng, None)

    def sample_with(self, app: Any, rng: Rng, policy: Mapping[str, Any]) -> dict[str, Any]:
        return self._split_draw(app, rng, policy)

    def _split_draw(self, app: Any, rng: Rng, policy: Mapping[str, Any] | None) -> dict[str, Any]:
        # The parent's draw (under the site's policies, when given), again until the
        # instance splits into at least n parts (a template's instances may differ, e.g. a
        # feasible twin and a refusal).
        # Each draw on a stream of its own, keyed by the sub-task's stream, as the parent's
        # seeds are (one stream drawn on and on can stay in a region of the world).
        # The draw is judged as the instance will be: with the policies it will carry
        # (TaskTemplate.draw adds them), since its facts and parts may follow them.
        today = app.site_policies(0) if policy is not None else {}
        carried = {n: policy[n] for n in self.policies if policy[n] != today[n]} if policy is not None else {}
        for _ in range(_SAMPLE_TRIES):
            r = Rng.derive("sub-task", self.id, rng.next64())
            p = self.parent.sample(app, r) if policy is None else self.parent.sample_with(app, r, policy)
            q = dict(p, site_policy=carried) if carried else p
            if decomposable(self.parent.facts(app, q)) and len(self.parent.parts(app, q)) >= self.n:
                return p
        raise RuntimeError(f"no instance of {self.parent.id} splits into {self.n} parts")

    def instantiate(self, app: Any, seed: int, params: dict[str, Any] | None = None, variant: int = 0) -> Any:
        """Seed ``s`` is a part of the parent's instance ``s`` (on the same site variant)
        when that instance splits (the same task, scaled down); otherwise a draw of the
        sub-task's own."""
        if params is None:
            p = self.parent.draw(app, Rng.derive("task", self.parent.id, seed), variant)
            if decomposable(self.parent.facts(app, p)) and len(self.parent.parts(app, p)) >= self.n:
                params = p
        return super().instantiate(app, seed, params, variant)

    def goal(self, app: Any, p: dict[str, Any]) -> str:
        part = self.part(app, p)
        return part.goal or default_goal(self.parent.goal(app, p), self.facts(app, p))

    def facts(self, app: Any, p: dict[str, Any]) -> list[FactGroup]:
        wanted = self.part(app, p).groups
        groups = {g.id: g for g in self.parent.facts(app, p)}
        missing = [g for g in wanted if isinstance(g, str) and g not in groups]
        if missing:
            raise ValueError(f"{self.id}: the parent has no fact group {missing}")
        return [g if isinstance(g, FactGroup) else groups[g] for g in wanted]

    def oracle(self, app: Any, p: dict[str, Any]) -> list[str]:
        return list(self.part(app, p).plan)

    def effect(self, app: Any, p: dict[str, Any], start: dict) -> Effect:
        part = self.part(app, p)
        extra = part.extra(start) if part.extra is not None else None
        whole = self.parent.effect_for(app, p, start)
        kept = restrict(whole, part.keep) if part.keep else None
        if kept is None:
            if extra is None:
                raise ValueError(f"{self.id}: a part keeps nothing of the parent's effect and adds nothing")
            kept = extra
        elif extra is not None:
            kept = kept + extra
        if whole.answer is not None and kept.answer is None:
            kept = kept + Effect(checks=(_unanswered(whole.answer),))
        return kept

    def setup(self, app: Any, state: dict, p: dict[str, Any]) -> None:
        self.parent.setup(app, state, p)

    def start_url_for(self, app: Any, p: dict[str, Any]) -> str:
        return self.parent.start_url_for(app, p)


def _unanswered(answer: Answer) -> Check:
    """The parent's question left for later: giving the parent's answer in a part that does
    not ask for it is collateral (the rest of the parent, done anyway)."""
    def test(app: Any, start: dict, final: dict, given: str | None) -> tuple[bool, str]:
        said = answer_check(answer.kind, given, answer.expected, answer.label)
        return not said["passed"], f"the answer {given!r} is the parent's" if said["passed"] else ""

    return Check(f"the {answer.label} is not given yet", test, collateral=True)


def unsplit_reason(template: TaskTemplate) -> str:
    """Why a template whose instances may be decomposable yields no sub-tasks: it sets
    ``splits = False`` and says why in ``split_reason`` (empty: it declares nothing)."""
    if getattr(template, "splits", True) is not False:
        return ""
    return str(getattr(template, "split_reason", "") or "").strip()


def unsplit_templates(app: Any, seeds: Sequence[int] = FIND_SEEDS) -> list[str]:
    """The app's templates that have a decomposable instance among ``seeds`` yet yield no
    sub-tasks and do not declare why (:func:`unsplit_reason`): each is a problem to fix,
    by declaring its parts or the reason it cannot split."""
    out = []
    for tid, template in app.tasks.items():
        if app.tasks.sub_tasks(tid):
            continue
        if getattr(template, "splits", True) is False:
            if not unsplit_reason(template):
                out.append(f"{tid} sets splits = False without a split_reason")
            continue
        hits = [seed for seed in seeds if decomposable(template.instantiate(app, seed).fact_groups)]
        if hits:
            out.append(f"{tid} is decomposable (seed {hits[0]}, WebGym's rule) but yields no sub-tasks: declare "
                       f"parts(), or splits = False with a split_reason")
    return out


def sub_tasks(app: Any, template: TaskTemplate, seeds: Sequence[int] = FIND_SEEDS) -> list[SubTask]:
    """The sub-tasks of a template: as many as its first decomposable instance among
    ``seeds`` has parts (none if the template declares no parts or never splits)."""
    if isinstance(template, SubTask) or type(template).parts is TaskTemplate.parts:
        return []
    for seed in seeds:
        inst = template.instantiate(app, seed)
        if decomposable(inst.fact_groups):
            parts = template.parts(app, inst.params)
            if parts:
                return [SubTask(template, n, part.sub_task_kind(template)) for n, part in enumerate(parts, 1)]
    return []


class TaskTable(dict):
    """An app's task templates by id. Iterating, ``len`` and ``items`` see the parent
    templates only (so counts and shares never include sub-tasks); looking up
    ``<parent id>.<n>`` gives that parent's sub-task ``n`` when it has one."""

    def __init__(self, app: Any, templates: Sequence[TaskTemplate]):
        super().__init__((t.id, t) for t in templates)
        self._app = app
        self._subs: dict[str, list[SubTask]] = {}

    def sub_tasks(self, parent_id: str) -> list[SubTask]:
        """The sub-tasks of one parent template (memoised: the same objects every time);
        none for an id that is not a parent template's."""
        if not dict.__contains__(self, parent_id):
            return []
        subs = self._subs.get(parent_id)
        if subs is None:
            subs = self._subs[parent_id] = sub_tasks(self._app, dict.__getitem__(self, parent_id))
        return subs

    def _sub(self, key: Any) -> SubTask | None:
        m = _SUB_ID.match(key) if isinstance(key, str) else None
        if m is None or not dict.__contains__(self, m["parent"]):
            return None
        subs = self.sub_tasks(m["parent"])
        n = int(m["n"])
        return subs[n - 1] if n <= len(subs) else None

    def __contains__(self, key: object) -> bool:
        return dict.__contains__(self, key) or self._sub(key) is not None

    def __getitem__(self, key: Any) -> Any:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        sub = self._sub(key)
        if sub is None:
            raise KeyError(key)
        return sub

    def get(self, key: Any, default: Any = None) -> Any:
        return self[key] if key in self else default

    def with_sub_tasks(self) -> Iterator[tuple[TaskTemplate, list[SubTask]]]:
        """Each parent template with its sub-tasks (an empty list when it has none)."""
        for tid, template in self.items():
            yield template, self.sub_tasks(tid)


__all__ = ["Part", "SubTask", "TaskTable", "decomposable", "default_goal", "restrict", "sub_tasks", "unsplit_reason",
           "unsplit_templates", "view_part"]

"""Task templates: parameters drawn from the world by seed, a goal, fact groups
(WebGym-style difficulty), a start, an oracle plan and a verifier.

An app's tasks subclass :class:`TaskTemplate`. Each template is a family of thousands of
instances: ``sample(app, rng)`` picks the parameters from the world, everything else is
a deterministic function of those parameters.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ..core.state import canonical, deep_copy
from ..core.worlddb import Rng
from .effects import NOT_REFUSED, SIGN_IN_AS, Effect, evaluate

# FactGroup and STEP_BUDGETS live in the task model shared with simweb.live; apps import them from here.
from .taskmodel import STEP_BUDGETS, FactGroup, bucket_for  # noqa: F401

_EFFECT_CACHE_SIZE = 1024
#: Entries a :func:`world_memo` function keeps per world before it starts afresh.
_WORLD_MEMO_SIZE = 1 << 18

F = TypeVar("F", bound=Callable[..., Any])


def world_memo(fn: F) -> F:
    """Memoise a sampling helper ``fn(app, *args, **kwargs)`` per world.

    For helpers whose result is a pure function of the read-only world and the
    arguments (is this product found by searching its name, a project's members, an
    issue count under filters): templates' rejection samplers ask them again and again,
    for new seeds of the same template and across templates, and every answer is a world
    query. The cache lives on the world object, so every env, fork and task of that world
    shares it, and it holds world facts only: never anything keyed by a task or a seed,
    so a first reset of a new (task, seed) still draws its parameters (the same ones:
    the rng is consumed exactly as without the memo). Arguments must be JSON values
    (keyed by their canonical JSON); a list or dict result is returned as a shallow copy."""
    name = f"{fn.__module__}.{fn.__qualname__}"

    @functools.wraps(fn)
    def memoised(app: Any, *args: Any, **kwargs: Any) -> Any:
        caches: dict = app.world.__dict__.setdefault("_world_memo", {})
        cache = caches.get(name)
        if cache is None:
            cache = caches[name] = {}
        key = canonical([args, kwargs]) if kwargs else canonical(args)
        try:
            value = cache[key]
        except KeyError:
            if len(cache) >= _WORLD_MEMO_SIZE:
                cache.clear()
            value = cache[key] = fn(app, *args, **kwargs)
        if type(value) is list:
            return list(value)
        if type(value) is dict:
            return dict(value)
        return value

    return memoised  # type: ignore[return-value]


def difficulty_of(n_facts: int) -> str:
    """WebGym's buckets: easy <= 3 facts, medium 4-6, hard >= 7 (see :mod:`simweb.taskmodel`)."""
    return bucket_for(n_facts)


@dataclass
class TaskInstance:
    """One concrete task: what the env needs at reset and what users see."""

    id: str
    params: dict[str, Any]
    goal: str
    fact_groups: list[FactGroup]
    start_url: str
    kind: str

    @property
    def n_facts(self) -> int:
        return sum(len(g.facts) for g in self.fact_groups)

    @property
    def difficulty(self) -> str:
        return difficulty_of(self.n_facts)

    def to_json(self) -> dict[str, Any]:
        """The instance as JSON data, a new copy each call: every step's ``info['task']`` is
        one, and a caller that edits it (a rollout buffer, a wrapper) must not reach the
        params the verifier judges with, nor another step's info."""
        return deep_copy({"id": self.id, "params": self.params, "goal": self.goal, "kind": self.kind,
                          "difficulty": self.difficulty, "n_facts": self.n_facts, "start_url": self.start_url,
                          "evaluator_reference": [g.to_json() for g in self.fact_groups]})


def policy_changes(app: Any, variant: int, names: tuple[str, ...]) -> dict[str, Any]:
    """The policies among ``names`` whose value on site ``variant`` differs from today's,
    with the variant's values (empty on variant 0, and for a template no policy changes)."""
    if not variant or not names:
        return {}
    now, today = app.site_policies(variant), app.site_policies(0)
    return {n: now[n] for n in names if now[n] != today[n]}


def sign_in_as(app: Any, variant: int, template: TaskTemplate, p: Mapping[str, Any]) -> dict[str, str] | None:
    """The account an instance drawn with parameters ``p`` on site ``variant`` must sign in
    as itself: on a site whose tasks start signed out (the ``sign_in`` factor's ``late`` and
    ``early``), for a template that starts signed in as its user today; else None."""
    if not variant or not template.sign_in or p.get("user_id") is None or not app.site_sign_in(variant):
        return None
    row = app.world.user(int(p["user_id"]))
    return {"username": str(row["username"]), "password": str(row["password"])}


def goal_sentence(account: Mapping[str, Any]) -> str:
    """What a goal adds on a site where the task starts signed out: the account to use."""
    return f"Sign in as {account['username']} (password {account['password']}) first."


def starts_signed_out(p: Mapping[str, Any]) -> bool:
    """Whether an instance with parameters ``p`` starts signed out and signs in itself (its
    goal states the account: ``p[SIGN_IN_AS]``)."""
    return isinstance(p.get(SIGN_IN_AS), dict)


def site_policy(app: Any, p: Mapping[str, Any], name: str) -> Any:
    """The value of policy ``name`` an instance was drawn under (its parameters'
    ``site_policy``, else today's): what a template's goal, oracle and effect read."""
    given = p.get("site_policy") or {}
    if name in given:
        return given[name]
    return app.site_policies(0)[name]


class TaskTemplate:
    """Base class of every task template. Subclasses set the class attributes and
    implement sample / goal / facts / oracle / effect; setup is optional.

    The verdict is derived from the instance's intended effect (:mod:`simweb.effects`):
    templates declare what may change and to what, never an allowed list."""

    id: str = ""
    kind: str = "state"          # "info" (answer a question), "state" (change the site), "mixed"
    title: str = ""
    start_url: str = "/"
    sign_in: bool = True         # start signed in as the task's user (params["user_id"])
    #: an instance may be infeasible (a refusal with feasible twins of the same phrasing)
    may_refuse: bool = False

    #: The site policies (simweb.runtime.variants, "Policies") whose value changes what an
    #: instance needs: on a site variant that changes one of them, the parameters are drawn
    #: by :meth:`sample_with` under the variant's values and keep those values
    #: (``params["site_policy"]``, only the ones that differ from today's), so the goal,
    #: oracle and effect read them (:func:`site_policy`). Empty: no policy changes the
    #: template's outcome, and its instances are the same on every variant.
    policies: tuple[str, ...] = ()

    # -- to implement -------------------------------------------------------------
    def sample(self, app: Any, rng: Rng) -> dict[str, Any]:
        """The parameters on today's site. A template with ``policies`` implements
        :meth:`sample_with` instead (this then draws with today's policy values)."""
        if type(self).sample_with is not TaskTemplate.sample_with:
            return self.sample_with(app, rng, app.site_policies(0))
        raise NotImplementedError

    def sample_with(self, app: Any, rng: Rng, policy: Mapping[str, Any]) -> dict[str, Any]:
        """The parameters on a site whose policies are ``policy`` (every policy of the app
        -> its value): drawn so that the goal is achievable as written under them, and so
        that a goal that does not state a policy has the same success condition under every
        value of it. Today's values draw exactly what :meth:`sample` draws."""
        return self.sample(app, rng)

    def goal(self, app: Any, p: dict[str, Any]) -> str:
        raise NotImplementedError

    def facts(self, app: Any, p: dict[str, Any]) -> list[FactGroup]:
        raise NotImplementedError

    def oracle(self, app: Any, p: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def effect(self, app: Any, p: dict[str, Any], start: dict) -> Effect:
        """The instance's intended effect: targets, answer or refusal (see simweb.effects)."""
        raise NotImplementedError

    def setup(self, app: Any, state: dict, p: dict[str, Any]) -> None:
        """Prepare the start state beyond signing in (pre-filled cart, ...)."""

    def parts(self, app: Any, p: dict[str, Any]) -> list[Any]:
        """How an instance splits into sub-tasks (:class:`simweb.decompose.Part`, one per
        sub-task, in order). Consulted only for instances whose fact groups allow it
        (WebGym's rule, :func:`simweb.decompose.decomposable`); none by default."""
        return []

    # -- provided ----------------------------------------------------------------
    def verify(self, app: Any, p: dict[str, Any], start: dict, final: dict, answer: str | None) -> dict:
        """The verdict ``{success, progress, clean, checks}`` of ``final``: a pure function
        of the start and final states and the answer."""
        return evaluate(app, self.effect_for(app, p, start), start, final, answer)

    def effect_for(self, app: Any, p: dict[str, Any], start: dict) -> Effect:
        """:meth:`effect`, memoised per (parameters, start runtime): a step's verdict
        must not redo the world queries that built it."""
        cache: dict = self.__dict__.setdefault("_effects", {})
        key = canonical([p, start["runtime"], start["browser"]["user"]])
        hit = cache.get(key)
        if hit is None:
            if len(cache) >= _EFFECT_CACHE_SIZE:
                cache.pop(next(iter(cache)))
            hit = self.effect(app, p, start)
            # A task to be done (not refused) is not done when the agent's last word calls it
            # impossible: the work done and then "report_infeasible" earns nothing, on every
            # template (the feasible twin of a refusal template, and any other).
            if hit.refusal is None and NOT_REFUSED not in hit.checks:
                hit = hit + Effect(checks=(NOT_REFUSED,))
            cache[key] = hit
        return hit

    def draw(self, app: Any, rng: Rng, variant: int = 0) -> dict[str, Any]:
        """An instance's parameters on site ``variant``: :meth:`sample`, or on a variant
        that changes one of the template's ``policies``, :meth:`sample_with` under the
        variant's values, which the parameters keep (``site_policy``); on a variant where
        the task starts signed out, the account to sign in as (``sign_in_as``)."""
        changed = policy_changes(app, variant, self.policies)
        p = self.sample(app, rng) if not changed else dict(self.sample_with(app, rng, app.site_policies(variant)),
                                                             site_policy=changed)
        account = sign_in_as(app, variant, self, p)
        return p if account is None else dict(p, **{SIGN_IN_AS: account})

    def instantiate(self, app: Any, seed: int, params: dict[str, Any] | None = None,
                    variant: int = 0) -> TaskInstance:
        """Instance ``seed`` on site ``variant`` (its policies: :meth:`draw`); given
        ``params`` (a recorded instance's) are taken as they are: they carry their policies
        and the account of a signed-out start, which the goal then states."""
        p = params if params is not None else self.draw(app, Rng.derive("task", self.id, seed), variant)
        goal = self.goal(app, p)
        if starts_signed_out(p):   # the account to sign in as (simweb.runtime.variant_login)
            goal = f"{goal} {goal_sentence(p[SIGN_IN_AS])}"
        return TaskInstance(id=self.id, params=p, goal=goal, fact_groups=self.facts(app, p),
                            start_url=self.start_url_for(app, p), kind=self.kind)

    def start_url_for(self, app: Any, p: dict[str, Any]) -> str:
        return self.start_url.format(**p)

    def difficulty(self, app: Any, p: dict[str, Any]) -> str:
        return difficulty_of(sum(len(g.facts) for g in self.facts(app, p)))

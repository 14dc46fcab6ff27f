"""The Policy protocol: what the group call, the rollout pools, ``simweb eval`` and
``simweb sim2live`` take, so a user's own policy plugs in without touching simweb.

    class MyPolicy:
        name = "mine"
        version = 0                                   # optional: which weights acted
        def reset(self, env, seed): ...               # a rollout starts (seed: its own)
        def act(self, obs): return "click('a1')"      # or Action("click('a1')", logprob=-0.3)
        def update(self, batch): return {"loss": 0.}  # optional: learn from trajectories

A policy acts on an observation (the dict every simweb env returns) with one action
string; it may return an :class:`Action` carrying the action's log-probability, which
the trajectory records (``logprob`` on the step line). ``reset(env, seed)`` is called at
the start of every rollout: a stochastic policy draws only from a generator seeded by
``seed`` (a rollout's own seed), never from one shared across rollouts, so the same work
gives the same trajectories on one core, on a process pool and on Ray, in any order.
``update(batch)`` takes a list of :class:`simweb.rollout.Trajectory` (with the
advantages the group call computed) and returns metrics; the pools never call it, a
learner does. ``version`` (an int) names the weights a trajectory was made with: work
items carry it, and workers keep the policy of each version they were sent.

``--agent`` on the command line is a built-in agent name (oracle, random, scripted,
llm) or an import path ``package.module:Name`` (a class, called with no arguments, or a
factory function): :func:`load_policy`.
"""
from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

__all__ = ["Action", "Policy", "PolicyError", "begin_rollout", "load_policy", "split_action"]


class PolicyError(ValueError):
    """A policy that cannot be found or built (one-line message)."""


@dataclass(frozen=True)
class Action:
    """An action with the log-probability the policy gave it (None: not known)."""

    text: str
    logprob: float | None = None


@runtime_checkable
class Policy(Protocol):
    """See the module docstring. ``version`` and ``update`` are optional."""

    name: str

    def reset(self, env: Any, seed: int) -> None:
        """A rollout starts in ``env`` (read its task or state if you must; a policy meant
        for real sites reads only the observations); ``seed`` is this rollout's seed."""

    def act(self, obs: dict[str, Any]) -> str | Action:
        """The next action for ``obs``: a BrowserGym action string, or an :class:`Action`."""


def split_action(out: Any) -> tuple[str, float | None]:
    """(action text, log-probability) of what ``act`` returned: a string, an
    :class:`Action`, or a ``(text, logprob)`` pair."""
    if isinstance(out, Action):
        return out.text, out.logprob
    if isinstance(out, tuple) and len(out) == 2 and isinstance(out[0], str):
        return out[0], (None if out[1] is None else float(out[1]))
    return (out if isinstance(out, str) else str(out)), None


_RESET_ARITY: dict[type, bool] = {}


def begin_rollout(policy: Any, env: Any, seed: int) -> None:
    """Call ``policy.reset(env, seed)``; a policy whose ``reset`` takes only the env (the
    older agent form) gets ``reset(env)``."""
    kind = type(policy)
    takes_seed = _RESET_ARITY.get(kind)
    if takes_seed is None:
        try:
            params = inspect.signature(policy.reset).parameters.values()
            takes_seed = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params) >= 2 or any(
                p.kind is p.VAR_POSITIONAL for p in params)
        except (TypeError, ValueError):
            takes_seed = True
        _RESET_ARITY[kind] = takes_seed
    if takes_seed:
        policy.reset(env, seed)
    else:
        policy.reset(env)


BUILTIN = ("oracle", "random")


def load_policy(spec: Any, seed: int = 0, **options: Any) -> Any:
    """A policy from ``spec``: a policy object (returned as is), a built-in agent name
    (``oracle``, ``random``; ``scripted`` and ``llm`` through :func:`simweb.agents.make_agent`
    with their options), or ``package.module:Name``, a class (called with ``options``) or
    a factory. Raises :class:`PolicyError` with one line."""
    if not isinstance(spec, str):
        if not callable(getattr(spec, "act", None)):
            raise PolicyError(f"{type(spec).__name__} is not a policy: it has no act(obs) method")
        return spec
    from ..agents import AGENTS, make_agent

    if spec in AGENTS:
        try:
            return make_agent(spec, seed, **options)
        except ValueError as exc:
            raise PolicyError(str(exc)) from None
    if ":" not in spec:
        raise PolicyError(f"unknown agent '{spec}': use one of {', '.join(AGENTS)} or an import path package.module:Name")
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:   # a policy module that fails to import is the user's bad input
        raise PolicyError(f"cannot import policy module '{module_name}': {type(exc).__name__}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        target = getattr(target, part, None)
        if target is None:
            raise PolicyError(f"module '{module_name}' has no '{attr}'")
    try:
        policy = target(**options) if callable(target) and not callable(getattr(target, "act", None)) or \
            inspect.isclass(target) else target
    except Exception as exc:
        raise PolicyError(f"cannot build policy {spec}: {type(exc).__name__}: {exc}") from None
    if not callable(getattr(policy, "act", None)):
        raise PolicyError(f"{spec} is not a policy: it has no act(obs) method")
    if not hasattr(policy, "name"):
        try:
            policy.name = spec
        except AttributeError:
            pass
    return policy

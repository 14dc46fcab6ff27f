"""simweb as a browsergym-experiments ``Benchmark``, the object AgentLab runs.

    from simweb.browsergym import benchmark
    bench = benchmark()                          # "simweb": every app's tasks
    bench = benchmark("shopping", n_seeds=3)     # "simweb_shopping"
    test = bench.subset_from_split("test")       # held-out seeds (1000 and up)

    from agentlab.experiments.study import make_study
    make_study(agent_args, test).run(n_jobs=4, parallel_backend="ray")

The benchmark is a :class:`SimwebBenchmark`, a subclass of browsergym-experiments'
``Benchmark`` (the same fields, JSON round trip and subset methods) with what AgentLab asks
of a benchmark it does not ship:

- ``get_version()``: simweb's version with each app's spec and world hash, so AgentLab's
  reproducibility record pins the tasks exactly (AgentLab refuses a benchmark it cannot
  version when reproducibility is strict);
- ``backends=[]``: browsergym-experiments' backend names are a closed list; simweb needs no
  instance reset (every episode has its own session), and ``prepare_backends()`` checks
  each app's server instead (started here, or named by ``$SIMWEB_<APP>_URL``), so a server
  that does not answer is one line before any job starts;
- splits by seed range (:data:`SPLITS`): simweb's instances are (template, seed), so
  ``subset_from_split`` keeps the env args whose seed is in the split's range, where
  BrowserGym's suites filter a per-task column. Evaluation's held-out seeds are 1000 and
  up (``test``); ``train`` is 0-899 and ``valid`` 900-999. Variants, once simweb has them,
  will split the same way.

Every env args' ``max_steps`` is simweb's step budget for that instance (WebGym's budget
for its difficulty, at least twice its oracle's plan, within the app's cap), so AgentLab's
step limit and the task's own end agree; ``task_metadata`` has one row per task: app,
template (the parent template of a sub-task), simweb id, kind, difficulty (of its seed-0
instance, as ``simweb tasks`` shows it), sub-task number, and an empty ``depends_on``
(no task waits for another). The high-level action set is BrowserGym's default subsets
(chat, infeas, bid, nav, tab), one action per step, as WebArena's benchmark sets it.

Env args carry their task name as a :class:`TaskName`: AgentLab runs each episode in a
worker process (Ray, joblib) that never imported simweb.browsergym, where BrowserGym only
knows its own suites; unpickling a :class:`TaskName` imports this module, which registers
simweb's tasks before the worker's ``gym.make``.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any

import pandas as pd
from browsergym.experiments.benchmark import Benchmark, HighLevelActionSetArgs
from browsergym.experiments.loop import EnvArgs

from ... import __version__
from ...episodes.episode import TaskError, find_task, plan_budget
from ...runtime.app import load_app
from ...runtime.registry import definition, names, step_cap
from .registration import task_ids
from .servers import server_for
from .task import browsergym_name, simweb_id

#: Seed ranges [start, stop) of the splits: evaluation's held-out seeds are 1000 and up.
SPLITS: dict[str, tuple[int, int]] = {"train": (0, 900), "valid": (900, 1000), "test": (1000, 2**63)}

#: The actions simweb's tasks are run with: BrowserGym's default subsets, one per step.
ACTION_SET = HighLevelActionSetArgs(subsets=("chat", "infeas", "bid", "nav", "tab"), multiaction=False,
                                    strict=False, retry_with_force=True, demo_mode="off")


class TaskName(str):
    """A BrowserGym task name whose unpickling registers simweb's tasks (see the module
    docstring): a ``str`` in every other respect."""

    __slots__ = ()

    def __reduce__(self) -> tuple[Any, ...]:
        return (TaskName, (str(self),))


@dataclass
class SimwebBenchmark(Benchmark):
    """browsergym-experiments' ``Benchmark`` for simweb (see the module docstring)."""

    def get_version(self) -> str:
        """``simweb <version>`` with each app's spec and world hash (12 hex digits)."""
        parts = []
        for name in self.apps():
            app = load_app(definition(name))
            parts.append(f"{name}:spec={app.spec.hash[:12]},world={app.world.hash[:12]}")
        return f"simweb {__version__} (" + "; ".join(parts) + ")"

    def prepare_backends(self) -> None:
        """Start (or check) the server of every app in the benchmark, in this process."""
        for name in self.apps():
            server_for(name)

    def apps(self) -> list[str]:
        """The apps of the benchmark's episodes (a subset keeps every task's metadata row)."""
        return sorted({simweb_id(e.task_name).split("/", 1)[0] for e in self.env_args_list})

    def subset_from_split(self, split: str) -> SimwebBenchmark:
        """The env args whose seed is in ``split``'s range (:data:`SPLITS`)."""
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r} (simweb's splits: {', '.join(SPLITS)})")
        lo, hi = SPLITS[split]
        sub = self._like(f"{self.name}_{split}", [e for e in self.env_args_list
                                                 if e.task_seed is not None and lo <= e.task_seed < hi])
        if not sub.env_args_list:
            raise ValueError(f"the {split} split of {self.name} is empty (its seeds are {lo} to {hi - 1})")
        return sub

    # browsergym-experiments' subset methods build a plain Benchmark: keep this class.
    def subset_from_list(self, task_list: list[str], benchmark_name_suffix: str | None = "custom",
                         split: str | None = None) -> SimwebBenchmark:
        return self._cast(super().subset_from_list(task_list, benchmark_name_suffix, split))

    def subset_from_regexp(self, column: str, regexp: str) -> SimwebBenchmark:
        return self._cast(super().subset_from_regexp(column, regexp))

    def subset_from_task_ratio(self, ratio: float, seed: int) -> SimwebBenchmark:
        return self._cast(super().subset_from_task_ratio(ratio, seed))

    def _cast(self, plain: Benchmark) -> SimwebBenchmark:
        return SimwebBenchmark(**{f.name: getattr(plain, f.name) for f in fields(Benchmark)})

    def _like(self, name: str, env_args_list: list[EnvArgs]) -> SimwebBenchmark:
        return SimwebBenchmark(name=name, high_level_action_set_args=self.high_level_action_set_args,
                               is_multi_tab=self.is_multi_tab, supports_parallel_seeds=self.supports_parallel_seeds,
                               backends=self.backends, env_args_list=env_args_list, task_metadata=self.task_metadata)


def _split_seeds(split: str, n_seeds: int) -> list[int]:
    lo, _ = SPLITS[split]
    return list(range(lo, lo + n_seeds))


def benchmark(app: str | None = None, *, tasks: Iterable[str] | None = None, n_seeds: int = 1,
              splits: Iterable[str] = ("train", "valid", "test"), seeds: Iterable[int] | None = None,
              reward: str | None = None, name: str | None = None) -> SimwebBenchmark:
    """The simweb benchmark: every task of ``app`` (default: every app) or the ``tasks``
    given (simweb ids or BrowserGym names), at the first ``n_seeds`` seeds of each split
    in ``splits`` (or exactly ``seeds``). ``reward="progress"`` makes every episode pay
    clean progress (default: sparse). Named ``simweb`` or ``simweb_<app>`` unless ``name``."""
    if app is not None:
        app = definition(app).name   # an unknown app: the registry's one line with "did you mean"
    if reward not in (None, "sparse", "progress"):
        raise ValueError(f"reward must be 'sparse' or 'progress', not {reward!r}")
    if n_seeds < 1:
        raise ValueError(f"n_seeds must be at least 1, not {n_seeds}")
    ids = [simweb_id(t) if str(t).startswith(("simweb.", "browsergym/")) else str(t) for t in tasks] \
        if tasks is not None else task_ids([app] if app else None)
    for tid in ids:
        if app is not None and not tid.startswith(app + "/"):
            raise TaskError(f"task '{tid}' is not one of {app}'s")
        find_task(load_app(definition(tid.split("/", 1)[0])), tid)   # unknown: one line with "did you mean"
    if seeds is not None:
        seed_list = [int(s) for s in seeds]
    else:
        unknown = [s for s in splits if s not in SPLITS]
        if unknown:
            raise ValueError(f"unknown split {unknown[0]!r} (simweb's splits: {', '.join(SPLITS)})")
        seed_list = [s for split in splits for s in _split_seeds(split, n_seeds)]
    task_kwargs = {"reward": reward} if reward else None
    env_args, rows = [], []
    for tid in ids:
        app_name = tid.split("/", 1)[0]
        sim = load_app(definition(app_name))
        template = sim.tasks[tid]
        for seed in seed_list:
            inst = template.instantiate(sim, seed)
            budget = min(plan_budget(sim, inst), step_cap(app_name))
            env_args.append(EnvArgs(task_name=TaskName(browsergym_name(tid)), task_seed=seed, max_steps=budget,
                                    headless=True, record_video=False, wait_for_user_message=False, viewport=None,
                                    slow_mo=None, storage_state=None, task_kwargs=task_kwargs))
        parent, _, n = tid.partition(".")
        rows.append({"task_name": browsergym_name(tid), "app": app_name, "template": parent, "simweb_task": tid,
                     "kind": template.kind, "difficulty": template.instantiate(sim, 0).difficulty,
                     "sub_task": int(n) if n else 0, "depends_on": ""})
    return SimwebBenchmark(name=name or (f"simweb_{app}" if app else "simweb"), high_level_action_set_args=ACTION_SET,
                           is_multi_tab=True, supports_parallel_seeds=True, backends=[], env_args_list=env_args,
                           task_metadata=pd.DataFrame(rows))


def _factory(app: str | None) -> Callable[..., SimwebBenchmark]:
    def make(n_repeats: int = 1) -> SimwebBenchmark:
        return benchmark(app, n_seeds=n_repeats)

    return make


#: Benchmark factories by name, as browsergym-experiments' ``DEFAULT_BENCHMARKS`` holds its
#: own (``BENCHMARKS["simweb"]()``); importing this module adds them there too (never over
#: an existing name), so ``make_study(agent_args, "simweb_shopping")`` finds them.
BENCHMARKS: dict[str, Callable[..., SimwebBenchmark]] = {"simweb": _factory(None),
                                                          **{f"simweb_{n}": _factory(n) for n in names()}}


def _add_to_default_benchmarks() -> None:
    from browsergym.experiments.benchmark import DEFAULT_BENCHMARKS

    for key, make in BENCHMARKS.items():
        DEFAULT_BENCHMARKS.setdefault(key, make)


_add_to_default_benchmarks()

__all__ = ["ACTION_SET", "BENCHMARKS", "SPLITS", "SimwebBenchmark", "TaskName", "benchmark"]

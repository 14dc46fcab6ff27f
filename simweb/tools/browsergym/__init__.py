"""simweb as a BrowserGym task suite and an AgentLab benchmark (``pip install 'simweb[browsergym]'``).

``import simweb.browsergym`` registers one BrowserGym task per simweb task template and
sub-task of every app, ``browsergym/simweb.<app>.<template>`` (``.<n>`` for sub-task n),
each a subclass of browsergym-core's ``AbstractBrowserTask``::

    import gymnasium as gym
    import simweb.browsergym

    env = gym.make("browsergym/simweb.shopping.buy_product")    # task_kwargs={"reward": "progress"}
    obs, info = env.reset(seed=1000)                            # the instance: simweb's seed
    obs, reward, terminated, truncated, info = env.step("click('a52')")
    info["task_info"]["verdict"]                                # success, progress, clean, checks

The tasks (:mod:`simweb.browsergym.task`) run in stock BrowserGym against the app served in
this process, or against ``simweb serve`` named by ``$SIMWEB_<APP>_URL``
(:mod:`simweb.browsergym.servers`). :func:`benchmark` (and :data:`BENCHMARKS`) give AgentLab
and browsergym-experiments their ``Benchmark``: ``simweb`` and one per app
(:mod:`simweb.browsergym.benchmark`). :func:`compare` runs simweb's oracle or random agent
through BrowserGym and in-process on the same seeds (:mod:`simweb.browsergym.compare`).
See docs/browsergym.md.
"""
from __future__ import annotations

try:
    import browsergym.core  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the install
    raise ImportError(f"simweb.browsergym needs browsergym-core and browsergym-experiments: "
                      f"pip install 'simweb[browsergym]' ({exc})") from None

from .agents import PlanAgentArgs, plan_agent_args  # noqa: E402
from .benchmark import BENCHMARKS, SPLITS, SimwebBenchmark, TaskName, benchmark  # noqa: E402
from .compare import compare  # noqa: E402
from .registration import gym_id, register_all, registered, task_ids  # noqa: E402
from .servers import ServerError, close_servers, server_for  # noqa: E402
from .task import SimwebTask, browsergym_name, simweb_id, task_class  # noqa: E402

register_all()

__all__ = ["BENCHMARKS", "SPLITS", "PlanAgentArgs", "ServerError", "SimwebBenchmark", "SimwebTask", "TaskName", "benchmark",
           "browsergym_name", "close_servers", "compare", "gym_id", "plan_agent_args", "register_all", "registered",
           "server_for", "simweb_id", "task_class", "task_ids"]

"""An AgentLab study over a handful of simweb tasks, with a scripted agent (no model).

What an AgentLab user does with WebArena, done with simweb's benchmark object:
``Study(agent_args=[...], benchmark=simweb.browsergym.benchmark(...)).run(...)``. AgentLab
prepares the benchmark's backends (simweb's servers, started in this process), runs each
episode in its own experiment loop driving stock BrowserGym (Debian's Chromium here),
records it under the study's directory, and summarises the results with its own
``inspect_results``: what its xray viewer opens.

The agent is :class:`simweb.browsergym.PlanAgentArgs`: for each instance the actions
simweb's oracle (or random agent) takes in-process, replayed through the browser. So the
study's reward per episode must equal the in-process episode's reward: the script prints
both, and the number that differ (0 expected), with the wall time of the study.

Needs the agentlab package (``pip install -e ".[browsergym,agentlab]"``); heavy (one
Chromium launch per episode), so it is a script, not a test::

    nice -n 10 python benchmarks/bench_agentlab.py                  # 5 tasks (one per app), seed 1000
    python benchmarks/bench_agentlab.py --agent random --seeds 1000,1001 --out r.json
"""
from __future__ import annotations

import logging
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import parser, print_table, write_json

#: One state or information task per app: a handful that takes minutes, not hours.
DEFAULT_TASKS = ("shopping/product_price", "forum/upvote_post", "issues/close_issue", "cms/approve_comment",
                 "booking/book_room")


def offline_nltk() -> str | None:
    """AgentLab's study module imports browsergym.webarena, which downloads NLTK's
    ``punkt_tab`` at import when it is missing (it tokenises WebArena's answers; simweb's
    tasks never use it). On a machine without that download (this one: no network), an
    empty ``tokenizers/punkt_tab`` in a temporary NLTK_DATA lets the import through. Returns
    the directory it made, or None where the resource exists."""
    import os

    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab")
        return None
    except LookupError:
        pass
    root = tempfile.mkdtemp(prefix="simweb-nltk-")
    os.makedirs(os.path.join(root, "tokenizers", "punkt_tab"))
    os.environ["NLTK_DATA"] = root
    nltk.data.path.insert(0, root)
    return root


def in_process(bench: Any, agent: str) -> dict[tuple[str, int], float]:
    """The summed reward of each (task name, seed) when simweb runs ``agent`` in-process."""
    import simweb
    from simweb.agents import make_agent
    from simweb.episodes.rollout import run_episode
    from simweb.tools.browsergym import simweb_id

    out: dict[tuple[str, int], float] = {}
    envs: dict[str, Any] = {}
    for ea in bench.env_args_list:
        task = simweb_id(ea.task_name)
        app = task.split("/", 1)[0]
        env = envs.get(app) or envs.setdefault(app, simweb.make(app))
        env.max_steps_override = ea.max_steps
        traj = run_episode(env, make_agent(agent, int(ea.task_seed)), task=task, seed=int(ea.task_seed))
        out[(str(ea.task_name), int(ea.task_seed))] = float(sum(s["reward"] for s in traj.steps))
    return out


def main(argv: list[str] | None = None) -> int:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--tasks", default=",".join(DEFAULT_TASKS), help="comma-separated simweb task ids")
    p.add_argument("--seeds", default="1000", help="comma-separated seeds (1000 and up: held out)")
    p.add_argument("--agent", choices=("oracle", "random"), default="oracle")
    p.add_argument("--n-jobs", type=int, default=1)
    p.add_argument("--backend", choices=("sequential", "joblib", "ray"), default="sequential",
                   help="AgentLab's parallel backend")
    p.add_argument("--dir", type=Path, default=None, help="the study's directory (default: a temporary one)")
    args = p.parse_args(argv)

    stand_in = offline_nltk()
    if stand_in:
        print(f"note: NLTK's punkt_tab is missing; an empty stand-in at {stand_in} (WebArena's, unused here)")
    from agentlab.analyze import inspect_results
    from agentlab.experiments.study import Study

    import simweb.tools.browsergym as sb

    tasks = [t.strip() for t in args.tasks.split(",") if t.strip()]
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    if args.quick:
        tasks, seeds = tasks[:2], seeds[:1]
    bench = sb.benchmark(tasks=tasks, seeds=seeds)
    t0 = time.perf_counter()
    agent_args = sb.plan_agent_args(bench.env_args_list, args.agent)
    expected = in_process(bench, args.agent)
    t_plans = time.perf_counter() - t0

    root = args.dir or Path(tempfile.mkdtemp(prefix="simweb-agentlab-"))
    study = Study(agent_args=[agent_args], benchmark=bench, logging_level_stdout=logging.WARNING)
    t0 = time.perf_counter()
    study.run(n_jobs=args.n_jobs, parallel_backend=args.backend, n_relaunch=1, exp_root=root)
    wall = time.perf_counter() - t0
    sb.close_servers()

    df = inspect_results.load_result_df(study.dir)
    rows, results, differ = [], [], 0
    for _, r in df.reset_index().sort_values(["env.task_name", "env.task_seed"]).iterrows():
        key = (str(r["env.task_name"]), int(r["env.task_seed"]))
        err = r.get("err_msg")
        err = None if err is None or (isinstance(err, float) and err != err) else str(err).splitlines()[0][:120]
        reward = float(r["cum_reward"])
        same = err is None and abs(reward - expected.get(key, float("nan"))) < 1e-9
        differ += not same
        rows.append([key[0], key[1], int(r["n_steps"]), reward, expected.get(key), "yes" if same else "NO",
                     err or ""])
        results.append({"task": key[0], "seed": key[1], "steps": int(r["n_steps"]), "agentlab_reward": reward,
                        "in_process_reward": expected.get(key), "same": same, "err": err})
    print_table(f"AgentLab study {study.name} ({args.agent} plans, {args.backend}, n_jobs={args.n_jobs})",
                ["task", "seed", "steps", "reward (AgentLab)", "reward (in-process)", "same", "error"], rows)
    n = len(results)
    print(f"{n} episodes of {len(bench.env_args_list)} recorded, {differ} differ from in-process; "
          f"study wall {wall:.1f} s ({wall / max(n, 1):.1f} s per episode), plans {t_plans:.1f} s; "
          f"results in {study.dir}")
    print(inspect_results.summarize_study(df).to_string())
    write_json(args.out, "agentlab", {"episodes": results, "n": n, "differ": differ, "wall_s": wall,
                                      "plans_s": t_plans, "agent": args.agent, "backend": args.backend,
                                      "n_jobs": args.n_jobs, "study_dir": str(study.dir)}, argv)
    return 0 if differ == 0 and n == len(bench.env_args_list) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

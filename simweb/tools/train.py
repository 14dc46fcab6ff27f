"""``simweb train``: train the bundled :class:`simweb.learner.LearnedPolicy` with group
rollouts from forks and a policy gradient on group-normalised advantages.

One iteration:

1. draw ``instances`` task instances (a template of ``tasks`` and a seed below
   :data:`TRAIN_SEEDS`; ``simweb eval``'s held-out seeds start at 1000 and are never
   drawn) from the run's generator;
2. pick each instance's start state: with the ``plan`` curriculum, a point of the task's
   oracle plan, ``j`` actions before its end with ``P(j)`` proportional to ``1/sqrt(j)``
   (``j`` = the plan's length: the task's start).
   The oracle only chooses where a group starts (a reverse curriculum: a policy that
   starts from nothing finds no reward to learn from); the policy still acts from its
   observations alone, and is evaluated from the task's start;
3. roll out a group of ``group`` forks of each start state on the pool (local processes or
   Ray; :class:`simweb.rollout.WorkItem` with ``group``), the policy of this iteration
   shipped to the workers;
4. replay each trajectory in this process (checking every state hash it recorded) to get
   each step's candidate features, and ascend ``sum_i sum_t w_it * log p(a_it)`` with
   Adam, where ``w_it`` are :func:`simweb.group.regroup`'s step weights (group-normalised
   advantage over the length normaliser);
5. append a line to ``metrics.jsonl`` and write the checkpoint (weights, Adam moments, the
   generator's state, the iteration), so a killed run resumes from its last iteration and
   ends with the weights an uninterrupted run would have, bit for bit.

Everything the weights depend on is a function of the seed: the instances and start
states (the run's generator), the children's actions (:func:`simweb.group.child_seed`),
the trajectories (byte-identical on every backend), the float operations (numpy in one
process, in a fixed order).
"""
from __future__ import annotations

import functools
import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from ..episodes.episode import FINAL_ACTIONS
from ..episodes.learner import FEATURES, CheckpointError, LearnedPolicy, read_checkpoint, save_checkpoint

__all__ = ["DEFAULT_ITERATIONS", "TRAIN_SEEDS", "TrainConfig", "TrainError", "default_tasks", "plot_curve", "train"]

#: adaptive curriculum: the share of groups at a template's frontier, and the frontier's cap
FRONTIER_SHARE = 0.6
MAX_REACH = 30
CURRICULA = ("adaptive", "plan", "none")
#: instances per portable family that training leaves to ``simweb sim2live`` (its --instances up to this)
SIM2LIVE_HELD_OUT = 20
#: task seeds training draws from: [0, TRAIN_SEEDS); evaluation's held-out seeds are 1000 and up
TRAIN_SEEDS = 1000
METRICS = "metrics.jsonl"

#: templates a small policy can learn on, per app (easy and medium state tasks)
DEFAULT_TASKS: dict[str, list[str]] = {
    "forum": ["forum/upvote_post", "forum/save_post", "forum/mod_lock_post", "forum/mod_pin_post"],
    "cms": ["cms/publish_in_review", "cms/submit_for_review", "cms/archive_post", "cms/approve_comment",
            "cms/spam_comment"],
    "issues": ["issues/mark_all_read"],
    "shopping": ["shopping/add_to_cart", "shopping/remove_from_cart"],
    "booking": ["booking/cancel_free", "booking/cancel_with_fee"],
}


#: ``simweb train``'s default iterations per app: what fits in about 20 minutes on 2
#: loaded cores (forum: 80 iterations took 21 minutes at a load average of 6-11 and gave
#: 0.00 -> 0.84 held out, measured 2026-12-05; docs/training.md)
DEFAULT_ITERATIONS: dict[str, int] = {"forum": 80, "shopping": 60, "issues": 100, "booking": 60, "cms": 60}


class TrainError(ValueError):
    """A training run that cannot start or resume (one line)."""


@dataclass
class TrainConfig:
    """A training run's settings (stored in its checkpoint; a resume must match them)."""

    app: str
    tasks: list[str] = field(default_factory=list)
    iterations: int = 20
    group: int = 16
    instances: int = 6
    seed: int = 0
    lr: float = 0.1
    reward: str = "progress"
    normaliser: str = "constant"
    max_steps: int = 10
    #: the weight of staying clean, added to the advantage *after* the group normalisation
    #: (``clean_bonus * (clean_i - mean clean)``): a group can tell damage from doing nothing,
    #: and the term stays small next to the normalised task reward, so success ranks above
    #: clean (inside the normalisation a small bonus is scaled up to a full-size advantage)
    clean_bonus: float = 0.2
    #: paid on top of the clean progress for a clean success the agent ended with its final
    #: message (the sparse reward's condition): the policy learns to say it is done
    end_bonus: float = 0.5
    curriculum: str = "adaptive"
    #: adaptive curriculum: success rate at a template's frontier that moves it one action earlier
    advance_at: float = 0.5
    world_seed: int = 0
    size: int | None = None

    def same_run(self, other: dict[str, Any]) -> list[str]:
        """The settings that differ from ``other`` (a stored config), iterations aside."""
        mine = asdict(self)
        return [k for k in mine if k != "iterations" and other.get(k) != mine[k]]


def default_tasks(app: str) -> list[str]:
    """The default training templates of ``app``."""
    tasks = DEFAULT_TASKS.get(app)
    if not tasks:
        raise TrainError(f"no default training templates for {app}: give --tasks")
    return list(tasks)


# ----------------------------------------------------------------------------- one iteration

@functools.cache
def sim2live_instances(app: str) -> frozenset[tuple[str, int]]:
    """The (template, seed) instances ``simweb sim2live`` runs for ``app``'s pairs (the
    first :data:`SIM2LIVE_HELD_OUT` of each portable family; they are drawn from seed 0
    up, inside the training range): training never draws them, so the retained gain is
    measured on instances the policy never trained on."""
    from ..live.counterparts import PAIRS, families

    out: set[tuple[str, int]] = set()
    for pair in sorted(PAIRS):
        papp, counterpart = pair.split(":", 1)
        if papp != app:
            continue
        for fam in families(counterpart):
            for n in (SIM2LIVE_HELD_OUT, SIM2LIVE_HELD_OUT // 2, 1):
                try:   # a family with fewer instances in its seed range: as many as it has
                    out |= {(i.sim_task, int(i.sim_seed)) for i in fam.instances(n)}
                    break
                except RuntimeError:
                    continue
    return frozenset(out)


def is_final_action(action: str) -> bool:
    """Whether ``action`` is one that ends an episode (the final message, a refusal)."""
    return action.split("(", 1)[0].strip() in FINAL_ACTIONS


def _starts(env: Any, cfg: TrainConfig, rng: np.random.Generator, reach: dict[str, int]
            ) -> list[tuple[str, int, int, bytes | None, int]]:
    """This iteration's (task, seed, prefix length, start state bytes, j) per instance: the
    group starts ``j`` actions before the end of the oracle plan, after its first ``k``."""
    out: list[tuple[str, int, int, bytes | None, int]] = []
    reserved = sim2live_instances(cfg.app)
    for _ in range(cfg.instances):
        task = cfg.tasks[int(rng.integers(len(cfg.tasks)))]
        seed = int(rng.integers(TRAIN_SEEDS))
        while (task, seed) in reserved:   # a sim2live instance: drawn again (held out for the retained gain)
            seed = int(rng.integers(TRAIN_SEEDS))
        if cfg.curriculum == "none":
            out.append((task, seed, 0, None, 0))
            continue
        env.reset(seed=seed, options={"task": task})
        plan = env.oracle_plan()
        # the plan's site actions: its final message is not a start point (a group started
        # after the last change would learn to say "done" on a page it never changed)
        if plan and is_final_action(plan[-1]):
            plan = plan[:-1]
        n = max(1, len(plan))
        if cfg.curriculum == "plan":
            # j actions before the end, P(j) proportional to 1/sqrt(j): more groups start near
            # the reward, where an untrained policy finds some, and every point is drawn,
            # the task's start (j = len(plan), k = 0) included
            p = 1.0 / np.sqrt(np.arange(1, n + 1))
            j = 1 + int(np.searchsorted(np.cumsum(p / p.sum()), rng.random(), side="right"))
        else:
            # adaptive: most groups at the template's frontier (``reach``), the rest
            # uniformly nearer the end (so what was learned there is not forgotten)
            r = reach.get(task, 1)
            u = rng.random()
            j = r if u < FRONTIER_SHARE or r <= 1 else 1 + int(rng.integers(r - 1))
        k = max(0, n - min(j, n))
        # never start right after a fill: the policy's memory of filling a field is what
        # points it at the button that submits it, and a fork of the oracle's state gives
        # it no such memory (a start there is harder than the same page reached from the
        # task's start, and the frontier stalls on it); start before the fill instead
        while k > 0 and plan[k - 1].lstrip().startswith("fill("):
            k -= 1
        j = n - k   # the start's true distance from the end (a frontier past the plan: its start)
        for a in plan[:k]:
            env.step(a)
        out.append((task, seed, k, orjson.dumps(env.snapshot()) if k else None, j))
    return out


def advance_reach(reach: dict[str, int], outcomes: list[tuple[str, int, float]], threshold: float,
                  limit: int = MAX_REACH) -> dict[str, int]:
    """The curriculum's frontiers after an iteration: a template whose groups at its
    frontier succeeded at least ``threshold`` of the time (clean success, ended by the
    agent's message) moves its start one action earlier. ``outcomes``: (task, j, success
    rate of the group) for every group."""
    new = dict(reach)
    for task in sorted({t for t, _j, _s in outcomes}):
        r = reach.get(task, 1)
        at = [s for t, j, s in outcomes if t == task and j >= r]
        if at and sum(at) / len(at) >= threshold:
            new[task] = min(limit, r + 1)
    return new


def _replay(env: Any, policy: LearnedPolicy, traj: Any, start: bytes | None, task: str, seed: int,
            weights: list[float]) -> tuple[np.ndarray, float]:
    """The gradient of ``sum_t w_t log p(a_t)`` over one trajectory, and ``-sum_t w_t log p``,
    from the observations it saw (the env replays its actions; every state hash is checked)."""
    if start is None:
        env.reset(seed=seed, options={"task": task})
    else:
        env.restore(orjson.loads(start))
    if env.state_hash() != traj.header["start_hash"]:
        raise RuntimeError("replay: the start state differs from the one the worker rolled out from")
    obs, _ = env.observe()
    policy.reset(env, int(traj.header.get("policy_seed", 0)))
    grad = np.zeros(len(FEATURES), dtype=np.float64)
    loss = 0.0
    for step, w in zip(traj.steps, weights):
        acts, effects, x, probs = policy.scores(obs)
        try:
            i = acts.index(step["action"])
        except ValueError:
            raise RuntimeError(f"replay: action {step['action']!r} is not a candidate of the observation") from None
        grad += w * (x[i] - probs @ x)
        loss -= w * math.log(max(float(probs[i]), 1e-300))
        policy.remember(effects[i])
        obs, *_ = env.step(step["action"])
        if env.state_hash() != step["state_hash"]:
            raise RuntimeError("replay: a step's state differs from the worker's (nondeterminism)")
    return grad, loss


@dataclass
class Adam:
    """Adam's moments (stored in the checkpoint so that a resume continues them)."""

    m: np.ndarray
    v: np.ndarray
    t: int = 0

    def step(self, w: np.ndarray, grad: np.ndarray, lr: float, b1: float = 0.9, b2: float = 0.999,
             eps: float = 1e-8) -> np.ndarray:
        """Weights after one ascent step on ``grad``."""
        self.t += 1
        self.m = b1 * self.m + (1 - b1) * grad
        self.v = b2 * self.v + (1 - b2) * grad * grad
        mhat = self.m / (1 - b1 ** self.t)
        vhat = self.v / (1 - b2 ** self.t)
        return w + lr * mhat / (np.sqrt(vhat) + eps)


# ----------------------------------------------------------------------------- rewards

def ended_by_message(traj: Any) -> bool:
    """Whether the trajectory's last action is the agent's final message (not a refusal)."""
    return bool(traj.steps) and str(traj.steps[-1].get("action", "")).startswith("send_msg_to_user(")


def group_weights(trajs: list[Any], cfg: TrainConfig) -> tuple[list[float], list[list[float]], list[float]]:
    """A group's task rewards, per-step weights and wins (clean success ended by the
    agent's message). The task reward is the group reward (clean progress, or clean
    success) plus ``end_bonus`` for a win; it is group-normalised; the clean term is added
    after the normalisation (see :class:`TrainConfig`), so it never outweighs a success;
    in a group whose task rewards are all equal it only charges the damaging children."""
    from ..episodes.group import advantages, step_weights

    wins = [float(bool(t.final.get("success")) and bool(t.final.get("clean")) and ended_by_message(t))
            for t in trajs]
    rewards = [float(t.header["group_reward"]) + cfg.end_bonus * w for t, w in zip(trajs, wins)]
    advs = advantages(rewards)
    cleans = [float(bool(t.final.get("clean", True))) for t in trajs]
    mean_clean = sum(cleans) / len(cleans)
    if max(rewards) > min(rewards):
        advs = [a + cfg.clean_bonus * (c - mean_clean) for a, c in zip(advs, cleans)]
    else:
        # in a group where nothing succeeded only the damage is charged (the clean children
        # get 0): the symmetric term alone would teach "do nothing, say done" before any
        # success is found (measured: forum collapsed to the final message in 20
        # iterations), and without any charge forum learned to press buttons on wrong
        # posts (its clean fell from 0.85 to 0.45 in 30 iterations, measured)
        advs = [a + cfg.clean_bonus * min(0.0, c - mean_clean) for a, c in zip(advs, cleans)]
    budget = max((int(t.header.get("budget") or 0) for t in trajs), default=0) or None
    weights = step_weights(advs, [len(t.steps) for t in trajs], cfg.normaliser,
                           constant=budget if cfg.normaliser == "constant" else None)
    return rewards, weights, wins


# ----------------------------------------------------------------------------- the run

def _rng_state(rng: np.random.Generator) -> dict[str, Any]:
    return dict(rng.bit_generator.state)


def _load_rng(state: dict[str, Any]) -> np.random.Generator:
    bg = np.random.PCG64()
    bg.state = state  # type: ignore[assignment]
    return np.random.Generator(bg)


def _resume(out: Path, cfg: TrainConfig
            ) -> tuple[LearnedPolicy, Adam, np.random.Generator, int, dict[str, int]] | None:
    """The state of a run in ``out`` to continue (None: a new run)."""
    if not (out / "policy.json").exists():
        return None
    try:
        doc = read_checkpoint(out)
    except CheckpointError as exc:
        raise TrainError(f"cannot resume from {out}: {exc}") from None
    stored = doc.get("train") or {}
    differ = cfg.same_run(stored.get("config") or {})
    if differ:
        raise TrainError(f"{out} holds a run with other settings ({', '.join(differ)}): use another --out "
                         f"or the same settings to resume it")
    policy = LearnedPolicy(doc["weights"], app=cfg.app, version=int(doc.get("version") or 0))
    adam = Adam(np.asarray(stored["adam_m"], dtype=np.float64), np.asarray(stored["adam_v"], dtype=np.float64),
                int(stored["adam_t"]))
    reach = {str(k): int(v) for k, v in (stored.get("reach") or {}).items()}
    return policy, adam, _load_rng(stored["rng"]), int(stored["iteration"]), reach


def _checkpoint(out: Path, policy: LearnedPolicy, adam: Adam, rng: np.random.Generator, cfg: TrainConfig,
                iteration: int, reach: dict[str, int]) -> None:
    save_checkpoint(out, policy, {"train": {
        "config": asdict(cfg), "iteration": iteration, "rng": _rng_state(rng), "reach": dict(sorted(reach.items())),
        "adam_m": [float(v) for v in adam.m], "adam_v": [float(v) for v in adam.v], "adam_t": adam.t}})


def _metric_lines(out: Path, upto: int) -> list[bytes]:
    """metrics.jsonl's lines of iterations below ``upto`` (a resumed run drops the rest)."""
    path = out / METRICS
    if not path.exists():
        return []
    keep = []
    for line in path.read_bytes().splitlines():
        try:
            row = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(row, dict) and isinstance(row.get("iteration"), int) and row["iteration"] < upto:
            keep.append(line)
    return keep


def train(cfg: TrainConfig, out: str | Path, *, backend: str = "local", workers: int = 1,
          address: str | None = None, on_iteration: Callable[[dict[str, Any]], None] | None = None,
          on_rollout: Callable[[], None] | None = None, stop_after: int | None = None,
          env: Any = None) -> LearnedPolicy:
    """Train (or resume) the run in ``out``; returns the policy at the end. ``stop_after``:
    stop after that many iterations of this call (a test's interruption)."""
    from ..episodes.env import SimEnv
    from ..episodes.rollout import WorkItem, make_pool, trajectory_from_bytes, write_atomic

    if not cfg.tasks:
        cfg.tasks = default_tasks(cfg.app)
    if cfg.group < 2:
        raise TrainError(f"--group must be at least 2 (advantages compare the children), not {cfg.group}")
    if cfg.iterations < 0 or cfg.instances < 1:
        raise TrainError("--iterations must be >= 0 and --instances >= 1")
    if cfg.curriculum not in CURRICULA:
        raise TrainError(f"curriculum must be one of {', '.join(CURRICULA)}, not {cfg.curriculum!r}")
    out = Path(out)
    env = env or SimEnv(cfg.app, cfg.world_seed, size=cfg.size)
    for t in cfg.tasks:
        env.app_task(t)   # unknown or other-app templates: TaskError, one line
    state = _resume(out, cfg)
    if state is None:
        policy = LearnedPolicy(app=cfg.app)
        adam = Adam(np.zeros(len(FEATURES)), np.zeros(len(FEATURES)))
        rng = np.random.Generator(np.random.PCG64(cfg.seed))
        start_it = 0
        reach: dict[str, int] = {}
        _checkpoint(out / "init", policy, adam, rng, cfg, 0, reach)
        _checkpoint(out, policy, adam, rng, cfg, 0, reach)
    else:
        policy, adam, rng, start_it, reach = state
    lines = _metric_lines(out, start_it)
    write_atomic(str(out / METRICS), lines)   # write_atomic ends each chunk with a newline
    elapsed = 0.0
    for line in lines:
        elapsed = max(elapsed, float(orjson.loads(line).get("elapsed", 0.0)))
    done_now = 0
    with make_pool(backend, workers, address) as pool:
        for it in range(start_it, cfg.iterations):
            if stop_after is not None and done_now >= stop_after:
                break
            t0 = time.perf_counter()
            starts = _starts(env, cfg, rng, reach)
            keep = it % TRAJECTORIES_EVERY == 0 or it == cfg.iterations - 1   # this iteration's groups are kept
            items = [WorkItem(cfg.app, task, seed, policy_version=it, group=cfg.group,
                              group_seed=cfg.seed * 1_000_003 + it * 1009 + j, max_steps=cfg.max_steps,
                              world_seed=cfg.world_seed, size=cfg.size, reward=cfg.reward,
                              normaliser=cfg.normaliser, state=state_bytes, lean=not keep)
                     for j, (task, seed, _k, state_bytes, _j) in enumerate(starts)]
            policy.version = it
            results = pool.run(items, policy, on_done=(lambda i, o: on_rollout()) if on_rollout else None)
            grad = np.zeros(len(FEATURES), dtype=np.float64)
            loss = 0.0
            succ = clean = prog = rew = steps = 0.0
            n = 0
            from_start = [0.0, 0]
            ended = 0.0
            outcomes: list[tuple[str, int, float]] = []
            for g_index, ((task, seed, k, state_bytes, j), blobs) in enumerate(zip(starts, results)):
                trajs = [trajectory_from_bytes(b) for b in blobs]
                rewards, weights, wins = group_weights(trajs, cfg)
                outcomes.append((task, j, sum(wins) / len(wins)))
                if keep:
                    from ..episodes.group import advantages
                    _keep_group(out, it, g_index, trajs, state_bytes, advantages(rewards))
                for traj, r, w in zip(trajs, rewards, weights):
                    v = traj.final
                    ended += float(ended_by_message(traj))
                    succ += float(bool(v.get("success")) and bool(v.get("clean")))
                    clean += float(bool(v.get("clean", True)))
                    prog += float(v.get("progress", 0.0))
                    rew += r
                    steps += len(traj.steps)
                    n += 1
                    if k == 0:
                        from_start[0] += float(bool(v.get("success")) and bool(v.get("clean")))
                        from_start[1] += 1
                    if any(w):
                        gi, li = _replay(env, policy, traj, state_bytes, task, seed, w)
                        grad += gi
                        loss += li
            if cfg.curriculum == "adaptive":
                reach = advance_reach(reach, outcomes, cfg.advance_at)
            grad /= len(starts)
            loss /= len(starts)
            policy.weights = adam.step(policy.weights, grad, cfg.lr)
            policy.version = it + 1
            wall = time.perf_counter() - t0
            elapsed += wall
            row = {"iteration": it, "success": succ / n, "clean": clean / n, "progress": prog / n,
                   "reward": rew / n, "loss": loss, "steps": steps / n, "trajectories": n,
                   "success_from_start": from_start[0] / from_start[1] if from_start[1] else None,
                   "ended_by_message": ended / n, "reach": dict(sorted(reach.items())),
                   "grad_norm": float(np.linalg.norm(grad)), "wall": wall, "elapsed": elapsed}
            lines.append(orjson.dumps(row))
            write_atomic(str(out / METRICS), lines)
            _checkpoint(out, policy, adam, rng, cfg, it + 1, reach)
            done_now += 1
            if on_iteration:
                on_iteration(row)
    return policy


#: every how many iterations the groups' trajectories are kept (and the last iteration's)
TRAJECTORIES_EVERY = 10


def _keep_group(out: Path, it: int, j: int, trajs: list[Any], start: bytes | None, advs: list[float]) -> None:
    """DIR/trajectories/iter-NNNN/group-JJ/: one iteration's group, for `simweb view`."""
    from ..episodes.trajectory import write_group

    write_group(out / "trajectories" / f"iter-{it:04d}" / f"group-{j:02d}", trajs,
                [f"child-{c:03d}.jsonl" for c in range(len(trajs))],
                parent_state=orjson.loads(start) if start is not None else None,
                extra=[{"advantage": a, "iteration": it} for a in advs])


# ----------------------------------------------------------------------------- the curve

def read_metrics(out: str | Path) -> list[dict[str, Any]]:
    path = Path(out) / METRICS
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()] if path.exists() else []


def plot_curve(out: str | Path, dest: str | Path | None = None, title: str | None = None) -> Path:
    """DIR/curve.png from DIR/metrics.jsonl (matplotlib, imported here: the ``train`` extra)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise TrainError("plotting the curve needs matplotlib: pip install 'simweb[train]'") from None
    rows = read_metrics(out)
    dest = Path(dest) if dest else Path(out) / "curve.png"
    its = [r["iteration"] + 1 for r in rows]
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    for key, label in (("success", "clean success"), ("progress", "progress"), ("reward", "group reward")):
        ax[0].plot(its, [r[key] for r in rows], label=label)
    fs = [(i, r["success_from_start"]) for i, r in zip(its, rows) if r.get("success_from_start") is not None]
    if fs:
        ax[0].plot([a for a, _ in fs], [b for _, b in fs], ".", label="success from the task start")
    ax[0].set_xlabel("iteration")
    ax[0].set_ylim(-0.02, 1.02)
    ax[0].legend(fontsize=7)
    import textwrap

    fig.suptitle("\n".join(textwrap.wrap(title or "training rollouts", 110)), fontsize=7)
    ax[1].plot(its, [r["steps"] for r in rows], label="steps per trajectory")
    ax[1].plot(its, [r["clean"] for r in rows], label="clean")
    ax[1].set_xlabel("iteration")
    ax[1].legend(fontsize=7)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    dest.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(dest, dpi=110)
    plt.close(fig)
    return dest

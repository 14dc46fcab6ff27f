"""Rollouts: run an agent in an env and record a trajectory (:mod:`simweb.episodes.run`,
re-exported here); a local process pool.

A trajectory file is JSONL in the schema of :mod:`simweb.trajectory`: a header line (app,
world, task, goal, seed, agent, start state hash and observation, fork parentage), then
one line per step: the action, its error, the observation after it (AX-tree text, URL,
title), a digest of it, the state hash after the step, the reward, the verdict with
every check and the site's error message.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import orjson

from ..agents import make_agent
from .run import Trajectory, obs_digest, run_episode  # noqa: F401  (obs_digest: simweb.rollout's before run.py)
from .trajectory import OutputError, write_atomic  # noqa: F401  (simweb.rollout's before trajectory.py)

# ----------------------------------------------------------------------------- pool

@dataclass(frozen=True)
class Job:
    app: str
    world_seed: int
    size: int | None
    task: str
    seed: int
    agent: str
    fork_at: int = 0          # with fork_branches: fork the oracle's state at this step
    fork_branches: int = 0
    fork_steps: int = 0
    #: a folder to write the trajectories to (``simweb demo --out``): APP/TASK/seed-N-AGENT.jsonl,
    #: the branches under APP/TASK/seed-N-fork/, their parent the oracle's trajectory
    out: str | None = None
    #: the site variant (simweb.variants; 0: today's site)
    variant: int = 0


def run_job(job: Job) -> dict[str, Any]:
    """One unit of pool work, returning a small summary (picklable)."""
    from .env import SimEnv

    env = SimEnv(job.app, job.world_seed, size=job.size, variant=job.variant)
    agent = make_agent(job.agent, job.seed)
    traj = run_episode(env, agent, task=job.task, seed=job.seed)
    folder = os.path.join(job.out, job.app, job.task.replace("/", "__")) if job.out else None
    if folder:
        from .trajectory import write_trajectory

        os.makedirs(folder, exist_ok=True)
        write_trajectory(os.path.join(folder, f"seed-{job.seed}-{job.agent}.jsonl"), traj)
    out: dict[str, Any] = {"task": job.task, "seed": job.seed, "agent": job.agent, "steps": len(traj.steps),
           "seconds": traj.seconds, "difficulty": env.task.difficulty if env.task else "",
           "success": bool(traj.final.get("success")), "progress": float(traj.final.get("progress", 0.0)),
           "clean": bool(traj.final.get("clean", True)), "branches": [], "variant": job.variant}
    if job.fork_branches:
        # Replay the oracle to the fork point, then branch random rollouts from there.
        env2 = SimEnv(job.app, job.world_seed, size=job.size, variant=job.variant)
        env2.reset(seed=job.seed, options={"task": job.task})
        for a in env2.oracle_plan()[: job.fork_at]:
            env2.step(a)
        parent_hash = env2.state_hash()
        t0 = time.perf_counter()
        n_steps = 0
        branches = []
        for b in range(job.fork_branches):
            child = env2.fork()
            branch_seed = job.seed * 1000 + b   # each branch its own choices
            t = run_episode(child, make_agent("random", branch_seed), task=None, seed=job.seed,
                            max_steps=job.fork_steps, reset=False, policy_seed=branch_seed)
            n_steps += len(t.steps)
            out["branches"].append(t.final.get("progress", 0.0))
            branches.append(t)
        out["fork_seconds"] = time.perf_counter() - t0
        if folder:
            from .trajectory import write_group

            oracle = f"../seed-{job.seed}-{job.agent}.jsonl"
            for t in branches:
                t.header["parent"]["trajectory"] = oracle
            write_group(os.path.join(folder, f"seed-{job.seed}-fork"), branches,
                        [f"branch-{b:04d}.jsonl" for b in range(len(branches))],
                        extra=[{"branch": b} for b in range(len(branches))])
        out["fork_steps"] = n_steps
        out["parent_intact"] = env2.state_hash() == parent_hash
    return out


def run_pool(jobs: list[Job], workers: int, on_done: Callable[[dict], None] | None = None) -> list[dict]:
    """Run jobs on a local process pool (workers=1 runs in this process). Results come
    back in job order, whatever order they finish in."""
    results: list[dict | None] = [None] * len(jobs)
    if workers <= 1:
        for i, j in enumerate(jobs):
            result = run_job(j)
            results[i] = result
            if on_done:
                on_done(result)
        return results  # type: ignore[return-value]
    import multiprocessing as mp

    ctx = mp.get_context("fork") if hasattr(os, "fork") else mp.get_context()
    with ctx.Pool(workers) as pool:
        for i, r in pool.imap_unordered(_indexed, list(enumerate(jobs))):
            results[i] = r
            if on_done:
                on_done(r)
    return results  # type: ignore[return-value]


def _indexed(item: tuple[int, Job]) -> tuple[int, dict]:
    i, job = item
    return i, run_job(job)


# ----------------------------------------------------------------------------- work items and pools
#
# A job is a list of work items; a worker (a process of the local pool, or a Ray actor)
# keeps one env per (app, world) it has been sent, so a world is opened once per worker,
# never per episode, and one policy per version. A work item comes back as trajectories
# (their JSONL bytes: what the same item gives is the same bytes on every backend).

class PoolError(RuntimeError):
    """A pool that cannot run (no Ray, a Ray address that does not answer, workers that
    keep dying): one line."""


@dataclass(frozen=True)
class WorkItem:
    """One unit of rollout work: (task, seed, policy version).

    ``group`` 0 is one rollout from ``reset(seed, task)`` (no task: one drawn from the
    env's task distribution at ``seed``); ``group`` N >= 1 resets once and rolls out a
    group of N forks of that start (:func:`simweb.group.rollout_group`, with
    ``group_seed``, ``reward``, ``normaliser``), whose rewards and advantages go in each
    trajectory's header."""

    app: str
    task: str | None
    seed: int
    policy_version: int = 0
    group: int = 0
    group_seed: int = 0
    max_steps: int | None = None
    world_seed: int = 0
    size: int | None = None
    reward: str = "outcome"
    normaliser: str = "constant"
    #: a group from a saved state (its JSON bytes) instead of the start of (task, seed)
    state: bytes | None = None
    #: the index of this part's first child (a group split over workers)
    first_child: int = 0
    #: record observations without their AX-tree text (trajectories nobody will view:
    #: a learner's groups between the iterations it keeps; most of a step line's bytes)
    lean: bool = False
    #: the site variant the episode runs on (simweb.runtime.variants; 0: today's site)
    variant: int = 0


def trajectory_bytes(traj: Trajectory) -> bytes:
    """A trajectory as the bytes of its JSONL file (without the final newline)."""
    return b"\n".join(traj.lines())


def trajectory_from_bytes(data: bytes) -> Trajectory:
    """The inverse of :func:`trajectory_bytes`."""
    lines = [orjson.loads(line) for line in data.split(b"\n") if line]
    return Trajectory(lines[0], lines[1:])


# A batch crosses the process boundary in compact form both ways: out, the items as plain
# tuples of their fields (a tuple pickles ~9x faster than the dataclass, whose pickle
# carries every field's name); back, one bytes blob per batch (:func:`pack_results`),
# which the worker builds with one join and the driver only slices. No per-item Python
# object is pickled either way, and the driver never parses a trajectory.

_ITEM_FIELDS: tuple[str, ...] = ()


def _item_fields() -> tuple[str, ...]:
    global _ITEM_FIELDS
    if not _ITEM_FIELDS:
        import dataclasses

        _ITEM_FIELDS = tuple(f.name for f in dataclasses.fields(WorkItem))
    return _ITEM_FIELDS


def encode_batch(chunk: list[tuple[int, WorkItem]]) -> tuple[list[int], list[tuple[Any, ...]]]:
    """A batch of (index, item) as (indices, field tuples): what the pools send."""
    names = _item_fields()
    return [i for i, _ in chunk], [tuple(getattr(it, n) for n in names) for _, it in chunk]


def decode_batch(batch: tuple[list[int], list[tuple[Any, ...]]]) -> list[tuple[int, WorkItem]]:
    """The inverse of :func:`encode_batch`."""
    indices, fields = batch
    return [(i, WorkItem(*f)) for i, f in zip(indices, fields)]


def pack_results(done: list[tuple[int, list[bytes]]]) -> bytes:
    """A batch's results as one blob: a little-endian int64 header (its length in bytes,
    then per item its index, its number of trajectories and their lengths), then every
    trajectory's bytes back to back."""
    head: list[int] = []
    for i, outs in done:
        head.append(i)
        head.append(len(outs))
        head.extend(len(b) for b in outs)
    return b"".join([struct.pack(f"<q{len(head)}q", 8 * len(head), *head), *(b for _, outs in done for b in outs)])


def unpack_results(blob: bytes) -> list[tuple[int, list[bytes]]]:
    """The inverse of :func:`pack_results` (each trajectory one slice of the blob)."""
    (hlen,) = struct.unpack_from("<q", blob, 0)
    head = struct.unpack_from(f"<{hlen // 8}q", blob, 8)
    view = memoryview(blob)
    pos, k, out = 8 + hlen, 0, []
    while k < len(head):
        i, n = head[k], head[k + 1]
        outs = []
        for ln in head[k + 2:k + 2 + n]:
            outs.append(bytes(view[pos:pos + ln]))
            pos += ln
        out.append((i, outs))
        k += 2 + n
    if pos != len(blob):
        raise ValueError(f"a batch's results are {len(blob)} bytes, their header accounts for {pos}")
    return out


class RolloutWorker:
    """What runs work items in one process (the local pool's workers, a Ray actor):
    envs by (app, world seed, size, variant), opened on first use, and policies by version."""

    def __init__(self) -> None:
        self.envs: dict[tuple[str, int, int | None, int], Any] = {}
        self.policies: dict[tuple[int, str], Any] = {}
        self.items_done = 0
        self._fetched: dict[str, bytes] = {}

    def env(self, item: WorkItem) -> Any:
        key = (item.app, item.world_seed, item.size, item.variant)
        env = self.envs.get(key)
        if env is None:
            from .env import SimEnv

            env = self.envs[key] = SimEnv(item.app, item.world_seed, size=item.size, variant=item.variant)
        return env

    def policy(self, version: int, blob: bytes) -> Any:
        """The policy shipped as ``blob`` (a pickle), unpickled once per (version, content)."""
        import pickle

        from .policy import load_policy

        key = (version, hashlib.sha256(blob).hexdigest())
        pol = self.policies.get(key)
        if pol is None:
            if len(self.policies) > 8:   # a learner sends a new version each iteration: keep a few
                self.policies.pop(next(iter(self.policies)))
            pol = self.policies[key] = load_policy(pickle.loads(blob))
        return pol

    def run_item(self, item: WorkItem, policy: Any) -> list[bytes]:
        """One work item's trajectories, as bytes."""
        env = self.env(item)
        # the policy's own version when it has one (it is what acted), else the item's
        version = getattr(policy, "version", None)
        version = item.policy_version if version is None else version
        if item.group:
            from .group import rollout_group

            if item.state is not None:
                env.restore(orjson.loads(item.state))
            else:
                env.reset(seed=item.seed, options={"task": item.task} if item.task else None)
            g = rollout_group(env, policy, item.group, seed=item.group_seed, max_steps=item.max_steps,
                              reward=item.reward, normaliser=item.normaliser, first_child=item.first_child,
                              lean=item.lean)
            out = []
            for t, r, a in zip(g.trajectories, g.rewards, g.advantages):
                t.header.update(group_reward=r, advantage=a, policy_version=version)
                out.append(trajectory_bytes(t))
            self.items_done += 1
            return out
        traj = run_episode(env, policy, task=item.task, seed=item.seed, max_steps=item.max_steps, lean=item.lean)
        traj.header["policy_version"] = version
        self.items_done += 1
        return [trajectory_bytes(traj)]

    def run(self, chunk: list[tuple[int, WorkItem]], policy_blob: list[bytes]) -> list[tuple[int, list[bytes]]]:
        """A chunk of (index, item) -> (index, trajectories). ``policy_blob`` is a one-element
        list (so Ray hands the bytes over as they are)."""
        blob = policy_blob[0]
        if not isinstance(blob, bytes):   # a Ray object reference (left unresolved in the list)
            key = blob.hex()
            if key not in self._fetched:
                import ray

                self._fetched = {key: ray.get(blob)}
            blob = self._fetched[key]
        policies: dict[int, Any] = {}   # looked up once per batch, not hashed again per item
        out = []
        for i, item in chunk:
            pol = policies.get(item.policy_version)
            if pol is None:
                pol = policies[item.policy_version] = self.policy(item.policy_version, blob)
            out.append((i, self.run_item(item, pol)))
        return out

    def run_packed(self, batch: tuple[list[int], list[tuple[Any, ...]]], policy_blob: list[Any]) -> bytes:
        """:meth:`run` on a batch as :func:`encode_batch` gives it, its results as
        :func:`pack_results` gives them (what both pools send and receive)."""
        return pack_results(self.run(decode_batch(batch), policy_blob))

    def ping(self) -> int:
        return os.getpid()


def _policy_blob(policy: Any) -> bytes:
    import pickle

    try:
        return pickle.dumps(policy, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as exc:
        raise PoolError(f"the policy cannot be sent to the workers (pickling failed: {type(exc).__name__}: "
                        f"{exc}); give an import path or a picklable policy") from None


def _spread(n: int) -> list[int]:
    """A fixed permutation of ``range(n)`` whose every run of consecutive positions takes
    items from all over the list: position ``k`` holds item ``k * s mod n`` for a stride
    ``s`` near ``0.618 n`` coprime to ``n`` (items come grouped by template, and templates
    differ in length: every batch cut from this order gets a like mix). Integer arithmetic
    only, so the same ``n`` gives the same order everywhere."""
    if n < 3:
        return list(range(n))
    s = max(1, (n * 618034) // 1000000)
    while math.gcd(s, n) != 1:
        s += 1
    return [(k * s) % n for k in range(n)]


def _chunks(items: list[WorkItem], workers: int, most: int = 64, least: int = 4
            ) -> list[list[tuple[int, WorkItem]]]:
    """Items in batches, one dispatch each, largest first (guided self-scheduling): each
    batch takes a ``1 / (workers + 1)`` share of what is left, within ``least`` and
    ``most`` items, and the workers pull the next batch when they are done with one.

    A dispatch costs CPU outside the workers (pickling the call, waking a worker, reading
    the results back; on Ray also raylet's and GCS's share, 1-4 ms a dispatch on this
    2-core machine) that on a machine with as many workers as cores is taken from the
    workers themselves: large batches keep it small beside the rollouts, and ``most``
    bounds what a lost worker costs and how long progress goes unreported. Equal batches
    handed out in advance leave the workers finishing apart by up to a whole batch
    (another process takes a core for a moment, one batch has longer items): on 2 workers
    the first done idled while the other ran its last batch, 6-15% of the actors' time on
    the short-trajectory apps (benchmarks/bench_pool_scale.py). With batches that shrink
    towards the end, pulled as workers free up, they finish within a batch of ``least``
    items of each other. The share (a third of what is left at 2 workers, against a
    quarter before) and the floor of 4 (against 2) cut the dispatches of a 200-330 item
    round at 2 workers from 15-17 to 10-12, for a last batch of at most 4 items (16-60 ms
    of work). Each batch is a run of :func:`_spread`'s order, so it mixes the templates.
    Results are keyed by item index, so the split never changes what comes back."""
    order = _spread(len(items))
    out: list[list[tuple[int, WorkItem]]] = []
    k = 0
    while k < len(order):
        left = len(order) - k
        size = min(left, max(least, min(most, -(-left // (workers + 1)))))
        out.append([(i, items[i]) for i in order[k:k + size]])
        k += size
    return out


_LOCAL_WORKER: RolloutWorker | None = None


def _local_chunk(args: tuple[tuple[list[int], list[tuple[Any, ...]]], bytes]) -> bytes:
    global _LOCAL_WORKER
    if _LOCAL_WORKER is None:
        _LOCAL_WORKER = RolloutWorker()
    batch, blob = args
    return _LOCAL_WORKER.run_packed(batch, [blob])


class LocalPool:
    """Work items on local processes (``workers`` 1: in this process). Results come back
    in item order, whatever order they finish in. Reusable across calls (a learner's
    iterations): the processes and their open worlds stay until :meth:`close`.

    Each worker process has a pipe of its own (not one result queue shared by all, as in
    ``concurrent.futures``): a worker killed while it writes its results (SIGKILL, out of
    memory) can then only cut its own pipe short, which reads as end-of-file, never leave
    a lock held or half a message in a channel that the others write to (with the shared
    queue the pool waited forever). Its batch goes again to a new process (results are
    keyed by item: nothing lost, nothing twice), at most ``4 x workers`` times a run."""

    backend = "local"

    def __init__(self, workers: int = 1, *, processes: bool | None = None):
        if workers < 1:
            raise PoolError(f"workers must be at least 1, not {workers}")
        self.workers = workers
        #: run in worker processes (default: unless there is one worker)
        self.processes = workers > 1 if processes is None else processes
        self.restarts = 0
        self._procs: list[_LocalProcess] = []
        self._inline: RolloutWorker | None = None

    def pids(self) -> list[int]:
        """The worker processes' ids (none before the first run, or with one worker)."""
        return [p.pid for p in self._procs]

    def run(self, items: list[WorkItem], policy: Any, on_done: Callable[[int, list[bytes]], None] | None = None
            ) -> list[list[bytes]]:
        blob = _policy_blob(policy)
        results: list[list[bytes] | None] = [None] * len(items)
        if not self.processes:
            worker = self._inline = self._inline or RolloutWorker()
            for i, item in enumerate(items):
                results[i] = out = worker.run([(i, item)], [blob])[0][1]
                if on_done:
                    on_done(i, out)
            return results  # type: ignore[return-value]
        from multiprocessing.connection import wait

        todo = _chunks(items, self.workers)
        todo.reverse()   # popped from the end: dispatched in order
        while len(self._procs) < self.workers:
            self._procs.append(_LocalProcess())
        while True:
            for proc in self._procs:
                if proc.chunk is None and todo:
                    proc.send(todo.pop(), blob)
            busy = [p for p in self._procs if p.chunk is not None]   # none: todo is empty too
            if not busy:
                return results  # type: ignore[return-value]
            ready = set(wait([h for p in busy for h in (p.conn, p.sentinel)]))
            for proc in busy:   # in the pool's order, never the order of object ids
                if proc.conn not in ready and proc.sentinel not in ready:
                    continue
                done = proc.receive()
                if done is None:   # died (killed, out of memory): its batch goes again
                    todo.append(proc.chunk or [])
                    self._replace(proc)
                    continue
                for i, out in done:
                    if results[i] is None:
                        results[i] = out
                        if on_done:
                            on_done(i, out)

    def _replace(self, dead: _LocalProcess) -> None:
        dead.stop()
        self.restarts += 1
        if self.restarts > 4 * self.workers:
            self.close()
            raise PoolError(f"local workers died {self.restarts} times in one run: giving up")
        self._procs[self._procs.index(dead)] = _LocalProcess()

    def close(self) -> None:
        for proc in self._procs:
            proc.stop()
        self._procs = []

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _LocalProcess:
    """One worker process of :class:`LocalPool` and the pipe it alone writes to."""

    def __init__(self) -> None:
        import multiprocessing as mp

        ctx = mp.get_context("fork") if hasattr(os, "fork") else mp.get_context()
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_serve_local, args=(child,), daemon=True)
        self.process.start()
        child.close()   # the parent's copy closed: the worker's death reads as end-of-file
        self.pid: int = self.process.pid or 0
        self.sentinel = self.process.sentinel
        #: the batch in hand (None: idle)
        self.chunk: list[tuple[int, WorkItem]] | None = None

    def send(self, chunk: list[tuple[int, WorkItem]], blob: bytes) -> None:
        self.chunk = chunk
        try:
            self.conn.send((encode_batch(chunk), blob))
        except OSError:   # already dead: receive() reports it
            pass

    def receive(self) -> list[tuple[int, list[bytes]]] | None:
        """The batch's results, or None if the process died before it sent them whole
        (called when its pipe or its exit is ready, so it never waits)."""
        try:
            if not self.conn.poll():   # exited with nothing written
                return None
            blob = self.conn.recv_bytes()   # one blob per batch, never unpickled
        except (EOFError, OSError):   # exited part-way through writing
            return None
        self.chunk = None
        return unpack_results(blob)

    def stop(self) -> None:
        try:
            self.conn.send(None)
        except OSError:
            pass
        self.process.join(timeout=5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join()
        self.conn.close()


def _serve_local(conn: Any) -> None:
    """A worker process's loop: batches in, results out, until told to stop, or until
    the process that started it is gone. Its pipe alone cannot tell that: forked workers
    inherit copies of the parent's ends of every pipe open at the fork (their own
    included), so a parent killed outright never reads as end-of-file, and the workers
    were left waiting for ever. While idle it looks at its parent once a second; a batch
    still wakes it at once."""
    parent = os.getppid()
    while True:
        try:
            while not conn.poll(1.0):
                if os.getppid() != parent:
                    return
            msg = conn.recv()
        except (EOFError, OSError):
            return
        if msg is None:
            return
        conn.send_bytes(_local_chunk(msg))


def _check_address(address: str, timeout: float) -> None:
    """Refuse at once a HOST:PORT where nothing answers (Ray itself would wait long)."""
    import socket

    host, _, port = address.rpartition(":")
    if address.startswith("ray://"):
        host, _, port = address[len("ray://"):].rpartition(":")
    if not host or not port.isdigit():
        raise PoolError(f"bad Ray address {address!r}: use auto or HOST:PORT")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise PoolError(f"no Ray cluster answers at {address} ({exc.strerror or exc})") from None


def start_local_ray(num_cpus: int, env_vars: dict[str, str] | None = None) -> None:
    """Start a Ray on this machine for a pool's actors (``num_cpus`` logical CPUs).

    Ray runs its workers at nice 15 by default, so that its own daemons and the driver
    stay responsive. A rollout pool's actors *are* the work: at nice 15 they yield the
    core to every other process on the machine (another user's job, a test run, the
    driver's own bookkeeping), and Ray's throughput and scaling efficiency then measured
    the machine's other load rather than the pool (the local pool's processes run at
    nice 0). Here they run at nice 0, as the local pool's do. A cluster joined by address
    keeps the niceness its ``ray start`` gave it."""
    import ray

    ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False,
             logging_level=logging.ERROR, configure_logging=False,
             runtime_env={"env_vars": env_vars} if env_vars else None,
             _system_config={"worker_niceness": 0})


#: a policy pickle at most this large is sent with every Ray call rather than put in the
#: object store once: a reference nested in the call's arguments costs the driver and
#: raylet more per call (ownership bookkeeping) than a few KB of inline bytes
INLINE_POLICY_BYTES = 16 * 1024


class RayPool:
    """Work items on Ray actors, one :class:`RolloutWorker` each (``num_cpus=1``).

    ``address`` None starts a local Ray for this pool (``workers`` CPUs) and stops it on
    :meth:`close`; ``auto`` joins the cluster this machine belongs to (``ray start``);
    ``HOST:PORT`` joins that head (refused at once if nothing answers there).

    An actor that dies mid-run (a node lost, a process killed) is replaced, and the
    chunks it held are sent again: results are keyed by item, so none is lost and none
    counted twice (a chunk that came back before the death is never run again)."""

    backend = "ray"

    def __init__(self, workers: int = 1, address: str | None = None, *, connect_timeout: float = 3.0,
                 max_restarts: int | None = None):
        try:
            import ray
        except ImportError:
            raise PoolError("--backend ray needs Ray: pip install 'simweb[ray]'") from None
        if workers < 1:
            raise PoolError(f"workers must be at least 1, not {workers}")
        self.ray: Any = ray
        self.workers = workers
        self.restarts = 0
        self.max_restarts = 4 * workers if max_restarts is None else max_restarts
        self._own = False
        if not ray.is_initialized():
            if address not in (None, "auto", "local"):
                _check_address(str(address), connect_timeout)
            env_vars = {k: os.environ[k] for k in ("SIMWEB_CACHE",) if k in os.environ}
            try:
                if address in (None, "local"):
                    start_local_ray(workers, env_vars)
                    self._own = True
                else:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.ERROR, configure_logging=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise PoolError(f"cannot start or join Ray at {address or 'a local cluster'}: "
                                f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
        self._actor_class: Any = ray.remote(num_cpus=1, max_restarts=0)(RolloutWorker)
        self.actors: list[Any] = [self._actor_class.remote() for _ in range(workers)]

    def _replace(self, slot: int) -> None:
        self.restarts += 1
        if self.restarts > self.max_restarts:
            raise PoolError(f"Ray workers died {self.restarts} times in one run: giving up")
        self.actors[slot] = self._actor_class.remote()

    def run(self, items: list[WorkItem], policy: Any, on_done: Callable[[int, list[bytes]], None] | None = None,
            in_flight: int = 2) -> list[list[bytes]]:
        from collections import deque

        ray = self.ray
        data = _policy_blob(policy)
        # a small policy (an import path, a scripted agent) goes inline with each call; a
        # large one (a model's weights) once into the object store, fetched once per actor
        blob = [data if len(data) <= INLINE_POLICY_BYTES else ray.put(data)]
        results: list[list[bytes] | None] = [None] * len(items)
        queue = deque(_chunks(items, self.workers))
        pending: dict[Any, tuple[int, Any, list[tuple[int, WorkItem]]]] = {}   # ref -> (slot, actor, chunk)

        def submit(slot: int, most: int = in_flight) -> None:
            actor = self.actors[slot]
            load = sum(1 for s, a, _ in pending.values() if s == slot and a is actor)
            while queue and load < most:
                chunk = queue.popleft()
                pending[actor.run_packed.remote(encode_batch(chunk), blob)] = (slot, actor, chunk)
                load += 1

        # The first batches dealt round the actors one at a time: the largest come first
        # (_chunks), and an actor handed the two largest at once held over half the work
        # while the other ran out (actors idle 16-23% at 2 workers on an idle machine).
        for depth in range(1, in_flight + 1):
            for slot in range(len(self.actors)):
                submit(slot, depth)
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            slot, actor, chunk = pending.pop(ready[0])
            try:
                done = unpack_results(ray.get(ready[0]))
            except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError,
                    ray.exceptions.ObjectLostError):
                # the actor (or its node) died: its chunk goes back in the queue; the slot
                # gets one new actor, however many of the dead one's calls fail
                queue.appendleft(chunk)
                if self.actors[slot] is actor:
                    self._replace(slot)
                submit(slot)
                continue
            for i, out in done:
                if results[i] is None:   # never twice, whatever was resent
                    results[i] = out
                    if on_done:
                        on_done(i, out)
            submit(slot)
        missing = [i for i, r in enumerate(results) if r is None]
        if missing:
            raise PoolError(f"{len(missing)} work items came back from no worker")
        return results  # type: ignore[return-value]

    def close(self) -> None:
        for a in self.actors:
            try:
                self.ray.kill(a)
            except Exception:   # an actor already gone
                pass
        self.actors = []
        if self._own:
            self.ray.shutdown()
            self._own = False

    def __enter__(self) -> RayPool:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


BACKENDS = ("local", "ray")


def make_pool(backend: str = "local", workers: int = 1, address: str | None = None) -> LocalPool | RayPool:
    """A pool on ``backend`` (``local``: processes on this machine; ``ray``: Ray actors,
    on a local Ray or the cluster at ``address``)."""
    if backend == "local":
        if address:
            raise PoolError("--address is for --backend ray")
        return LocalPool(workers)
    if backend == "ray":
        return RayPool(workers, address)
    raise PoolError(f"unknown backend {backend!r} (choose {', '.join(BACKENDS)})")


def run_items(items: list[WorkItem], policy: Any, *, backend: str = "local", workers: int = 1,
              address: str | None = None, on_done: Callable[[int, list[bytes]], None] | None = None
              ) -> list[list[bytes]]:
    """Run ``items`` with ``policy`` on a pool made for this call (see :func:`make_pool`);
    each item's trajectories as bytes, in item order."""
    with make_pool(backend, workers, address) as pool:
        return pool.run(items, policy, on_done)

"""The viewer's index of trajectory files: what the episode list needs, read lazily.

Opening a run reads, per trajectory file, its first line (the header) and its last line
(the final step: length, verdict, reward), never the steps between; an episode's step
lines are found through an offset index built the first time the episode is opened
(one pass over that file's bytes) and kept for a few hundred files. So a directory of
100,000 steps opens in the time of reading two lines per file
(benchmarks/bench_viewer.py measures it).
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ...episodes.trajectory import TrajectoryFormatError, parse_header, upgrade_step
from ..benchplots import load_benchmark

__all__ = ["Episode", "RunIndex", "ViewerError", "episode_reward", "potential_of"]

#: bytes read from a file's end to find its last line (doubled until a line fits)
_TAIL = 16_384
#: offset indexes kept (one per opened episode)
_KEEP = 256


class ViewerError(ValueError):
    """A path the viewer cannot open (missing, unreadable, not a trajectory): one line."""


def potential_of(verdict: dict[str, Any] | None) -> float:
    """``progress if clean else 0`` (what the progress reward adds up to)."""
    if not verdict:
        return 0.0
    return float(verdict.get("progress") or 0.0) if verdict.get("clean", True) else 0.0


def episode_reward(header: dict[str, Any], last: dict[str, Any] | None) -> float:
    """An episode's reward without reading its middle: a group's reward where the header
    has one; else, under the progress reward, the final clean progress (the sum of its
    step rewards); else the last step's reward (the sparse reward pays at the end)."""
    if isinstance(header.get("group_reward"), int | float):
        return float(header["group_reward"])
    if last is None:
        return 0.0
    if header.get("reward_mode") == "progress":
        return potential_of(last.get("verdict"))
    return float(last.get("reward") or 0.0)


@dataclass
class Episode:
    """One trajectory file, as the list shows it."""

    id: int
    path: str
    rel: str
    header: dict[str, Any]
    steps: int
    verdict: dict[str, Any] | None
    reward: float
    size: int

    @property
    def app(self) -> str:
        return str(self.header.get("app") or "")

    @property
    def task(self) -> str:
        return str(self.header.get("task") or "")

    @property
    def agent(self) -> str:
        return str(self.header.get("agent") or "")

    @property
    def success(self) -> bool:
        return bool(self.verdict and self.verdict.get("success"))

    @property
    def clean(self) -> bool:
        return bool(self.verdict.get("clean", True)) if self.verdict else True

    @property
    def progress(self) -> float:
        return float(self.verdict.get("progress") or 0.0) if self.verdict else 0.0

    @property
    def parent(self) -> dict[str, Any] | None:
        p = self.header.get("parent")
        return p if isinstance(p, dict) else None

    @property
    def group_key(self) -> str | None:
        """Fork children of one state, in one folder, form a group."""
        p = self.parent
        return f"{os.path.dirname(self.path)}|{p['state_hash']}" if p and p.get("state_hash") else None

    @property
    def sim2live(self) -> dict[str, Any] | None:
        s = self.header.get("sim2live")
        return s if isinstance(s, dict) else None


@dataclass
class RedTeamFile:
    """A ``simweb redteam --out`` file."""

    path: str
    rel: str
    header: dict[str, Any]


@dataclass
class RunIndex:
    """Every trajectory under the given paths (files or directories, recursively)."""

    roots: list[str]
    episodes: list[Episode] = field(default_factory=list)
    redteam: list[RedTeamFile] = field(default_factory=list)
    #: train folders (with metrics.jsonl) and sim2live report.json files found
    train_dirs: list[str] = field(default_factory=list)
    sim2live_reports: list[str] = field(default_factory=list)
    #: ``benchmarks/`` results files (JSON documents with ``benchmark`` and ``results``)
    benchmarks: list[str] = field(default_factory=list)
    #: .jsonl files that are not trajectories (episodes.jsonl, metrics.jsonl, sim2live traces/...)
    skipped: list[str] = field(default_factory=list)
    _offsets: OrderedDict[int, list[int]] = field(default_factory=OrderedDict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    _by_path: dict[str, Episode] | None = field(default=None, repr=False)
    _seen: set[str] = field(default_factory=set, repr=False)

    @classmethod
    def open(cls, paths: Iterable[str]) -> RunIndex:
        """Index ``paths``. A missing path, an unreadable file, or a named file that is
        not a trajectory raises :class:`ViewerError` (one line)."""
        idx = cls([os.fspath(p) for p in paths])
        if not idx.roots:
            raise ViewerError("no path given")
        for root in idx.roots:
            if not os.path.exists(root):
                raise ViewerError(f"{root}: no such file or directory")
            if os.path.isdir(root):
                idx._scan_dir(root)
            elif root.endswith(".json") and load_benchmark(root) is not None:
                idx.benchmarks.append(root)
            else:
                idx._add(root, os.path.basename(root), named=True)
        return idx

    def _scan_dir(self, root: str) -> None:
        for folder, dirs, files in os.walk(root, onerror=self._walk_error):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not d.endswith(".screenshots"))
            rel_folder = os.path.relpath(folder, os.path.dirname(os.path.abspath(root).rstrip(os.sep)) or "/")
            if "metrics.jsonl" in files:
                self.train_dirs.append(folder)
            if "report.json" in files:
                self.sim2live_reports.append(os.path.join(folder, "report.json"))
            for name in sorted(files):
                if name.startswith("results") and name.endswith(".json") and \
                        load_benchmark(os.path.join(folder, name)) is not None:
                    self.benchmarks.append(os.path.join(folder, name))
                if name.endswith(".jsonl") and not name.startswith("."):
                    self._add(os.path.join(folder, name), os.path.join(rel_folder, name), named=False)

    @staticmethod
    def _walk_error(exc: OSError) -> None:
        raise ViewerError(f"cannot read {exc.filename}: {exc.strerror or exc}")

    def _add(self, path: str, rel: str, *, named: bool) -> None:
        real = os.path.realpath(path)
        if real in self._seen:   # a file named twice, or under two of the paths given
            return
        self._seen.add(real)
        try:
            with open(path, "rb") as f:
                first = f.readline()
                size = os.fstat(f.fileno()).st_size
                last = _last_line(f, size) if size > len(first) else b""
        except OSError as exc:
            raise ViewerError(f"cannot read {path}: {exc.strerror or exc}") from None
        try:
            if not first.strip():
                raise TrajectoryFormatError(f"{path}: empty file, not a simweb trajectory")
            head = parse_header(first, path)
        except TrajectoryFormatError as exc:
            if named:
                raise ViewerError(str(exc)) from None
            self.skipped.append(rel)
            return
        if head.get("kind") == "redteam":
            self.redteam.append(RedTeamFile(path, rel, head))
            return
        tail: dict[str, Any] | None = None
        if last.strip() and last != first:
            try:
                parsed = orjson.loads(last)
            except orjson.JSONDecodeError:
                raise ViewerError(f"{path}: the last line is not valid JSON (a file cut short?)") from None
            tail = upgrade_step(parsed) if isinstance(parsed, dict) and parsed.get("type") == "step" else None
        steps = int(tail.get("step") or 0) if tail else 0
        verdict = tail.get("verdict") if tail else None
        self.episodes.append(Episode(len(self.episodes), path, rel, head, steps, verdict,
                                     episode_reward(head, tail), size))

    # ------------------------------------------------------------------ one episode

    def offsets(self, ep: Episode) -> list[int]:
        """The byte offset of every line of ``ep``'s file (built once, kept for a while)."""
        with self._lock:
            got = self._offsets.get(ep.id)
            if got is not None:
                self._offsets.move_to_end(ep.id)
                return got
        try:
            data = Path(ep.path).read_bytes()
        except OSError as exc:
            raise ViewerError(f"cannot read {ep.path}: {exc.strerror or exc}") from None
        offs = [0]
        find = data.find
        i = find(b"\n")
        while i != -1:
            if i + 1 < len(data):
                offs.append(i + 1)
            i = find(b"\n", i + 1)
        with self._lock:
            self._offsets[ep.id] = offs
            while len(self._offsets) > _KEEP:
                self._offsets.popitem(last=False)
        return offs

    def step_line(self, ep: Episode, n: int) -> dict[str, Any] | None:
        """Step ``n`` (1-based) of ``ep``, read through its offset index; None past the end."""
        offs = self.offsets(ep)
        if not 1 <= n < len(offs):
            return None
        with open(ep.path, "rb") as f:
            f.seek(offs[n])
            line = f.readline()
        return upgrade_step(orjson.loads(line))

    def steps_of(self, ep: Episode) -> Iterator[dict[str, Any]]:
        """Every line after the header of ``ep``."""
        try:
            with open(ep.path, "rb") as f:
                f.readline()
                for line in f:
                    if line.strip():
                        yield upgrade_step(orjson.loads(line))
        except OSError as exc:
            raise ViewerError(f"cannot read {ep.path}: {exc.strerror or exc}") from None

    # ------------------------------------------------------------------ queries

    def get(self, eid: int) -> Episode | None:
        return self.episodes[eid] if 0 <= eid < len(self.episodes) else None

    def groups(self) -> dict[str, list[Episode]]:
        """Fork children by the state they forked from (groups of one included)."""
        out: dict[str, list[Episode]] = {}
        for ep in self.episodes:
            key = ep.group_key
            if key:
                out.setdefault(key, []).append(ep)
        return out

    def by_rel(self, folder: str, rel: str) -> Episode | None:
        """The episode whose file is ``rel`` relative to ``folder`` (fork parentage)."""
        if self._by_path is None:
            self._by_path = {os.path.normpath(e.path): e for e in self.episodes}
        return self._by_path.get(os.path.normpath(os.path.join(folder, rel)))

    def sim2live_pairs(self) -> dict[tuple[str, str, int], dict[str, Episode]]:
        """sim2live sides by (pair, family, instance)."""
        out: dict[tuple[str, str, int], dict[str, Episode]] = {}
        for ep in self.episodes:
            s = ep.sim2live
            if s:
                key = (str(os.path.dirname(ep.path)), str(s.get("family")), int(s.get("index") or 0))
                out.setdefault(key, {})[str(s.get("side"))] = ep
        return out

    @property
    def total_steps(self) -> int:
        return sum(e.steps for e in self.episodes)


def _last_line(f: Any, size: int) -> bytes:
    """The last non-empty line of an open binary file of ``size`` bytes."""
    chunk = _TAIL
    while True:
        start = max(0, size - chunk)
        f.seek(start)
        data = f.read(size - start).rstrip(b"\n")
        i = data.rfind(b"\n")
        if i != -1 or start == 0:
            return data[i + 1:]
        chunk *= 2

"""The everlasting pool: a fixed set of browser instances leased and released forever.

A lease hands out a free instance; a release restores it to a clean state (a fresh
browser context, a new instance uuid) and frees it, without relaunching Chromium. The
pool also reproduces how WebGym's master sees capacity: it keeps a cached count of free
instances that a lease decrements and that is refreshed from the true count only every
``status_interval`` seconds (10 on the real master), so a lease right after a release
can be refused with 503 although an instance is free. ``status_interval=0`` refreshes
on every lease.

Bounds: ``size`` instances (one Chromium each), one page per instance, and a lease
lifetime (``lifetime_mins`` of the lease, at most ``lifetime_max`` minutes); an expired
lease is released by the pool.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from .instance import BrowserInstance

FIRST_INSTANCE_PORT = 9000   # the real node's instance servers listen on 9000, 9001, ...


class NoCapacity(Exception):
    """No instance can be leased now (the master answers 503)."""


@dataclass
class Lease:
    instance: BrowserInstance
    instance_id: str
    expires: float   # time.monotonic() deadline
    started: float = field(default_factory=time.monotonic)


class InstancePool:
    """``size`` browser instances; thread-safe lease / release / lookup."""

    def __init__(self, size: int, *, status_interval: float = 10.0, lifetime_max: int = 60,
                 allow_external: bool = False, max_sleep_s: float = 60.0, headless: bool = True):
        if size < 1:
            raise ValueError("the pool needs at least one browser")
        self.size = size
        self.status_interval = float(status_interval)
        self.lifetime_max = int(lifetime_max)
        self.instances = [BrowserInstance(i, FIRST_INSTANCE_PORT + i, allow_external=allow_external,
                                          max_sleep_s=max_sleep_s, headless=headless) for i in range(size)]
        self._by_port = {inst.port: inst for inst in self.instances}
        self._free: list[BrowserInstance] = []
        self._leases: dict[int, Lease] = {}   # port -> lease
        self._lock = threading.Lock()
        self._advertised = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.releases = 0

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> None:
        """Launch every instance's Chromium (in parallel) and start the status and
        lifetime keepers."""
        errors: list[BaseException] = []
        starters = [threading.Thread(target=lambda i=i: self._start_one(i, errors)) for i in self.instances]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        if errors:
            self.close()
            raise errors[0]
        with self._lock:
            self._free = list(self.instances)
            self._advertised = len(self._free)
        for target, name in ((self._refresh_loop, "status"), (self._expire_loop, "lifetime")):
            t = threading.Thread(target=target, name=f"simweb-omnibox-{name}", daemon=True)
            t.start()
            self._threads.append(t)

    @staticmethod
    def _start_one(inst: BrowserInstance, errors: list[BaseException]) -> None:
        try:
            inst.start()
        except BaseException as exc:
            errors.append(exc)

    def close(self) -> None:
        """Stop the keepers and every instance (closing its Chromium)."""
        self._stop.set()
        stoppers = [threading.Thread(target=inst.stop) for inst in self.instances]
        for t in stoppers:
            t.start()
        for t in stoppers:
            t.join()

    # ------------------------------------------------------------------ capacity view
    def refresh(self) -> None:
        """Set the cached free count to the true one (what the master's status poll does)."""
        with self._lock:
            self._advertised = len(self._free)

    def _refresh_loop(self) -> None:
        if self.status_interval <= 0:
            return
        while not self._stop.wait(self.status_interval):
            self.refresh()

    def _expire_loop(self) -> None:
        while not self._stop.wait(1.0):
            now = time.monotonic()
            with self._lock:
                expired = [lease.instance_id for lease in self._leases.values() if lease.expires <= now]
            for instance_id in expired:
                try:
                    self.release(instance_id)
                except KeyError:
                    pass   # released meanwhile

    def info(self) -> dict[str, Any]:
        """``available`` (the cached count), ``capacity`` and ``in_use`` (leased ids)."""
        with self._lock:
            return {"available": self._advertised, "capacity": self.size,
                    "in_use": [lease.instance_id for lease in self._leases.values()]}

    # ------------------------------------------------------------------ leases
    def lease(self, lifetime_mins: int) -> BrowserInstance:
        """A free instance, leased for ``lifetime_mins`` minutes; raises NoCapacity."""
        with self._lock:
            if self.status_interval <= 0:
                self._advertised = len(self._free)
            if self._advertised <= 0:
                raise NoCapacity("No available nodes with capacity to create new instance")
            if not 0 <= lifetime_mins <= self.lifetime_max or not self._free:
                raise NoCapacity("No available nodes with capacity to create new instance")
            inst = self._free.pop(0)
            self._advertised -= 1
            minutes = lifetime_mins if lifetime_mins > 0 else self.lifetime_max
            self._leases[inst.port] = Lease(inst, inst.instance_id, time.monotonic() + 60.0 * minutes)
            return inst

    def free(self) -> int:
        """How many instances are free now (the true count, not the cached one)."""
        with self._lock:
            return len(self._free)

    def leased(self, instance_id: str) -> bool:
        with self._lock:
            return any(lease.instance_id == instance_id for lease in self._leases.values())

    def instance_at(self, port: int) -> BrowserInstance | None:
        return self._by_port.get(port)

    def release(self, instance_id: str) -> None:
        """Restore the leased instance ``instance_id`` to a clean state and free it.
        Raises KeyError when it is not leased."""
        with self._lock:
            lease = next((lease for lease in self._leases.values() if lease.instance_id == instance_id), None)
            if lease is None:
                raise KeyError(instance_id)
            del self._leases[lease.instance.port]
        inst = lease.instance
        try:
            inst.call(inst.restore_clean)
        finally:
            with self._lock:
                self._free.append(inst)
                self.releases += 1

"""Gymnasium spaces for web observations and actions: free text and JSON values."""
from __future__ import annotations

import os as _os
import pickle as _pickle
import shutil as _shutil
import tempfile as _tempfile
import weakref as _weakref
from collections.abc import Sequence as _Sequence
from typing import Any

import gymnasium as gym
from gymnasium.vector.utils import shared_memory as _shm


class Unicode(gym.spaces.Space):
    """A space of arbitrary strings (gymnasium's Text space limits the charset)."""

    def __init__(self, max_length: int = 10_000_000):
        super().__init__(shape=(), dtype=str)
        self.max_length = max_length

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and len(x) <= self.max_length

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        return "noop()"

    def __repr__(self) -> str:
        return "Unicode()"

    # gymnasium's SyncVectorEnv requires every sub-env's spaces to compare equal
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unicode) and other.max_length == self.max_length

    def __hash__(self) -> int:
        return hash(("Unicode", self.max_length))


class JsonValue(gym.spaces.Space):
    """A space of values of the given Python types (lists of URLs, chat messages,
    screenshot bytes); a sample is an empty value of the first type."""

    def __init__(self, *kinds: type):
        if not kinds:
            raise ValueError("JsonValue needs at least one type")
        super().__init__(shape=None, dtype=None)
        self.kinds = kinds

    def contains(self, x: Any) -> bool:
        return isinstance(x, self.kinds)

    def sample(self, mask: Any = None, probability: Any = None) -> Any:
        return self.kinds[0]()

    def __repr__(self) -> str:
        return f"JsonValue({', '.join(k.__name__ for k in self.kinds)})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, JsonValue) and other.kinds == self.kinds

    def __hash__(self) -> int:
        return hash(("JsonValue", self.kinds))


# ----------------------------------------------------------------------------- make_vec, async
#
# gymnasium's AsyncVectorEnv passes observations through shared memory by default: each
# worker writes its observation into a buffer made once per space, and the parent keeps
# one read-only view of the buffers for the vector env's life. A fixed-size buffer does
# not fit a page's text, so for these spaces the "buffer" is one small file per sub-env in
# a private folder (in /dev/shm where it exists: memory, not disk), and the view reads the
# files when indexed. A deep copy of the view (what AsyncVectorEnv returns by default) is
# a plain tuple, as the sync vector env returns.


class SlotFiles:
    """One file per sub-env, in a folder made for one space of one vector env (picklable:
    a path, shipped to the workers)."""

    def __init__(self, n: int):
        base = "/dev/shm" if _os.path.isdir("/dev/shm") and _os.access("/dev/shm", _os.W_OK) else None
        self.folder = _tempfile.mkdtemp(prefix="simweb-vec-", dir=base)
        self.n = n

    def write(self, index: int, data: bytes) -> None:
        path = _os.path.join(self.folder, str(index))
        tmp = f"{path}.{_os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        _os.replace(tmp, path)   # the reader sees the old value or the new one, never half

    def read(self, index: int) -> bytes | None:
        try:
            with open(_os.path.join(self.folder, str(index)), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None


class SlotView(_Sequence):
    """The parent's live view of a space's slots: ``view[i]`` is sub-env i's last value."""

    def __init__(self, slots: SlotFiles, decode: Any, empty: Any):
        self.slots, self._decode, self._empty = slots, decode, empty
        # the folder goes when the vector env (the only holder of the view) does
        _weakref.finalize(self, _shutil.rmtree, slots.folder, True)

    def __len__(self) -> int:
        return self.slots.n

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        if not -len(self) <= i < len(self):
            raise IndexError(i)
        data = self.slots.read(i % len(self))
        return self._empty() if data is None else self._decode(data)

    def __deepcopy__(self, memo: dict) -> tuple:
        return tuple(self)

    def __eq__(self, other: object) -> bool:
        return tuple(self) == (tuple(other) if isinstance(other, (SlotView, tuple, list)) else other)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(tuple(self))


@_shm.create_shared_memory.register(Unicode)
@_shm.create_shared_memory.register(JsonValue)
def _create_slots(space: Any, n: int = 1, ctx: Any = None) -> SlotFiles:
    return SlotFiles(n)


@_shm.read_from_shared_memory.register(Unicode)
def _read_text_slots(space: Unicode, shared_memory: SlotFiles, n: int = 1) -> SlotView:
    return SlotView(shared_memory, lambda b: b.decode("utf-8"), str)


@_shm.read_from_shared_memory.register(JsonValue)
def _read_value_slots(space: JsonValue, shared_memory: SlotFiles, n: int = 1) -> SlotView:
    return SlotView(shared_memory, _pickle.loads, space.kinds[0])


@_shm.write_to_shared_memory.register(Unicode)
def _write_text_slot(space: Unicode, index: int, value: Any, shared_memory: SlotFiles) -> None:
    shared_memory.write(index, str(value).encode("utf-8"))


@_shm.write_to_shared_memory.register(JsonValue)
def _write_value_slot(space: JsonValue, index: int, value: Any, shared_memory: SlotFiles) -> None:
    shared_memory.write(index, _pickle.dumps(value, protocol=_pickle.HIGHEST_PROTOCOL))

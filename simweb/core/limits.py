"""Bounds on what a served request may cost: body size, state size, list lengths, nesting
depth, URL length. Every check is one linear pass and fails with :class:`LimitError`
(the server answers it with a 4xx and the error's one line)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, BinaryIO


@dataclass(frozen=True)
class Limits:
    """What one served request may send or make the session's state grow to."""

    #: bytes of a request body (form posts and state restores alike)
    max_body: int = 4 * 1024 * 1024
    #: bytes of a session's state as JSON: a restore above it is refused, and so is a
    #: request whose transitions would grow the state above it (so every session's
    #: exported state can always be posted back)
    max_state: int = 2 * 1024 * 1024
    #: items in any one list and members of any one object inside a state
    max_items: int = 10_000
    #: nesting depth of a state (the deepest real state is about 8 levels)
    max_depth: int = 48
    #: characters of a request's path and query; longer is 414, as common servers answer
    max_url: int = 8 * 1024


DEFAULT_LIMITS = Limits()


class LimitError(ValueError):
    """A request over one of the limits; ``status`` is the HTTP status to answer."""

    def __init__(self, message: str, status: int = 413):
        super().__init__(message)
        self.status = status


def read_body(stream: BinaryIO, content_length: int | None, limit: int) -> bytes:
    """Read a request body of at most ``limit`` bytes. A declared length over the limit is
    refused before reading; a body without one (chunked) is read up to ``limit + 1``
    bytes, and one byte too many is a 413, not a truncated body."""
    if content_length is not None:
        if content_length > limit:
            raise LimitError(f"request body of {content_length} bytes is over the limit of {limit} bytes")
        return stream.read(content_length) if content_length else b""
    chunks: list[bytes] = []
    got = 0
    while got <= limit:
        chunk = stream.read(min(65536, limit + 1 - got))
        if not chunk:
            break
        chunks.append(chunk)
        got += len(chunk)
    if got > limit:
        raise LimitError(f"request body is over the limit of {limit} bytes")
    return b"".join(chunks)


#: The state's request log (``meta.history.log``, one entry per request since the episode's
#: start, replayed by offline verification): its length is the session's request count, not
#: something a request can grow by many at once, so ``max_items`` does not cap it (a session
#: would be refused after ``max_items`` page views); ``max_state`` still bounds its bytes.
HISTORY_PATH = "$.meta.history.log"


def check_shape(obj: Any, limits: Limits = DEFAULT_LIMITS) -> None:
    """Refuse a JSON value that nests deeper than ``max_depth``, has a list or object with
    more than ``max_items`` entries, a non-string key, or a NaN/Infinity: one iterative
    pass over the value (no recursion, so any depth is safe to look at)."""
    stack: list[tuple[Any, int, str]] = [(obj, 1, "$")]
    pop, push = stack.pop, stack.append
    while stack:
        value, depth, path = pop()
        t = type(value)
        if t is dict or t is list:
            if depth > limits.max_depth:
                raise LimitError(f"state nests deeper than {limits.max_depth} levels (at {path})", 400)
            if len(value) > limits.max_items and path != HISTORY_PATH:
                raise LimitError(f"{'list' if t is list else 'object'} at {path} has {len(value)} entries, "
                                 f"over the limit of {limits.max_items}", 400)
            if t is dict:
                for k, v in value.items():
                    if type(k) is not str:
                        raise LimitError(f"non-string key {k!r} at {path}", 400)
                    if type(v) is dict or type(v) is list or type(v) is float:
                        push((v, depth + 1, f"{path}.{k}"))
            else:
                for i, v in enumerate(value):
                    if type(v) is dict or type(v) is list or type(v) is float:
                        push((v, depth + 1, f"{path}[{i}]"))
        elif t is float and not math.isfinite(value):
            raise LimitError(f"value at {path} is not representable in JSON", 400)

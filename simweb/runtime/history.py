"""A state's recorded history, and the check that its runtime is what that history produces.

Every request the site handles (a GET in :meth:`simweb.app.App.navigate`, one for each
redirect it follows; a form POST in :meth:`App.submit`) is written to ``meta.history`` as
it comes in, with what the request cycle reads from outside the runtime (the URL; for a
POST its form, the page it was posted from and that page's address). In-process and
served runs of the same actions record the same history. A value the site must not keep
(a parameter declared ``secret``: a card number, a security code) is recorded sealed
(:func:`seal`: its digits masked by a keyed stream), so no state shows a card number in
clear text, and a replay unseals it, so what the site derived from the whole number (the
processor's fingerprint, the security code check) replays exactly. The key is in this
code: the seal keeps a number off screens and out of logs, it is not encryption against
someone who reads the source. The log starts empty at the episode's start
(:func:`simweb.env.episode_start`: the task's set-up and start page are rebuilt from
``meta.task`` and ``meta.rng.seed``, so they need no record), and a digest chain over it
(``digest``: sha256 of the previous digest and the entry) is a short fingerprint of the
whole history that a trajectory or a server can keep.

Offline verification (``simweb verify --state``) judges states that served, browser and
external runs hand in, so it must not take a state's runtime on trust:
:func:`simweb.episodes.replay.check_history` rebuilds the recorded start, replays every recorded request through
the same request cycle, and refuses the state unless the runtime, the clock, the request
counter, the random stream, the signed-in user and the history itself come out the same,
and every page its tabs show (or list in their history) is one the replayed requests
loaded. A state with the target edited in, a task swapped or removed, or a request
invented or dropped, is refused with one line (:class:`simweb.state.StateError`).

The log is a list of compact JSON strings (a fork copies the list, never the entries) and
each entry costs one small JSON encoding and one sha256, so recording stays off the step's
budget; replay runs only when a state is verified.
"""
from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import orjson

from ..core.state import HISTORY_SCHEMA, StateError

if TYPE_CHECKING:
    from .app import App

#: How a history starts: ``start`` is an episode start (:func:`simweb.env.episode_start`
#: of ``meta.task`` at ``meta.rng.seed``); ``blank`` is :meth:`App.initial_state` (an env
#: stepped before its first reset).
ORIGINS: tuple[str, ...] = tuple(HISTORY_SCHEMA["properties"]["origin"]["enum"])

def _seed_digest(state: dict, origin: str) -> str:
    """The chain's first link: the world, the spec and how the history starts (not the
    task: a redacted served state shows its digest, and a digest of the task's parameters
    could be searched for an information task's answer)."""
    meta = state["meta"]
    text = orjson.dumps(["simweb-history", meta["world_hash"], meta["spec_hash"], origin])
    return hashlib.sha256(text).hexdigest()


def begin(state: dict, origin: str = "start") -> None:
    """Start ``state``'s history here (an empty log)."""
    state["meta"]["history"] = {"origin": origin, "log": [], "digest": _seed_digest(state, origin)}


def record(state: dict, entry: list) -> None:
    """Append one request to ``state``'s history and extend the digest chain."""
    history = state["meta"]["history"]
    text = orjson.dumps(entry).decode()
    history["log"].append(text)
    history["digest"] = hashlib.sha256((history["digest"] + text).encode()).hexdigest()


#: The key of the digit stream that seals secret form values in the history.
_SEAL_KEY = b"simweb history: sealed secret form values v1"


def _stream(n: int) -> list[int]:
    """The first ``n`` digits of the sealing stream (the same for every value)."""
    out: list[int] = []
    block = 0
    while len(out) < n:
        out.extend(b % 10 for b in hashlib.sha256(_SEAL_KEY + block.to_bytes(4, "big")).digest())
        block += 1
    return out[:n]


def seal(value: Any, unseal: bool = False) -> Any:
    """A secret form value as the history records it (``unseal``: as it was typed): each
    digit shifted by the stream's digit at its place (mod 10), every other character kept,
    so the sealed text has the typed text's shape; a list is sealed item by item."""
    if isinstance(value, list):
        return [seal(v, unseal) for v in value]
    if not isinstance(value, str):
        return value
    sign = -1 if unseal else 1
    key = _stream(len(value))
    return "".join(str((int(ch) + sign * k) % 10) if ch.isdigit() else ch for ch, k in zip(value, key))


def secret_fields(app: App, url: str, form: dict) -> list[str]:
    """The fields of ``form`` posted to ``url`` that its event declares ``secret``."""
    hit = app.spec.match_event(urlsplit(url).path)
    return [n for n, p in hit[0].params.items() if p.secret and n in form] if hit else []


def sealed(form: dict, secret: list[str], unseal: bool = False) -> dict:
    """``form`` with its ``secret`` fields sealed (or unsealed)."""
    return {k: (seal(v, unseal) if k in secret else v) for k, v in form.items()} if secret else form


def _entry(text: str, n: int) -> list:
    """A log entry parsed and shape-checked (StateError naming entry ``n`` otherwise)."""
    try:
        entry = orjson.loads(text)
    except orjson.JSONDecodeError:
        raise StateError(f"state history entry {n} is not JSON") from None
    ok = isinstance(entry, list) and entry and (
        (entry[0] == "get" and len(entry) == 2 and isinstance(entry[1], str))
        or (entry[0] == "post" and len(entry) == 5 and isinstance(entry[1], str) and isinstance(entry[2], dict)
            and isinstance(entry[3], str) and isinstance(entry[4], str)))
    if not ok:
        raise StateError(f"state history entry {n} is not a request simweb records")
    return entry


__all__ = ["HISTORY_SCHEMA", "ORIGINS", "begin", "record", "seal", "sealed", "secret_fields"]

"""An app in served mode: :class:`Served` (the in-process app, its sessions, limits and
control settings, at ``flask_app.extensions["simweb"]``) and what the served site names
(its cookie, the redaction of a state a page visitor reads). The requests themselves are
answered by the blueprints of :mod:`simweb.serving.site`."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.limits import DEFAULT_LIMITS, LimitError, Limits, check_shape
from ..core.state import canonical, deep_copy
from ..runtime.app import App
from .sessions import SessionStore

COOKIE = "simweb_session"
REDACTED_HEADER = "X-Simweb-Redacted"
#: The status of a request whose session ended (RFC 9110: "no longer available").
GONE = 410
REDACTED = "redacted"


def redacted(state: dict) -> dict:
    """The state a page visitor may read: ``meta.task`` (its parameters hold the answer
    of information tasks) and ``meta.rng`` (the task can be derived from its seed) are
    replaced by "redacted". A redacted state does not validate, so it cannot be restored
    by mistake."""
    meta = dict(state["meta"])
    if meta.get("task") is not None:
        meta["task"] = REDACTED
    meta["rng"] = REDACTED
    return {**state, "meta": meta}


@dataclass
class Served:
    """An app in served mode: the in-process :class:`App`, its session store, limits and
    control settings (``flask_app.extensions["simweb"]``)."""

    app: App
    sessions: SessionStore
    task: str | None
    seed: int
    limits: Limits = DEFAULT_LIMITS
    control: bool = True
    control_token: str | None = None
    variant: int = 0   # the site variant new sessions start on (simweb.variants)
    bid_attribute: str = "bid"   # the element-id attribute of the served pages (create_app)

    def fresh_state(self, task: str | None = None, seed: int = 0, variant: int | None = None) -> dict:
        """The state ``env.reset(seed, options={"task": task})`` starts from (same cache),
        on the server's site variant unless ``variant`` is given."""
        from ..episodes.env import episode_start

        return deep_copy(episode_start(self.app, task, seed, None, self.variant if variant is None else variant).state)

    def new_session(self, state: dict | None = None, *, task: str | None = None, seed: int = 0) -> str:
        """A new (established) session holding ``state`` (validated: StateError if it
        cannot be used here), or the start state of ``task`` / ``seed``; its id."""
        if state is None:
            state = self.fresh_state(task, seed)
        else:
            self.check(state)
            state = deep_copy(state)
        return self.sessions.create(state, established=True)

    def start_session(self, sid: str | None, state: dict) -> tuple[str | None, str]:
        """Put the session of cookie ``sid`` at ``state`` (a task instance's start, as
        ``GET /_simweb/start`` asks). A live session is replaced, and established (its
        cookie came back); without one, a *new* session holds ``state``, in the budget of
        sessions whose cookie has not come back yet. Returns the id of the new session
        (None if the cookie's session was reused) and the ``X-Simweb-Session`` status."""
        if sid is not None:
            with self.sessions.lock(sid):
                found = self.sessions.load(sid)
                if found.state is not None and self.sessions.save(sid, state, establish=not found.established):
                    return None, "live"
        return self.sessions.create(state, established=False), "new"

    def state(self, sid: str) -> dict | None:
        """A copy of session ``sid``'s state, None if it has none (ended, unknown)."""
        with self.sessions.lock(sid):
            found = self.sessions.load(sid)
            return deep_copy(found.state) if found.state is not None else None

    def set_state(self, sid: str, state: dict) -> bool:
        """Replace session ``sid``'s state with ``state`` (validated); False if it ended."""
        self.check(state)
        with self.sessions.lock(sid):
            return self.sessions.load(sid).state is not None and self.sessions.save(sid, deep_copy(state))

    def check(self, state: Any, size: int | None = None) -> None:
        """Refuse a state over the limits (LimitError) or unusable here (StateError)."""
        check_shape(state, self.limits)   # first: it bounds the depth the encoder below meets
        if size is None:
            size = len(canonical(state))
        if size > self.limits.max_state:
            raise LimitError(f"state of {size} bytes is over the limit of {self.limits.max_state} bytes")
        self.app.check_state(state)

"""A state's recorded history replayed: the check that a state's runtime is what its history
produces, and the verdict of a state handed in (``simweb verify``).

:mod:`simweb.runtime.history` records the history (every request the site handles); this
module replays it from the episode's start (:func:`simweb.episodes.env.episode_start`), so
it sits on the episodes floor, above the app that records.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..core.state import StateError, deep_copy, new_tab
from ..judging.verify import answer_of
from ..runtime import variant_confirm, variant_steps
from ..runtime.history import _entry, sealed, secret_fields
from .env import episode_start
from .episode import find_task

if TYPE_CHECKING:  # pragma: no cover
    from ..runtime.app import App


def _posted_from(app: App, back: str, source: str) -> bool:
    """Whether a form could have been posted from page ``source`` at address ``back``:
    the page kind the address names (a served client's Referer can name any page, so this
    is what any client can do), or a blank or error page."""
    base = source.partition(":")[0]
    if base in ("blank", "error"):
        return True
    if base == variant_confirm.PAGE:   # a site variant's confirmation page (its own address)
        return variant_confirm.is_page(back)
    if base == variant_steps.PAGE:   # a multi-step form's second page (its own address)
        return variant_steps.is_page(back)
    hit = app.spec.match_page(urlsplit(back).path)
    return hit is not None and hit[0].name == base


def replay_start(app: App, state: dict) -> dict:
    """The start state ``state``'s history begins from (a new copy)."""
    meta = state["meta"]
    history = meta["history"]
    task, seed = meta["task"], int(meta["rng"]["seed"])
    variant = int(meta.get("variant", 0))   # the site variant's flow (a confirmation step) replays too
    if history["origin"] == "blank":
        if task is not None:
            raise StateError("state history starts from a blank state, yet the state names a task")
        return app.initial_state(seed, variant)
    if task is not None and task["id"] not in app.tasks:
        raise StateError(f"state names task {task['id']!r}, which {app.name} does not have")
    return deep_copy(episode_start(app, task["id"] if task else None, seed,
                                   task["params"] if task else None, variant).state)


def _first_difference(a: Any, b: Any, path: str) -> str:
    """The JSON path where ``a`` and ``b`` first differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b or a[k] != b[k]:
                return _first_difference(a.get(k), b.get(k), f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return path


def check_history(app: App, state: dict) -> dict:
    """Refuse (StateError, one line) a ``state`` its own recorded history does not produce;
    return the start state it was replayed from (what its verdict compares against).
    ``state`` must already be a valid state of ``app`` (:meth:`App.check_state`)."""
    replayed = replay_start(app, state)
    loaded: set[str] = {"about:blank"}
    for tab in replayed["browser"]["tabs"]:
        loaded.update(u.partition("#")[0] for u in tab["history"])
    scratch = new_tab()
    for n, text in enumerate(state["meta"]["history"]["log"]):
        entry = _entry(text, n)
        if entry[0] == "get":
            resp = app.navigate(replayed, entry[1], follow=False, tab=scratch)   # a redirect is the next entry
            if resp.location is None:
                loaded.add(resp.url)
        else:
            _, url, form, back, source = entry
            if not _posted_from(app, back, source):
                raise StateError(f"state history entry {n} posts from page {source!r}, which {back!r} is not")
            scratch.update(url=back, page=source)
            app.submit(replayed, url, sealed(form, secret_fields(app, url, form), unseal=True), tab=scratch)
    meta, want = state["meta"], replayed["meta"]
    for what, got, made in (("meta.history", meta["history"], want["history"]),
                            ("runtime", state["runtime"], replayed["runtime"]),
                            ("meta.clock", meta["clock"], want["clock"]),
                            ("meta.requests", meta["requests"], want["requests"]),
                            ("meta.rng", meta["rng"], want["rng"]),
                            ("browser.user", state["browser"]["user"], replayed["browser"]["user"])):
        if got != made:
            where = _first_difference(got, made, what)
            raise StateError(f"state is not what its recorded history produces (it differs at {where}): "
                             f"no run made it")
    for i, tab in enumerate(state["browser"]["tabs"]):
        for url in [tab["url"], *tab["history"]]:
            # a fragment is the browser's, never requested; an empty query ('page?', its own
            # history entry as in Chromium) requests the page itself
            asked = url.partition("#")[0]
            if asked.endswith("?") and asked.count("?") == 1:
                asked = asked[:-1]
            if asked not in loaded:
                raise StateError(f"state's tab {i} shows {url!r}, which no request in its history loaded: "
                                 f"no run made it")
    return replay_start(app, state)


def verify_state(app: App, task_id: str, seed: int, state: Any, answer: str | None = None) -> dict:
    """The verdict of a final ``state`` handed in for task ``task_id`` at ``seed`` (what
    ``simweb verify`` prints), judged only if a run could have made it: a valid state of
    ``app``, made for that task instance (``meta.task`` and ``meta.rng.seed``), whose
    recorded history produces it (:func:`check_history`). StateError (TaskError for an
    unknown task) otherwise, one line. ``answer`` None: the state's own last message."""
    app.check_state(state)
    template = find_task(app, task_id)
    params = template.instantiate(app, seed, variant=int(state["meta"].get("variant", 0))).params
    made_for = state["meta"]["task"]
    if made_for is None:
        raise StateError(f"the state records no task: it was not made for {task_id} (a run on a task records it)")
    if made_for["id"] != task_id or made_for["params"] != params:
        raise StateError(f"the state was made for {made_for['id']} with other parameters than {task_id} "
                         f"at seed {seed}: check --task and --seed")
    if state["meta"]["rng"]["seed"] != seed:
        raise StateError(f"the state was made at seed {state['meta']['rng']['seed']}, not {seed}: check --seed")
    start = check_history(app, state)
    return template.verify(app, params, start, state, answer if answer is not None else answer_of(state))


__all__ = ["check_history", "replay_start", "verify_state"]

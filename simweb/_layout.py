"""The engine's layout in one table: its wings, their floors, and the old flat paths.

simweb's engine is a stack of wings (sub-packages), lowest floor first. A module may import
from its own wing and from the wings below it, never from a wing above, and no modules may
import each other in a cycle (tests/test_layout.py checks every import, lazy ones inside
functions too, and ``docs/architecture.md`` draws the picture). The apps (``apps/<app>``,
installed as ``simweb.apps.<app>``, with ``verifiers/<app>.py``) sit on the floor between
the engine and the wings that read them (``live``, ``tools``), and those read an app only
through its package (``simweb.apps.<app>``), never its modules.

``MOVED`` maps every module's old flat path to its home, and is what keeps the old paths
working: ``import simweb.env`` and ``from simweb import spec`` give the very module object
of ``simweb.episodes.env`` and ``simweb.core.spec`` (:mod:`simweb._aliases`), so code,
pickles and ``monkeypatch.setattr("simweb.env.X", ...)`` written against the old paths
keep working.

Adding a module: put it in the wing folder it belongs to (``simweb/<wing>/name.py``); that
is all. A new module left flat in ``simweb/`` needs one line in ``FLAT`` (its wing) until it
is moved; moving it later is ``git mv`` plus moving that line into ``MOVED``.
"""
from __future__ import annotations

#: The wings, lowest floor first, with what each holds. ``APPS`` marks the apps' floor.
WINGS: tuple[tuple[str, str], ...] = (
    ("core", "the spec (data model and compiler), its control machine and updates, expressions, "
             "functions, the state document, the world contract and world databases, limits, URLs"),
    ("judging", "tasks and intended effects: verdict building blocks, the task model, templates, "
                "effects, decomposition"),
    ("runtime", "an app at run time: App (spec + world + functions + tasks), the registry, "
                "a state's recorded history"),
    ("web", "what an agent sees and does: action strings, the AX tree, spaces, the in-process browser"),
    ("agents", "the bundled agents: oracle, random, scripted, LLM, and their prompts"),
    ("episodes", "episodes and envs: the episode, SimEnv, the text env, policies, rollouts, groups, "
                 "trajectories, the learned policy, replay verification"),
    ("serving", "served mode: the Flask server and its sessions, the omnibox server, Chromium's env"),
    ("apps", "the apps: simweb.apps.<app>, simweb.verifiers.<app> (outside simweb/, read by name)"),
    ("live", "real sites on top of the apps: the live adapter, the counterparts, sim-to-live"),
    ("tools", "commands and integrations: the CLI, check, eval, red team, walks, train, plots, "
              "the viewer, BrowserGym, the trainers"),
)

#: Old flat path (under ``simweb.``) -> home (under ``simweb.``). A package maps its
#: submodules with it (``simweb.omnibox.start`` is ``simweb.serving.omnibox.start``).
MOVED: dict[str, str] = {
    "limits": "core.limits",
    "urls": "core.urls",
    "expr": "core.expr",
    "spec_schema": "core.spec_schema",
    "state": "core.state",
    "worlddb": "core.worlddb",
    "world": "core.world",
    "functions": "core.functions",
    "fulltext": "core.fulltext",
    "kits": "core.kits",
    "spec": "core.spec",
    "machine": "core.machine",
    "updates": "core.updates",
    "verify": "judging.verify",
    "effects": "judging.effects",
    "taskmodel": "judging.taskmodel",
    "tasks": "judging.tasks",
    "decompose": "judging.decompose",
    "app": "runtime.app",
    "registry": "runtime.registry",
    "history": "runtime.history",
    "variants": "runtime.variants",
    "actions": "web.actions",
    "webgym_actions": "web.webgym_actions",
    "axtree": "web.axtree",
    "spaces": "web.spaces",
    "browsing": "web.browsing",
    "episode": "episodes.episode",
    "env": "episodes.env",
    "textenv": "episodes.textenv",
    "policy": "episodes.policy",
    "rollout": "episodes.rollout",
    "group": "episodes.group",
    "trajectory": "episodes.trajectory",
    "learner": "episodes.learner",
    "wrappers": "episodes.wrappers",
    "server": "serving.server",
    "sessions": "serving.sessions",
    "omnibox": "serving.omnibox",
    "browser": "serving.browser",
    "counterparts": "live.counterparts",
    "sim2live": "live.sim2live",
    "sim2live_learned": "live.sim2live_learned",
    "agents.scripts": "live.scripts",
    "cli": "tools.cli",
    "check": "tools.check",
    "evaluate": "tools.evaluate",
    "redteam": "tools.redteam",
    "walks": "tools.walks",
    "train": "tools.train",
    "plots": "tools.plots",
    "benchplots": "tools.benchplots",
    "viewer": "tools.viewer",
    "browsergym": "tools.browsergym",
    "trainers": "tools.trainers",
    "variants_cli": "tools.variants_cli",
}

#: Modules still flat in ``simweb/`` -> their wing. The compiled extensions stay beside the
#: package root, where setup.py builds them.
FLAT: dict[str, str] = {
    "_axwalk": "web",        # the compiled AX-tree walk (simweb/_axwalk.pyx; simweb.web.axtree)
    "_jsoncopy": "core",     # the compiled state copy (simweb/_jsoncopy.pyx; simweb.core.state)
}


def floor(wing: str) -> int:
    """The floor of ``wing`` (0 is the lowest)."""
    return [name for name, _ in WINGS].index(wing)

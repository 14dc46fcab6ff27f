"""Simforum: a Reddit-like community site (communities, hot/new/top listings, search,
threaded comments, votes, karma, subscriptions, saved items, private messages and
community moderation with bans, locks, pins and a moderation log)."""
import importlib
from typing import Any

from simweb.runtime.definition import AppDefinition, AppLimits

APP = AppDefinition(
    name="forum",
    title="Simforum",
    package="simweb.apps.forum",
    world="simweb.apps.forum.world:ForumWorld",
    functions="simweb.apps.forum.functions:FUNCTIONS",
    tasks="simweb.apps.forum.tasks:TASKS",
    verifiers="simweb.verifiers.forum",
    default_size=20_000,
    description="A Reddit-like forum with 20,000 posts and 100,000+ threaded comments (scales to 200,000 posts).",
    # at least 30% of the templates medium or hard (WebGym's fact-count buckets)
    limits=AppLimits(min_hard_share=0.30),
)

#: The app's public surface beyond its definition: what code outside the app (the
#: sim-to-live counterparts, simweb.live.counterparts) may read. Imported on first use, so
#: loading the definition stays light; nothing outside the app imports its modules.
PUBLIC = {"PER_PAGE": ".functions"}


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        return getattr(importlib.import_module(PUBLIC[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

"""Simstay: a hotel booking site (availability search by dates and guests, room types with
weekday, weekend and seasonal rates and minimum stays, discount codes with conditions,
15-minute holds that expire on the simulated clock, a multi-step booking form with card
checks, confirmation codes, changes and cancellations under each property's policy, and
loyalty points)."""
import importlib
from typing import Any

from simweb.runtime.definition import AppDefinition, AppLimits

APP = AppDefinition(
    name="booking",
    title="Simstay",
    package="simweb.apps.booking",
    world="simweb.apps.booking.world:BookingWorld",
    functions="simweb.apps.booking.functions:FUNCTIONS",
    tasks="simweb.apps.booking.tasks:TASKS",
    verifiers="simweb.verifiers.booking",
    default_size=240,
    description="A hotel booking site with 240 properties and a year of availability (scales to 2,400+).",
    # at least 30% of the templates medium or hard (WebGym's fact-count buckets)
    limits=AppLimits(min_hard_share=0.30),
)

#: The app's public surface beyond its definition: what code outside the app (the
#: sim-to-live counterparts, simweb.live.counterparts) may read. Imported on first use, so
#: loading the definition stays light; nothing outside the app imports its modules.
PUBLIC = {"night_cents": ".world"}


def __getattr__(name: str) -> Any:
    if name in PUBLIC:
        return getattr(importlib.import_module(PUBLIC[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

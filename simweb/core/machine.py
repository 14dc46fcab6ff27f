"""The app's control machine, on the `transitions` library.

One Machine per spec, built once with no model bound; each request fires an event
against a light, throw-away model object that carries the current control state. (Binding
a model per env or per fork would cost add_model's O(n^2) bookkeeping on every fork.)

Each spec event becomes two transitions on the same trigger: the guarded one (to the
event's target page) and, after it, the error transition (an internal transition that
records the message a real site shows when the guard fails).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from transitions import Machine

from .spec import Spec


class _Model:
    """What the machine sees of one request: the control state and the guard outcome."""

    __slots__ = ("state", "check", "failed")

    def __init__(self, state: str, check: Callable[[], str | None]):
        self.state = state
        self.check = check
        self.failed: str | None = None


def _guard(event_data: Any) -> bool:
    model = event_data.model
    model.failed = model.check()
    return model.failed is None


@dataclass
class Outcome:
    fired: bool          # the trigger was valid from the current state
    error: str | None    # guard failure message (error transition taken)
    state: str           # control state after the transition


class ControlMachine:
    """Pages and UI sub-states as states; spec events as guarded triggers."""

    def __init__(self, spec: Spec):
        self.spec = spec
        self.states = spec.control_states()
        transitions: list[dict[str, Any]] = []
        for ev in spec.events.values():
            sources = []
            for s in ev.sources:
                sources.append(s)
                sources.extend(f"{s}:{sub}" for sub, _ in spec.pages[s].substates)
            transitions.append({"trigger": ev.name, "source": sources, "dest": ev.target or "=",
                                "conditions": [_guard]})
            transitions.append({"trigger": ev.name, "source": sources, "dest": None})
        self.transitions = transitions
        self.machine = Machine(model=None, states=self.states, transitions=transitions, initial="blank",
                               auto_transitions=False, send_event=True, ignore_invalid_triggers=True)

    def allowed(self, event: str, state: str) -> bool:
        ev = self.machine.events.get(event)
        return ev is not None and state in ev.transitions

    def fire(self, event: str, state: str, check: Callable[[], str | None]) -> Outcome:
        """Fire ``event`` from control state ``state``; ``check()`` runs the guards and
        returns None or the failure message."""
        if not self.allowed(event, state):
            return Outcome(False, None, state)
        model = _Model(state, check)
        self.machine.events[event].trigger(model)
        return Outcome(True, model.failed, model.state)

    def mermaid(self) -> str:
        """The machine as a Mermaid state diagram (transitions' diagram support)."""
        from transitions.extensions import GraphMachine

        class Holder:
            get_graph: Any   # bound by GraphMachine

        holder = Holder()
        drawn = []
        for t in self.transitions:
            if t["dest"] is None:
                continue
            drawn.append({"trigger": t["trigger"], "source": t["source"], "dest": t["dest"]})
        GraphMachine(model=holder, states=self.states, transitions=drawn, initial=self.spec.start_page(),
                     auto_transitions=False, graph_engine="mermaid", title=f"{self.spec.app} spec v{self.spec.version}")
        graph = holder.get_graph()
        return graph.source if hasattr(graph, "source") else str(graph.draw(None))

    @staticmethod
    def workflow_mermaid(wf: Any) -> str:
        """A workflow (status field) as its own Mermaid state diagram."""
        lines = ["---", f"title: workflow {wf.name} ({wf.table}.{wf.field})", "---", "stateDiagram-v2",
                 f"  [*] --> {wf.initial}"]
        lines += [f"  {a} --> {b}: {n}" for a, b, n in wf.edges]
        return "\n".join(lines) + "\n"

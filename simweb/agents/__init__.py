"""Agents that act through the observation and BrowserGym's action strings.

- :class:`OracleAgent` replays the task's oracle plan; :class:`RandomAgent` is a seeded
  random agent (:mod:`simweb.agents.reference`);
- :class:`ScriptedAgent` runs semantic steps found by role and accessible name, with no
  simweb ids, so one script runs on simweb and on a real site
  (:mod:`simweb.agents.scripted`);
- :class:`LLMAgent` asks any OpenAI-compatible chat endpoint, with BrowserGym's or
  WebGym's prompt (:mod:`simweb.agents.llm`).
"""
from __future__ import annotations

from typing import Any

from .reference import Agent, OracleAgent, RandomAgent
from .scripted import ScriptedAgent

__all__ = ["AGENTS", "Agent", "OracleAgent", "RandomAgent", "ScriptedAgent", "make_agent"]

#: The agent names :func:`make_agent` knows.
AGENTS = ("oracle", "random", "scripted", "llm")


def make_agent(name: str, seed: int = 0, **options: Any) -> Any:
    """An agent by name. ``scripted`` needs ``steps=[...]``; ``llm`` takes
    :class:`simweb.agents.llm.LLMAgent`'s keyword arguments."""
    if name == "oracle":
        return OracleAgent()
    if name == "random":
        return RandomAgent(seed)
    if name == "scripted":
        if "steps" not in options:
            raise ValueError("the scripted agent needs steps=[...]")
        return ScriptedAgent(options.pop("steps"), **options)
    if name == "llm":
        from .llm import LLMAgent

        return LLMAgent(**options)
    raise ValueError(f"unknown agent '{name}' (choose {', '.join(AGENTS)})")

"""An LLM agent for any OpenAI-compatible chat endpoint, with BrowserGym's or WebGym's prompt.

    agent = LLMAgent(model="qwen3-vl-8b", base_url="http://127.0.0.1:8000/v1", prompt="webgym")
    agent.reset(env)
    action = agent.act(obs)      # an action string any simweb backend (and WebEnv) executes

Each step sends the prompt of the chosen format (:mod:`simweb.agents.prompts`) to
``POST {base_url}/chat/completions`` (:class:`simweb.agents.openai_client.ChatClient`:
timeouts, retries on 429/5xx with backoff, one-line :class:`LLMError`) and turns the reply
into one action. A reply that cannot be read is not a crash: the agent sends the reply
text itself, which the env refuses (it never runs) with ``last_action_error`` (and the format's own
reading error is what the model is shown at the next step). ``agent.log`` keeps, per
step, the reply, the action, the reading error, the extra fields (WebGym's memory,
progress, intention) and the token usage.
"""
from __future__ import annotations

import json
from typing import Any

from .openai_client import ChatClient, LLMError
from .prompts import BrowserGymPrompt, WebGymPrompt, unreadable_action

__all__ = ["PROMPTS", "LLMAgent", "LLMError"]

PROMPTS = {"browsergym": BrowserGymPrompt, "webgym": WebGymPrompt}


class LLMAgent:
    """Asks a chat model for every action (see the module doc). ``client`` replaces the
    HTTP client (anything with ``complete(messages) -> Completion``)."""

    name = "llm"

    def __init__(self, model: str = "", base_url: str = "", *, api_key: str | None = None,
                 prompt: str = "browsergym", client: Any = None, timeout: float = 120.0, retries: int = 4,
                 temperature: float | None = 0.0, max_tokens: int | None = None, prompt_format: str | None = None,
                 **prompt_options: Any):
        prompt = prompt_format or prompt   # ``prompt_format``: the name `simweb sim2live --llm-format` passes
        if prompt not in PROMPTS:
            raise ValueError(f"unknown prompt format '{prompt}' (choose {' or '.join(PROMPTS)})")
        self.prompt_name = prompt
        self.prompt = PROMPTS[prompt](**prompt_options)
        self.client = client if client is not None else ChatClient(
            base_url, model, api_key=api_key, timeout=timeout, retries=retries, temperature=temperature,
            max_tokens=max_tokens)
        self.goal = ""
        self.log: list[dict[str, Any]] = []
        self._read_error = ""

    def reset(self, env: Any) -> None:
        """Forget the previous episode (the goal is read from the observations)."""
        self.prompt.reset()
        self.goal = ""
        self.log = []
        self._read_error = ""

    @property
    def done(self) -> bool:
        return False

    def act(self, obs: dict[str, Any]) -> str:
        """The model's next action for ``obs``. Raises :class:`LLMError` when the endpoint
        fails (after its retries)."""
        self.goal = obs.get("goal") or self.goal
        error = self._read_error or obs.get("last_action_error") or ""
        messages = self.prompt.messages(self.goal, obs, error)
        completion = self.client.complete(messages)
        text = completion.text
        if self.prompt_name == "webgym" and "<tool_call>" not in text and completion.tool_calls:
            # a server that returns the call natively: read it as the tagged form
            text = (text + "\n" if text else "") + "<tool_call>" + json.dumps(completion.tool_calls[0]) + "</tool_call>"
        reply = self.prompt.read(text)
        self._read_error = reply.error
        action = reply.action if reply.action is not None else unreadable_action(text)
        self.log.append({"step": len(self.log), "reply": text, "action": action, "read_error": reply.error,
                         "fields": reply.fields or {}, "usage": completion.usage, "tries": completion.tries})
        return action

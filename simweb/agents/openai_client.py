"""A small client for any OpenAI-compatible chat endpoint (``POST {base_url}/chat/completions``).

Only the standard library: one JSON request per call, a timeout per request, retries with
exponential backoff on 429 and 5xx answers and on timeouts (``Retry-After`` is honoured,
up to a cap), and every failure as :class:`LLMError` with a one-line message that names
the endpoint and what went wrong. The API key comes from the caller or
``$OPENAI_API_KEY``; a key is only ever sent as the ``Authorization`` header.
"""
from __future__ import annotations

import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ChatClient", "Completion", "LLMError"]

#: Statuses worth another try: rate limiting and server-side failures.
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
#: Longest wait between two tries, whatever ``Retry-After`` says (seconds).
MAX_WAIT = 60.0


class LLMError(RuntimeError):
    """The endpoint could not give a completion (one-line message)."""


@dataclass
class Completion:
    """A model's reply: its text, the tool calls it made natively (OpenAI's
    ``message.tool_calls``, as ``{"name", "arguments"}``), and the token usage."""

    text: str
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    usage: dict[str, Any] = field(default_factory=dict)
    tries: int = 1


def _one_line(text: str, limit: int = 200) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _error_detail(body: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the body's start."""
    try:
        data = json.loads(body)
    except ValueError:
        return _one_line(body.decode("utf-8", "replace")) or "(empty body)"
    if isinstance(data, dict):
        err = data.get("error", data.get("detail", data))
        if isinstance(err, dict) and "message" in err:
            return _one_line(err["message"])
        return _one_line(err if isinstance(err, str) else json.dumps(err))
    return _one_line(json.dumps(data))


class ChatClient:
    """``ChatClient(base_url, model).complete(messages)`` -> :class:`Completion`.

    ``timeout`` is per request (seconds); ``retries`` more tries after the first on
    429/5xx/timeouts, waiting ``backoff * 2**n`` seconds (or the server's
    ``Retry-After``); ``sleep`` is injectable so tests never wait."""

    def __init__(self, base_url: str, model: str, *, api_key: str | None = None, timeout: float = 120.0,
                 retries: int = 4, backoff: float = 1.0, temperature: float | None = 0.0,
                 max_tokens: int | None = None, sleep: Callable[[float], None] = time.sleep):
        if not base_url or not base_url.startswith(("http://", "https://")):
            raise LLMError(f"the base URL must start with http:// or https://, not {base_url!r}")
        if not model:
            raise LLMError("a model name is needed (--model)")
        self.url = base_url.rstrip("/") + "/chat/completions"
        self.model = model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.timeout = float(timeout)
        self.retries = max(0, int(retries))
        self.backoff = float(backoff)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.sleep = sleep

    def payload(self, messages: list[dict[str, Any]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        return body

    def complete(self, messages: list[dict[str, Any]]) -> Completion:
        """One completion of ``messages``; raises :class:`LLMError`."""
        data = json.dumps(self.payload(messages)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        last = ""
        for attempt in range(self.retries + 1):
            wait = self.backoff * (2 ** attempt)
            request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                    body = resp.read()
                return self._read(body, attempt + 1)
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc.read())
                last = f"HTTP {exc.code}: {detail}"
                if exc.code not in RETRY_STATUSES:
                    raise LLMError(f"{self.url}: {last}") from None
                after = exc.headers.get("Retry-After") if exc.headers else None
                if after:
                    try:
                        wait = max(0.0, float(after))
                    except ValueError:
                        pass
            except TimeoutError:
                last = f"no answer within {self.timeout:g} s"
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = f"no answer within {self.timeout:g} s"
                else:
                    msg = getattr(reason, "strerror", None) or str(reason)
                    raise LLMError(f"cannot reach {self.url}: {_one_line(msg)}") from None
            except (ConnectionError, OSError) as exc:
                last = f"connection failed: {_one_line(exc.strerror or str(exc))}"
            if attempt < self.retries:
                self.sleep(min(wait, MAX_WAIT))
        raise LLMError(f"{self.url}: {last} (gave up after {self.retries + 1} tries)")

    def _read(self, body: bytes, tries: int) -> Completion:
        try:
            data = json.loads(body)
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise LLMError(f"{self.url}: the answer has no choices[0].message: "
                           f"{_one_line(body.decode('utf-8', 'replace'))}") from None
        if not isinstance(message, dict):
            raise LLMError(f"{self.url}: choices[0].message is not an object")
        content = message.get("content")
        if isinstance(content, list):   # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        calls = []
        for call in message.get("tool_calls") or []:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args)
                    except ValueError:
                        pass
                calls.append({"name": fn["name"], "arguments": args})
        usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
        return Completion(content if isinstance(content, str) else "", calls, usage, tries)

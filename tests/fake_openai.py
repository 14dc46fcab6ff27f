"""A tiny OpenAI-compatible chat endpoint on loopback for tests: it answers
``POST /v1/chat/completions`` with scripted completions and records every request."""
from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Callable
from typing import Any


class FakeOpenAI:
    """``with FakeOpenAI(replies) as api: ...`` -- ``api.base_url`` is ``http://127.0.0.1:<port>/v1``.

    ``replies`` is a list consumed one per request; an item is the reply text, a dict
    ``{"status": 429, "body": {...}, "headers": {...}}`` for an HTTP error, a dict
    ``{"message": {...}}`` for a raw message, or a callable of the request body giving
    any of these. ``api.requests`` holds ``{"path", "headers", "body"}`` per request."""

    def __init__(self, replies: list[Any] | Callable[[dict], Any]):
        self.replies = replies
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.loads(raw)
                fake.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                reply = fake.next_reply(body)
                if isinstance(reply, dict) and "status" in reply:
                    self._send(reply["status"], reply.get("body", {"error": {"message": "fake error"}}),
                               reply.get("headers", {}))
                    return
                message = reply["message"] if isinstance(reply, dict) else {"role": "assistant", "content": reply}
                self._send(200, {"id": f"cmpl-{len(fake.requests)}", "object": "chat.completion",
                                 "model": body.get("model"),
                                 "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                                 "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}})

            def _send(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def next_reply(self, body: dict) -> Any:
        if callable(self.replies):
            return self.replies(body)
        if not self.replies:
            return {"status": 500, "body": {"error": {"message": "the fake endpoint ran out of replies"}}}
        reply = self.replies.pop(0)
        return reply(body) if callable(reply) else reply

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/v1"

    def __enter__(self) -> FakeOpenAI:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

"""What the stdlib fake OpenAI servers of these tests share: one chat-completion reply, written
by a ``BaseHTTPRequestHandler``."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any

__all__ = ["REPLY", "send_json"]

REPLY: dict[str, Any] = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
}


def send_json(handler: BaseHTTPRequestHandler, status: int, payload: Any,
              headers: dict[str, str] | None = None) -> None:
    """Read the request body, then answer ``status`` with ``payload`` as JSON (and ``headers``)."""
    handler.rfile.read(int(handler.headers.get("Content-Length", 0)))
    body = json.dumps(payload).encode()
    handler.send_response(status)
    for name, value in (headers or {}).items():
        handler.send_header(name, value)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)

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


TEXT_REPLY = "1) Who wrote Dracula?\nTotal Score: 3\nVerdict: Yes\nAnswer: Dublin"


def completion_for(body: dict[str, Any]) -> dict[str, Any]:
    """A chat completion answering ``body``: a schema-valid object for a structured request
    (``response_format`` or a forced tool), else :data:`TEXT_REPLY`."""
    from structured_fakes import example

    fmt = body.get("response_format") or {}
    message: dict[str, Any] = {"role": "assistant", "content": TEXT_REPLY}
    if body.get("tools"):
        function = body["tools"][0]["function"]
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": "t1", "type": "function",
            "function": {"name": function["name"], "arguments": json.dumps(example(function["parameters"]))}}]}
    elif fmt.get("type") in {"json_schema", "json_object"}:
        schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
        message["content"] = json.dumps(example(schema)) if schema else '{"answer": "Dublin"}'
    return {**REPLY, "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}]}


class SchemaServer(BaseHTTPRequestHandler):
    """An HTTP/1.1 keep-alive fake OpenAI server answering every chat request validly
    (:func:`completion_for`); ``faults`` (a class-level list, shared by the server's threads)
    holds bodies to send instead, one per request, first in first out (e.g. a truncated one)."""

    protocol_version = "HTTP/1.1"  # connections stay open between requests
    faults: list[bytes] = []
    requests = 0

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        type(self).requests += 1
        raw = self.faults.pop(0) if self.faults else json.dumps(completion_for(body)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(raw)))
        self.end_headers()
        self.wfile.write(raw)

    def log_message(self, *args: Any) -> None:
        pass

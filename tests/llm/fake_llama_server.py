"""A stand-in for ``python -m llama_cpp.server`` (stdlib only) for the LlamaCppServer lifecycle
tests: it takes the same arguments, lists ``--model_alias`` at ``GET /v1/models`` and answers
every ``POST`` with one chat completion. ``FAKE_LLAMA_SERVER=exit`` makes it exit with code 1
before binding, as the real server does when its port is taken."""

from __future__ import annotations

import argparse
import json
import os
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def main() -> None:
    parser = argparse.ArgumentParser()
    for flag in ("--model", "--model_alias", "--host", "--port", "--n_ctx", "--n_threads"):
        parser.add_argument(flag)
    args = parser.parse_args()
    print(f"fake llama server for {args.model_alias} on {args.host}:{args.port}", flush=True)
    if os.environ.get("FAKE_LLAMA_SERVER") == "exit":
        print("ERROR: [Errno 98] address already in use", flush=True)
        sys.exit(1)
    models = json.dumps({"object": "list", "data": [{"id": args.model_alias, "object": "model"}]}).encode()
    reply = json.dumps({"id": "c", "object": "chat.completion", "choices": [
        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}).encode()

    class Handler(BaseHTTPRequestHandler):
        def _send(self, body: bytes) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            self._send(models)

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self._send(reply)

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - stdlib name
            pass

    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer((args.host, int(args.port)), Handler).serve_forever()


if __name__ == "__main__":
    main()

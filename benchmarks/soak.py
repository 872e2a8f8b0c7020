"""Soak benchmark (issue 33; not in CI): many synchronous ``pipeline.run()`` calls of each
pipeline (DF-RAG, DIVA, Vendi-RAG, DR-RAG) from 16 threads on one shared ``OpenAILLM``, as a
service calling ``run()`` per request would, against a fake OpenAI-compatible server (stdlib,
HTTP/1.1 keep-alive, in its own process, answering every structured request with a
schema-valid object and every text request with a fixed reply).

It reports, per pipeline, open descriptors, OS threads and RSS of this process at the start
(after one warm-up run) and at the end (after the last run, then after ``llm.close()``), the
runs done, and the errors by type. A leak shows as a rise from start to end.

Reproduce (from the repository root; the full run; ``--max-seconds`` caps each pipeline)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE nice -n 10 \\
        python benchmarks/soak.py --runs 10000 --threads 16
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import numpy as np

CORPUS = [
    "Dracula is an 1897 novel by the Irish author Bram Stoker.",
    "Bram Stoker was born in Clontarf, Dublin, in 1847.",
    "Clontarf is a coastal suburb on the north side of Dublin.",
    "The Sydney Opera House opened in 1973.",
    "Mount Everest is the highest mountain above sea level.",
    "Paris is the capital of France.",
    "The Nile is a major river in north-eastern Africa.",
    "Frankenstein was written by Mary Shelley and published in 1818.",
    "Mary Shelley was born in Somers Town, London.",
    "Somers Town is a district in north-west London.",
    "The Danube flows through ten countries.",
    "Lisbon is the capital of Portugal.",
]
QUESTION = "In which city was the author of Dracula born?"
TEXT_REPLY = "1) Who wrote Dracula?\n2) Where was the author born?\nTotal Score: 3\nVerdict: Yes\nAnswer: Dublin"


# ----------------------------------------------------------------------------- the fake server
def example(schema: dict[str, Any]) -> Any:
    """A schema-valid value (the last of an integer enum, the first of a string enum)."""
    kind = schema.get("type")
    if "enum" in schema:
        values = list(schema["enum"])
        return values[-1] if kind == "integer" else values[0]
    if kind == "object":
        return {k: example(v) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [example(schema["items"]) for _ in range(max(1, int(schema.get("minItems", 0))))]
    if kind == "string":
        return "Dublin"[: int(schema.get("maxLength", 6))] or "D"
    if kind == "integer":
        return int(schema.get("minimum", 0))
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        fmt = body.get("response_format") or {}
        message: dict[str, Any] = {"role": "assistant", "content": TEXT_REPLY}
        if body.get("tools"):
            schema = body["tools"][0]["function"]["parameters"]
            message = {"role": "assistant", "content": None, "tool_calls": [{
                "id": "t1", "type": "function",
                "function": {"name": body["tools"][0]["function"]["name"], "arguments": json.dumps(example(schema))}}]}
        elif fmt.get("type") in {"json_schema", "json_object"}:
            schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema") or {}
            message["content"] = json.dumps(example(schema))
        reply = json.dumps({
            "id": "c", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": message}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args: Any) -> None:
        pass


def serve() -> None:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    print(httpd.server_address[1], flush=True)
    httpd.serve_forever()


# ----------------------------------------------------------------------------- the client side
def embed(texts: Any) -> np.ndarray:
    """A deterministic, text-dependent unit vector per text (no model: the soak is about the LLM layer)."""
    out = []
    for text in texts:
        v = np.random.default_rng(int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)).normal(size=32)
        out.append(v / np.linalg.norm(v))
    return np.stack(out).astype(np.float32)


def gauges() -> tuple[int, int, float]:
    """(open descriptors, OS threads, RSS in MiB) of this process."""
    status = dict(line.split(":", 1) for line in open("/proc/self/status").read().splitlines() if ":" in line)
    return len(os.listdir("/proc/self/fd")), int(status["Threads"]), int(status["VmRSS"].split()[0]) / 1024


def pipelines(llm: Any) -> dict[str, Callable[[], Any]]:
    from diverse_core.pipelines.dfrag import DFRAG
    from diverse_core.pipelines.diva.pipeline import DIVA
    from diverse_core.pipelines.drrag.pipeline import DRRAG
    from diverse_core.pipelines.vendirag.pipeline import VendiRAG

    return {"DF-RAG": lambda: DFRAG(llm, k=3), "DIVA": lambda: DIVA(llm, k=3),
            "Vendi-RAG": lambda: VendiRAG(llm, k=3), "DR-RAG": lambda: DRRAG(llm, k=3)}


def soak(name: str, make: Callable[[], Any], runs: int, threads: int, max_seconds: float) -> dict[str, Any]:
    from diverse_core.pipelines import InMemorySource

    source = InMemorySource(CORPUS, embedder=embed)
    pipe = make()
    pipe.run(QUESTION, source, generate=True)  # warm-up
    gc.collect()
    start = gauges()
    errors: Counter[str] = Counter()
    done = 0
    lock = threading.Lock()
    t0 = time.perf_counter()
    counter = iter(range(runs))

    def worker() -> None:
        nonlocal done
        while time.perf_counter() - t0 < max_seconds:
            with lock:
                if next(counter, None) is None:
                    return
            try:
                result = pipe.run(QUESTION, source, generate=True)
                if not result.answer:
                    raise RuntimeError("empty answer")
            except Exception as exc:  # noqa: BLE001 - counted by type
                with lock:
                    errors[type(exc).__name__] += 1
            with lock:
                done += 1

    with ThreadPoolExecutor(threads) as pool:
        for _ in range(threads):
            pool.submit(worker)
    seconds = time.perf_counter() - t0
    gc.collect()
    end = gauges()
    return {"pipeline": name, "runs": done, "seconds": seconds, "start": start, "end": end,
            "errors": dict(errors)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10_000, help="runs per pipeline (default 10000)")
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--max-seconds", type=float, default=float("inf"), help="stop a pipeline's runs after this")
    ap.add_argument("--pipelines", nargs="*", default=None, help="a subset, e.g. DR-RAG DIVA")
    ap.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve()
        return
    server = subprocess.Popen([sys.executable, __file__, "--serve"], stdout=subprocess.PIPE, text=True)
    try:
        port = int(server.stdout.readline())  # type: ignore[union-attr]
        from diverse_core.llm import OpenAILLM

        llm = OpenAILLM(model="soak", base_url=f"http://127.0.0.1:{port}/v1")
        rows = []
        before = gauges()
        for name, make in pipelines(llm).items():
            if args.pipelines and name not in args.pipelines:
                continue
            row = soak(name, make, args.runs, args.threads, args.max_seconds)
            rows.append(row)
            print(json.dumps(row), flush=True)
        llm.close()
        gc.collect()
        after = gauges()
    finally:
        server.terminate()
        server.wait()
    print()
    print(f"{args.threads} threads; process before any run: {before[0]} fds, {before[1]} threads, "
          f"{before[2]:.0f} MiB; after llm.close(): {after[0]} fds, {after[1]} threads, {after[2]:.0f} MiB")
    print()
    print("| pipeline | runs | runs/s | fds start → end | threads start → end | RSS MiB start → end | errors |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        (f0, t0, m0), (f1, t1, m1) = r["start"], r["end"]
        errs = ", ".join(f"{k}: {v}" for k, v in sorted(r["errors"].items())) or "0"
        print(f"| {r['pipeline']} | {r['runs']} | {r['runs'] / r['seconds']:.1f} | {f0} → {f1} | {t0} → {t1} "
              f"| {m0:.0f} → {m1:.0f} | {errs} |")


if __name__ == "__main__":
    main()

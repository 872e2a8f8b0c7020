"""Run by ``test_openai_lifecycle.py`` in a subprocess: ``N`` synchronous ``DRRAG.run()`` calls on
one ``OpenAILLM`` against a keep-alive server, under ``RLIMIT_NOFILE=256``; prints one JSON line
with the open descriptors, threads and RSS after the first run, at every tenth of the way, and at the end.

Usage: ``python lifecycle_probe.py BASE_URL N``
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time

resource.setrlimit(resource.RLIMIT_NOFILE, (256, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

from diverse_core.llm import OpenAILLM  # noqa: E402 - after the limit is set
from diverse_core.pipelines.drrag.pipeline import DRRAG  # noqa: E402
from structured_fakes import source  # noqa: E402


def fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def threads() -> int:
    """OS threads of this process (Python's and any library's)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("Threads:"))


def main() -> None:
    base_url, n = sys.argv[1], int(sys.argv[2])
    llm = OpenAILLM(model="m", base_url=base_url, structured_methods=())
    pipe = DRRAG(llm, k=2, max_retries=0)
    src = source()
    samples = []
    start = time.perf_counter()
    errors: dict[str, int] = {}
    for i in range(n):
        try:
            result = pipe.run("Where was the author of Dracula born?", src)
            assert result.answer == "ok", result.answer
        except Exception as exc:  # noqa: BLE001 - counted, reported
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
        if i == 0 or (i + 1) % max(1, n // 10) == 0:
            samples.append((i + 1, fds(), threads(), rss_mib()))
    live = len(llm._loop_clients)  # clients of finished loops must not be kept (nor their loops)
    llm.close()
    samples.append((-1, fds(), threads(), rss_mib()))
    print(json.dumps({"samples": samples, "errors": errors, "seconds": time.perf_counter() - start,
                      "live_loop_clients": live}))


if __name__ == "__main__":
    main()

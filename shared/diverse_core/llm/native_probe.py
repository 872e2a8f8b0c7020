"""Whether llama-cpp-python survives a short generation, tested in a child process: a library
built for another CPU can crash the interpreter that runs it, and a crash in the child cannot."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

__all__ = ["REBUILD_HINT", "describe_exit", "probe_native"]

#: The command that rebuilds llama-cpp-python for a portable CPU target (named in warnings).
REBUILD_HINT = ('CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --force-reinstall --no-cache-dir '
                '"llama-cpp-python"')
_PROBE_TIMEOUT_S = 300.0
_PROBE_OK = "llama_cpp generation ok"
# The child's program: argv = the parent's sys.path (JSON), model file, n_threads (0 = default).
# A multi-token prompt matters: a natively built library was seen to crash only on those.
_PROBE = f"""
import json, sys
sys.path[:] = json.loads(sys.argv[1])
from llama_cpp import Llama
kw = {{"n_threads": int(sys.argv[3])}} if int(sys.argv[3]) else {{}}
llm = Llama(model_path=sys.argv[2], n_ctx=256, verbose=False, **kw)
llm.create_chat_completion(messages=[{{"role": "user", "content": "Name three colours of the rainbow."}}],
                           max_tokens=2, temperature=0.0)
llm.close()
print({_PROBE_OK!r})
"""


def describe_exit(code: int) -> str:
    """How a child process ended, in words (``crashed (SIGSEGV)``, ``exited with code 1``)."""
    if code < 0:
        try:
            return f"crashed ({signal.Signals(-code).name})"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code}"


def probe_native(model_path: str, n_threads: int | None) -> str | None:
    """Run a two-token generation with llama-cpp-python in a child process: ``None`` when it
    succeeds, else what went wrong (a crash there cannot take this process down)."""
    cmd = [sys.executable, "-c", _PROBE, json.dumps(sys.path), model_path, str(n_threads or 0)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return f"did not finish within {_PROBE_TIMEOUT_S:g} s"
    except OSError as exc:
        return f"could not be tested ({exc})"
    if done.returncode == 0 and _PROBE_OK in done.stdout:
        return None
    last = [line for line in done.stderr.strip().splitlines() if line.strip()][-1:]
    return describe_exit(done.returncode) + (f": {last[0][:300]}" if last else "")

"""What the LlamaCppServer lifecycle tests share (``tests/llm`` with a stand-in server,
``tests/realserver`` with the real one): the stand-in's path, a "process gone" check, and a
parent process that starts a server and is then SIGKILLed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from llama_server import port_in_use

__all__ = ["FAKE", "assert_server_follows", "gone", "run_parent_and_kill_it"]

#: The stand-in for ``python -m llama_cpp.server`` (stdlib only).
FAKE = str(Path(__file__).with_name("fake_llama_server.py"))


def gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaped yet counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1].startswith("Z")
    except (OSError, IndexError):
        return False


def run_parent_and_kill_it(script: str, *args: str) -> dict[str, Any]:
    """Start ``script`` (which starts a server and prints its pid, port and log path) in a
    child process, SIGKILL that parent, and return what it printed."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    parent = subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, env=env, text=True)
    try:
        line = parent.stdout.readline() if parent.stdout is not None else ""
        assert line, f"the parent printed nothing (exit code {parent.poll()})"
        info: dict[str, Any] = json.loads(line)
        assert not gone(info["pid"]) and port_in_use("127.0.0.1", info["port"])
    finally:
        parent.kill()
        parent.wait(timeout=10)
        if parent.stdout is not None:
            parent.stdout.close()
    return info


def assert_server_follows(info: dict[str, Any], within_s: float = 5.0) -> None:
    """The server of :func:`run_parent_and_kill_it` ends within ``within_s``: its process
    gone, its port free, its temporary log file removed."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline and not (gone(info["pid"]) and not port_in_use("127.0.0.1", info["port"])):
        time.sleep(0.1)
    ended = gone(info["pid"])
    if not ended:
        os.kill(info["pid"], signal.SIGKILL)  # do not leave it behind when the test fails
    assert ended, f"the server (pid {info['pid']}) outlived its SIGKILLed parent by {within_s} s"
    assert not port_in_use("127.0.0.1", info["port"])
    assert not Path(info["log"]).exists(), "the temporary log file outlived the server"

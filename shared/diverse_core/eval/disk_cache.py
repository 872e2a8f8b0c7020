"""A persistent embedding cache keyed by (model name, sha1 of the text).

Vectors live in ``<cache_dir>/<model slug>/shard-*.npz`` files, each holding the
sha1 keys, the float32 vectors of one batch of newly embedded texts and the model name.
Shards are written to a temporary name and renamed (atomic), so an interrupted run keeps
its progress and no reader ever sees half a shard; they are merged into one file once
there are many. A second run over the same texts embeds nothing.

Concurrency: one object is safe to share between threads (a lock guards its index, and a
text that several threads miss at once is embedded once); several processes may share one
folder (each reads the shards the others completed, skips unreadable or foreign ones with a
warning, keeps each text's vector once however many shards hold it, and merges away only
shards whose vectors it holds). Folders written by earlier versions (shards without the
model name) are read as they are.

Storage that fails: a folder that cannot be written (read-only, disk full, no permission)
costs one warning per cache object; the vectors are still returned and kept in memory,
nothing more is written by that object, and no temporary file is left behind. A shard of
another dimension is skipped with a warning naming it.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import sys
import threading
import time
import uuid
import warnings
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..embedding_cache import InFlight, wait_for
from ..embedding_cache.vectors import check_texts
from ..errors import DimensionMismatchError, InvalidParameterError, NonFiniteInputError

__all__ = ["DiskEmbeddingCache", "default_cache_dir", "embedding_cache", "text_keys"]

EmbedFn = Callable[[list[str]], "NDArray[np.floating] | Sequence[Sequence[float]]"]
ProgressFn = Callable[[int, int], None]


#: Environment variable naming the embedding cache folder.
CACHE_ENV = "DIVERSE_RAG_CACHE"


def default_cache_dir() -> Path:
    """``$DIVERSE_RAG_CACHE`` if set, else the user's cache folder + ``diverse-rag``.

    The user's cache folder: ``$XDG_CACHE_HOME`` or ``~/.cache`` on Linux,
    ``~/Library/Caches`` on macOS, ``%LOCALAPPDATA%`` on Windows. Never a path inside
    the installed package.
    """
    env = os.environ.get(CACHE_ENV)
    if env:
        return Path(env).expanduser()
    if sys.platform == "win32":
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local")
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Caches"
    else:
        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "diverse-rag"


def user_model_dir() -> Path:
    """Where ``diverse-rag train`` writes models by default: a user-writable folder, never the
    installed package (``$XDG_DATA_HOME/diverse-rag/models``, else ``~/.local/share/diverse-rag/models``;
    ``%LOCALAPPDATA%`` on Windows). Pass ``--out``/``--out-dir`` to write elsewhere (maintainers
    refreshing the shipped models pass the package's ``models`` folder)."""
    base = os.environ.get("XDG_DATA_HOME") or (os.environ.get("LOCALAPPDATA") if os.name == "nt" else None)
    return Path(base or Path.home() / ".local" / "share") / "diverse-rag" / "models"


#: The packaged MiniLM's cache name (the harness's default ``model_name``).
MINILM = "all-MiniLM-L6-v2"


def embedding_cache(embedder: Any = None, model_name: str | None = MINILM, cache_dir: str | Path | None = None,
                    *, progress: bool = True) -> DiskEmbeddingCache:
    """The disk cache of ``embedder`` (default: the packaged MiniLM), under the embedder's own name.

    The name is ``model_name`` when given and not the MiniLM default, else the embedder's
    ``name`` attribute: another embedder's vectors are never served under MiniLM's name.

    Raises:
        InvalidParameterError: an embedder with no ``name`` and no ``model_name`` of its own.
    """
    if embedder is None:
        from ..embedders import get_default_embedder

        return DiskEmbeddingCache(get_default_embedder(), model_name or MINILM, cache_dir, progress=progress)
    own = getattr(embedder, "name", None)
    if model_name in (None, MINILM):
        if not (isinstance(own, str) and own):
            raise InvalidParameterError(
                f"embedder={embedder!r} has no name attribute: pass model_name= naming it (the key of its cached "
                f"vectors; {MINILM!r} is the packaged MiniLM's)")
        model_name = own
    return DiskEmbeddingCache(embedder, str(model_name), cache_dir, progress=progress)


def text_keys(texts: Sequence[str]) -> list[str]:
    """The cache keys of ``texts`` (each text's sha1 hex digest).

    Raises:
        InvalidTextError: a text is not a string or has no UTF-8 encoding (a lone surrogate),
            naming its position.
    """
    try:
        return [hashlib.sha1(t.encode("utf-8")).hexdigest() for t in texts]
    except (UnicodeEncodeError, AttributeError):
        check_texts(texts)  # raises, naming the text
        raise  # pragma: no cover - check_texts raised


def _slug(name: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")
    if not slug:
        raise ValueError(f"model_name must contain a letter or digit; got model_name={name!r}")
    return slug


class DiskEmbeddingCache:
    """Embed each distinct text once per model and keep the vectors on disk.

    Args:
        embed_fn: ``embed_fn(texts) -> (len(texts), d)`` array.
        model_name: identifies the model; vectors of different names never mix.
        cache_dir: root folder (default :func:`default_cache_dir`).
        batch_size: texts handed to ``embed_fn`` per call (also the shard size).
        progress: show a tqdm bar while embedding (needs the ``bench`` extra).

    Attributes:
        embedded: texts embedded (cache misses) by this object so far.
        hits: texts served from the cache so far.

    Example:
        >>> import tempfile
        >>> fake = lambda ts: [[float(len(t)), 1.0] for t in ts]
        >>> with tempfile.TemporaryDirectory() as d:
        ...     a = DiskEmbeddingCache(fake, "fake", d, progress=False)
        ...     _ = a.embed(["x", "yy"])
        ...     b = DiskEmbeddingCache(fake, "fake", d, progress=False)
        ...     b.embed(["yy"]).tolist(), b.embedded
        ([[2.0, 1.0]], 0)
    """

    def __init__(
        self,
        embed_fn: EmbedFn,
        model_name: str,
        cache_dir: str | Path | None = None,
        *,
        batch_size: int = 1024,
        progress: bool = True,
        merge_above: int = 16,
    ) -> None:
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1; got batch_size={batch_size!r}")
        self._embed_fn = embed_fn
        self.model_name = model_name
        self.folder = Path(cache_dir or default_cache_dir()) / _slug(model_name)
        self.batch_size = int(batch_size)
        self.progress = progress
        self.merge_above = merge_above
        self._rows: dict[str, int] = {}
        self._blocks: list[NDArray[np.float32]] = []
        self._matrix: NDArray[np.float32] | None = None
        self._seen: set[Path] = set()  # shards read or written (or found unreadable) by this object
        self._own: set[Path] = set()  # shards this object has read or written (the only ones it may merge away)
        self._read_from: list[Path] = []  # shards whose vectors are in memory
        self._unwritable: str | None = None  # why the folder cannot be written (then nothing more is)
        self._lock = threading.RLock()
        self._flight: InFlight[str] = InFlight()
        self._queries: DiskEmbeddingCache | None = None
        self.embedded = 0
        self.hits = 0
        self.embed_seconds = 0.0

    def __len__(self) -> int:
        with self._lock:
            self._refresh()
            return len(self._rows)

    def _shards(self) -> list[Path]:
        return sorted(self.folder.glob("shard-*.npz"))

    def _refresh(self) -> None:
        """Read the completed shards not read yet (written by another process since); caller holds the lock.

        A shard merged away by another process between listing and reading is skipped: its
        vectors are in the merged shard, which the next listing finds.
        """
        while True:
            new = [p for p in self._shards() if p not in self._seen and not p.name.endswith(".tmp.npz")]
            if not new:
                return
            for path in new:
                self._seen.add(path)
                read = self._read(path)
                if read is None:
                    continue
                held = self._dimension()
                if held is not None and read[1].shape[1] != held:
                    warnings.warn(
                        f"{path}: embedding shard of dimension {read[1].shape[1]}, not {held} like the "
                        f"other vectors of model {self.model_name!r}; skipped",
                        UserWarning, stacklevel=4,
                    )
                    continue
                self._own.add(path)
                self._read_from.append(path)
                self._add(*read)

    def _read(self, path: Path) -> tuple[list[str], NDArray[np.float32]] | None:
        """A shard's keys and vectors; ``None`` (with a warning) if it is gone, unreadable or foreign."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if "model" in data.files and str(data["model"]) != self.model_name:
                    warnings.warn(
                        f"{path}: vectors of model {str(data['model'])!r}, not {self.model_name!r} "
                        "(two model names map to this folder); skipped",
                        UserWarning, stacklevel=4,
                    )
                    return None
                keys = [k.decode("ascii") for k in data["keys"].tolist()]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
        except FileNotFoundError:
            return None  # merged away by another process meanwhile
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
            warnings.warn(f"{path}: unreadable embedding shard skipped ({type(exc).__name__}: {exc})",
                          UserWarning, stacklevel=4)
            return None
        if vectors.ndim != 2 or vectors.shape[0] != len(keys) or not np.all(np.isfinite(vectors)):
            warnings.warn(f"{path}: malformed embedding shard skipped (shape {vectors.shape}, "
                          f"{len(keys)} keys)", UserWarning, stacklevel=4)
            return None
        return keys, vectors

    def _dimension(self) -> int | None:
        """The dimension of the vectors held (``None``: none held yet)."""
        return int(self._blocks[0].shape[1]) if self._blocks else None

    def _add(self, keys: list[str], vectors: NDArray[np.float32]) -> None:
        """Hold the vectors of the keys not held yet (each key once: shards of other processes
        repeat the keys they merged)."""
        fresh: dict[str, int] = {}
        rows = self._rows
        for i, key in enumerate(keys):
            if key not in rows and key not in fresh:
                fresh[key] = i
        if not fresh:
            return
        if len(fresh) < len(keys):
            vectors = vectors[np.fromiter(fresh.values(), dtype=np.int64, count=len(fresh))]
        base = sum(b.shape[0] for b in self._blocks)
        self._blocks.append(vectors)
        self._matrix = None
        rows.update(zip(fresh, range(base, base + len(fresh)), strict=True))

    def _fit_dimension(self, d: int) -> None:
        """Make room for freshly embedded ``d``-d vectors; caller holds the lock.

        Vectors read from disk of another dimension (shards left by another model under this
        name) are dropped from memory with a warning naming their shards; vectors this object
        embedded itself of another dimension mean the model changed: a typed error.
        """
        held = self._dimension()
        if held is None or held == d:
            return
        if self.embedded:
            raise DimensionMismatchError(
                f"embed_fn for model {self.model_name!r} returned {d}-d vectors after {held}-d ones"
            )
        shown = ", ".join(str(p) for p in self._read_from[:5]) + (" ..." if len(self._read_from) > 5 else "")
        warnings.warn(
            f"embedding shards of dimension {held} ({shown}) do not match model {self.model_name!r}, "
            f"which returns {d}-d vectors; they are ignored",
            UserWarning, stacklevel=4,
        )
        self._own.difference_update(self._read_from)
        self._read_from.clear()
        self._rows.clear()
        self._blocks.clear()
        self._matrix = None

    def _matrix_view(self) -> NDArray[np.float32]:
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if self._blocks else np.zeros((0, 0), np.float32)
            self._blocks = [self._matrix]
        return self._matrix

    @property
    def writable(self) -> bool:
        """Whether this object still writes to its folder (``False`` after a failed write)."""
        return self._unwritable is None

    def _write(self, keys: list[str], vectors: NDArray[np.float32]) -> bool:
        """Write one shard; ``False`` (and, the first time, a warning) if the folder cannot take it.

        A failed write removes its temporary file and stops this object's writing: the vectors
        stay in memory.
        """
        if self._unwritable is not None:
            return False
        name = f"shard-{time.time_ns():020d}-{uuid.uuid4().hex[:8]}"
        # The temporary name does not match ``shard-*.npz``: no reader (of this or an earlier
        # version) ever opens a shard that is still being written.
        tmp = self.folder / f"tmp-{name}.npz"
        final = self.folder / f"{name}.npz"
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            np.savez(tmp, keys=np.array(keys, dtype="S40"), vectors=vectors, model=np.array(self.model_name))
            os.replace(tmp, final)
        except OSError as exc:
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            self._unwritable = f"{type(exc).__name__}: {exc}"
            warnings.warn(
                f"embedding cache folder {self.folder} cannot be written ({self._unwritable}); "
                "vectors are kept in memory only and this cache writes nothing more",
                RuntimeWarning, stacklevel=4,
            )
            return False
        self._own.add(final)
        self._seen.add(final)
        return True

    def _merge(self) -> None:
        """Rewrite the shards this object knows as one file (keeps the folder small); caller holds the lock.

        Only shards it read or wrote itself are removed: another process sharing the
        folder may have written shards since, and their vectors are not in memory here.
        """
        if self._unwritable is not None:
            return
        shards = [p for p in self._shards() if p in self._own]
        if len(shards) <= self.merge_above:
            return
        matrix = self._matrix_view()
        keys = sorted(self._rows, key=self._rows.__getitem__)
        if not self._write(keys, matrix[[self._rows[k] for k in keys]]):
            return
        for path in shards:
            with contextlib.suppress(OSError):  # e.g. already merged away by another process
                path.unlink(missing_ok=True)
            self._own.discard(path)

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Vectors for ``texts`` in order, shape (len(texts), d); only unseen texts are embedded.

        Safe to call from many threads at once: a new text several threads ask for is
        embedded by one of them, the others wait for it.
        """
        keys = text_keys(texts)
        if not keys:
            return np.zeros((0, 0), dtype=np.float32)
        for _ in range(3):  # again only after vectors read from disk of another dimension were dropped
            self._embed_absent(keys, texts)
            with self._lock:
                rows = self._rows
                if all(k in rows for k in keys):
                    return self._matrix_view()[np.fromiter(map(rows.__getitem__, keys), np.int64, len(keys))]
        raise DimensionMismatchError(  # pragma: no cover - a model whose dimension keeps changing
            f"embed_fn for model {self.model_name!r} keeps returning vectors of another dimension"
        )

    def embed_queries(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Question vectors: through the embedder's ``query`` role (cached as ``<model_name>+query``)
        when it has one (e5's ``query: ``, bge's instruction), else as :meth:`embed`."""
        query = getattr(self._embed_fn, "query", None)
        if not callable(query):
            return self.embed(texts)
        with self._lock:
            if self._queries is None:
                self._queries = DiskEmbeddingCache(query, self.model_name + "+query", self.folder.parent,
                                                   batch_size=self.batch_size, progress=self.progress)
        q = self._queries
        before = (q.embedded, q.hits, q.embed_seconds)
        out = q.embed(texts)
        self.embedded += q.embedded - before[0]
        self.hits += q.hits - before[1]
        self.embed_seconds += q.embed_seconds - before[2]
        return out

    def _embed_absent(self, keys: list[str], texts: Sequence[str]) -> None:
        """Embed (or wait for another thread embedding) the texts whose keys are not held."""
        with self._lock:
            if not self._seen or any(k not in self._rows for k in keys):
                self._refresh()
            missing: dict[str, str] = {}
            for key, text in zip(keys, texts, strict=True):
                if key not in self._rows and key not in missing:
                    missing[key] = text
            self.hits += len(keys) - len(missing)
        while missing:
            with self._lock:
                mine, theirs = self._flight.claim([k for k in missing if k not in self._rows])
            if mine:
                try:
                    self._embed_missing({k: missing[k] for k in mine})
                except BaseException:
                    with self._lock:
                        self._flight.fail(mine)
                    raise
                with self._lock:
                    self._merge()
            # what another thread was embedding: wait; if it failed, claim it again. A key owned by
            # this very thread (a re-entrant call) is embedded here at once, never waited for.
            here = {k: missing[k] for k, entry in theirs.items() if entry[1] == threading.get_ident()
                    and not entry[0].done()}
            if here:
                self._embed_missing(here)
            missing = {k: missing[k] for k, entry in theirs.items() if k not in here and wait_for(entry) is None}

    def _embed_missing(self, missing: dict[str, str]) -> None:
        # Similar lengths together: less padding inside each model batch.
        items = sorted(missing.items(), key=lambda kv: len(kv[1]))
        bar = None
        if self.progress:
            from ._deps import require

            tqdm = require("tqdm", "progress bars").tqdm
            bar = tqdm(total=len(items), desc=f"embedding ({self.model_name})", unit="text")
        start = time.perf_counter()
        try:
            for i in range(0, len(items), self.batch_size):
                chunk = items[i : i + self.batch_size]
                texts = [t for _, t in chunk]
                vectors = np.asarray(self._embed_fn(texts), dtype=np.float32)
                if vectors.ndim != 2 or vectors.shape[0] != len(texts):
                    raise DimensionMismatchError(
                        f"embed_fn returned shape {vectors.shape} for {len(texts)} texts"
                    )
                if not np.all(np.isfinite(vectors)):
                    raise NonFiniteInputError("embed_fn returned NaN or inf values")
                keys = [k for k, _ in chunk]
                with self._lock:
                    self._fit_dimension(vectors.shape[1])
                    self._write(keys, vectors)
                    self._add(keys, vectors)
                    self.embedded += len(texts)
                    for key in keys:
                        self._flight.resolve(key, True)
                if bar is not None:
                    bar.update(len(texts))
        finally:
            with self._lock:
                self.embed_seconds += time.perf_counter() - start
            if bar is not None:
                bar.close()

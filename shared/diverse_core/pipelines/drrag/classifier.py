"""The compact DR-RAG pair classifier: (question, document A, document B) -> P(both are needed).

A small numpy model over :func:`~diverse_core.pipelines.drrag.features.pair_features`
(MiniLM embedding interactions plus lexical overlaps): logistic regression (``kind="logreg"``)
or a one-hidden-layer MLP (``kind="mlp"``), trained with Adam on class-weighted log-loss.
The shipped model (``drrag_classifier.npz`` next to this module, trained by
``diverse-rag train drrag``) is loaded lazily on first use.

Any callable ``(question, doc_a, doc_b) -> probability`` (a cross-encoder, an LLM judge) can
stand in for it: :func:`make_scorer` turns either into the batched scorer the selection uses.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 5)).astype(np.float32); y = (X[:, 0] > 0).astype(np.float32)
    >>> clf = PairClassifier(kind="logreg", epochs=30, lr=0.05).fit(X, y)
    >>> bool(clf.predict_features(X[:1] * 0 + [[3, 0, 0, 0, 0]])[0] > 0.5)
    True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._lazy import ProcessDefault
from ...errors import DimensionMismatchError, InvalidParameterError
from ...validation import check_k, check_positive, check_unit_interval
from .features import SCALAR_NAMES, pair_features

__all__ = ["KINDS", "PairClassifier", "PairFn", "default_classifier", "default_path", "make_scorer"]

KINDS = ("logreg", "mlp")

#: A plain pair judge: ``(question, doc_a, doc_b) -> probability``.
PairFn = Callable[[str, str, str], float]

Array = NDArray[np.float32]


def default_path() -> Path:
    """Where the shipped classifier lives (inside the package)."""
    return Path(__file__).with_name("drrag_classifier.npz")


def _sigmoid(z: NDArray[np.floating[Any]]) -> Array:
    out: Array = (0.5 * (1.0 + np.tanh(0.5 * z))).astype(np.float32)
    return out


class PairClassifier:
    """Logistic regression or a one-hidden-layer MLP over pair features, in numpy.

    Args:
        kind: ``"logreg"`` or ``"mlp"``.
        hidden: hidden units of the MLP.
        l2: L2 weight penalty.
        lr: Adam step size.
        epochs: passes over the data.
        batch_size: examples per Adam step.
        seed: seeds the initialisation and the shuffling (training is deterministic).
        threshold: probability at or above which a pair counts as positive.
        last: use only the last ``last`` feature columns (e.g. ``len(SCALAR_NAMES)`` for the
            scalar features alone); ``0`` uses all.

    Example:
        >>> clf = PairClassifier(kind="mlp", hidden=8)
        >>> clf.kind, clf.threshold
        ('mlp', 0.5)
    """

    def __init__(
        self,
        kind: str = "mlp",
        *,
        hidden: int = 64,
        l2: float = 1e-4,
        lr: float = 1e-3,
        epochs: int = 20,
        batch_size: int = 256,
        seed: int = 0,
        threshold: float = 0.5,
        last: int = 0,
    ) -> None:
        if kind not in KINDS:
            raise InvalidParameterError(f"kind must be one of {list(KINDS)}; got kind={kind!r}")
        self.kind = kind
        self.hidden = check_k(hidden, "hidden")
        self.l2 = float(l2) if l2 == 0 else check_positive(l2, "l2")
        self.lr = check_positive(lr, "lr")
        self.epochs = check_k(epochs, "epochs")
        self.batch_size = check_k(batch_size, "batch_size")
        self.seed = int(seed)
        self.threshold = check_unit_interval(threshold, "threshold")
        if isinstance(last, bool) or not isinstance(last, int) or last < 0:
            raise InvalidParameterError(f"last must be a non-negative integer; got last={last!r}")
        self.last = last
        self.params: dict[str, Array] = {}
        self.meta: dict[str, str] = {}

    # -- training -------------------------------------------------------------------------

    def _init(self, n_in: int, rng: np.random.Generator) -> None:
        if self.kind == "logreg":
            self.params.update(w=np.zeros((n_in, 1), np.float32), b=np.zeros(1, np.float32))
        else:
            w1 = rng.normal(0.0, np.sqrt(2.0 / n_in), size=(n_in, self.hidden)).astype(np.float32)
            w2 = rng.normal(0.0, np.sqrt(1.0 / self.hidden), size=(self.hidden, 1)).astype(np.float32)
            self.params.update(
                w1=w1, b1=np.zeros(self.hidden, np.float32), w2=w2, b2=np.zeros(1, np.float32)
            )

    def _logits(self, Z: Array) -> tuple[Array, Array | None]:
        p = self.params
        if self.kind == "logreg":
            return (Z @ p["w"] + p["b"]).reshape(-1), None
        h = np.maximum(Z @ p["w1"] + p["b1"], 0.0)
        return (h @ p["w2"] + p["b2"]).reshape(-1), h

    def _grads(self, Z: Array, y: Array, wt: Array) -> dict[str, Array]:
        logit, h = self._logits(Z)
        g = ((_sigmoid(logit) - y) * wt / wt.sum()).astype(np.float32)[:, None]  # d loss / d logit
        p = self.params
        if self.kind == "logreg":
            return {"w": Z.T @ g + self.l2 * p["w"], "b": g.sum(0)}
        assert h is not None
        gh = (g @ p["w2"].T) * (h > 0)
        return {
            "w1": Z.T @ gh + self.l2 * p["w1"],
            "b1": gh.sum(0),
            "w2": h.T @ g + self.l2 * p["w2"],
            "b2": g.sum(0),
        }

    def fit(self, X: ArrayLike2D, y: ArrayLike1D, sample_weight: ArrayLike1D | None = None) -> PairClassifier:
        """Fit on feature rows ``X`` (n, f) and 0/1 labels ``y``; classes are weighted to balance.

        Args:
            X: feature matrix, e.g. from :func:`pair_features`.
            y: labels (1: both documents needed).
            sample_weight: extra per-row weights (multiplied with the class balance).
        """
        Xa = self._columns(np.asarray(X, dtype=np.float32))
        ya = np.asarray(y, dtype=np.float32).reshape(-1)
        if Xa.ndim != 2 or Xa.shape[0] != ya.shape[0] or Xa.shape[0] == 0:
            raise DimensionMismatchError(f"X has shape {Xa.shape}, y has {ya.shape[0]} labels")
        pos = float(ya.sum())
        if pos == 0 or pos == ya.shape[0]:
            raise InvalidParameterError("y must contain both classes; got a single class")
        wt = np.where(ya > 0.5, 0.5 / pos, 0.5 / (ya.shape[0] - pos)).astype(np.float32) * ya.shape[0]
        if sample_weight is not None:
            wt = wt * np.asarray(sample_weight, dtype=np.float32).reshape(-1)
        self.mean_ = Xa.mean(0)
        self.scale_ = (Xa.std(0) + 1e-6).astype(np.float32)
        Z = (Xa - self.mean_) / self.scale_
        rng = np.random.default_rng(self.seed)
        self.params = {}
        self._init(Z.shape[1], rng)
        m = {k: np.zeros_like(v) for k, v in self.params.items()}
        v2 = {k: np.zeros_like(v) for k, v in self.params.items()}
        step = 0
        for _ in range(self.epochs):
            order = rng.permutation(Z.shape[0])
            for start in range(0, Z.shape[0], self.batch_size):
                idx = order[start : start + self.batch_size]
                grads = self._grads(Z[idx], ya[idx], wt[idx])
                step += 1
                for k, g in grads.items():
                    m[k] = 0.9 * m[k] + 0.1 * g
                    v2[k] = 0.999 * v2[k] + 0.001 * g * g
                    mh = m[k] / (1 - 0.9**step)
                    vh = v2[k] / (1 - 0.999**step)
                    self.params[k] = (self.params[k] - self.lr * mh / (np.sqrt(vh) + 1e-8)).astype(np.float32)
        return self

    def _columns(self, X: Array) -> Array:
        if self.last and X.ndim == 2 and X.shape[1] > self.last:
            return X[:, -self.last :]
        return X

    # -- inference ------------------------------------------------------------------------

    def predict_features(self, X: ArrayLike2D) -> Array:
        """Probabilities for feature rows ``X`` (n, f)."""
        if not self.params:
            raise InvalidParameterError("the classifier is not fitted; call fit() or load()")
        Xa = self._columns(np.asarray(X, dtype=np.float32))
        if Xa.ndim != 2 or Xa.shape[1] != self.mean_.shape[0]:
            raise DimensionMismatchError(f"X has shape {Xa.shape}; expected (n, {self.mean_.shape[0]})")
        logit, _ = self._logits((Xa - self.mean_) / self.scale_)
        return _sigmoid(logit)

    def predict_pairs(
        self,
        query_emb: NDArray[np.floating[Any]],
        doc_emb: NDArray[np.floating[Any]],
        question: str,
        texts: Sequence[str],
        a_idx: Sequence[int] | NDArray[np.int64],
        b_idx: Sequence[int] | NDArray[np.int64],
        titles: Sequence[str] | None = None,
    ) -> Array:
        """P(both needed) per pair ``(texts[a_idx[i]], texts[b_idx[i]])``, from embeddings the
        caller already has (arguments as for :func:`~.features.pair_features`)."""
        a = np.asarray(a_idx, dtype=np.int64)
        b = np.asarray(b_idx, dtype=np.int64)
        if a.size == 0:
            return np.zeros(0, np.float32)
        scalars_only = 0 < self.last <= len(SCALAR_NAMES)  # skip the unused interaction columns
        feats = pair_features(query_emb, doc_emb, question, texts, a, b, titles, interactions=not scalars_only)
        return self.predict_features(feats)

    def __call__(self, question: str, doc_a: str, doc_b: str) -> float:
        """P(both needed) for one pair of texts, embedding them with the default MiniLM."""
        from ...embedders import get_default_embedder

        emb = get_default_embedder()([question, doc_a, doc_b])
        return float(self.predict_pairs(emb[0], emb[1:], question, [doc_a, doc_b], [0], [1])[0])

    # -- persistence ----------------------------------------------------------------------

    def save(self, path: str | Path) -> None:
        """Write the model to an ``.npz`` file (float16 weights; a few hundred KB)."""
        arrays: dict[str, Any] = {f"p_{k}": v.astype(np.float16) for k, v in self.params.items()}
        meta = {
            "kind": self.kind,
            "hidden": str(self.hidden),
            "last": str(self.last),
            "threshold": repr(self.threshold),
            **self.meta,
        }
        np.savez_compressed(
            path,
            mean=self.mean_,
            scale=self.scale_,
            meta_keys=np.array(list(meta)),
            meta_values=np.array(list(meta.values())),
            **arrays,
        )

    @classmethod
    def load(cls, path: str | Path) -> PairClassifier:
        """Read a model written by :meth:`save`."""
        with np.load(path, allow_pickle=False) as data:
            meta = dict(zip(data["meta_keys"].tolist(), data["meta_values"].tolist(), strict=True))
            clf = cls(
                kind=str(meta["kind"]),
                hidden=int(meta["hidden"]),
                threshold=float(meta["threshold"]),
                last=int(meta.get("last", 0)),
            )
            clf.mean_ = np.asarray(data["mean"], np.float32)
            clf.scale_ = np.asarray(data["scale"], np.float32)
            clf.params = {k[2:]: np.asarray(data[k], np.float32) for k in data.files if k.startswith("p_")}
        clf.meta = {k: str(v) for k, v in meta.items() if k not in ("kind", "hidden", "threshold", "last")}
        return clf


ArrayLike2D = NDArray[np.floating[Any]] | Sequence[Sequence[float]]
ArrayLike1D = NDArray[np.floating[Any]] | Sequence[float]



def _load_shipped() -> PairClassifier:
    path = default_path()
    if not path.is_file():
        raise FileNotFoundError(
            f"the shipped DR-RAG classifier is missing at {path}; train it with: diverse-rag train drrag"
        )
    return PairClassifier.load(path)


_DEFAULT = ProcessDefault(_load_shipped)


def default_classifier() -> PairClassifier:
    """The shipped classifier, loaded once on first use."""
    return _DEFAULT.get()


def make_scorer(
    classifier: PairClassifier | PairFn,
    question: str,
    texts: Sequence[str],
    query_emb: NDArray[np.floating[Any]] | None = None,
    doc_emb: NDArray[np.floating[Any]] | None = None,
    titles: Sequence[str] | None = None,
) -> Callable[[Sequence[int], Sequence[int]], Array]:
    """A batched pair scorer over indices into ``texts`` for :func:`select_drrag`.

    A :class:`PairClassifier` is run once per batch on the embeddings (required then); any
    other callable is asked pair by pair with the texts.

    Example:
        >>> judge = lambda q, a, b: float("Bo" in a and "Bo" in b)
        >>> score = make_scorer(judge, "Who?", ["Bo x", "Bo y", "z"])
        >>> score([0, 0], [1, 2]).tolist()
        [1.0, 0.0]
    """
    if isinstance(classifier, PairClassifier):
        if query_emb is None or doc_emb is None:
            raise InvalidParameterError(
                "a PairClassifier scores from embeddings; got query_emb=None or doc_emb=None"
            )
        qe, de, clf = query_emb, doc_emb, classifier

        def batched(a: Sequence[int], b: Sequence[int]) -> Array:
            return clf.predict_pairs(qe, de, question, texts, np.asarray(a), np.asarray(b), titles)

        return batched
    fn = classifier

    def one_by_one(a: Sequence[int], b: Sequence[int]) -> Array:
        return np.array([float(fn(question, texts[i], texts[j])) for i, j in zip(a, b, strict=True)], np.float32)

    return one_by_one

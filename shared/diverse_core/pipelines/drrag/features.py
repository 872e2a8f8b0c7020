"""Pair features for the DR-RAG classifier: (question, document A, document B) -> one vector.

Two groups, all computed with arrays over a batch of pairs:

* **Embedding interactions** (unit-normalised MiniLM vectors ``q``, ``a``, ``b``):
  ``a * b``, ``|a - b|``, ``q * b`` (3 x d values).
* **Scalars** (:data:`SCALAR_NAMES`): four cosines (``cos(q + a, b)`` is the concatenated
  search's direction) and word overlaps of titles, texts, capitalised words and the question.

A title is the text before the first ``": "`` (the eval harness's ``"title: text"``), unless given.

Example:
    >>> import numpy as np
    >>> q = np.array([1.0, 0.0]); docs = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> f = pair_features(q, docs, "Who founded Acme?", ["Acme: Acme was founded by Bo.",
    ...                   "Bo: Bo was born in 1900."], np.array([0]), np.array([1]))
    >>> f.shape
    (1, 22)
"""

from __future__ import annotations

import re
from collections.abc import Sequence, Set

import numpy as np
from numpy.typing import NDArray

from ...errors import DimensionMismatchError
from ...text.tokens import split_title

__all__ = ["SCALAR_NAMES", "tokens", "split_title", "pair_features", "n_features"]

_WORD = re.compile(r"[A-Za-z0-9]+")
_STOP = frozenset(
    "a an and are as at be been by did do does for from had has have he her his how in is it its "
    "of on or she that the their them they this to was were what when where which who whom whose "
    "why will with also than then there these those into after before about over under same both "
    "one two film born name named many much more most other".split()
)

SCALAR_NAMES = (
    "cos_q_a",
    "cos_q_b",
    "cos_a_b",
    "cos_qa_b",
    "title_b_in_a",
    "title_a_in_b",
    "title_overlap",
    "word_jaccard_ab",
    "caps_overlap_ab",
    "q_cov_a",
    "q_cov_b",
    "q_cov_ab",
    "q_cov_gain_b",
    "title_b_in_q",
    "title_a_in_q",
    "title_b_in_a_full",
)


def tokens(text: str) -> set[str]:
    """Lower-cased content words of ``text`` (letters/digits; stop words removed)."""
    return {w for w in (t.lower() for t in _WORD.findall(text)) if w not in _STOP}


def _caps(text: str) -> set[str]:
    """Lower-cased words that appear capitalised (not sentence-initial markers of entities)."""
    return {w.lower() for w in _WORD.findall(text) if w[:1].isupper() and w.lower() not in _STOP}


def n_features(dim: int) -> int:
    """Length of a feature vector for embeddings of dimension ``dim``."""
    return 3 * dim + len(SCALAR_NAMES)


def _incidence(sets: Sequence[Set[str]], vocab: dict[str, int]) -> NDArray[np.float32]:
    """The binary (len(sets), len(vocab)) matrix of which words each set holds."""
    mat = np.zeros((len(sets), len(vocab)), dtype=np.float32)
    sizes = [len(s) for s in sets]
    total = sum(sizes)
    if total:
        rows = np.repeat(np.arange(len(sets), dtype=np.intp), sizes)
        cols = np.fromiter((vocab[w] for s in sets for w in s), dtype=np.intp, count=total)
        mat[rows, cols] = 1.0
    return mat


def _unit(x: NDArray[np.floating]) -> NDArray[np.float32]:
    arr = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=-1, keepdims=True)
    out: NDArray[np.float32] = arr / np.maximum(norms, np.float32(1e-12))
    return out


def pair_features(
    query_emb: NDArray[np.floating],
    doc_emb: NDArray[np.floating],
    question: str,
    texts: Sequence[str],
    a_idx: NDArray[np.int64],
    b_idx: NDArray[np.int64],
    titles: Sequence[str] | None = None,
    interactions: bool = True,
) -> NDArray[np.float32]:
    """Feature vectors of the pairs ``(texts[a_idx[i]], texts[b_idx[i]])`` for one question.

    Args:
        query_emb: the question's embedding, shape (d,).
        doc_emb: embeddings of ``texts``, shape (n, d).
        question: the question text.
        texts: the documents the pairs index into (each is tokenised once).
        a_idx: first document of each pair, shape (p,).
        b_idx: second document of each pair, shape (p,).
        titles: one title per text (default: parsed from ``"title: text"``).
        interactions: include the 3 x d embedding interactions (``False``: the scalars only,
            what a model over :data:`SCALAR_NAMES` needs).

    Returns:
        float32 array of shape (p, :func:`n_features`), or (p, len(SCALAR_NAMES)).
    """
    doc_emb = _unit(doc_emb)
    q = _unit(np.asarray(query_emb).reshape(-1))
    if doc_emb.shape[0] != len(texts) or doc_emb.shape[1] != q.shape[0]:
        raise DimensionMismatchError(
            f"doc_emb has shape {doc_emb.shape}; expected ({len(texts)}, {q.shape[0]})"
        )
    a_idx = np.asarray(a_idx, dtype=np.int64)
    b_idx = np.asarray(b_idx, dtype=np.int64)
    if titles is None:
        parsed = [split_title(t) for t in texts]
        titles = [p[0] for p in parsed]
        bodies = [p[1] for p in parsed]
    else:
        if len(titles) != len(texts):
            raise DimensionMismatchError(f"{len(titles)} titles for {len(texts)} texts")
        bodies = list(texts)
    used = np.unique(np.concatenate([a_idx, b_idx]))
    word_sets = {int(i): tokens(texts[i]) for i in used}
    body_sets = {int(i): tokens(bodies[i]) for i in used}
    title_sets = {int(i): tokens(titles[i]) for i in used}
    cap_sets = {int(i): _caps(bodies[i]) for i in used}
    q_set = tokens(question)
    vocab: dict[str, int] = {}
    for s in (*word_sets.values(), *title_sets.values(), *cap_sets.values(), q_set):
        for w in s:
            vocab.setdefault(w, len(vocab))
    pos = {int(i): n for n, i in enumerate(used)}
    # the four per-document matrices and the question's row, filled as one matrix
    n_used = len(used)
    rows = [sets[int(i)] for sets in (word_sets, body_sets, title_sets, cap_sets) for i in used]
    M = _incidence([*rows, q_set], vocab)
    W, B, T, C = (M[g * n_used:(g + 1) * n_used] for g in range(4))
    Q = M[4 * n_used]
    ra = np.array([pos[int(i)] for i in a_idx], dtype=np.int64)
    rb = np.array([pos[int(i)] for i in b_idx], dtype=np.int64)

    def share(num: NDArray[np.float32], den: NDArray[np.float32]) -> NDArray[np.float32]:
        return np.where(den > 0, num / np.maximum(den, 1.0), 0.0).astype(np.float32)

    Wa, Wb, Ta, Tb = W[ra], W[rb], T[ra], T[rb]
    tb_len, ta_len = Tb.sum(1), Ta.sum(1)
    q_len = np.float32(Q.sum())
    cov_a = Wa @ Q
    cov_b = Wb @ Q
    cov_ab = np.maximum(Wa, Wb) @ Q
    inter = (Wa * Wb).sum(1)
    union = np.maximum(Wa, Wb).sum(1)
    title_b_in_a = share((Tb * B[ra]).sum(1), tb_len)
    scalars = np.stack(
        [
            np.zeros(len(ra), np.float32),  # filled below (cosines)
            np.zeros(len(ra), np.float32),
            np.zeros(len(ra), np.float32),
            np.zeros(len(ra), np.float32),
            title_b_in_a,
            share((Ta * B[rb]).sum(1), ta_len),
            share((Ta * Tb).sum(1), np.minimum(ta_len, tb_len)),
            share(inter, union),
            np.log1p((C[ra] * C[rb]).sum(1)),
            share(cov_a, np.full_like(cov_a, q_len)),
            share(cov_b, np.full_like(cov_b, q_len)),
            share(cov_ab, np.full_like(cov_ab, q_len)),
            share(cov_ab - cov_a, np.full_like(cov_a, q_len)),
            share(Tb @ Q, tb_len),
            share(Ta @ Q, ta_len),
            (title_b_in_a >= 0.999).astype(np.float32),
        ],
        axis=1,
    )
    ea, eb = doc_emb[a_idx], doc_emb[b_idx]
    scalars[:, 0] = ea @ q
    scalars[:, 1] = eb @ q
    scalars[:, 2] = (ea * eb).sum(1)
    qa = _unit(ea + q[None, :])
    scalars[:, 3] = (qa * eb).sum(1)
    if not interactions:
        return scalars
    return np.concatenate([ea * eb, np.abs(ea - eb), eb * q[None, :], scalars], axis=1).astype(np.float32)

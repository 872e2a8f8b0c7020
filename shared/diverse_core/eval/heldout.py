"""The held-out table that ``diverse-rag train learned`` prints for a model trained on your own data.

Every row is scored on questions the new model was not trained on: the custom set's dev
split when one is given, else every training question out of fold (question ``i`` in fold
``i mod folds``; the model and gMMR's λ are fitted on the other folds). The rows: the new
model, cosine top-k, gMMR at the λ with the best mean recall on the training questions,
``adaptive``, every shipped ``learned`` model, and the per-question λ Oracle (it reads the
gold, so it is a ceiling for gMMR, not a method). Each row shows recall@k and the new model
minus that row with its paired bootstrap 95% interval (:func:`~diverse_core.eval.stats.bootstrap_ci`).

Example:
    >>> import numpy as np
    >>> rows = {"cosine": np.array([0.5, 1.0]), "gmmr=0.5": np.array([1.0, 0.5]), "gmmr=1": np.array([0.5, 1.0])}
    >>> table = heldout_rows(np.array([1.0, 1.0]), rows, np.array([1.0, 1.0]), n_boot=100)
    >>> [(r[0], r[1]) for r in table]
    [('learned (new model)', 1.0), ('cosine', 0.75), ('gmmr (λ=1 tuned on train)', 0.75), ('oracle (λ per question)', 1.0)]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..tuning import argmax_upper_median
from .config import ORACLE_LAMBDAS
from .stats import bootstrap_ci

__all__ = ["HeldOutQuestion", "baseline_recalls", "tuned_lambdas", "heldout_rows", "format_heldout"]

#: One row: label, mean recall, new model minus the row, its 95% interval.
Row = tuple[str, float, float, tuple[float, float]]


@dataclass(frozen=True)
class HeldOutQuestion:
    """One question as every method sees it: its training example (gold and recall), inputs and metadata."""

    example: Any  # LearnedExample
    prep: Any  # PreparedInputs
    question: str
    texts: Sequence[str]
    sources: Sequence[str] | None
    names: Sequence[str | None] | None


def baseline_recalls(questions: Sequence[HeldOutQuestion]) -> dict[str, NDArray[np.float64]]:
    """Per method, each question's recall@k: ``cosine``, ``gmmr=<λ>`` for every λ of the Oracle's
    grid, ``adaptive`` and ``learned model=<name>`` for every shipped model."""
    from ..api import select, sweep
    from ..learned import DEFAULT_MODELS, load_learned

    rows: dict[str, list[float]] = defaultdict(list)
    for q in questions:
        p, recall = q.prep, q.example.recall
        rows["cosine"].append(recall(np.argsort(-p.relevance, kind="stable")[: p.k].astype(np.int64)))
        sw = sweep("gmmr", p.query, p.candidates, p.k, ORACLE_LAMBDAS)
        for value, picks in zip(sw.values.tolist(), sw.indices, strict=True):
            rows[f"gmmr={value:g}"].append(recall(np.asarray(picks, dtype=np.int64)))
        rows["adaptive"].append(recall(select("adaptive", p.query, p.candidates, p.k, question=q.question,
                                              texts=list(q.texts)).indices))
        for name in DEFAULT_MODELS:
            picks = load_learned(name).choose_prepared(p, question=q.question, texts=list(q.texts),
                                                       sources=q.sources, names=q.names).indices
            rows[f"learned model={name}"].append(recall(picks))
    return {m: np.asarray(v, dtype=np.float64) for m, v in rows.items()}


def _gmmr(rows: Mapping[str, NDArray[np.float64]]) -> tuple[list[float], NDArray[np.float64]]:
    lambdas = [float(m.partition("=")[2]) for m in rows if m.startswith("gmmr=")]
    return lambdas, np.stack([rows[f"gmmr={v:g}"] for v in lambdas])


def tuned_lambdas(train: Mapping[str, NDArray[np.float64]], folds: int | None = None) -> NDArray[np.float64]:
    """gMMR's λ with the best mean recall on the training questions (ties: upper median).

    ``folds=None``: one λ (shape (1,)); else one per question, each chosen on the questions of
    the other folds (question ``i`` in fold ``i mod folds``).
    """
    lambdas, scores = _gmmr(train)
    if folds is None:
        return np.array([argmax_upper_median(lambdas, scores.mean(axis=1).round(12))])
    fold = np.arange(scores.shape[1]) % folds
    best = {f: argmax_upper_median(lambdas, scores[:, fold != f].mean(axis=1).round(12)) for f in range(folds)}
    return np.array([best[f] for f in fold.tolist()])


def heldout_rows(new: NDArray[np.float64], rows: Mapping[str, NDArray[np.float64]], lambdas: NDArray[np.float64],
                 *, n_boot: int = 10_000, seed: int = 0) -> list[Row]:
    """The table's rows on the held-out questions: ``new`` (the new model's recall per question),
    ``rows`` (:func:`baseline_recalls` of the same questions), ``lambdas`` (:func:`tuned_lambdas`)."""
    grid, scores = _gmmr(rows)
    lam = np.broadcast_to(lambdas, new.shape)
    tuned = scores[[grid.index(float(v)) for v in lam], np.arange(new.size)]
    shown = f"λ={lam[0]:g} tuned on train" if np.all(lam == lam[0]) else "λ tuned on the other folds"
    named = {"cosine": rows["cosine"], f"gmmr ({shown})": tuned,
             **{m: v for m, v in rows.items() if not m.startswith(("cosine", "gmmr="))},
             "oracle (λ per question)": scores.max(axis=0)}
    out: list[Row] = [("learned (new model)", float(new.mean()), 0.0, (0.0, 0.0))]
    for label, values in named.items():
        diff = new - values
        ci = (0.0, 0.0) if np.allclose(diff, 0.0) else bootstrap_ci(diff, n_boot=n_boot, seed=seed)
        out.append((label, float(values.mean()), float(diff.mean()), ci))
    return out


def format_heldout(rows: Sequence[Row], k: int, title: str) -> str:
    """The rows as a fixed-width table headed by ``title``."""
    width = max(len(r[0]) for r in rows)
    lines = [title, f"{'method':<{width}}  recall@{k}  new − method [95% CI]"]
    for label, mean, delta, (lo, hi) in rows:
        cell = "" if label.startswith("learned (new") else f"{100 * delta:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
        lines.append(f"{label:<{width}}  {100 * mean:>{7 + len(str(k))}.1f}  {cell}")
    return "\n".join(lines)

"""The learned, LLM-free λ selector: gMMR over a λ grid, then the set a trained scorer prefers.

DF-RAG asks an LLM Evaluator which of the gMMR sets (one per ``lambda_mult``) best
supports the question. :class:`AdaptiveSelector` replaces the judge with small
models trained on questions with known gold passages: it computes every set of the
grid in one batched sweep, estimates how likely each candidate is gold evidence
(:mod:`~diverse_core.trained.gold`), describes each set (relevance,
redundancy, coverage, agreement across λ, expected gold picks and, when the texts
are given, which of the question's words and names the set contains) and keeps the
set the :class:`~diverse_core.adaptive.model.SetScorer` scores highest (ties: upper
median of the tied λ, as DF-RAG's gate). Given ``question`` and ``texts`` it uses
the text-aware variant, otherwise the embedding-only one. The shipped model was
trained on the TRAIN splits of HotpotQA, MuSiQue and 2WikiMultihopQA under the
harness's ``chunks`` protocol (``diverse-rag train adaptive``);
retrain it on your own questions with :meth:`AdaptiveSelector.fit`.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, cands = rng.normal(size=16), rng.normal(size=(40, 16))
    >>> choice = AdaptiveSelector.default().choose(q, cands, k=5)
    >>> len(choice.indices), 0.0 < choice.lambda_mult <= 1.0, choice.variant
    (5, True, 'embedding')
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError
from ..text.view import text_view
from ..trained.candidates import candidate_features
from ..trained.gold import read_model_file
from ..trained.inputs import check_per_question, pick_variant, source_lists, text_inputs
from ..trained.scale import PoolScale
from ..tuning import argmax_upper_median
from ..validation import PreparedInputs, check_values, prepare_inputs
from .features import pick_cosines, set_features
from .model import DEFAULT_ALPHAS
from .training import QueryExample, fit_variants, lambda_sets, query_example
from .variant import VARIANTS, SelectorVariant, variant_features

__all__ = [
    "AdaptiveChoice",
    "AdaptiveSelector",
    "DEFAULT_LAMBDAS",
    "DEFAULT_MODEL",
    "FORMAT_VERSION",
    "diversity_lambda",
    "lambda_sets",
    "load_selector",
]

#: The gMMR grid of the selector (DF-RAG's Oracle grid, 0.1 .. 1.0).
DEFAULT_LAMBDAS: tuple[float, ...] = tuple(round(0.1 * i, 10) for i in range(1, 11))

#: The shipped model (trained on the chunks protocol of the three train sets).
DEFAULT_MODEL = Path(__file__).resolve().parent / "models" / "gmmr_chunks.npz"

#: Layout version of selector files (1: one set scorer; 2: text + embedding variants with gold models;
#: 3: the same on the pool's common scale, :class:`~diverse_core.trained.scale.PoolScale`).
FORMAT_VERSION = 3


@dataclass(frozen=True)
class AdaptiveChoice:
    """What the selector chose for one query.

    Attributes:
        lambda_mult: the chosen gMMR ``lambda_mult``.
        indices: the chosen set, candidate indices in pick order, shape (k,).
        scores: gMMR's objective at each pick of that set, shape (k,).
        lambdas: the grid searched, shape (L,).
        predicted: the scorer's score of every λ's set, shape (L,).
        sets: every λ's set, shape (L, k).
        variant: ``"text"`` when the question and texts were used, else ``"embedding"``.
        gold_probability: each candidate's estimated probability of being gold evidence, shape (n,).
        predicted_lambda: the λ* the scorer chose; with ``diversity`` given, ``lambda_mult`` is
            the λ that ``diversity`` maps to from it (see :func:`diversity_lambda`).
    """

    lambda_mult: float
    indices: NDArray[np.int64]
    scores: NDArray[np.float64]
    lambdas: NDArray[np.float64]
    predicted: NDArray[np.float64]
    sets: NDArray[np.int64]
    variant: str = "embedding"
    gold_probability: NDArray[np.float64] | None = None
    predicted_lambda: float | None = None


def diversity_lambda(diversity: float, predicted: float, lowest: float) -> float:
    """The gMMR λ that ``diversity`` in [0, 1] means for a query whose predicted λ is ``predicted``.

    Piecewise linear through ``0 -> 1`` (pure relevance), ``0.5 -> predicted`` (the selector's
    own choice) and ``1 -> lowest`` (the most diverse λ of its grid): monotone, never rising.

    Example:
        >>> diversity_lambda(0.0, 0.6, 0.1), diversity_lambda(0.5, 0.6, 0.1), diversity_lambda(1.0, 0.6, 0.1)
        (1.0, 0.6, 0.1)
        >>> diversity_lambda(0.25, 0.6, 0.1)
        0.8
    """
    if diversity <= 0.5:
        t = 2.0 * diversity
        return (1.0 - t) * 1.0 + t * predicted
    t = 2.0 * diversity - 1.0
    return (1.0 - t) * predicted + t * lowest


class AdaptiveSelector:
    """Chooses gMMR's ``lambda_mult`` per query with trained models (no LLM).

    Args:
        variants: the trained :class:`~diverse_core.adaptive.variant.SelectorVariant` by name
            (``"embedding"`` is required; ``"text"`` is used when texts are given).
        lambdas: the λ grid they score (must match what they were trained on).
        info: training record stored with the model.

    Example:
        >>> import numpy as np
        >>> sel = AdaptiveSelector.default()
        >>> rng = np.random.default_rng(1)
        >>> c = sel.choose(rng.normal(size=8), rng.normal(size=(30, 8)), k=4,
        ...                question="Who wrote it?", texts=[f"text {i}" for i in range(30)])
        >>> c.sets.shape, c.variant
        ((10, 4), 'text')
    """

    def __init__(
        self, variants: Mapping[str, SelectorVariant], lambdas: Sequence[float] = DEFAULT_LAMBDAS,
        info: dict[str, Any] | None = None,
    ) -> None:
        if "embedding" not in variants:
            raise InvalidParameterError(f"an adaptive selector needs the 'embedding' variant; got {sorted(variants)}")
        self.variants = dict(variants)
        self.lambdas = check_values(lambdas, "lambdas")
        self.info = dict(info or {})

    @property
    def scorer(self) -> Any:
        """The embedding variant's set scorer (what format-1 selectors had)."""
        return self.variants["embedding"].scorer

    @classmethod
    def default(cls) -> AdaptiveSelector:
        """The shipped model (loaded once per process)."""
        return _load_cached(str(DEFAULT_MODEL))

    @classmethod
    def load(cls, path: str | Path) -> AdaptiveSelector:
        """A selector from a file written by :meth:`save`.

        Raises:
            FileNotFoundError: no such file. InvalidParameterError: not a selector file, or an older layout.
        """
        p = Path(path)
        data, meta = read_model_file(p)
        if meta.get("format") != FORMAT_VERSION:
            raise InvalidParameterError(
                f"{p}: adaptive model format {meta.get('format')!r}; this version reads format "
                f"{FORMAT_VERSION}: retrain it (diverse-rag train adaptive, or AdaptiveSelector.fit)"
            )
        try:
            variants = {name: SelectorVariant.from_arrays(data, name) for name in meta["variants"]}
        except InvalidParameterError:  # trained on other features: its own message (retrain)
            raise
        except (ValueError, KeyError) as exc:
            raise InvalidParameterError(f"{p} is not an adaptive model file (.npz from save()): {exc}") from exc
        return cls(variants, meta["lambdas"], meta.get("info"))

    def save(self, path: str | Path) -> Path:
        """Write the model (``.npz``, a few kB) to ``path``."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT_VERSION, "lambdas": [float(v) for v in self.lambdas],
                "variants": list(self.variants), "info": self.info}
        arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta))}
        for variant in self.variants.values():
            arrays.update(variant.to_arrays())
        with p.open("wb") as fh:
            np.savez(fh, **arrays)
        return p

    def _predict(
        self, prep: PreparedInputs, question: str | None, texts: Sequence[str] | None, variant: str,
        sources: Sequence[Any] | None = None, names: Sequence[str | None] | None = None,
    ) -> tuple[AdaptiveChoice, NDArray[np.float64]]:
        """The native choice (every grid λ's set scored, the best λ* kept) and every set's gMMR scores."""
        source_lists(sources, names, prep.n)  # checked as learned checks them; no feature of this model reads them
        given = text_inputs(question, texts, prep.n)
        view = None if given is None else text_view(*given)
        name = pick_variant(self.variants, view is not None, variant)
        chosen = self.variants[name]
        sets, scores = lambda_sets(prep, self.lambdas)
        unit, rel = prep.candidates, prep.relevance
        scale = PoolScale.of_pool(unit, rel)  # every cosine the models read, on the pool's common scale
        used_view = view if name == "text" else None
        prob = chosen.gold.probabilities(candidate_features(unit, rel, prep.k, used_view, scale))  # row blocks
        sim = pick_cosines(unit, sets)  # (n, L, k): no (n, n) matrix
        base = set_features(self.lambdas, sets, unit, rel, sim=sim, scale=scale)
        feats = variant_features(base, self.lambdas, sets, scale.relevance(rel), scale.similarity(sim), prob,
                                 used_view)
        predicted = chosen.scorer.scores(feats)
        lam = argmax_upper_median(self.lambdas, predicted)
        row = int(np.flatnonzero(self.lambdas == lam)[0])
        return AdaptiveChoice(lam, sets[row], scores[row], self.lambdas, predicted, sets, name, prob, lam), scores

    def choose_prepared(
        self,
        prep: PreparedInputs,
        *,
        question: str | None = None,
        texts: Sequence[str] | None = None,
        variant: str = "auto",
        diversity: float | None = None,
        sources: Sequence[Any] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> AdaptiveChoice:
        """:meth:`choose` on already validated inputs."""
        native, grid_scores = self._predict(prep, question, texts, variant, sources, names)
        if diversity is None:
            return native
        return self._at_diversities(prep, native, grid_scores, [diversity])[0]

    def sweep_prepared(
        self, prep: PreparedInputs, diversities: Sequence[float], *, question: str | None = None,
        texts: Sequence[str] | None = None, variant: str = "auto", sources: Sequence[Any] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> list[AdaptiveChoice]:
        """One :meth:`choose_prepared` per value of ``diversities``: λ* predicted once, the sets of
        off-grid λ computed in one batched gMMR sweep."""
        return self._at_diversities(prep, *self._predict(prep, question, texts, variant, sources, names),
                                    diversities)

    def _at_diversities(self, prep: PreparedInputs, native: AdaptiveChoice, grid_scores: NDArray[np.float64],
                        diversities: Sequence[float]) -> list[AdaptiveChoice]:
        lams = [diversity_lambda(float(d), native.lambda_mult, float(self.lambdas.min())) for d in diversities]
        rows = [np.flatnonzero(np.isclose(self.lambdas, lam, rtol=0.0, atol=1e-12)) for lam in lams]
        off = [lam for lam, r in zip(lams, rows, strict=True) if not r.shape[0]]
        extra_sets, extra_scores = lambda_sets(prep, off) if off else (None, None)
        out, j = [], 0
        for lam, r in zip(lams, rows, strict=True):
            if r.shape[0]:
                i = int(r[0])
                picks, scores, lam = native.sets[i], grid_scores[i], float(self.lambdas[i])
            else:
                assert extra_sets is not None and extra_scores is not None
                picks, scores, j = extra_sets[j], extra_scores[j], j + 1
            out.append(AdaptiveChoice(lam, picks, scores, native.lambdas, native.predicted, native.sets,
                                      native.variant, native.gold_probability, native.lambda_mult))
        return out

    def choose(
        self,
        query: ArrayLike,
        candidates: ArrayLike,
        k: int,
        *,
        relevance: ArrayLike | None = None,
        question: str | None = None,
        texts: Sequence[str] | None = None,
        variant: str = "auto",
        diversity: float | None = None,
        sources: Sequence[Any] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> AdaptiveChoice:
        """The chosen λ and its gMMR set for one query.

        Args:
            query: query embedding, shape (d,).
            candidates: candidate embeddings, shape (n, d).
            k: how many to pick.
            relevance: optional relevance scores (default cosine), shape (n,).
            question: the query text (with ``texts``: the text-aware variant).
            texts: the candidate texts, one per candidate.
            variant: ``"auto"`` (text-aware when question and texts are given), ``"text"`` or
                ``"embedding"`` (ignore the texts).
            diversity: ``None`` (default): the predicted λ*; a value in [0, 1] moves away from it
                (:func:`diversity_lambda`: 0 -> λ = 1, 0.5 -> λ*, 1 -> the grid's lowest λ).
            sources, names: one source id and display name per candidate, as for
                :meth:`~diverse_core.learned.LearnedSelector.choose` (checked the same way); the shipped
                model has no source feature, so they do not change its choice.
        """
        given = {} if diversity is None else {"diversity": diversity}  # the native call unchanged without it
        return self.choose_prepared(prepare_inputs(query, candidates, k, relevance), question=question, texts=texts,
                                    variant=variant, sources=sources, names=names, **given)

    @classmethod
    def fit(
        cls,
        queries: Sequence[ArrayLike],
        candidates: Sequence[ArrayLike],
        gold_groups: Sequence[ArrayLike],
        k: int,
        *,
        questions: Sequence[str] | None = None,
        texts: Sequence[Sequence[str]] | None = None,
        n_gold: Sequence[int] | None = None,
        lambdas: Sequence[float] = DEFAULT_LAMBDAS,
        alphas: Sequence[float] = DEFAULT_ALPHAS,
        folds: int = 5,
        info: dict[str, Any] | None = None,
    ) -> AdaptiveSelector:
        """Train a selector on your own questions (deterministic).

        Args:
            queries: one query embedding per question.
            candidates: per question, its candidate embeddings (n_i, d) (e.g. the
                ``fetch_k`` nearest chunks).
            gold_groups: per question, per candidate, the gold passage id it belongs to
                or -1 (see :func:`coverage_labels`).
            k: set size.
            questions, texts: per question, its text and its candidate texts; with both,
                the text-aware variant is trained too.
            n_gold: per question, its number of gold passages (default: those among the candidates).
            lambdas, alphas, folds: the λ grid, ridge penalties and CV folds.
            info: stored with the model.

        Example:
            >>> import numpy as np
            >>> rng = np.random.default_rng(0)
            >>> qs = [rng.normal(size=8) for _ in range(12)]
            >>> cs = [rng.normal(size=(20, 8)) for _ in range(12)]
            >>> gs = [np.where(np.arange(20) < 3, np.arange(20), -1)[rng.permutation(20)] for _ in range(12)]
            >>> sorted(AdaptiveSelector.fit(qs, cs, gs, k=4, folds=3).variants)
            ['embedding']
        """
        check_per_question({"queries": queries, "candidates": candidates, "gold_groups": gold_groups,
                            "questions": questions, "texts": texts, "n_gold": n_gold})
        examples = []
        for i, (q, c, g) in enumerate(zip(queries, candidates, gold_groups, strict=True)):
            prep = prepare_inputs(q, c, k, None)
            question = None if questions is None else questions[i]
            cand_texts = None if texts is None else texts[i]
            given = text_inputs(question, cand_texts, prep.n)
            examples.append(query_example(prep, g, lambdas, question=None if given is None else given[0],
                                          texts=None if given is None else given[1],
                                          n_gold=None if n_gold is None else n_gold[i]))
        return cls.fit_examples(examples, lambdas=lambdas, alphas=alphas, folds=folds, info=info)

    @classmethod
    def fit_examples(
        cls,
        examples: Sequence[QueryExample],
        *,
        lambdas: Sequence[float] = DEFAULT_LAMBDAS,
        alphas: Sequence[float] = DEFAULT_ALPHAS,
        folds: int = 5,
        info: dict[str, Any] | None = None,
    ) -> AdaptiveSelector:
        """Train from prepared :func:`~diverse_core.adaptive.training.query_example` records."""
        names = [v for v in VARIANTS if v != "text" or all(ex.text is not None for ex in examples)]
        record = {"n_questions": len(examples), **(info or {})}
        variants = fit_variants(examples, lambdas, variants=names, alphas=alphas, folds=folds, info=info)
        return cls(variants, lambdas, record)


#: Selectors loaded from files, by resolved path (most recently used last; at most 8).
_LOADED: OrderedDict[str, AdaptiveSelector] = OrderedDict()
_LOADED_LOCK = threading.Lock()
_PATH_LOCKS: dict[str, threading.Lock] = {}


def _load_cached(path: str) -> AdaptiveSelector:
    """The selector at ``path``, read once per process even when many threads ask at once."""
    with _LOADED_LOCK:
        found = _LOADED.get(path)
        if found is not None:
            _LOADED.move_to_end(path)
            return found
        path_lock = _PATH_LOCKS.setdefault(path, threading.Lock())
    with path_lock:  # one reader per file; other files load in parallel
        with _LOADED_LOCK:
            found = _LOADED.get(path)
        if found is None:
            found = AdaptiveSelector.load(path)
            with _LOADED_LOCK:
                _LOADED[path] = found
                while len(_LOADED) > 8:
                    _LOADED.popitem(last=False)
        return found


def load_selector(model: str | Path | AdaptiveSelector | None) -> AdaptiveSelector:
    """The selector for the ``model`` parameter of the ``adaptive`` method (None: shipped)."""
    if isinstance(model, AdaptiveSelector):
        return model
    if model is None:
        return AdaptiveSelector.default()
    return _load_cached(str(Path(model).resolve()))

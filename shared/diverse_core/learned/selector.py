"""The learned set selector: builds the k-document set pick by pick with a trained step model (no LLM).

The adaptive selector (:mod:`diverse_core.adaptive`) can only choose among gMMR's
sets, one per λ. :class:`LearnedSelector` chooses the documents themselves: at every
step a logistic model estimates, for each remaining candidate, the probability that
it is gold evidence the picks do not cover yet, from the candidate's relevance, rank
and redundancy, which of the question's words and names it adds, and how the picks
point at it (same source, a pick that names its title or that it names, names they
share, DR-RAG's concatenated-query direction ``cos(q + pick, candidate)``, computed
from the embeddings already at hand: no extra search). The most likely candidate is
picked. Given ``question`` and ``texts`` it uses its text variant, otherwise the
embedding-only one. The shipped models were trained on the TRAIN splits of
HotpotQA, MuSiQue and 2WikiMultihopQA (``diverse-rag train learned``);
retrain on your own questions with :meth:`LearnedSelector.fit`.

Example:
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> q, cands = rng.normal(size=16), rng.normal(size=(40, 16))
    >>> choice = LearnedSelector.default().choose(q, cands, k=5)
    >>> len(choice.indices), choice.variant
    (5, 'embedding')
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..errors import InvalidParameterError, ModelFeatureMismatchError
from ..trained.gold import GoldModel, read_model_file
from ..trained.inputs import VARIANTS, check_per_question, pick_variant, text_inputs
from ..validation import PreparedInputs, prepare_inputs
from .pairview import pair_view
from .state import RENAMED, QueryState, feature_names
from .training import DEFAULT_TRAIN_CONFIG, LearnedExample, StepModels, TrainConfig, fit_step_models

__all__ = [
    "DEFAULT_BY_FORM",
    "DEFAULT_MODELS",
    "FORMAT_VERSION",
    "LearnedChoice",
    "LearnedSelector",
    "VARIANTS",
    "default_model",
    "input_form",
    "load_learned",
]

_MODELS = Path(__file__).resolve().parent / "models"

#: The shipped models by retrieval protocol (``chunks``: two-sentence windows; ``paragraphs``: whole passages),
#: trained on ``"title: text"`` units; ``*-notitle``: trained on bare texts with the page ids given as
#: ``sources`` (for stores whose chunks carry their source in metadata, not a title prefix).
DEFAULT_MODELS: dict[str, Path] = {"chunks": _MODELS / "learned_chunks.npz",
                                   "paragraphs": _MODELS / "learned_paragraphs.npz",
                                   "chunks-notitle": _MODELS / "learned_chunks_notitle.npz",
                                   "paragraphs-notitle": _MODELS / "learned_paragraphs_notitle.npz"}

#: The shipped model ``learned`` runs without ``model=``, by the form of the call's inputs
#: (:func:`input_form`), chosen on the dev splits (``benchmarks/default_model.py``).
DEFAULT_BY_FORM: dict[str, str] = {"titles": "chunks", "titles+ids": "chunks", "ids": "paragraphs-notitle",
                                   "none": "paragraphs-notitle"}

#: Layout version of learned-selector files (2: features on the pool's common scale,
#: :class:`~diverse_core.trained.scale.PoolScale`; a format-1 model read raw cosines and must be retrained).
FORMAT_VERSION = 2


@dataclass(frozen=True)
class LearnedChoice:
    """What the selector picked for one query.

    Attributes:
        indices: the picks, candidate indices in pick order, shape (k,).
        scores: each pick's estimated probability of adding new gold evidence when picked, shape (k,).
        variant: ``"text"`` when the question and texts were used, else ``"embedding"``.
    """

    indices: NDArray[np.int64]
    scores: NDArray[np.float64]
    variant: str


class LearnedSelector:
    """Picks k documents one at a time with trained step models (no LLM).

    Args:
        variants: :class:`~diverse_core.learned.training.StepModels` by variant name
            (``"embedding"`` required; ``"text"`` used when question and texts are given).
        config: the :class:`~diverse_core.learned.training.TrainConfig` they were trained with.
        info: training record stored with the model.

    Example:
        >>> import numpy as np
        >>> sel = LearnedSelector.default()
        >>> rng = np.random.default_rng(1)
        >>> c = sel.choose(rng.normal(size=8), rng.normal(size=(30, 8)), k=4,
        ...                question="Who wrote Dune?", texts=[f"Dune: text {i}" for i in range(30)])
        >>> c.indices.shape, c.variant
        ((4,), 'text')
    """

    def __init__(self, variants: Mapping[str, StepModels], config: TrainConfig = DEFAULT_TRAIN_CONFIG,
                 info: dict[str, Any] | None = None) -> None:
        if "embedding" not in variants:
            raise InvalidParameterError(f"a learned selector needs the 'embedding' variant; got {sorted(variants)}")
        for name, models in variants.items():
            if name not in VARIANTS:
                raise InvalidParameterError(f"variant must be one of {VARIANTS}; got {name!r}")
            expected = feature_names(name == "text")
            for m in (models.step, models.first):
                if m is not None and tuple(m.feature_names) != expected:
                    got = tuple(m.feature_names)
                    missing = [f for f in expected if f not in got]
                    extra = [f for f in got if f not in expected]
                    raise ModelFeatureMismatchError(
                        f"the {name!r} model was trained on other features than this version computes "
                        f"(missing: {missing or 'none'}; unknown: {extra or 'none'}"
                        f"{'; same names, other order' if not missing and not extra else ''}); retrain it "
                        "(diverse-rag train learned, or LearnedSelector.fit)"
                    )
        self.variants = dict(variants)
        self.config = config
        self.info = dict(info or {})

    # -- loading and saving ---------------------------------------------------------------

    @classmethod
    def default(cls, protocol: str = "chunks") -> LearnedSelector:
        """A shipped model (loaded once per process): ``"chunks"`` (default) or ``"paragraphs"``.

        Raises:
            InvalidParameterError: another protocol. FileNotFoundError: that model is not in this install.
        """
        if protocol not in DEFAULT_MODELS:
            raise InvalidParameterError(f"protocol must be one of {sorted(DEFAULT_MODELS)}; got protocol={protocol!r}")
        return _default_cached(protocol, DEFAULT_MODELS[protocol])

    @classmethod
    def load(cls, path: str | Path) -> LearnedSelector:
        """A selector from a file written by :meth:`save`.

        Raises:
            FileNotFoundError: no such file. InvalidParameterError: not a learned-selector file, or another layout.
        """
        p = Path(path)
        data, meta = read_model_file(p)
        if meta.get("kind") != "learned" or meta.get("format") != FORMAT_VERSION:
            raise InvalidParameterError(
                f"{p}: not a learned-selector file of format {FORMAT_VERSION} (kind={meta.get('kind')!r}, "
                f"format={meta.get('format')!r}); retrain it (diverse-rag train learned)"
            )
        try:
            variants = {
                name: StepModels(_renamed(GoldModel.from_arrays(data, f"{name}__step_")),
                                 _renamed(GoldModel.from_arrays(data, f"{name}__first_"))
                                 if f"{name}__first_meta" in data else None)
                for name in meta["variants"]
            }
            config = TrainConfig(**meta["config"])
        except (ValueError, KeyError, TypeError) as exc:
            raise InvalidParameterError(f"{p} is not a learned-selector file (.npz from save()): {exc}") from exc
        return cls(variants, config, meta.get("info"))

    def save(self, path: str | Path) -> Path:
        """Write the model (``.npz``, a few kB) to ``path``."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        meta = {"kind": "learned", "format": FORMAT_VERSION, "variants": list(self.variants),
                "config": asdict(self.config), "info": self.info}
        arrays: dict[str, Any] = {"meta": np.array(json.dumps(meta, sort_keys=True))}
        for name, models in self.variants.items():
            arrays.update(models.step.to_arrays(f"{name}__step_"))
            if models.first is not None:
                arrays.update(models.first.to_arrays(f"{name}__first_"))
        with p.open("wb") as fh:
            np.savez(fh, **arrays)
        return p

    # -- choosing -------------------------------------------------------------------------

    def choose_prepared(
        self, prep: PreparedInputs, *, question: str | None = None, texts: Sequence[str] | None = None,
        variant: str = "auto", sources: Sequence[Any] | None = None, names: Sequence[str | None] | None = None,
        diversity: float | None = None,
    ) -> LearnedChoice:
        """:meth:`choose` on already validated inputs."""
        return self.sweep_prepared(prep, [diversity], question=question, texts=texts, variant=variant,
                                   sources=sources, names=names)[0]

    def sweep_prepared(
        self, prep: PreparedInputs, diversities: Sequence[float | None], *, question: str | None = None,
        texts: Sequence[str] | None = None, variant: str = "auto", sources: Sequence[Any] | None = None,
        names: Sequence[str | None] | None = None,
    ) -> list[LearnedChoice]:
        """One :meth:`choose_prepared` per value of ``diversities`` (the query's state built once)."""
        given = text_inputs(question, texts, prep.n)
        name = pick_variant(self.variants, given is not None, variant)
        pairs = pair_view(*given, sources=sources, names=names) if given is not None and name == "text" else None
        state = QueryState.build(prep, pairs)
        return [LearnedChoice(*self.variants[name].picks(state, d), name) for d in diversities]

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
        sources: Sequence[Any] | None = None,
        names: Sequence[str | None] | None = None,
        diversity: float | None = None,
    ) -> LearnedChoice:
        """The k picks for one query.

        Args:
            query: query embedding, shape (d,).
            candidates: candidate embeddings, shape (n, d).
            k: how many to pick (``min(k, n)`` are returned).
            relevance: optional relevance scores (default cosine), shape (n,).
            question: the query text (with ``texts``: the text variant).
            texts: the candidate texts, one per candidate (``"title: body"`` gives the title features).
            variant: ``"auto"``, ``"text"`` or ``"embedding"`` (ignore the texts).
            sources: one source id per candidate (page, file or parent document, e.g. LangChain
                ``metadata["source"]``): candidates with equal ids count as the same source. Without
                it the ``"title: "`` prefix of each text is read as its source.
            names: one display name per candidate (e.g. ``metadata["title"]``; ``None``: the prefix
                title): the title a pick may mention (the bridge of a multi-hop question).
            diversity: ``None`` (default) or 0.5: the trained model as is; below 0.5 its step score is
                blended with relevance (0: top-k), above with novelty (1: farthest-first), see
                :func:`~diverse_core.learned.greedy.greedy_picks`.
        """
        given = {} if diversity is None else {"diversity": diversity}  # the native call unchanged without it
        return self.choose_prepared(prepare_inputs(query, candidates, k, relevance), question=question, texts=texts,
                                    variant=variant, sources=sources, names=names, **given)

    # -- training -------------------------------------------------------------------------

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
        sources: Sequence[Sequence[Any]] | None = None,
        n_gold: Sequence[int] | None = None,
        config: TrainConfig = DEFAULT_TRAIN_CONFIG,
        info: dict[str, Any] | None = None,
    ) -> LearnedSelector:
        """Train a selector on your own questions (deterministic).

        Args:
            queries: one query embedding per question.
            candidates: per question, its candidate embeddings (n_i, d) (e.g. the ``fetch_k`` nearest).
            gold_groups: per question, per candidate, the gold passage id it belongs to or -1.
            k: set size.
            questions, texts: per question, its text and its candidate texts; with both,
                the text variant is trained too.
            sources: per question, one source id per candidate (see :meth:`choose`); train with
                them when the selector will be called with them.
            n_gold: per question, its number of gold passages (default: those among the candidates).
            config: training settings (rounds, ridge penalty, ...).
            info: stored with the model.

        Example:
            >>> import numpy as np
            >>> rng = np.random.default_rng(0)
            >>> qs = [rng.normal(size=8) for _ in range(12)]
            >>> cs = [rng.normal(size=(20, 8)) for _ in range(12)]
            >>> gs = [np.where(np.arange(20) < 3, np.arange(20), -1)[rng.permutation(20)] for _ in range(12)]
            >>> sorted(LearnedSelector.fit(qs, cs, gs, k=4).variants)
            ['embedding']
        """
        check_per_question({"queries": queries, "candidates": candidates, "gold_groups": gold_groups,
                            "questions": questions, "texts": texts, "sources": sources, "n_gold": n_gold})
        examples = []
        for i, (q, c, g) in enumerate(zip(queries, candidates, gold_groups, strict=True)):
            prep = prepare_inputs(q, c, k, None)
            given = text_inputs(None if questions is None else questions[i], None if texts is None else texts[i], prep.n)
            groups = np.asarray(g).reshape(-1)
            found = int(np.unique(groups[groups >= 0]).size)
            total = found if n_gold is None else int(n_gold[i])
            if total < found:
                raise InvalidParameterError(
                    f"n_gold must be at least the {found} gold passages among the candidates; got n_gold={total!r} "
                    f"for question {i}"
                )
            src = None if sources is None else sources[i]
            pairs = None if given is None else pair_view(*given, sources=src)
            examples.append(LearnedExample(QueryState.build(prep, pairs), groups.astype(np.int64), total))
        return cls.fit_examples(examples, config=config, info=info)

    @classmethod
    def fit_examples(
        cls, examples: Sequence[LearnedExample], *, config: TrainConfig = DEFAULT_TRAIN_CONFIG,
        info: dict[str, Any] | None = None,
    ) -> LearnedSelector:
        """Train both variants (the text one when every example has texts) from prepared examples."""
        with_text = all(ex.state.uses_text for ex in examples)
        variants = {}
        for name in VARIANTS:
            if name == "text" and not with_text:
                continue
            variants[name] = fit_step_models(examples, TrainConfig(**{**asdict(config), "text": name == "text"}))
        record = {"n_questions": len(examples), **(info or {})}
        return cls(variants, TrainConfig(**{**asdict(config), "text": with_text}), record)


def _renamed(model: GoldModel) -> GoldModel:
    """``model`` with the features of an older file under their current names (:data:`~.state.RENAMED`)."""
    names = tuple(RENAMED.get(f, f) for f in model.feature_names)
    return model if names == tuple(model.feature_names) else replace(model, feature_names=names)


@lru_cache(maxsize=8)
def _default_cached(protocol: str, path: Path) -> LearnedSelector:
    """The shipped model of ``protocol`` at ``path``, the file looked up once (a missing file raises, uncached)."""
    if not path.is_file():
        raise FileNotFoundError(
            f"the shipped {protocol!r} learned-selector model is missing at {path}; train it with: "
            f"diverse-rag train learned --protocols {protocol.removesuffix('-notitle')}"
            f"{' --no-titles' if protocol.endswith('-notitle') else ''}"
        )
    return _load_cached(str(path))


@lru_cache(maxsize=8)
def _load_cached(path: str) -> LearnedSelector:
    return LearnedSelector.load(path)


def input_form(texts: Sequence[str] | None, sources: Sequence[Any] | None, names: Sequence[Any] | None) -> str:
    """What a call gives: ``"titles"`` (``names``, or most texts start with a ``"title: "`` prefix),
    ``"ids"`` (``sources``), ``"titles+ids"`` (both) or ``"none"``.

    Example:
        >>> input_form(["Dune: a novel.", "Herbert: an author."], None, None), input_form(["a", "b"], ["x", "y"], None)
        ('titles', 'ids')
    """
    # a title prefix (:func:`~diverse_core.text.tokens.split_title`): ": " after 1 to 120 characters
    titled = any(v is not None for v in names or ()) or (
        texts is not None and 2 * sum(isinstance(t, str) and 0 < t.find(": ", 0, 122) for t in texts) > len(texts))
    ids = any(v is not None and not (isinstance(v, str) and not v) for v in sources or ())
    return ("titles+ids" if ids else "titles") if titled else ("ids" if ids else "none")


def default_model(params: Mapping[str, Any]) -> str:
    """The shipped model for a call without ``model=``: :data:`DEFAULT_BY_FORM` of its :func:`input_form`."""
    return DEFAULT_BY_FORM[input_form(params.get("texts"), params.get("sources"), params.get("names"))]


def load_learned(model: str | Path | LearnedSelector | None) -> LearnedSelector:
    """The selector for the ``model`` parameter of the ``learned`` method (None: the shipped ``chunks`` model;
    a shipped name: that model; the method itself runs :func:`default_model` for None)."""
    if isinstance(model, LearnedSelector):
        return model
    if model is None:
        return LearnedSelector.default()
    if isinstance(model, str) and model in DEFAULT_MODELS:
        return LearnedSelector.default(model)
    path = Path(model)
    if not path.is_file():
        raise InvalidParameterError(f"model must be a shipped model ({', '.join(map(repr, DEFAULT_MODELS))}) or an "
                                    f"existing model file; got model={str(model)!r} (no such file)")
    return _load_cached(str(path.resolve()))

"""Training the learned selector's step model from questions with known gold passages.

A training question is a :class:`LearnedExample` (its :class:`~diverse_core.learned.state.QueryState`,
each candidate's gold passage id or -1, and how many gold passages it has). The step
model learns "this candidate is gold evidence that the picks do not cover yet" from
the rows of partial sets. Which partial sets? Those the selector itself reaches: round
0 rolls out the relevance ranking (the picks are the top-t candidates), each later
round rolls out the greedy selector fitted in the round before, and the model of the
last round is fitted on the rows of all rounds (imitation learning with the
selector's own states, as in DAgger). The model is a logistic regression fitted by
Newton's method (:func:`~diverse_core.trained.gold.fit_gold_model`), so
training is deterministic. :func:`cross_validate` gives the mean gold recall of
held-out folds (question ``i`` in fold ``i mod folds``): how the configuration is
chosen, on training questions only.

Example:
    >>> import numpy as np
    >>> from diverse_core.validation import prepare_inputs
    >>> rng = np.random.default_rng(0)
    >>> exs = []
    >>> for _ in range(10):
    ...     prep = prepare_inputs(rng.normal(size=8), rng.normal(size=(15, 8)), 3, None)
    ...     exs.append(LearnedExample(QueryState.build(prep), np.where(np.arange(15) < 2, np.arange(15), -1), 2))
    >>> models = fit_step_models(exs, TrainConfig(rounds=1, text=False))
    >>> models.step.feature_names[0]
    'rel'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from ..trained.gold import GoldModel, coverage_labels, fit_gold_model
from .greedy import greedy_picks
from .state import QueryState, feature_names

__all__ = ["CVResult", "DEFAULT_TRAIN_CONFIG", "LearnedExample", "StepModels", "TrainConfig", "cross_validate",
           "fit_step_models", "step_rows"]

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class LearnedExample:
    """One training question.

    Attributes:
        state: its :class:`~diverse_core.learned.state.QueryState`.
        gold_groups: per candidate, the gold passage id (>= 0) it belongs to or -1, shape (n,).
        n_gold: the question's number of gold passages (some may be missing from the candidates).
    """

    state: QueryState
    gold_groups: NDArray[np.int64]
    n_gold: int

    def __post_init__(self) -> None:
        groups = np.asarray(self.gold_groups).reshape(-1)
        if groups.shape[0] != self.state.n:
            raise DimensionMismatchError(
                f"gold_groups must give one id per candidate; got {groups.shape[0]} for {self.state.n}"
            )
        object.__setattr__(self, "gold_groups", groups.astype(np.int64))

    def recall(self, picks: NDArray[np.int64]) -> float:
        """Gold recall of ``picks`` (the harness's recall: distinct gold passages / n_gold)."""
        return float(coverage_labels(picks[None, :], self.gold_groups, self.n_gold)[0])


@dataclass(frozen=True)
class TrainConfig:
    """How the step model is trained (choose it with :func:`cross_validate` on training questions).

    Attributes:
        rounds: roll-out rounds (1: relevance-ranking states only; 2+: the selector's own states too).
        l2: ridge penalty of the logistic regression (standardised features).
        split_first: fit a separate model for the first pick (rows with no picks).
        text: use the text features (every example must have been built with texts).
    """

    rounds: int = 2
    l2: float = 1.0
    split_first: bool = False
    text: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.rounds, bool) or not isinstance(self.rounds, int) or self.rounds < 1:
            raise InvalidParameterError(f"rounds must be a positive integer; got rounds={self.rounds!r}")
        if not (isinstance(self.l2, (int, float)) and np.isfinite(self.l2) and self.l2 > 0):
            raise InvalidParameterError(f"l2 must be a positive finite number; got l2={self.l2!r}")


#: The defaults of :class:`TrainConfig`.
DEFAULT_TRAIN_CONFIG = TrainConfig()


@dataclass(frozen=True)
class StepModels:
    """The fitted step model (and the first-pick model with ``split_first``)."""

    step: GoldModel
    first: GoldModel | None = None

    def picks(self, state: QueryState, diversity: float | None = None) -> tuple[NDArray[np.int64], FloatArray]:
        """Greedy picks of ``state`` (see :func:`~diverse_core.learned.greedy.greedy_picks`)."""
        return greedy_picks(state, self.step, self.first, diversity)


def step_rows(ex: LearnedExample, picks: NDArray[np.int64]) -> tuple[list[FloatArray], list[FloatArray], list[bool]]:
    """Rows, labels and "is first step" of every prefix of ``picks`` (remaining candidates only)."""
    xs, ys, first = [], [], []
    groups = ex.gold_groups
    for t in range(picks.shape[0]):
        prefix = picks[:t]
        covered = groups[prefix]
        free = np.ones(ex.state.n, dtype=bool)
        free[prefix] = False
        new_gold = (groups >= 0) & ~np.isin(groups, covered[covered >= 0])
        xs.append(ex.state.rows(prefix.tolist())[free])
        ys.append(new_gold[free].astype(np.float64))
        first.append(t == 0)
    return xs, ys, first


def _fit(rows: list[FloatArray], labels: list[FloatArray], names: tuple[str, ...], l2: float) -> GoldModel:
    return fit_gold_model(np.concatenate(rows), np.concatenate(labels), feature_names=names, l2=l2)


def fit_step_models(examples: Sequence[LearnedExample], config: TrainConfig = DEFAULT_TRAIN_CONFIG) -> StepModels:
    """Fit the step model(s) on ``examples`` (see the module docstring; deterministic)."""
    if len(examples) < 2:
        raise InvalidParameterError(f"need at least 2 training questions; got {len(examples)}")
    if config.text and not all(ex.state.uses_text for ex in examples):
        raise InvalidParameterError("config.text=True needs every training question built with its question and texts")
    names = feature_names(config.text)
    states = [ex.state if config.text else ex.state.without_text() for ex in examples]
    exs = [LearnedExample(s, ex.gold_groups, ex.n_gold) for s, ex in zip(states, examples, strict=True)]
    rows: list[FloatArray] = []
    labels: list[FloatArray] = []
    firsts: list[bool] = []
    models: StepModels | None = None
    for r in range(config.rounds):
        for ex in exs:
            if r == 0:
                picks = np.argsort(-ex.state.relevance, kind="stable")[: min(ex.state.k, ex.state.n)]
            else:
                assert models is not None
                picks, _ = models.picks(ex.state)
            x, y, f = step_rows(ex, picks)
            rows += x
            labels += y
            firsts += f
        if config.split_first:
            later = [i for i, f in enumerate(firsts) if not f]
            first_rows = [i for i, f in enumerate(firsts) if f]
            if not later:
                raise InvalidParameterError("split_first needs k >= 2")
            step = _fit([rows[i] for i in later], [labels[i] for i in later], names, config.l2)
            first = _fit([rows[i] for i in first_rows], [labels[i] for i in first_rows], names, config.l2)
            models = StepModels(step, first)
        else:
            models = StepModels(_fit(rows, labels, names, config.l2))
    assert models is not None
    return models


@dataclass(frozen=True)
class CVResult:
    """Held-out recall of one configuration: ``mean`` and ``per_question`` (in the examples' order)."""

    mean: float
    per_question: FloatArray


def cross_validate(examples: Sequence[LearnedExample], config: TrainConfig, *, folds: int = 5) -> CVResult:
    """Mean held-out gold recall of ``config`` (question ``i`` in fold ``i mod folds``), with per-question values."""
    if len(examples) < folds:
        raise InvalidParameterError(f"need at least folds={folds} questions; got {len(examples)}")
    fold = np.arange(len(examples)) % folds
    recall = np.zeros(len(examples))
    for f in range(folds):
        train = [examples[i] for i in np.flatnonzero(fold != f).tolist()]
        models = fit_step_models(train, config)
        for i in np.flatnonzero(fold == f).tolist():
            state = examples[i].state if config.text else examples[i].state.without_text()
            picks, _ = models.picks(state)
            recall[i] = examples[i].recall(picks)
    return CVResult(float(recall.mean()), recall)

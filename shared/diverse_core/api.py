"""The two entry points of the core: :func:`select` and :func:`sweep`."""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .errors import InvalidParameterError
from .near_duplicates import check_threshold, near_pairs, text_ids
from .plan import DROPPED, DUPLICATE_THRESHOLD, guarded_run, make_plan, prepared
from .registry import DIVERSITY, get_method
from .result import Selection, Sweep
from .validation import check_values

__all__ = ["select", "sweep"]


def select(
    method: str,
    query: ArrayLike,
    candidates: ArrayLike,
    k: int,
    *,
    relevance: ArrayLike | None = None,
    on_bad: str = "drop",
    **params: Any,
) -> Selection:
    """Pick ``k`` of ``candidates`` for ``query`` with a registered method.

    Args:
        method: a registered method name (:func:`diverse_core.available_methods`); the
            built-in ones are ``"topk"``, ``"mmr"``, ``"gmmr"``, ``"dartboard"``, ``"vendi"``,
            ``"dpp"``, ``"msd"``, ``"cover"``, ``"ssd"``, ``"gist"``, ``"adaptive"`` and
            ``"learned"`` (the last two also read ``question=`` and ``texts=`` when given).
        query: query embedding, shape (d,).
        candidates: candidate embeddings, shape (n, d). Rows need not be unit
            length; they are normalised internally (inputs are never mutated).
        k: number of items to pick. ``k > n`` returns all ``n`` in pick order.
        relevance: optional precomputed relevance of each candidate (e.g. a
            cross-encoder score); defaults to cosine similarity to the query.
        on_bad: what a bad candidate does: ``"drop"`` (default) leaves a candidate with a
            NaN, inf or all-zero vector (or, for a method that reads ``texts``, an empty or
            blank text) out, answers from the rest and lists it in
            ``details["dropped"]`` (``{"index": position, "reason": ...}``; the returned
            indices are positions among all the candidates given); ``"raise"`` makes it a
            typed error (:class:`~diverse_core.errors.NonFiniteInputError`,
            :class:`~diverse_core.errors.ZeroVectorError`). A bad query, or a pool with no
            usable candidate, is a typed error either way.
        **params: the method's parameters, e.g. ``lambda_mult=0.5`` for
            ``mmr``/``gmmr``, ``sigma=0.1`` for ``dartboard``, ``s=0.5`` for ``vendi``,
            ``lam=0.5`` for ``gist``; or ``diversity`` in [0, 1] for any method (0: pure
            relevance, 1: the method's most diverse setting), mapped to its own parameter (for
            ``dpp``/``msd``/``cover``/``ssd``/``adaptive``/``learned`` it is their own parameter; see
            :class:`~diverse_core.registry.DiversityMap`; the native name wins when both are
            given, and they must agree).
            ``params`` may also hold ``duplicate_threshold``, the near-duplicate guard
            (:mod:`diverse_core.near_duplicates`): no pick has a cosine similarity above it to an
            earlier pick, nor the same text (with ``texts=``), while a distinct candidate remains.
            Off here by default (the method's own picks, exactly); the faces turn it on at 0.95.
            ``topk`` is never guarded; the candidates it left out are in ``details["near_duplicates"]``.

    Returns:
        A :class:`Selection` with indices in pick order, objective values and relevance.

    Example:
        >>> import numpy as np
        >>> q = np.array([1.0, 0.0])
        >>> c = np.array([[1.0, 0.0], [1.0, 0.0], [0.6, 0.8]])
        >>> select("gmmr", q, c, k=2, lambda_mult=0.5).indices.tolist()
        [0, 2]
    """
    return make_plan(method, params).run(query, candidates, k, relevance=relevance, on_bad=on_bad)


def sweep(
    method: str,
    query: ArrayLike,
    candidates: ArrayLike,
    k: int,
    values: ArrayLike,
    *,
    relevance: ArrayLike | None = None,
    over: str | None = None,
    on_bad: str = "drop",
    **params: Any,
) -> Sweep:
    """Run ``method`` for every value of its trade-off parameter at once.

    Row ``i`` of the result equals ``select(method, ..., **{param: values[i]})``;
    the grid is computed together (one batched pass) rather than in a loop.

    Args:
        method: a method with a trade-off parameter (``mmr``/``gmmr``:
            ``lambda_mult``; ``dartboard``: ``sigma``; ``vendi``: ``s``).
        query, candidates, k, relevance, on_bad: as in :func:`select` (the candidates left
            out are listed in the result's ``details["dropped"]``).
        values: the parameter values to sweep, shape (L,).
        over: ``"diversity"`` to sweep the shared knob instead (``values`` in [0, 1], each
            mapped to the method's own parameter; the result's ``param`` is then
            ``"diversity"``); ``None`` or the method's own parameter name: ``values`` are
            values of that parameter.
        **params: the method's other parameters, shared by every value; also
            ``duplicate_threshold``, the near-duplicate guard as in :func:`select` (a row whose
            picks hold a near-duplicate pair is that value's guarded selection).

    Example:
        >>> import numpy as np
        >>> rng = np.random.default_rng(0)
        >>> sw = sweep("gmmr", rng.normal(size=8), rng.normal(size=(20, 8)), 5,
        ...            values=[0.1, 0.5, 1.0])
        >>> sw.indices.shape
        (3, 5)
        >>> sweep("gmmr", rng.normal(size=8), rng.normal(size=(20, 8)), 5,
        ...       values=[0.0, 0.5], over="diversity").param
        'diversity'
    """
    spec = get_method(method)
    params = dict(params)
    threshold = check_threshold(params.pop(DUPLICATE_THRESHOLD, None))
    if spec.param is None and over == DIVERSITY and spec.diversity is not None and spec.diversity.constant:
        return _constant_sweep(spec.name, query, candidates, k, values, relevance, params, on_bad)
    if spec.param is None or spec.run_sweep is None:
        raise InvalidParameterError(f"method {method!r} has no trade-off parameter to sweep")
    if over not in (None, spec.param, DIVERSITY):
        raise InvalidParameterError(
            f"over must be None, {spec.param!r} or {DIVERSITY!r} for method {method!r}; got over={over!r}"
        )
    grid = check_values(values, "values")
    swept = over or spec.param
    for name in dict.fromkeys((spec.param, swept)):
        if name in params and not (name == DIVERSITY and params[name] is None):
            raise InvalidParameterError(
                f"{name} is swept by `values`; do not also pass {name}={params[name]!r}"
            )
    native_grid = grid
    if swept == DIVERSITY and spec.param != DIVERSITY:
        native_grid = np.array(
            [spec.diversity_params({DIVERSITY: float(v)})[spec.param] for v in grid], dtype=np.float64
        )
    for v in native_grid:  # range-check every value with the method's own rules
        spec.resolve_params({**params, spec.param: float(v)})
    resolved = spec.resolve_params(params)
    resolved.pop(spec.param, None)
    prep, narrowed = prepared(spec, query, candidates, k, relevance, resolved, on_bad)
    local, scores = spec.run_sweep(prep, native_grid, **narrowed)
    local = np.array(local, dtype=np.int64)
    scores = np.array(scores, dtype=np.float64)
    if threshold is not None and local.shape[1] > 1:
        ids = text_ids(narrowed.get("texts"), prep.n)
        pairs = near_pairs(prep.candidates, ids, threshold, local, local)
        for row in np.flatnonzero(np.triu(pairs, 1).any(axis=(1, 2))):
            redo = guarded_run(spec, prep, {**narrowed, spec.param: float(native_grid[row])}, threshold)
            local[row], scores[row] = redo[0], redo[1]
    return Sweep(
        method=spec.name,
        param=swept,
        values=grid,
        indices=local if prep.screen is None else prep.screen.kept[local],
        scores=scores,
        relevance=prep.relevance[local],
        params=resolved,
        details={} if prep.screen is None else {DROPPED: prep.screen.details()},
    )


def _constant_sweep(
    method: str, query: ArrayLike, candidates: ArrayLike, k: int, values: ArrayLike,
    relevance: ArrayLike | None, params: dict[str, Any], on_bad: str,
) -> Sweep:
    """A ``diversity`` sweep of a method without a trade-off (``topk``): every value in [0, 1]
    runs its one setting, so each row is the same selection."""
    grid = check_values(values, "values")
    if params.get(DIVERSITY) is not None:
        raise InvalidParameterError(
            f"{DIVERSITY} is swept by `values`; do not also pass {DIVERSITY}={params[DIVERSITY]!r}"
        )
    spec = get_method(method)
    for v in grid:  # each value still lies in [0, 1]
        spec.diversity_params({DIVERSITY: float(v)})
    one = select(method, query, candidates, k, relevance=relevance, on_bad=on_bad, **{**params, DIVERSITY: None})
    rows = (grid.shape[0], 1)
    return Sweep(
        method=one.method,
        param=DIVERSITY,
        values=grid,
        indices=np.tile(one.indices, rows),
        scores=np.tile(one.scores, rows),
        relevance=np.tile(one.relevance, rows),
        params=one.params,
        details={DROPPED: one.details[DROPPED]} if DROPPED in one.details else {},
    )

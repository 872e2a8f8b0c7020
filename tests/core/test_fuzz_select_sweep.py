"""Property-based fuzzing of ``select`` and ``sweep`` over every registered method (issue 14).

Inputs: pools of 1-30 candidates in 1-16 dimensions (now and then 0), ``k`` from 1 to
``n + 3`` (now and then a bad ``k``), float16/32/64, integer, bool, complex and object
dtypes, lists (some ragged) as well as arrays, extreme magnitudes (0, ±1e-300, ±1e300,
subnormals, values near the float32 limit), NaN and inf, duplicated rows, a zero row,
a query equal to a candidate, caller-supplied relevance (also huge, tiny or wrong), and
parameters in and out of range or of the wrong type. Every call must either raise one
of the library's typed errors (:class:`DiverseRAGError`) or return ``min(k, n)`` distinct
in-range picks with finite scores and relevance; no input may change, and the library
must emit no numpy RuntimeWarning (overflow, invalid value, discarded imaginary part).

Example counts: 50 per test by default, 500 over the ten fuzz tests (5 methods x
``select``/``sweep``; derandomized under ``HYPOTHESIS_PROFILE=ci``). For a long run set
``DIVERSE_RAG_FUZZ`` to the total number of examples, shared evenly by the ten tests::

    DIVERSE_RAG_FUZZ=10000 python -m pytest -q tests/core/test_fuzz_select_sweep.py \
        --hypothesis-show-statistics
"""

from __future__ import annotations

import math
import os
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from diverse_core import available_methods, select, sweep
from diverse_core.errors import DiverseRAGError
from diverse_core.registry import get_method
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

METHODS = ("topk", "mmr", "gmmr", "dartboard", "vendi", "adaptive", "learned", "dpp", "msd", "cover", "ssd",
           "gist")
#: Examples per fuzz test: 50, or ``DIVERSE_RAG_FUZZ`` (a total) over the ten tests.
EXAMPLES = -(-int(os.environ.get("DIVERSE_RAG_FUZZ", "0") or 0) // (2 * len(METHODS))) or 50
FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

#: Values planted into otherwise ordinary arrays.
SPECIALS = (0.0, 1e-300, -1e-300, 1e300, -1e300, 5e-324, -5e-324, 3e38, -3e38, 1e39,
            math.inf, -math.inf, math.nan)
#: Scales of whole arrays (float64 before the dtype cast).
SCALES = (1.0, 1e-300, 1e300, 1e-160, 1e160, 1e-40, 1e38, 5e-324, 1e-3)
#: Scales that stay inside each float dtype's range (valid examples).
SCALES_IN_RANGE = {
    "float16": (1.0, 1e-3, 1e-5, 1e4),
    "float32": (1.0, 1e-40, 1e-30, 1e30, 5e37, 1e-3),
    "float64": SCALES,
}
#: Planted values that are finite (the valid half of the examples).
FINITE_SPECIALS = tuple(v for v in SPECIALS if math.isfinite(v))
REAL_DTYPES = ("float64", "float32", "float16", "int64", "int8", "bool")
DTYPES = (*REAL_DTYPES, "complex", "object")
#: Share of examples with hostile inputs (the rest are valid, if extreme).
HOSTILE = st.integers(0, 9).map(lambda x: x < 4)

# ----------------------------------------------------------------------------- strategies

GOOD_UNIT = st.one_of(st.sampled_from([0.0, 1.0, 0.5]), st.floats(0.0, 1.0))
BAD_NUMBER = st.sampled_from(
    [-0.1, 1.5, math.nan, math.inf, -math.inf, "0.5", None, True, [0.5], 1j, object()]
)
SIGMA = st.one_of(
    st.sampled_from([1e-200, 5e-324, 1e-154, 1e-150, 1e-5, 0.1, 1.0, 1e300]),
    st.floats(1e-3, 10.0),
)
ORDER = st.one_of(
    st.sampled_from([1.0, 1.0 + 1e-13, 1.0 - 1e-13, 1.0 + 2**-52, 2.0, 0.5, math.inf, 1e-300,
                     1e300]),
    st.floats(0.05, 5.0),
)


def _param(
    good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any] = BAD_NUMBER, hostile: bool = True
) -> Any:
    """Valid values; when ``hostile``, sometimes invalid ones."""
    return st.one_of(good, good, good, bad) if hostile else good


def _scorer(kind: str, n: int) -> Callable[[Any], Any]:
    """A synthetic pair scorer (no model): fine, or returning something wrong."""

    def score(pairs: Any) -> Any:
        if kind == "short":
            return np.zeros(max(len(pairs) - 1, 0))
        if kind == "nan":
            return np.full(len(pairs), math.nan)
        if kind == "text":
            return ["high"] * len(pairs)
        if kind == "huge":
            return np.full(len(pairs), 1e200)
        # deterministic similarity-like scores in [-1, 1]
        return np.array([math.cos(0.7 * i + 1.3 * j + 0.1 * n) for i, j in pairs])

    return score


@st.composite
def method_params(draw: st.DrawFn, method: str, n: int, hostile: bool) -> dict[str, Any]:
    """Keyword parameters for ``method`` (the swept one included)."""
    if method in ("mmr", "gmmr"):
        return {"lambda_mult": draw(_param(GOOD_UNIT, hostile=hostile))}
    if method == "vendi":
        out: dict[str, Any] = {"s": draw(_param(GOOD_UNIT, hostile=hostile))}
        out["objective"] = draw(_param(st.sampled_from(["paper", "vendirag"]),
                                       st.sampled_from(["Paper", 1, None]), hostile))
        out["order"] = draw(_param(ORDER, st.sampled_from([0.0, -1.0, math.nan, -math.inf,
                                                          "2", None]), hostile))
        return out
    if method == "dartboard":
        out = {"sigma": draw(_param(SIGMA, st.sampled_from([0.0, -1.0, math.nan, math.inf,
                                                            "0.1", None]), hostile))}
        variant = draw(_param(st.sampled_from(["cosine", "hybrid", "crossencoder"]),
                              st.sampled_from(["bogus", None, np.array([1, 2])]), hostile))
        out["variant"] = variant
        kinds = ["none", "ok", "ok", "short", "nan", "text", "huge"] if hostile else ["none", "ok"]
        scorer_kind = draw(st.sampled_from(kinds))
        if isinstance(variant, str) and variant == "crossencoder" and scorer_kind == "none":
            scorer_kind = "ok"
        if scorer_kind != "none":
            out["scorer"] = _scorer(scorer_kind, n)
        out["triage_k"] = draw(_param(st.one_of(st.none(), st.integers(1, 40)),
                                      st.sampled_from([0, -3, 2.5, "5"]), hostile))
        return out
    if method in ("dpp", "msd", "cover", "ssd"):
        out = {"diversity": draw(_param(GOOD_UNIT, hostile=hostile))}
        if method == "dpp":
            out["scale"] = draw(_param(st.floats(0.01, 5.0), st.sampled_from([0.0, -1.0, 1e300]),
                                       hostile))
        if method == "cover":
            out["gamma"] = draw(_param(st.floats(0.05, 1.0), st.sampled_from([0.0, 1.5]), hostile))
        if method == "ssd":
            out["gamma"] = draw(_param(st.floats(0.1, 5.0), st.sampled_from([0.0, -2.0]), hostile))
            out["window"] = draw(_param(st.one_of(st.none(), st.integers(1, 6)),
                                        st.sampled_from([0, 2.5, "3"]), hostile))
        return out
    if method == "gist":
        return {"lam": draw(_param(st.floats(0.0, 10.0), st.sampled_from([-1.0, math.nan]), hostile)),
                "eps": draw(_param(st.sampled_from([0.1, 0.5, 1.0]), st.sampled_from([0.0, 2.0]),
                                   hostile))}
    if method in ("adaptive", "learned") and hostile and draw(st.booleans()):
        return {"model": draw(st.sampled_from([None, 3, "no/such/model.npz", b"x"]))}
    return {}


def _cast(arr: np.ndarray, dtype: str) -> np.ndarray:
    """``arr`` (float64) in ``dtype``; out-of-range values become inf/garbage as numpy casts."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dtype in ("int64", "int8"):  # small integers, whatever the scale
            top = np.nanmax(np.abs(arr[np.isfinite(arr)]), initial=0.0) or 1.0
            return np.nan_to_num(np.clip(arr / top * 5.0, -100, 100)).round().astype(dtype)
        if dtype == "bool":
            return arr > 0
        if dtype == "complex":
            return arr + 0.5j
        if dtype == "object":
            return arr.astype(object)
        return arr.astype(dtype)


@st.composite
def vectors(draw: st.DrawFn, hostile: bool) -> dict[str, Any]:
    """Query, candidates, k and relevance: extreme but valid values, and when ``hostile``
    every kind of trouble (NaN/inf, zero rows, bad dtypes, ragged lists, bad ``k``)."""
    n = draw(st.integers(1, 30))
    d = draw(st.integers(0, 16) if hostile else st.integers(1, 16))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    dtype = draw(st.sampled_from(DTYPES if hostile else REAL_DTYPES))
    query_dtype = draw(st.sampled_from([dtype, "float64", "float32"]))
    scales = SCALES if hostile else SCALES_IN_RANGE.get(dtype, SCALES)
    query_scales = SCALES if hostile else SCALES_IN_RANGE.get(query_dtype, SCALES)
    with np.errstate(all="ignore"):
        if draw(st.booleans()):
            cand = rng.normal(size=(n, d)) * draw(st.sampled_from(scales))
        else:  # few distinct values: ties everywhere
            cand = rng.integers(-2, 3, size=(n, d)).astype(np.float64)
        query = rng.normal(size=d) * draw(st.sampled_from(query_scales))
    if n > 1 and draw(st.booleans()):  # duplicated rows
        src = rng.integers(0, n, size=draw(st.integers(1, n)))
        dst = rng.integers(0, n, size=src.size)
        cand[dst] = cand[src]
    if d and draw(st.integers(0, 3)) == 0:  # the query is one of the candidates
        query = cand[rng.integers(0, n)].copy()
    if hostile and draw(st.integers(0, 3)) == 0:  # a zero row
        cand[rng.integers(0, n)] = 0.0
    if d and draw(st.integers(0, 2)) == 0:  # planted extreme values
        for _ in range(draw(st.integers(1, 3))):
            where = draw(st.sampled_from(["cand", "query"]))
            value = draw(st.sampled_from(SPECIALS if hostile else FINITE_SPECIALS))
            if where == "cand":
                cand[rng.integers(0, n), rng.integers(0, d)] = value
            else:
                query[rng.integers(0, d)] = value
    cand_t = _cast(cand, dtype)
    query_t = _cast(query, query_dtype)
    k = draw(st.integers(1, n + 3) if not hostile else st.one_of(
        st.integers(1, n + 3), st.sampled_from([0, -1, 2.5, "3", None, True, np.int64(2)])))
    relevance: Any = None
    rel_kinds = ["none", "none", "normal", "scaled", "special"]
    rel_kind = draw(st.sampled_from(rel_kinds + ["short", "text"] if hostile else rel_kinds))
    if rel_kind != "none":
        with np.errstate(all="ignore"):
            relevance = rng.uniform(-1, 1, size=n)
            if rel_kind == "scaled":
                relevance = relevance * draw(st.sampled_from([1e39, 1e300, 1e308, 1e-300, 1e30]))
            elif rel_kind == "special":
                relevance[rng.integers(0, n)] = draw(
                    st.sampled_from(SPECIALS if hostile else FINITE_SPECIALS))
            elif rel_kind == "short":
                relevance = relevance[: n - 1] if n > 1 else relevance.tolist() + [0.0]
            elif rel_kind == "text":
                relevance = ["0.5"] * n
    as_list = draw(st.integers(0, 5))
    cand_arg: Any = cand_t
    if as_list == 0:
        cand_arg = cand_t.tolist()
    elif as_list == 1 and hostile and n > 1 and d > 1:  # ragged
        cand_arg = cand_t.tolist()
        cand_arg[-1] = cand_arg[-1][:-1]
    return {"query": query_t, "candidates": cand_arg, "k": k, "relevance": relevance, "n": n}


GOOD_VALUES = {
    "mmr": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "gmmr": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "vendi": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "dartboard": st.lists(SIGMA, min_size=1, max_size=4),
    "topk": st.lists(GOOD_UNIT, min_size=1, max_size=3),
    "adaptive": st.lists(GOOD_UNIT, min_size=1, max_size=3),  # no swept parameter: a typed error
    "learned": st.lists(GOOD_UNIT, min_size=1, max_size=3),  # no swept parameter: a typed error
    "dpp": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "msd": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "cover": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "ssd": st.lists(GOOD_UNIT, min_size=1, max_size=6),
    "gist": st.lists(st.floats(0.0, 10.0), min_size=1, max_size=6),
}
BAD_VALUES = st.one_of(
    st.lists(st.floats(1e-3, 2.0), min_size=1, max_size=6),
    st.sampled_from([
        [], "abc", "0.5", {"a": 0.5}, None, object(), [None], ["0.1", "0.2"], [[0.1, 0.2], [0.3]],
        [0.1, math.nan], [0.2, math.inf], [0.5, 1.5], [-0.5], [1j], [True, False], 0.5,
        np.array([0.1, 0.9], dtype=np.float32), range(3),
    ]),
    st.builds(lambda: (v for v in (0.1, 0.5))),
)

# ----------------------------------------------------------------------------- checks


def _snapshot(value: Any) -> Any:
    """A copy to compare with after the call (arrays by dtype, shape and bytes)."""
    if isinstance(value, np.ndarray):
        return (value.dtype, value.shape, value.tobytes())
    if isinstance(value, list):
        return repr(value)
    return value if value is None or isinstance(value, (str, int, float)) else repr(value)


def _inputs_unchanged(case: dict[str, Any]) -> None:
    for name in ("query", "candidates", "relevance"):
        assert _snapshot(case[name]) == case["before"][name], f"{name} was modified"


def _check_picks(indices: np.ndarray, scores: np.ndarray, relevance: np.ndarray, n: int,
                 k: Any, details: dict[str, Any]) -> None:
    dropped = {d["index"] for d in details.get("dropped", [])}  # bad candidates left out
    want = min(int(k), n - len(dropped))
    assert indices.shape[-1] == want
    for row in np.atleast_2d(indices):
        assert len(set(row.tolist())) == want, f"repeated picks {row.tolist()}"
        assert row.min() >= 0 and row.max() < n
        assert not set(row.tolist()) & dropped
    assert np.all(np.isfinite(scores)), f"non-finite scores {scores}"
    assert np.all(np.isfinite(relevance)), f"non-finite relevance {relevance}"


def _call(fn: Callable[[], Any]) -> Any:
    """``fn()``; a typed library error is an allowed outcome (returned as None).

    numpy RuntimeWarnings (overflow, invalid value, ComplexWarning) raised inside the
    library become exceptions, hence failures.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            return fn()
        except DiverseRAGError as exc:
            assert str(exc), "typed errors must say what is wrong"
            return None


def _draw(data: st.DataObject, method: str) -> tuple[bool, dict[str, Any], dict[str, Any]]:
    """(hostile, inputs, parameters) of one example."""
    hostile = data.draw(HOSTILE, label="hostile")
    case = data.draw(vectors(hostile), label="inputs")
    params = data.draw(method_params(method, case["n"], hostile), label="params")
    case["before"] = {name: _snapshot(case[name]) for name in ("query", "candidates", "relevance")}
    return hostile, case, params


def test_every_registered_method_is_fuzzed() -> None:
    assert set(available_methods()) <= set(METHODS)


@pytest.mark.parametrize("method", METHODS)
@FUZZ
@given(data=st.data())
def test_fuzz_select_only_typed_errors_and_valid_picks(method: str, data: st.DataObject) -> None:
    _, case, params = _draw(data, method)
    sel = _call(lambda: select(method, case["query"], case["candidates"], case["k"],
                               relevance=case["relevance"], **params))
    _inputs_unchanged(case)
    if sel is not None:
        _check_picks(sel.indices, sel.scores, sel.relevance, case["n"], case["k"], sel.details)


@pytest.mark.parametrize("method", METHODS)
@FUZZ
@given(data=st.data())
def test_fuzz_sweep_only_typed_errors_and_valid_picks(method: str, data: st.DataObject) -> None:
    hostile, case, params = _draw(data, method)
    spec = get_method(method)
    if spec.param is not None:
        params.pop(spec.param, None)
    good = GOOD_VALUES[method]
    values = data.draw(st.one_of(good, good, BAD_VALUES) if hostile else good, label="values")
    values_before = _snapshot(values)
    sw = _call(lambda: sweep(method, case["query"], case["candidates"], case["k"], values,
                             relevance=case["relevance"], **params))
    _inputs_unchanged(case)
    if isinstance(values, (list, np.ndarray)):
        assert _snapshot(values) == values_before, "values was modified"
    if sw is not None:
        assert sw.indices.shape[0] == sw.values.shape[0] >= 1
        _check_picks(sw.indices, sw.scores, sw.relevance, case["n"], case["k"], sw.details)

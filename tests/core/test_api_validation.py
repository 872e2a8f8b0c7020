"""The public API (select, sweep, registry, results) and its input validation."""

from __future__ import annotations

import math
import warnings
from typing import Any

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import (
    DimensionMismatchError,
    DiverseRAGError,
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    UnknownMethodError,
    ZeroVectorError,
)
from diverse_core.registry import get_method, register_method

RNG = np.random.default_rng(0)
Q = RNG.normal(size=4)
C = RNG.normal(size=(12, 4))
METHODS = ("topk", "mmr", "gmmr", "dartboard", "vendi")


def test_registry_lists_builtin_methods_with_defaults() -> None:
    assert set(METHODS) <= set(dc.available_methods())
    assert get_method("mmr").param == "lambda_mult"
    assert get_method("gmmr").param == "lambda_mult"
    assert get_method("dartboard").param == "sigma"
    assert get_method("vendi").param == "s"
    assert get_method("topk").param is None
    assert get_method("dartboard").defaults["triage_k"] == 100


def test_selection_result_fields_and_records() -> None:
    sel = dc.select("gmmr", Q, C, 3, lambda_mult=0.4)
    assert sel.method == "gmmr" and sel.params == {"lambda_mult": 0.4}
    recs = sel.as_records()
    assert [r["rank"] for r in recs] == [0, 1, 2]
    assert [r["index"] for r in recs] == sel.indices.tolist()
    assert all(isinstance(r["score"], float) for r in recs)
    assert dc.select("dartboard", Q, C, 2).params == {
        "sigma": 0.1,
        "variant": "cosine",
        "scorer": None,
        "triage_k": 100,
    }


def test_sweep_result_fields() -> None:
    sw = dc.sweep("mmr", Q, C, 3, [0.2, 0.8])
    assert len(sw) == 2 and sw.values.tolist() == [0.2, 0.8]
    assert [s.params["lambda_mult"] for s in sw.selections] == [0.2, 0.8]
    assert sw.indices.shape == sw.scores.shape == sw.relevance.shape == (2, 3)


def test_accepts_lists_and_integer_arrays() -> None:
    a = dc.select("mmr", Q.tolist(), C.tolist(), 3)
    b = dc.select("mmr", Q, C, 3)
    assert a.indices.tolist() == b.indices.tolist()
    ints = dc.select("topk", [1, 0], [[0, 1], [3, 0], [1, 1]], np.int32(2))
    assert ints.indices.tolist() == [1, 2]


@pytest.mark.parametrize(
    "err",
    [
        InvalidParameterError,
        EmptyCandidatesError,
        DimensionMismatchError,
        NonFiniteInputError,
        ZeroVectorError,
        UnknownMethodError,
    ],
)
def test_errors_are_value_errors(err: type) -> None:
    assert issubclass(err, DiverseRAGError) and issubclass(err, ValueError)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize("method", METHODS)
def test_empty_pool(method: str) -> None:
    with pytest.raises(EmptyCandidatesError, match="candidates"):
        dc.select(method, Q, np.zeros((0, 4)), 3)


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("k", [0, -1, 2.0, 2.5, "3", None, True])
def test_bad_k(method: str, k: object) -> None:
    with pytest.raises(InvalidParameterError, match=r"\bk\b") as info:
        dc.select(method, Q, C, k)  # type: ignore[arg-type]
    assert repr(k) in str(info.value)


def test_k_accepts_numpy_integers() -> None:
    assert len(dc.select("mmr", Q, C, np.int64(4))) == 4


@pytest.mark.parametrize(
    ("query", "cands", "name"),
    [
        (np.ones(3), np.ones((5, 4)), "query"),
        (np.ones((1, 4)), np.ones((5, 4)), "query"),
        (np.ones(4), np.ones(4), "candidates"),
        (np.ones(4), np.ones((2, 5, 4)), "candidates"),
        (np.ones(4), [[1.0, 2.0], [3.0]], "candidates"),
        (np.ones(4), "abc", "candidates"),
    ],
)
def test_dimension_mismatch(query: object, cands: object, name: str) -> None:
    with pytest.raises(DimensionMismatchError, match=name):
        dc.select("mmr", query, cands, 2)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs(bad: float) -> None:
    c = C.copy()
    c[3, 1] = bad
    with pytest.raises(NonFiniteInputError, match=r"candidates.*\[3, 1\]"):
        dc.select("gmmr", Q, c, 2, on_bad="raise")  # the default drops the candidate (test_bad_candidates)
    q = Q.copy()
    q[2] = bad
    with pytest.raises(NonFiniteInputError, match="query"):
        dc.select("gmmr", q, C, 2)
    rel = np.ones(12)
    rel[5] = bad
    with pytest.raises(NonFiniteInputError, match="relevance"):
        dc.select("gmmr", Q, C, 2, relevance=rel)


def test_zero_vectors() -> None:
    c = C.copy()
    c[4] = 0.0
    with pytest.raises(ZeroVectorError, match=r"candidates.*row 4"):
        dc.select("mmr", Q, c, 2, on_bad="raise")
    with pytest.raises(ZeroVectorError, match="query"):
        dc.select("mmr", np.zeros(4), C, 2)


def test_relevance_shape_mismatch() -> None:
    with pytest.raises(DimensionMismatchError, match="relevance"):
        dc.select("mmr", Q, C, 2, relevance=np.ones(11))


@pytest.mark.parametrize("method", ["mmr", "gmmr"])
@pytest.mark.parametrize("lam", [-0.1, 1.1, math.nan, math.inf, "0.5", None, True])
def test_lambda_out_of_range(method: str, lam: object) -> None:
    with pytest.raises(InvalidParameterError, match="lambda_mult") as info:
        dc.select(method, Q, C, 2, lambda_mult=lam)
    assert repr(lam) in str(info.value)


@pytest.mark.parametrize("sigma", [0.0, -1.0, math.nan, math.inf, "0.1"])
def test_sigma_out_of_range(sigma: object) -> None:
    with pytest.raises(InvalidParameterError, match="sigma"):
        dc.select("dartboard", Q, C, 2, sigma=sigma)


@pytest.mark.parametrize("s", [-0.01, 1.5, math.nan])
def test_vendi_s_out_of_range(s: float) -> None:
    with pytest.raises(InvalidParameterError, match=r"\bs\b"):
        dc.select("vendi", Q, C, 2, s=s)


@pytest.mark.parametrize(
    ("params", "name"),
    [
        ({"variant": "bogus"}, "variant"),
        ({"variant": "crossencoder"}, "scorer"),
        ({"scorer": 3}, "scorer"),
        ({"triage_k": 0}, "triage_k"),
        ({"triage_k": 2.5}, "triage_k"),
    ],
)
def test_dartboard_bad_options(params: dict[str, object], name: str) -> None:
    with pytest.raises(InvalidParameterError, match=name):
        dc.select("dartboard", Q, C, 2, **params)


@pytest.mark.parametrize("name", ["MMR", "nope", "", None, 3])
def test_unknown_method(name: object) -> None:
    with pytest.raises(UnknownMethodError, match="unknown method") as info:
        dc.select(name, Q, C, 2)  # type: ignore[arg-type]
    assert repr(name) in str(info.value) and "gmmr" in str(info.value)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("mmr", {"lambda": 0.5}),
        ("gmmr", {"sigma": 0.1}),
        ("topk", {"lambda_mult": 0.5}),
        ("dartboard", {"lambda_mult": 0.5}),
    ],
)
def test_unknown_parameter(method: str, params: dict[str, float]) -> None:
    with pytest.raises(InvalidParameterError, match=next(iter(params))):
        dc.select(method, Q, C, 2, **params)


def test_sweep_errors_name_the_parameter() -> None:
    with pytest.raises(InvalidParameterError, match="topk"):
        dc.sweep("topk", Q, C, 2, [0.5])
    with pytest.raises(InvalidParameterError, match="values"):
        dc.sweep("gmmr", Q, C, 2, [])
    with pytest.raises(InvalidParameterError, match="values"):
        dc.sweep("gmmr", Q, C, 2, [0.5, math.nan])
    with pytest.raises(InvalidParameterError, match="lambda_mult"):
        dc.sweep("gmmr", Q, C, 2, [0.5, 1.2])
    with pytest.raises(InvalidParameterError, match="lambda_mult"):
        dc.sweep("gmmr", Q, C, 2, [0.5], lambda_mult=0.3)
    with pytest.raises(InvalidParameterError, match="sigma"):
        dc.sweep("dartboard", Q, C, 2, [0.1, 0.0])
    with pytest.raises(UnknownMethodError):
        dc.sweep("nope", Q, C, 2, [0.1])


def test_register_method_refuses_silent_overwrite() -> None:
    spec = get_method("topk")
    with pytest.raises(ValueError, match="topk"):
        register_method(spec)
    register_method(spec, replace=True)
    assert get_method("topk") is spec


def test_single_candidate() -> None:
    for method in METHODS:
        sel = dc.select(method, Q, C[:1], 5)
        assert sel.indices.tolist() == [0]


def _pool_with_unit_rows(n: int, dtype: type) -> tuple[Any, np.ndarray, np.ndarray]:
    """Prepared inputs over a random (n, 24) pool, the pool, and its float64 unit rows."""
    from diverse_core.validation import prepare_inputs

    rng = np.random.default_rng(n)
    cand = rng.normal(size=(n, 24)).astype(dtype)
    prep = prepare_inputs(rng.normal(size=24), cand, 3)
    unit = cand.astype(np.float64) / np.linalg.norm(cand.astype(np.float64), axis=1, keepdims=True)
    return prep, cand, unit


@pytest.mark.parametrize("n", [1, 300, 512, 700, 1000, 1024])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cosine_rows_equal_plain_products(n: int, dtype: type) -> None:
    from diverse_core.validation import prepare_inputs

    prep, cand, unit = _pool_with_unit_rows(n, dtype)
    rng = np.random.default_rng(n + 1)
    idx = [0, n // 2, n - 1, n // 3]
    expected = unit[idx] @ unit.T
    got = prep.cosine_rows(idx)
    assert got.shape == (4, n) and got.dtype == np.float64
    np.testing.assert_allclose(got, expected, atol=1e-6 if dtype is np.float32 else 1e-12)
    # a strided (non-contiguous) view takes the plain path and agrees too
    view = np.repeat(cand, 2, axis=0)[::2]
    prep2 = prepare_inputs(rng.normal(size=24), view, 3)
    np.testing.assert_allclose(prep2.cosine_rows(idx), got, atol=1e-6 if dtype is np.float32 else 1e-12)


@pytest.mark.parametrize("n", [7, 600, 1001])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_pick_columns_store_cosines_by_slot(n: int, dtype: type) -> None:
    from diverse_core.methods._common import PickColumns

    prep, _, unit = _pool_with_unit_rows(n, dtype)
    store = PickColumns(prep, capacity=1)  # too small on purpose: the store must grow
    tol = 1e-5 if dtype is np.float32 else 1e-12
    seen: dict[int, int] = {}
    for picks in ([0, 0, n - 1], [n // 2, 0, 3], [5, 6, n - 1, n // 3]):
        slots = store.slots(np.array(picks))
        assert slots.shape == (len(picks),) and np.all(slots != PickColumns.NONE)
        for item, slot in zip(picks, slots.tolist(), strict=True):
            assert seen.setdefault(item, slot) == slot  # an item keeps its slot
            np.testing.assert_allclose(store.columns[slot], unit @ unit[item], atol=tol)
    assert len(set(seen.values())) == len(seen)  # distinct items, distinct slots
    assert np.all(store.columns[PickColumns.NONE] == 0.0)


@pytest.mark.parametrize("n", [257, 700])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_pools_check_and_measure(n: int, dtype: type) -> None:
    # norms and relevance of a larger pool, and the errors name the position of the bad value
    from diverse_core.validation import prepare_inputs

    rng = np.random.default_rng(n)
    cand = (rng.normal(size=(n, 16)) * rng.uniform(0.1, 10.0, size=(n, 1))).astype(dtype)
    q = rng.normal(size=16)
    prep = prepare_inputs(q, cand, 3)
    c64 = cand.astype(np.float64)
    norms = np.linalg.norm(c64, axis=1)
    tol = 1e-6 if dtype is np.float32 else 1e-12
    np.testing.assert_allclose(prep.inv_norms, 1.0 / norms, rtol=tol)
    expected = (c64 / norms[:, None]) @ (q / np.linalg.norm(q))
    np.testing.assert_allclose(prep.relevance, expected, atol=tol)
    for value in (np.nan, np.inf):
        bad = cand.copy()
        bad[n - 2, 5] = value
        bad[n - 1] = -np.inf  # inf * 0 and inf - inf inside the products: no warning either
        bad[n - 1, 0] = 0.0
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(NonFiniteInputError, match=rf"candidates.*\[{n - 2}, 5\]"):
                prepare_inputs(q, bad, 3)
    bad = cand.copy()
    bad[n - 1] = 0.0
    with pytest.raises(ZeroVectorError, match=rf"row {n - 1}"):
        prepare_inputs(q, bad, 3)
    huge = cand * dtype(1e30 if dtype is np.float32 else 1e200)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # squares overflow: measured again, no warning
        big = prepare_inputs(q, huge, 3)
    np.testing.assert_allclose(big.relevance, expected, atol=tol)

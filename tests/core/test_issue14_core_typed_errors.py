"""Issue 14 item 7 (core): overflowing magnitudes, tiny sigma, order near 1, non-numeric input.

Each test is named for the case it pins; each failed before the fix (numpy errors,
RuntimeWarnings, duplicate picks with -inf scores, or silently wrong relevance).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from typing import Any

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import (
    DimensionMismatchError,
    InvalidParameterError,
    NonFiniteInputError,
    NonNumericInputError,
)
from diverse_core.metrics import kendall_tau, max_pairwise_distance, spearman_rho, vendi_score
from diverse_core.tuning import argmax_upper_median, binary_search_sample, upper_median

METHODS = ("topk", "mmr", "gmmr", "dartboard", "vendi")
RNG = np.random.default_rng(14)
Q = RNG.normal(size=8)
C = RNG.normal(size=(10, 8))


@pytest.fixture(autouse=True)
def _no_runtime_warnings() -> Iterator[None]:
    """numpy overflow / invalid-value / ComplexWarning inside the library fail the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        yield


def _valid(sel: Any, n: int, k: int) -> None:
    idx = sel.indices.tolist()
    assert len(idx) == min(k, n) and len(set(idx)) == len(idx)
    assert all(0 <= i < n for i in idx)
    assert np.all(np.isfinite(sel.scores)) and np.all(np.isfinite(sel.relevance))


# ------------------------------------------------------------- overflowing magnitudes


@pytest.mark.parametrize("method", METHODS)
def test_issue14_relevance_beyond_float32_range_with_float32_pool_is_handled(method: str) -> None:
    # relevance 1e39 cannot be held by float32 work arrays: gMMR gave [9, 0, 0] with -inf
    rel = 1e39 * np.linspace(-1.0, 1.0, 10)
    c32 = C.astype(np.float32)
    params = {"sigma": 1e60} if method == "dartboard" else {}
    got = dc.select(method, Q, c32, 3, relevance=rel, **params)
    _valid(got, 10, 3)
    want = dc.select(method, Q, C, 3, relevance=rel, **params)
    assert got.indices.tolist() == want.indices.tolist()


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_issue14_relevance_near_float64_max_is_rejected_naming_relevance(
    method: str, sign: float
) -> None:
    # ±1e308: Vendi's range overflowed (IndexError), Dartboard returned -inf scores
    rel = np.linspace(0.5, 1.0, 10) * np.array([1e308, -1e308] * 5) * sign
    with pytest.raises(InvalidParameterError, match=r"relevance\[\d\]=-?1e\+308"):
        dc.select(method, Q, C, 3, relevance=rel)
    if method != "topk":
        values = [0.1, 0.5] if method == "dartboard" else [0.5, 1.0]
        with pytest.raises(InvalidParameterError, match="relevance"):
            dc.sweep(method, Q, C, 3, values, relevance=rel)


@pytest.mark.parametrize("method", METHODS)
def test_issue14_relevance_up_to_1e300_still_works(method: str) -> None:
    rel = np.linspace(-1e300, 1e300, 10)
    if method == "dartboard":  # distances 1 - relevance of 1e300: sigma must match them
        with pytest.raises(InvalidParameterError, match="sigma"):
            dc.select(method, Q, C, 3, relevance=rel)
        return
    sel = dc.select(method, Q, C, 3, relevance=rel)
    _valid(sel, 10, 3)
    assert sel.indices[0] == 9


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("where", ["query", "candidates"])
@pytest.mark.parametrize("scale", [1e308, 5e-324])
def test_issue14_vectors_whose_norm_leaves_the_float_range_keep_their_direction(
    method: str, where: str, scale: float
) -> None:
    # Entries 1e308: the norm (> 1.8e308) was inf and the vector became all zeros
    # (relevance 0 everywhere). Subnormal entries: the norm lost digits (relevance
    # off by 6%). Sign vectors make the expected cosines exact.
    q, c = np.sign(Q), np.sign(C)
    big_q, big_c = (q * scale, c) if where == "query" else (q, c * scale)
    got = dc.select(method, big_q, big_c, 4)
    want = dc.select(method, q, c, 4)
    _valid(got, 10, 4)
    np.testing.assert_allclose(got.relevance, want.relevance, rtol=1e-12)
    assert got.indices.tolist() == want.indices.tolist()


def test_issue14_float32_pool_near_float32_max_is_handled() -> None:
    c = (np.sign(C) * 3e38).astype(np.float32)
    q = (np.sign(Q) * 3e38).astype(np.float32)
    for method in METHODS:
        got = dc.select(method, q, c, 4)
        want = dc.select(method, np.sign(Q), np.sign(C), 4)
        _valid(got, 10, 4)
        np.testing.assert_allclose(got.relevance, want.relevance, rtol=1e-6)


# ------------------------------------------------------------- Dartboard with a tiny sigma


@pytest.mark.parametrize("sigma", [1e-155, 1e-160, 1e-200, 5e-324])
def test_issue14_dartboard_tiny_sigma_is_a_typed_error_naming_sigma(sigma: float) -> None:
    # every candidate's query kernel exp(-d^2 / 2 sigma^2) is 0 in float64: scores were -inf
    with pytest.raises(InvalidParameterError, match=rf"sigma={sigma!r}.*sigma >= ") as info:
        dc.select("dartboard", Q, C, 4, sigma=sigma)
    with pytest.raises(InvalidParameterError, match=rf"sigma={sigma!r}"):
        dc.sweep("dartboard", Q, C, 4, [0.1, sigma])
    # the bound it suggests works
    bound = float(str(info.value).rsplit("sigma >= ", 1)[1])
    _valid(dc.select("dartboard", Q, C, 4, sigma=2.0 * bound), 10, 4)


@pytest.mark.parametrize("sigma", [1e-150, 1e-100, 1e-20])
def test_issue14_dartboard_small_sigma_gives_finite_scores_and_topk(sigma: float) -> None:
    # sigma -> 0 is plain top-k; the scores stay finite while the exponents fit float64
    sel = dc.select("dartboard", Q, C, 5, sigma=sigma)
    _valid(sel, 10, 5)
    assert sel.indices.tolist() == dc.select("topk", Q, C, 5).indices.tolist()


@pytest.mark.parametrize("sigma", [1e-200, 5e-324])
def test_issue14_dartboard_tiny_sigma_with_a_candidate_equal_to_the_query(sigma: float) -> None:
    # distance exactly 0 for candidate 3: its kernel is finite, the others are 0
    # (0/0 = NaN before: sigma**2 underflowed to 0)
    q = np.eye(8)[0]  # cosine exactly 1 with itself (a random vector is 2e-16 off)
    c = C.copy()
    c[3] = q
    sel = dc.select("dartboard", q, c, 4, sigma=sigma)
    _valid(sel, 10, 4)
    assert sel.indices[0] == 3


def test_issue14_dartboard_scorer_with_huge_or_non_numeric_scores_is_typed() -> None:
    def huge(pairs: Any) -> np.ndarray:
        return np.full(len(pairs), 1e200)

    with pytest.raises(InvalidParameterError, match="sigma"):
        dc.select("dartboard", Q, C, 3, variant="crossencoder", scorer=huge)
    with pytest.raises(InvalidParameterError, match="scorer"):
        dc.select("dartboard", Q, C, 3, variant="crossencoder",
                  scorer=lambda pairs: ["high"] * len(pairs))
    with pytest.raises(InvalidParameterError, match="scorer"):
        dc.select("dartboard", Q, C, 3, variant="crossencoder",
                  scorer=lambda pairs: np.ones(len(pairs)) + 1j)


def test_issue14_dartboard_variant_of_the_wrong_type_is_typed() -> None:
    with pytest.raises(InvalidParameterError, match="variant"):
        dc.select("dartboard", Q, C, 3, variant=np.array(["cosine", "hybrid"]))


# ------------------------------------------------------------- Vendi order near 1


@pytest.mark.parametrize("order", [1.0 + 1e-13, 1.0 - 1e-13, 1.0 + 2**-52, 1.0 - 1e-15, 1.0 + 1e-12])
@pytest.mark.parametrize("objective", ["paper", "vendirag"])
def test_issue14_vendi_order_within_1e12_of_one_is_order_one(order: float, objective: str) -> None:
    # 1 + 1e-15 gave a rescaled Vendi term of 1.27 (> 1, impossible) and other picks
    want = dc.select("vendi", Q, C, 6, s=0.9, objective=objective)
    got = dc.select("vendi", Q, C, 6, s=0.9, objective=objective, order=order)
    assert got.params["order"] == 1.0
    assert got.indices.tolist() == want.indices.tolist()
    np.testing.assert_array_equal(got.scores, want.scores)
    sw = dc.sweep("vendi", Q, C, 6, [0.5, 0.9], objective=objective, order=order)
    assert sw.indices[1].tolist() == want.indices.tolist()
    assert vendi_score(C, order) == vendi_score(C, 1.0)
    assert vendi_score(np.eye(4), order) == pytest.approx(4.0, rel=1e-12)


def test_issue14_vendi_order_just_outside_the_snap_stays_renyi() -> None:
    sel = dc.select("vendi", Q, C, 6, s=0.9, order=1.0 + 1e-9)
    assert sel.params["order"] == 1.0 + 1e-9
    _valid(sel, 10, 6)


# ------------------------------------------------------------- shapes and dtypes


@pytest.mark.parametrize("method", METHODS)
def test_issue14_zero_dimension_is_a_typed_error(method: str) -> None:
    with pytest.raises(DimensionMismatchError, match=r"candidates.*dimension 0.*\(3, 0\)"):
        dc.select(method, np.zeros(0), np.zeros((3, 0)), 2)
    with pytest.raises(DimensionMismatchError, match="candidates"):
        dc.select(method, [], [[], []], 1)
    with pytest.raises(DimensionMismatchError, match="query has dimension 0"):
        dc.select(method, np.zeros(0), C, 2)


def _generator() -> Iterator[float]:
    yield 0.5


@pytest.mark.parametrize(
    "values",
    ["abc", "0.5", {"a": 0.5}, _generator(), object(), None, [None], ["0.1", "0.2"],
     [[0.1, 0.2], [0.3]], 1j, [0.5 + 1j], [True, False], np.array([0.5], dtype=object)],
    ids=lambda v: type(v).__name__,
)
@pytest.mark.parametrize("method", ["mmr", "gmmr", "dartboard", "vendi"])
def test_issue14_non_numeric_sweep_values_are_typed_errors(method: str, values: object) -> None:
    with pytest.raises(InvalidParameterError, match="values") as info:
        dc.sweep(method, Q, C, 3, values)  # type: ignore[arg-type]
    assert "values=" in str(info.value)


@pytest.mark.parametrize("name", ["query", "candidates", "relevance"])
@pytest.mark.parametrize(
    "kind", ["complex", "string", "object", "numeric strings", "none", "generator"]
)
def test_issue14_complex_string_and_object_vectors_are_typed_errors(name: str, kind: str) -> None:
    base = {"query": Q, "candidates": C, "relevance": np.linspace(0, 1, 10)}[name]
    bad: Any = {
        "complex": lambda: base + 0.5j,
        "string": lambda: np.full(base.shape, "x"),
        "object": lambda: base.astype(object),
        "numeric strings": lambda: base.astype(str),
        "none": lambda: None,
        "generator": lambda: (v for v in base),
    }[kind]()
    args: dict[str, Any] = {"query": Q, "candidates": C, "relevance": None, name: bad}
    if name == "relevance" and kind == "none":
        pytest.skip("relevance=None means cosine")
    with pytest.raises(NonNumericInputError, match=name):
        dc.select("mmr", args["query"], args["candidates"], 3, relevance=args["relevance"])
    assert issubclass(NonNumericInputError, DimensionMismatchError)  # caught as before


@pytest.mark.parametrize("name", ["query", "candidates"])
def test_issue14_ragged_lists_are_dimension_errors(name: str) -> None:
    ragged: Any = [[1.0, 2.0], [3.0]] if name == "candidates" else [[1.0], [2.0, 3.0]]
    args = {"query": [1.0, 0.0], "candidates": [[1.0, 0.0], [0.0, 1.0]], name: ragged}
    with pytest.raises(DimensionMismatchError, match=name):
        dc.select("gmmr", args["query"], args["candidates"], 2)


def test_issue14_metrics_and_tuning_reject_complex_and_strings_with_typed_errors() -> None:
    with pytest.raises(NonNumericInputError, match="embeddings"):
        vendi_score(C + 1j)
    with pytest.raises(NonNumericInputError, match="embeddings"):
        max_pairwise_distance(C.astype(str), "euclidean")
    with pytest.raises(InvalidParameterError, match="values"):
        upper_median(["0.2", "0.1"])
    with pytest.raises(InvalidParameterError, match="scores"):
        argmax_upper_median([0.1, 0.2], [1 + 1j, 2.0])
    with pytest.raises(DimensionMismatchError, match="ranking"):
        kendall_tau([[0], [1, 2]], [0.3, 0.2, 0.1])
    with pytest.raises(NonNumericInputError, match="reference_scores"):
        spearman_rho([0, 1], [1j, 2.0])
    with pytest.raises(InvalidParameterError, match="score_fn must return a number"):
        binary_search_sample([0.1, 0.2], lambda v: "1.0")


def test_issue14_metrics_with_huge_or_subnormal_embeddings() -> None:
    # unit rows of 1e308 embeddings were zeros (norm overflow): cosine metrics were wrong
    x = np.sign(C)
    assert vendi_score(x * 1e308) == pytest.approx(vendi_score(x), rel=1e-12)
    assert vendi_score(x * 5e-324) == pytest.approx(vendi_score(x), rel=1e-12)
    assert max_pairwise_distance(x * 1e308) == pytest.approx(max_pairwise_distance(x))
    got = max_pairwise_distance(x * 1e200, "euclidean")
    assert got == pytest.approx(1e200 * max_pairwise_distance(x, "euclidean"), rel=1e-12)
    with pytest.raises(NonFiniteInputError, match="float64 range"):
        max_pairwise_distance([[1e308, 0.0], [-1e308, 0.0]], "euclidean")
    assert math.isfinite(max_pairwise_distance([[5e-324, 0.0], [0.0, 5e-324]], "euclidean"))

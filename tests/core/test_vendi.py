"""Tests of the ``vendi`` selection method (``diverse_core.methods.vendi``)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.methods._common import TIE_RTOL
from diverse_core.methods.vendi import vendi_upper_bound
from diverse_core.registry import get_method
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

DATA = Path(os.environ.get("DIVERSE_RAG_DATA", Path(__file__).resolve().parents[2] / ".." / "shared" / "data"))


# --------------------------------------------------------------------------- reference


def _vendi(kernel: np.ndarray, order: float, cutoff: float) -> float:
    size = kernel.shape[0]
    w = np.linalg.eigvalsh(kernel / size)
    w = w[w > cutoff]
    if order == 1.0:
        return float(np.exp(-(w * np.log(w)).sum()))
    if math.isinf(order):
        return float(1.0 / w.max())
    return float((w**order).sum() ** (1.0 / (1.0 - order)))


def reference(
    query: np.ndarray,
    cand: np.ndarray,
    k: int,
    s: float,
    objective: str = "paper",
    order: float = 1.0,
    relevance: np.ndarray | None = None,
) -> list[int]:
    """Slow greedy Vendi selection: one eigendecomposition per candidate and step."""
    x = cand / np.linalg.norm(cand, axis=1, keepdims=True)
    q = query / np.linalg.norm(query)
    rel = x @ q if relevance is None else np.asarray(relevance, dtype=np.float64)
    lo, hi = rel.min(), rel.max()
    vendirag = objective == "vendirag"
    span = max(hi - lo, 1e-9) if vendirag else hi - lo
    rel_n = (rel - lo) / span if span > 0 else np.zeros_like(rel)
    chosen: list[int] = []
    for _ in range(min(k, len(x))):
        values: dict[int, float] = {}
        for c in range(len(x)):
            if c in chosen:
                continue
            t = [*chosen, c]
            size = len(t)
            kern = x[t] @ x[t].T
            div = 0.0 if size == 1 else (_vendi(kern, order, 1e-12 if vendirag else 0.0) - 1) / (size - 1)
            if vendirag:
                values[c] = s * div + (1 - s) * (rel[t].mean() - lo) / span + 1e-9 * rel_n[c]
            else:
                values[c] = s * div + (1 - s) * rel_n[t].mean()
        best = max(values.values())
        near = [c for c, v in values.items() if v >= best - TIE_RTOL * max(1.0, abs(best))]
        chosen.append(min(near) if vendirag else max(near, key=lambda c: (rel[c], -c)))
    return chosen


def picks(query: np.ndarray, cand: np.ndarray, k: int, **params: object) -> list[int]:
    return dc.select("vendi", query, cand, k, **params).indices.tolist()


# --------------------------------------------------------------------------- hand-built cases


def test_registry_defaults() -> None:
    spec = get_method("vendi")
    assert spec.param == "s"
    assert dict(spec.defaults) == {"s": 0.5, "objective": "paper", "order": 1.0}


def test_orthogonal_beats_duplicate() -> None:
    q = np.array([1.0, 0.3, 0.0])
    cand = np.array([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
    # {0, 1}: VS~ = 0, SS~ = 1 -> 0.5;  {0, 2}: VS~ = 1, SS~ = (1 + r~_2) / 2 > 0.5.
    sel = dc.select("vendi", q, cand, 2, s=0.5)
    assert sel.indices.tolist() == [0, 2]
    rel = cand @ q / np.linalg.norm(q)
    rel_n = (rel - rel.min()) / (rel.max() - rel.min())
    assert sel.scores[0] == pytest.approx(0.5 * rel_n[0])
    assert sel.scores[1] == pytest.approx(0.5 * 1.0 + 0.5 * (rel_n[0] + rel_n[2]) / 2)
    # The duplicate only comes once nothing else is left.
    assert picks(q, cand, 3, s=0.5) == [0, 2, 1]
    assert picks(q, cand, 3, s=0.5, objective="vendirag") == [0, 2, 1]


def test_exact_duplicates_pick_lowest_index_first() -> None:
    v = np.array([1.0, 0.0])
    w = np.array([0.0, 1.0])
    cand = np.array([w, v, v, v, w])
    q = np.array([1.0, 0.2])
    for objective in ("paper", "vendirag"):
        assert picks(q, cand, 5, s=0.7, objective=objective) == [1, 0, 2, 3, 4]


def test_s_zero_is_topk_with_ties() -> None:
    rng = np.random.default_rng(1)
    base = rng.normal(size=(6, 5))
    cand = np.concatenate([base, base[::-1], base[:3]])  # many exact relevance ties
    q = rng.normal(size=5)
    top = dc.select("topk", q, cand, 10).indices.tolist()
    assert picks(q, cand, 10, s=0.0) == top
    rel = np.array([3, 1, 3, 2, 1, 3, 2, 2, 0, 3, 1, 3, 2, 2, 0], dtype=float)
    top = dc.select("topk", q, cand, 15, relevance=rel).indices.tolist()
    assert dc.select("vendi", q, cand, 15, s=0.0, relevance=rel).indices.tolist() == top


def test_s_one_picks_the_most_diverse() -> None:
    q = np.array([1.0, 0.0, 0.0])
    cand = np.array(
        [[1.0, 0.05, 0.0], [1.0, 0.0, 0.05], [1.0, 0.02, 0.02], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    )
    sel = dc.select("vendi", q, cand, 3, s=1.0)
    # First pick: every singleton has VS~ = 0, relevance breaks the tie.
    assert sel.indices[0] == 2
    assert sorted(sel.indices[1:].tolist()) == [3, 4]
    assert sel.scores[2] == pytest.approx((_vendi(_gram(cand[sel.indices]), 1.0, 0.0) - 1) / 2)


def _gram(x: np.ndarray) -> np.ndarray:
    x = x / np.linalg.norm(x, axis=1, keepdims=True)
    return x @ x.T


def test_orthogonal_set_has_full_diversity() -> None:
    cand = np.eye(4)
    q = np.ones(4)  # every candidate equally relevant: degenerate range, r~ = 0
    sel = dc.select("vendi", q, cand, 4, s=0.6)
    assert sel.indices.tolist() == [0, 1, 2, 3]
    np.testing.assert_allclose(sel.scores, [0.0, 0.6, 0.6, 0.6], atol=1e-12)


def test_k_at_least_n_returns_all() -> None:
    rng = np.random.default_rng(2)
    cand, q = rng.normal(size=(7, 4)), rng.normal(size=4)
    for k in (7, 50):
        sel = dc.select("vendi", q, cand, k, s=0.4)
        assert sorted(sel.indices.tolist()) == list(range(7))
    assert picks(q, cand[:1], 3, s=0.4) == [0]


def test_float32_and_float64_inputs() -> None:
    rng = np.random.default_rng(3)
    cand = rng.normal(size=(40, 16)).astype(np.float32)
    q = rng.normal(size=16).astype(np.float32)
    got = picks(q, cand, 6, s=0.5)
    assert got == picks(q.astype(np.float64), cand.astype(np.float64), 6, s=0.5)
    assert got == reference(q.astype(np.float64), cand.astype(np.float64), 6, 0.5)


def test_custom_relevance_is_used() -> None:
    rng = np.random.default_rng(4)
    cand, q = rng.normal(size=(30, 6)), rng.normal(size=6)
    rel = rng.normal(size=30) * 5.0
    sel = dc.select("vendi", q, cand, 5, s=0.3, relevance=rel)
    assert sel.indices.tolist() == reference(q, cand, 5, 0.3, relevance=rel)
    np.testing.assert_array_equal(sel.relevance, rel[sel.indices])


# --------------------------------------------------------------------------- the bound


def test_upper_bound_holds_and_is_tight_for_equicorrelated_kernels() -> None:
    rng = np.random.default_rng(5)
    for size in (2, 3, 5, 10):
        for scale in (0.05, 0.5, 2.0):
            x = rng.normal(size=(200, size, 8)) + scale * rng.normal(size=(200, 1, 8))
            x /= np.linalg.norm(x, axis=2, keepdims=True)
            kern = x @ x.transpose(0, 2, 1)
            exact = np.array([_vendi(kk, 1.0, 0.0) for kk in kern])
            bound = vendi_upper_bound((kern**2).sum(axis=(1, 2)), size)
            assert np.all(bound >= exact - 1e-12)
        for rho in (0.0, 0.3, 0.9, 1.0):  # spectrum (1 + (N-1) rho, 1 - rho, ...): the extremal case
            kern = np.full((size, size), rho)
            np.fill_diagonal(kern, 1.0)
            bound = vendi_upper_bound(np.array([(kern**2).sum()]), size)[0]
            assert bound == pytest.approx(_vendi(kern, 1.0, 1e-15), rel=1e-9)


# --------------------------------------------------------------------------- properties


def _inputs(max_n: int = 9, dim: int = 4) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
    entries = st.integers(-3, 3).map(float) | st.floats(-2, 2, allow_nan=False, width=64)

    def build(n: int) -> st.SearchStrategy[tuple[np.ndarray, np.ndarray]]:
        return st.tuples(arrays(np.float64, (n, dim), elements=entries), arrays(np.float64, dim, elements=entries))

    return st.integers(1, max_n).flatmap(build).filter(
        lambda qc: bool(np.all(np.linalg.norm(qc[0], axis=1) > 1e-3) and np.linalg.norm(qc[1]) > 1e-3)
    )


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(
    data=_inputs(),
    k=st.integers(1, 10),
    s=st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]) | st.floats(0, 1),
    objective=st.sampled_from(["paper", "vendirag"]),
)
def test_matches_reference(data: tuple[np.ndarray, np.ndarray], k: int, s: float, objective: str) -> None:
    cand, q = data
    # The reference normalises rows before the dot product, the library after it, so two
    # different rows whose relevance agrees to ~1e-15 may tie in one and not in the other;
    # such ulp-level ties are arbitrary. (Exact duplicate rows tie exactly in both.)
    assume(_no_ulp_level_relevance_ties(q, cand))
    assert picks(q, cand, k, s=s, objective=objective) == reference(q, cand, k, s, objective)


def _no_ulp_level_relevance_ties(q: np.ndarray, cand: np.ndarray) -> bool:
    rel = (cand / np.linalg.norm(cand, axis=1, keepdims=True)) @ (q / np.linalg.norm(q))
    for i in range(len(rel)):
        for j in range(i + 1, len(rel)):
            if abs(rel[i] - rel[j]) < 1e-9 and not np.array_equal(cand[i], cand[j]):
                return False
    return True


@settings(max_examples=40, deadline=None)
@given(
    data=_inputs(max_n=7),
    k=st.integers(1, 7),
    s=st.floats(0, 1),
    order=st.sampled_from([0.5, 2.0, 3.0, math.inf]),
)
def test_renyi_orders_match_reference(data: tuple[np.ndarray, np.ndarray], k: int, s: float, order: float) -> None:
    cand, q = data
    assert picks(q, cand, k, s=s, order=order) == reference(q, cand, k, s, order=order)


@settings(max_examples=40, deadline=None)
@given(data=_inputs(max_n=12), k=st.integers(1, 12), objective=st.sampled_from(["paper", "vendirag"]))
def test_sweep_equals_loop_of_select(data: tuple[np.ndarray, np.ndarray], k: int, objective: str) -> None:
    cand, q = data
    grid = [0.0, 0.2, 0.5, 0.5, 0.8, 1.0]
    sw = dc.sweep("vendi", q, cand, k, values=grid, objective=objective)
    for i, s in enumerate(grid):
        sel = dc.select("vendi", q, cand, k, s=s, objective=objective)
        np.testing.assert_array_equal(sw.indices[i], sel.indices)
        np.testing.assert_allclose(sw.scores[i], sel.scores, rtol=0, atol=0)


def test_larger_random_pools_match_reference() -> None:
    rng = np.random.default_rng(6)
    for n, d in ((60, 32), (120, 8)):
        cand, q = rng.normal(size=(n, d)), rng.normal(size=d)
        cand[n // 2 :] += 2.0 * rng.normal(size=d)  # a correlated half
        for s in (0.3, 0.8, 1.0):
            assert picks(q, cand, 8, s=s) == reference(q, cand, 8, s)


def test_pools_that_need_several_exact_rounds_match_reference() -> None:
    # Low-dimensional clusters with uneven spreads make the bound loose, so the
    # winner is often not among the first candidates scored exactly.
    for seed in range(6):
        rng = np.random.default_rng(seed)
        centers = rng.normal(size=(3, 6))
        cand = centers[rng.integers(0, 3, 80)] + rng.uniform(0.05, 1.0, (80, 1)) * rng.normal(size=(80, 6))
        q = rng.normal(size=6)
        for s in (0.5, 0.9, 1.0):
            assert picks(q, cand, 7, s=s) == reference(q, cand, 7, s), (seed, s)


def test_winner_with_a_low_bound_is_still_found() -> None:
    # S = {u1, u2} with cos = 0.5. Thirty decoys have similarities along (1, -1) to S,
    # the winner along (1, 1): the decoys' bounds are higher but their exact Vendi
    # score is lower, so the winner is only found if pruning keeps scoring.
    rho, n_decoys = 0.5, 30
    dim = 3 + n_decoys + 1
    u1, u2 = np.eye(dim)[0], rho * np.eye(dim)[0] + math.sqrt(1 - rho**2) * np.eye(dim)[1]

    def with_similarities(b1: float, b2: float, axis: int) -> np.ndarray:
        x1, x2 = b1, (b2 - rho * b1) / math.sqrt(1 - rho**2)
        return x1 * np.eye(dim)[0] + x2 * np.eye(dim)[1] + math.sqrt(1 - x1**2 - x2**2) * np.eye(dim)[axis]

    amp = 0.3 / math.sqrt(2)
    decoys = [with_similarities(amp, -amp, 3 + i) for i in range(n_decoys)]
    winner = with_similarities(0.35 / math.sqrt(2), 0.35 / math.sqrt(2), dim - 1)
    cand = np.array([u1, u2, *decoys, winner])
    rel = np.zeros(len(cand))
    rel[:2] = [1.0, 0.9]
    kern_decoy, kern_winner = _gram(cand[[0, 1, 2]]), _gram(cand[[0, 1, -1]])
    bound = vendi_upper_bound(np.array([(kern_decoy**2).sum(), (kern_winner**2).sum()]), 3)
    assert bound[0] > bound[1]  # every decoy is ranked above the winner by its bound...
    assert _vendi(kern_winner, 1.0, 0.0) > _vendi(kern_decoy, 1.0, 0.0)  # ...but is worse
    expected = [0, 1, len(cand) - 1]
    assert reference(np.ones(dim), cand, 3, 0.5, relevance=rel) == expected
    assert dc.select("vendi", np.ones(dim), cand, 3, s=0.5, relevance=rel).indices.tolist() == expected


# --------------------------------------------------------------------------- vendirag package


def test_vendirag_objective_matches_vrs_select() -> None:
    retriever = pytest.importorskip("vendirag.retriever")
    rng = np.random.default_rng(7)
    for n, d, k in ((5, 3, 5), (40, 16, 8), (150, 64, 10), (300, 32, 6)):
        cand, q = rng.normal(size=(n, d)), rng.normal(size=d)
        cand[: n // 3] += 1.5 * rng.normal(size=d)  # clustered candidates
        for s in (0.0, 0.3, 0.8, 1.0):
            expected = retriever.vrs_select(cand, q, k=k, s=s)
            assert picks(q, cand, k, s=s, objective="vendirag") == expected, (n, s)
    cand, q = rng.normal(size=(50, 8)), rng.normal(size=8)
    assert picks(q, cand, 6, s=0.6, objective="vendirag", order=2.0) == retriever.vrs_select(
        cand, q, k=6, s=0.6, q=2.0
    )


def test_vendirag_objective_on_real_embeddings() -> None:
    # Loads the packaged MiniLM model (shared per process with the other tests).
    retriever = pytest.importorskip("vendirag.retriever")
    corpus_path = DATA / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
    if not corpus_path.exists():
        pytest.skip(f"real data not found at {corpus_path}")
    from diverse_core.embedders import get_default_embedder

    corpus = json.loads(corpus_path.read_text())[:60]
    questions = json.loads((DATA / "2wikimultihopqa" / "test.json").read_text())[:1]
    embed = get_default_embedder()
    cand = embed([f"{c['title']}. {c['text']}" for c in corpus])
    for question in questions:
        q = embed([question["question"]])[0]
        for s in (0.2, 0.8):
            assert picks(q, cand, 8, s=s, objective="vendirag") == retriever.vrs_select(cand, q, k=8, s=s)
            assert picks(q, cand, 8, s=s) == reference(q.astype(float), cand.astype(float), 8, s)


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("params", "needle"),
    [
        ({"s": 1.5}, "s=1.5"),
        ({"s": -0.1}, "s=-0.1"),
        ({"s": float("nan")}, "s=nan"),
        ({"s": "0.5"}, "s='0.5'"),
        ({"objective": "fast"}, "objective='fast'"),
        ({"objective": 3}, "objective=3"),
        ({"order": 0.0}, "order=0.0"),
        ({"order": -2}, "order=-2"),
        ({"order": float("nan")}, "order=nan"),
        ({"alpha": 1.0}, "alpha"),
    ],
)
def test_bad_parameters(params: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidParameterError, match=needle.replace("(", r"\(").replace("[", r"\[")):
        dc.select("vendi", np.ones(3), np.eye(3), 2, **params)


def test_bad_sweep_values() -> None:
    with pytest.raises(InvalidParameterError, match="s=1.2"):
        dc.sweep("vendi", np.ones(3), np.eye(3), 2, values=[0.1, 1.2])
    with pytest.raises(InvalidParameterError, match="objective='x'"):
        dc.sweep("vendi", np.ones(3), np.eye(3), 2, values=[0.1], objective="x")

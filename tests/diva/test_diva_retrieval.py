"""DIVA retrieval diversification: hand-built cases, a slow reference, invariants, errors."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.errors import (
    DimensionMismatchError,
    EmptyCandidatesError,
    InvalidParameterError,
    NonFiniteInputError,
    ZeroVectorError,
)
from diverse_core.pipelines.diva import diversify_hits, diversify_pool, merge_hit_ids
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

E1, E2 = [1.0, 0.0, 0.0], [0.0, 1.0, 0.0]
# p0: interpretation 1 only; p1 close to it; p2: interpretation 2 only; p3 close to it (mirror
# of p1); p4 halfway between both; p5 orthogonal to both (never retrieved).
POOL = np.array(
    [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 1.0, 0.0], [0.1, 0.9, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
)
INTERPS = np.array([E1, E2])


def test_union_served_by_and_mean_pruning_known_result() -> None:
    r = diversify_pool(POOL, INTERPS, k=3, per_interpretation_k=3)
    assert [h.tolist() for h in r.hits] == [[0, 1, 4], [2, 3, 4]]
    assert r.union.tolist() == [0, 1, 4, 2, 3]
    assert r.served_by == ((0,), (0,), (0, 1), (1,), (1,))
    c = 0.5 / np.sqrt(0.82)  # mean cosine of p1 and of p3
    np.testing.assert_allclose(r.union_scores, [0.5, c, np.sqrt(0.5), 0.5, c])
    # p4 (serves both) first; p1 and p3 tie exactly: the earlier in the union wins.
    assert r.indices.tolist() == [4, 1, 3]
    np.testing.assert_allclose(r.scores, [np.sqrt(0.5), c, c])
    assert r.kept_served_by == ((0, 1), (0,), (1,))
    assert 5 not in r.union.tolist()


def test_relevance_breaks_ties() -> None:
    rel = np.array([0.0, 0.1, 0.0, 0.9, 0.0, 0.0])
    r = diversify_pool(POOL, INTERPS, k=3, per_interpretation_k=3, relevance=rel)
    assert r.indices.tolist() == [4, 3, 1]


def test_max_and_round_robin_variants_known_results() -> None:
    assert diversify_pool(POOL, INTERPS, k=3, per_interpretation_k=3, prune="max").indices.tolist() == [0, 2, 1]
    rr = diversify_pool(POOL, INTERPS, k=4, per_interpretation_k=3, prune="round_robin")
    assert rr.indices.tolist() == [0, 2, 1, 3]  # rank 1 of each interpretation, then rank 2


def test_mmr_variant_with_lambda_one_is_the_mean_ranking() -> None:
    rng = np.random.default_rng(3)
    pool, interps = rng.normal(size=(30, 8)), rng.normal(size=(3, 8))
    mean = diversify_pool(pool, interps, k=5, per_interpretation_k=6)
    mmr = diversify_pool(pool, interps, k=5, per_interpretation_k=6, prune="mmr", mmr_lambda=1.0)
    assert mmr.indices.tolist() == mean.indices.tolist()
    div = diversify_pool(pool, interps, k=5, per_interpretation_k=6, prune="mmr", mmr_lambda=0.3)
    assert set(div.indices.tolist()) <= set(div.union.tolist())


def test_k_larger_than_union_returns_the_whole_union() -> None:
    r = diversify_pool(POOL, INTERPS, k=50, per_interpretation_k=1)
    assert r.union.tolist() == [0, 2] and sorted(r.indices.tolist()) == [0, 2]


def test_single_interpretation_equal_to_query_is_plain_top_k() -> None:
    rng = np.random.default_rng(0)
    pool, q = rng.normal(size=(40, 16)), rng.normal(size=16)
    cos = pool @ q / np.linalg.norm(pool, axis=1)
    r = diversify_pool(pool, q[None, :], k=5, per_interpretation_k=5)
    assert r.indices.tolist() == np.argsort(-cos, kind="stable")[:5].tolist()


def _reference(pool: np.ndarray, interps: np.ndarray, k: int, per_k: int) -> list[int]:
    """Slow DIVA (Eq. 4-5) with Python loops: per-interpretation top-K, union, mean cosine, top-k."""

    def cos(a: np.ndarray, b: np.ndarray) -> float:
        return float(sum(x * y for x, y in zip(a, b, strict=True)) / (np.linalg.norm(a) * np.linalg.norm(b)))

    union: list[int] = []
    for q in interps:
        ranked = sorted(range(len(pool)), key=lambda i: (-cos(q, pool[i]), i))
        for i in ranked[:per_k]:
            if i not in union:
                union.append(i)
    score = {i: sum(cos(q, pool[i]) for q in interps) / len(interps) for i in union}
    return sorted(union, key=lambda i: (-score[i], union.index(i)))[:k]


@pytest.mark.parametrize("seed", range(8))
def test_matches_slow_reference(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, m, d = rng.integers(5, 40), rng.integers(1, 6), rng.integers(2, 12)
    pool, interps = rng.normal(size=(n, d)), rng.normal(size=(m, d))
    k, per_k = int(rng.integers(1, 8)), int(rng.integers(1, 8))
    got = diversify_pool(pool, interps, k=k, per_interpretation_k=per_k).indices.tolist()
    assert got == _reference(pool, interps, k, per_k)


def test_hits_path_equals_pool_path_when_hits_come_from_the_pool() -> None:
    rng = np.random.default_rng(1)
    pool, interps = rng.normal(size=(25, 6)), rng.normal(size=(4, 6))
    a = diversify_pool(pool, interps, k=5, per_interpretation_k=4)
    b = diversify_hits([h.tolist() for h in a.hits], pool, interps, k=5)
    assert a.indices.tolist() == b.indices.tolist()
    assert a.served_by == b.served_by


def test_hits_path_with_ids_from_separate_searches() -> None:
    ids, lists = merge_hit_ids([["a", "b", "a"], ["c", "b"], []])
    assert ids == ["a", "b", "c"] and lists == [[0, 1, 0], [2, 1], []]
    emb = np.array([[1.0, 0.0], [0.7, 0.7], [0.0, 1.0]])
    r = diversify_hits(lists, emb, [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], k=2)
    assert r.hits[0].tolist() == [0, 1] and r.hits[2].tolist() == []
    assert r.indices.tolist()[0] == 1  # "b" serves two interpretations and is closest on average
    empty = diversify_hits([[], []], emb, [[1.0, 0.0], [0.0, 1.0]], k=2)
    assert empty.indices.size == 0 and empty.union.size == 0


@given(
    pool=arrays(np.float64, st.tuples(st.integers(1, 25), st.just(5)), elements=st.integers(-3, 3)),
    interps=arrays(np.float64, st.tuples(st.integers(1, 5), st.just(5)), elements=st.integers(-3, 3)),
    k=st.integers(1, 10),
    per_k=st.integers(1, 10),
    prune=st.sampled_from(["mean", "max", "round_robin", "mmr"]),
)
def test_invariants(pool: np.ndarray, interps: np.ndarray, k: int, per_k: int, prune: str) -> None:
    pool[np.all(pool == 0, axis=1), 0] = 1.0  # no zero rows
    interps[np.all(interps == 0, axis=1), 1] = 1.0
    r = diversify_pool(pool, interps, k=k, per_interpretation_k=per_k, prune=prune)
    n = pool.shape[0]
    assert all(h.size == min(per_k, n) for h in r.hits)
    everything = set().union(*(set(h.tolist()) for h in r.hits))
    assert set(r.union.tolist()) == everything and len(r.union) == len(everything)
    for u, served in zip(r.union.tolist(), r.served_by, strict=True):
        assert served == tuple(j for j, h in enumerate(r.hits) if u in h.tolist())
    kept = r.indices.tolist()
    assert len(kept) == min(k, len(r.union)) == len(set(kept))
    assert set(kept) <= everything
    assert r.similarity.shape == (interps.shape[0], len(r.union))
    if prune in ("mean", "max"):
        assert np.all(np.diff(r.scores) <= 1e-12)
        dropped = [i for i, u in enumerate(r.union.tolist()) if u not in kept]
        score = r.union_scores if prune == "mean" else r.similarity.max(axis=0)
        if dropped and kept:
            assert r.scores.min() >= score[dropped].max() - 1e-12


@pytest.mark.parametrize(
    ("kwargs", "error", "needle"),
    [
        ({"k": 0}, InvalidParameterError, "k=0"),
        ({"k": True}, InvalidParameterError, "k=True"),
        ({"per_interpretation_k": -1}, InvalidParameterError, "per_interpretation_k=-1"),
        ({"prune": "median"}, InvalidParameterError, "prune='median'"),
        ({"prune": "mmr", "mmr_lambda": 2.0}, InvalidParameterError, "mmr_lambda=2.0"),
        ({"pool_embeddings": np.ones(3)}, DimensionMismatchError, "pool_embeddings"),
        ({"pool_embeddings": np.zeros((0, 3))}, EmptyCandidatesError, "pool_embeddings"),
        ({"interpretation_embeddings": np.zeros((0, 3))}, InvalidParameterError, "interpretation_embeddings"),
        ({"interpretation_embeddings": np.ones((2, 4))}, DimensionMismatchError, "dimension 4"),
        ({"pool_embeddings": np.array([[1.0, np.nan, 0.0]])}, NonFiniteInputError, "pool_embeddings"),
        ({"interpretation_embeddings": np.array([[0.0, 0.0, 0.0]])}, ZeroVectorError, "interpretation_embeddings row 0"),
        ({"relevance": np.ones(4)}, DimensionMismatchError, "relevance"),
    ],
)
def test_typed_errors_name_the_parameter(kwargs: dict, error: type[Exception], needle: str) -> None:
    args = {"pool_embeddings": POOL, "interpretation_embeddings": INTERPS, **kwargs}
    with pytest.raises(error, match=needle.replace("(", r"\(").replace("[", r"\[")):
        diversify_pool(**args)


def test_hit_list_errors() -> None:
    with pytest.raises(DimensionMismatchError, match="hit_lists has 1 lists"):
        diversify_hits([[0]], POOL, INTERPS)
    with pytest.raises(InvalidParameterError, match=r"hit_lists\[1\].*outside 0..5"):
        diversify_hits([[0], [6]], POOL, INTERPS)
    with pytest.raises(InvalidParameterError, match=r"hit_lists\[0\] must be a list of integer"):
        diversify_hits([[0.5], [1]], POOL, INTERPS)

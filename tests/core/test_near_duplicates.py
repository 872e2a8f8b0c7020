"""The near-duplicate guard (issue 45 item 5): no method picks a near-copy of an earlier pick
while a distinct candidate remains; ``topk`` and pools without such picks are unchanged."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.near_duplicates import DEFAULT_THRESHOLD, guard, normalised_text
from hypothesis import given, settings
from hypothesis import strategies as st

ON = {"duplicate_threshold": DEFAULT_THRESHOLD}

GUARDED = [m for m in dc.available_methods() if m != "topk"]
TEXT_METHODS = {"learned", "adaptive"}


def _pages(seed: int, pages: int = 10, copies: int = 5, d: int = 32, noise: float = 0.01):
    """``pages`` distinct rows, each given ``copies`` times with a little noise (cosine ~0.99)."""
    rng = np.random.default_rng(seed)
    base = rng.normal(size=(pages, d))
    cands = np.repeat(base, copies, axis=0) + rng.normal(scale=noise, size=(pages * copies, d))
    query = base[:3].sum(axis=0) + rng.normal(scale=0.5, size=d)
    texts = [f"page {i // copies} window {i % copies} text" for i in range(pages * copies)]
    return query, cands, texts, np.arange(pages * copies) // copies


def _kwargs(method: str, texts: list[str]) -> dict[str, object]:
    return {"texts": texts, "question": "which pages?"} if method in TEXT_METHODS else {}


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _reference(run_on, vectors, relevance, k, threshold):
    """The guard written out with plain loops, for comparison."""
    n = len(vectors)
    pool = list(range(n))
    picks, scores = run_on(np.array(pool))
    while True:
        copies = [any(_cos(vectors[picks[i]], vectors[picks[j]]) > threshold for i in range(j))
                  for j in range(len(picks))]
        if not any(copies):
            break
        kept = [p for p, c in zip(picks, copies, strict=False) if not c]
        pool = [c for c in pool if c in kept or not any(_cos(vectors[c], vectors[p]) > threshold for p in kept)]
        picks, scores = run_on(np.array(pool))
    picks = list(picks)
    dropped = sorted(set(range(n)) - set(pool))
    rest = sorted(dropped, key=lambda c: (-relevance[c], c))
    while len(picks) < min(k, n):
        picks.append(rest.pop(0))
    return picks, dropped


@pytest.mark.parametrize("method", GUARDED)
def test_every_method_picks_distinct_pages(method: str) -> None:
    query, cands, texts, page = _pages(0)
    sel = dc.select(method, query, cands, 5, **ON, **_kwargs(method, texts))
    assert len(set(page[sel.indices].tolist())) == 5
    assert len(set(sel.indices.tolist())) == 5


def test_topk_is_not_guarded() -> None:
    query, cands, _, _ = _pages(0)
    on = dc.select("topk", query, cands, 5, **ON)
    off = dc.select("topk", query, cands, 5, duplicate_threshold=None)
    assert on.indices.tolist() == off.indices.tolist()
    assert "near_duplicates" not in on.details


def test_the_guard_follows_the_method_specs_flag() -> None:
    # issue 44: whether a method is guarded is its spec's flag (topk's is off), not its name
    from dataclasses import replace

    from diverse_core.registry import get_method, register_method

    assert get_method("topk").guarded is False and get_method("gmmr").guarded is True
    query, cands, _, page = _pages(0)
    register_method(replace(get_method("topk"), name="plain_topk_guarded", guarded=True))
    register_method(replace(get_method("gmmr"), name="gmmr_unguarded", guarded=False))
    try:
        guarded = dc.select("plain_topk_guarded", query, cands, 5, **ON)
        assert len(set(page[guarded.indices].tolist())) == 5 and "near_duplicates" in guarded.details
        free = dc.select("gmmr_unguarded", query, cands, 5, lambda_mult=1.0, **ON)
        assert free.indices.tolist() == dc.select("topk", query, cands, 5).indices.tolist()
        assert len(set(page[free.indices].tolist())) < 5
    finally:
        from diverse_core import registry

        registry._REGISTRY.pop("plain_topk_guarded", None)
        registry._REGISTRY.pop("gmmr_unguarded", None)


def test_sweep_rows_with_equal_texts_are_guarded() -> None:
    # the sweep's batched check reads the texts as the guard does (one implementation)
    rng = np.random.default_rng(4)
    cands = rng.normal(size=(12, 8))
    texts = [f"text {i % 6}" for i in range(12)]  # rows i and i + 6 say the same thing
    query = cands[0] + cands[6]
    kw = {"question": "what does the text say?", "texts": texts, **ON}
    sw = dc.sweep("learned", query, cands, 4, values=[0.2, 0.8], **kw)
    for row, value in zip(sw.indices, sw.values, strict=True):
        assert len({texts[i] for i in row.tolist()}) == 4
        one = dc.select("learned", query, cands, 4, diversity=float(value), **kw)
        assert row.tolist() == one.indices.tolist()


def test_guard_off_restores_the_old_picks() -> None:
    query, cands, _, page = _pages(0)
    off = dc.select("dartboard", query, cands, 5)
    assert len(set(page[off.indices].tolist())) < 5  # the repro: dartboard alone repeats pages
    on = dc.select("dartboard", query, cands, 5, **ON)
    assert on.details["near_duplicates"]


def test_same_text_counts_as_a_duplicate() -> None:
    rng = np.random.default_rng(3)
    cands = rng.normal(size=(8, 16))
    texts = [f"text {i}" for i in range(8)]
    texts[5] = "  TEXT 0 "  # the same passage as 0 once folded, with another vector
    query = cands[0] + cands[5]
    sel = dc.select("learned", query, cands, 3, texts=texts, question="q", **ON)
    assert not {0, 5} <= set(sel.indices.tolist())
    assert normalised_text(texts[5]) == normalised_text(texts[0])


def test_fewer_distinct_candidates_than_k_fills_up_by_relevance() -> None:
    query, cands, _, page = _pages(1, pages=2, copies=4)
    sel = dc.select("gmmr", query, cands, 5, lambda_mult=0.7, **ON)
    assert len(sel.indices) == 5 and len(set(sel.indices.tolist())) == 5
    assert set(page[sel.indices[:2]].tolist()) == {0, 1}
    assert np.isnan(sel.scores[2:]).all()  # fill-up picks carry no method score
    rel = sel.relevance[2:]
    assert (np.diff(rel) <= 1e-12).all()


def test_sweep_rows_are_guarded() -> None:
    query, cands, _, page = _pages(2)
    sw = dc.sweep("dartboard", query, cands, 5, values=[0.0, 0.5, 1.0], over="diversity", **ON)
    for row, value in zip(sw.indices, sw.values, strict=False):
        assert len(set(page[row].tolist())) == 5
        one = dc.select("dartboard", query, cands, 5, diversity=float(value), **ON)
        assert row.tolist() == one.indices.tolist()


@pytest.mark.parametrize("bad", [0.0, -0.1, 1.5, "high", True, float("nan")])
def test_bad_threshold_is_named(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match="duplicate_threshold"):
        dc.select("mmr", np.ones(2), np.eye(2), 1, duplicate_threshold=bad)


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31 - 1),
    pages=st.integers(2, 12),
    copies=st.integers(1, 4),
    k=st.integers(1, 8),
    method=st.sampled_from(GUARDED),
)
def test_planted_duplicates_property(seed: int, pages: int, copies: int, k: int, method: str) -> None:
    query, cands, texts, page = _pages(seed, pages=pages, copies=copies, d=24, noise=0.005)
    sel = dc.select(method, query, cands, k, **ON, **_kwargs(method, texts))
    picks = sel.indices.tolist()
    assert len(picks) == min(k, len(cands)) and len(set(picks)) == len(picks)
    distinct = min(k, pages)
    assert len(set(page[picks[:distinct]].tolist())) == distinct
    off = dc.select(method, query, cands, k, **_kwargs(method, texts))
    if len(set(page[off.indices].tolist())) == len(off.indices):  # nothing to guard: same picks
        assert picks == off.indices.tolist()


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n=st.integers(2, 30), k=st.integers(1, 10),
       threshold=st.floats(0.5, 0.999))
def test_guard_equals_the_slow_reference(seed: int, n: int, k: int, threshold: float) -> None:
    rng = np.random.default_rng(seed)
    vecs = rng.normal(size=(n, 6))
    vecs[n // 2:] = vecs[: n - n // 2] + rng.normal(scale=0.05, size=(n - n // 2, 6))
    rel = vecs @ rng.normal(size=6)

    def run_on(pool: np.ndarray):  # a greedy stand-in: relevance order within the pool
        order = pool[np.argsort(-rel[pool], kind="stable")][:k]
        return order, rel[order]

    picks, _, dropped = guard(run_on, vecs, rel, k, threshold)
    ref_picks, ref_dropped = _reference(run_on, vecs, rel, k, threshold)
    assert picks.tolist() == ref_picks
    assert dropped.tolist() == ref_dropped

"""NDCG@k without ranx (issue 47): hand-built answers, and equal to ranx's on random runs."""

from __future__ import annotations

import importlib.util
import math

import pytest
from diverse_core.eval.metrics import ndcg_at_k
from hypothesis import given, settings
from hypothesis import strategies as st


def test_ndcg_needs_no_ranx(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_ranx(name: str, *args: object, **kwargs: object) -> object:
        if name.split(".")[0] in {"ranx", "numba"}:
            raise ImportError(name)
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", no_ranx)
    got = ndcg_at_k({"q": ["x", "a", "a", "b"], "e": []}, {"q": ["a", "b"], "e": ["z"]}, k=3)
    # distinct ids x, a, b: hits at ranks 2 and 3, ideal = ranks 1 and 2
    want = (1 / math.log2(3) + 1 / math.log2(4)) / (1 + 1 / math.log2(3))
    assert got.tolist() == pytest.approx([want, 0.0])


def _slow_ndcg(ranked: list[str], relevant: set[str], k: int) -> float:
    seen: list[str] = []
    for d in ranked:
        if d not in seen:
            seen.append(d)
    dcg = sum(1 / math.log2(r + 2) for r, d in enumerate(seen[:k]) if d in relevant)
    idcg = sum(1 / math.log2(r + 2) for r in range(min(k, len(relevant))))
    return dcg / idcg


ids = st.sampled_from([f"d{i}" for i in range(8)])
queries = st.lists(st.tuples(st.lists(ids, max_size=10), st.sets(ids, min_size=1, max_size=4)), min_size=1, max_size=6)


@settings(max_examples=60, deadline=None)
@given(queries, st.integers(1, 8))
def test_ndcg_matches_the_slow_reference(qs: list[tuple[list[str], set[str]]], k: int) -> None:
    runs = {f"q{i}": r for i, (r, _) in enumerate(qs)}
    qrels = {f"q{i}": g for i, (_, g) in enumerate(qs)}
    got = ndcg_at_k(runs, qrels, k)
    assert got.tolist() == pytest.approx([_slow_ndcg(r, g, k) for r, g in qs])


@pytest.mark.skipif(importlib.util.find_spec("ranx") is None, reason="ranx (bench extra) not installed")
def test_ndcg_equals_ranx() -> None:
    import ranx

    runs = {"a": ["d1", "d2", "d3", "d4"], "b": ["d5", "d1"], "c": ["d9", "d8", "d7", "d2", "d6"]}
    qrels = {"a": ["d3", "d9"], "b": ["d1"], "c": ["d2", "d6", "d0"]}
    for k in (1, 2, 3, 5):
        want = ranx.evaluate(ranx.Qrels({q: {d: 1 for d in g} for q, g in qrels.items()}),
                             ranx.Run({q: {d: float(len(r) - i) for i, d in enumerate(r)} for q, r in runs.items()}),
                             f"ndcg@{k}", return_mean=False)
        assert ndcg_at_k(runs, qrels, k).tolist() == pytest.approx(list(want))

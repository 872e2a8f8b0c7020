"""The pair view from per-text byte lineups (issue 35, session 14) against main's version, bit for bit.

``pairview_reference.reference_pair_view`` is the pool-wide kind-table version the lineups replace;
every field must come out the same (``other_names`` and ``shared.columns`` up to the order of their
columns, which only sums and products read), on random texts and on 200 real HotpotQA pools.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from diverse_core.learned import PairView, pair_view
from diverse_core.textfeatures import Lineup, TextFactsCache, facts_cache
from hypothesis import given, settings
from hypothesis import strategies as st
from pairview_reference import reference_pair_view

WORDS = ["Alien", "Ridley", "Scott", "film", "born", "South", "Shields", "1937", "Dune", "novel", "Herbert", "river",
         "X", "scott", "dune", "Tacoma", "the", "of", "Paris", "paris", "Nile"]
TITLES = ["", "Alien", "Ridley Scott", "Dune", "dune", "South Shields", "The Nile river", "X"]
QUESTIONS = ["Where was the director of Alien born?", "Who wrote Dune near the river in 1937?", "What film?",
             "Is Ridley Scott from South Shields or Tacoma?", "Which Zanzibar Quux wrote Paris?", "Who?", ""]
SHOWN = [None, "", "Ridley Scott", "Tacoma river", "X", "Unseen Words Here", "the", "Paris Nile"]


def _columns_sorted(a: np.ndarray) -> np.ndarray:
    return a[:, np.lexsort(a[::-1])] if a.shape[0] and a.shape[1] else a


def assert_same(got: PairView, want: PairView) -> None:
    """Every field bit for bit (dtype, shape, bytes); the name columns up to their order."""
    for name in ("same_title", "title_in", "names_shared"):
        a, b = getattr(got, name), getattr(want, name)
        assert (a.dtype, a.shape) == (b.dtype, b.shape) and a.tobytes() == b.tobytes(), name
    assert (got.view.terms, got.view.names) == (want.view.terms, want.view.names)
    for a, b in ((got.view.term_hits, want.view.term_hits), (got.view.name_hits, want.view.name_hits)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape) and np.array_equal(a, b)
    assert got.shared is not None and want.shared is not None
    for a, b in ((got.view.other_names, want.view.other_names), (got.shared.columns, want.shared.columns)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        assert np.array_equal(_columns_sorted(a), _columns_sorted(b))
    for a, b in ((got.shared.totals, want.shared.totals), (got.shared.log_pairs, want.shared.log_pairs)):
        assert (a.dtype, a.shape) == (b.dtype, b.shape) and a.tobytes() == b.tobytes()


def _texts(rng: np.random.Generator, n: int) -> list[str]:
    out = []
    for _ in range(n):
        body = " ".join(rng.choice(WORDS, size=int(rng.integers(0, 12))))
        title = TITLES[int(rng.integers(len(TITLES)))]
        out.append(f"{title}: {body}." if title else body + ".")
    return out


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 100_000), st.integers(0, 30), st.sampled_from(QUESTIONS), st.booleans(), st.booleans())
def test_lineup_pair_view_equals_main_on_random_pools(seed: int, n: int, question: str, with_sources: bool,
                                                      with_names: bool) -> None:
    rng = np.random.default_rng(seed)
    texts = _texts(rng, n)
    sources = [[None, "", "a", "b", 3, 3.0][int(k)] for k in rng.integers(0, 6, size=n)] if with_sources else None
    names = [SHOWN[int(k)] for k in rng.integers(0, len(SHOWN), size=n)] if with_names else None
    want = reference_pair_view(question, texts, sources, names)
    assert_same(pair_view(question, texts, sources=sources, names=names), want)
    assert_same(pair_view(question, texts, sources=sources, names=names), want)  # warm: every text and name read


def test_lineup_holds_each_part_as_bytes() -> None:
    cache = TextFactsCache()
    f = cache.get_many(["Dune: Herbert wrote Dune in Tacoma."], marks=True)[0]
    line = f.lineup
    assert isinstance(line, Lineup) and f.marks is not None
    assert np.frombuffer(line.names, dtype=np.int64).tolist() == f.name_ids.tolist()
    assert np.frombuffer(line.titles, dtype=np.int64).tolist() == f.title_ids.tolist()
    assert np.frombuffer(line.words, dtype=np.int64).tolist() == (f.marks >> 4).tolist()
    assert np.frombuffer(line.bits, dtype=np.uint8).tolist() == (f.marks & 15).tolist()
    assert np.frombuffer(line.sizes, dtype=np.int64).tolist() == [len(f.name_ids), len(f.title_ids), len(f.marks)]
    assert np.frombuffer(line.key, dtype=np.int64).tolist() == [f.key] and f.key >= 0
    assert cache.get("no title here").lineup is None  # only with the marks
    assert cache.id_bound == len(cache._words) > int((f.marks >> 4).max())


def test_title_words_are_numbered_once_and_fall_back_to_the_texts_own() -> None:
    cache = TextFactsCache()
    f = cache.get_many(["Dune: a novel by Herbert."], marks=True)[0]
    own = [b"own-0", b"own-1", b"own-2"]
    got = cache.title_words(["Frank Herbert", None, ""], own, f.generation)
    assert got[1:] == own[1:]
    assert cache.words_of(np.frombuffer(got[0], dtype=np.int64), f.generation) == sorted(
        ["frank", "herbert"], key=lambda w: cache.word_ids([w], f.generation)[0])
    bound = cache.id_bound
    assert cache.title_words(["Frank Herbert"], own[:1], f.generation) == got[:1] and cache.id_bound == bound
    assert cache.title_words(["Frank Herbert", None], own[:2], f.generation + 1) == [b"", b"own-1"]  # stale
    cache.clear()
    assert cache._shown == {}


def _real_pools(count: int) -> list[tuple[str, list[str], list[str], list[str | None]]]:
    env = os.environ.get("DIVERSE_RAG_DATA")
    data = Path(env) if env else (Path(__file__).resolve().parents[2] / ".." / "shared" / "data").resolve()
    if not (data / "hotpotqa" / "hotpot.json").is_file():
        pytest.skip(f"benchmark data not found at {data} (set DIVERSE_RAG_DATA)")
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.protocols import build_task

    task = build_task(load_dataset("hotpotqa", data), "chunks")
    rng = np.random.default_rng(0)
    units = len(task.unit_texts)
    pools = []
    for record in task.records[:count]:  # the question's own passages' neighbours and random others: 50 real chunks
        start = int(rng.integers(0, units - 25))
        picked = [*range(start, start + 25), *rng.integers(0, units, size=25).tolist()]
        docs = task.unit_doc[picked].tolist()
        pools.append((record.question, [task.unit_texts[u] for u in picked], [str(d) for d in docs],
                      [task.doc_titles[d] or None for d in docs] if task.doc_titles else [None] * 50))
    return pools


def test_lineup_pair_view_equals_main_on_200_hotpotqa_pools() -> None:
    facts_cache().clear()
    for question, texts, sources, names in _real_pools(200):
        assert_same(pair_view(question, texts), reference_pair_view(question, texts))
        assert_same(pair_view(question, texts, sources=sources, names=names),
                    reference_pair_view(question, texts, sources, names))

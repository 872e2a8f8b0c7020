"""The pair view keeps the GIL at small pools (issue 35, sessions 15-16), with every field as main computed it.

While another Python thread is alive, ``pair_view`` takes one of three routes by the pool's size: no step
that lets go of the GIL but one product and two (n, n) passes (n <= 64 and at most SMALL_WORK names, title
and question words), the same with two products and a cast (many names held twice), or the counted route
of a big pool (more names, or n > 64); with one thread alive it always takes the counted route. Each must
give the oracle's fields bit for bit (``pairview_reference.reference_pair_view``, the pool-wide kind-table
version), on both sides of every boundary: n in {1, 2, 10, 22, 23, 50, 64, 65, 120}, with and without
sources and names.
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
from types import SimpleNamespace
from typing import Any
from unittest.mock import patch

import diverse_core.gil_blocks as gil_blocks
import numpy as np
import pytest
from diverse_core.learned import pair_view
from diverse_core.learned import pairview as pv
from diverse_core.textmarks import get, pieces
from hypothesis import given, settings
from hypothesis import strategies as st
from pairview_reference import reference_pair_view
from test_learned_pairview_lineup import QUESTIONS, SHOWN, _texts, assert_same

SIZES = (1, 2, 10, 22, 23, 50, 64, 65, 120)
_SYLLABLES = ("ka", "lo", "mi", "ren", "tu", "vas", "zo", "bel", "dor", "fin", "gu", "hal")


def _name_texts(rng: np.random.Generator, n: int, names: int, per_text: int) -> list[str]:
    """``n`` texts of a shared title, plain words and ``per_text`` capitalised names of ``names`` made-up ones."""
    vocab = [(_SYLLABLES[i % 12] + _SYLLABLES[(i // 12) % 12] + _SYLLABLES[i // 144]).capitalize() for i in range(names)]
    words = ["river", "film", "born", "novel", "the", "of", "city", "league", "Dune", "Paris"]
    out = []
    for _ in range(n):
        body = [vocab[int(i)] for i in rng.integers(0, names, size=per_text)]
        body += [words[int(i)] for i in rng.integers(0, len(words), size=int(rng.integers(0, 8)))]
        rng.shuffle(body)
        title = f"{vocab[int(rng.integers(0, names))]} {words[int(rng.integers(0, 3))]}"
        out.append(f"{title}: The {' '.join(body)}." if rng.random() < 0.8 else f"The {' '.join(body)}.")
    return out


def _check(question: str, texts: list[str], rng: np.random.Generator) -> None:
    n = len(texts)
    sources = [[None, "", "a", "b", 3, 3.0][int(k)] for k in rng.integers(0, 6, size=n)]
    shown = [SHOWN[int(k)] for k in rng.integers(0, len(SHOWN), size=n)]
    assert_same(pair_view(question, texts), reference_pair_view(question, texts))
    assert_same(pair_view(question, texts, sources=sources), reference_pair_view(question, texts, sources))
    assert_same(pair_view(question, texts, names=shown), reference_pair_view(question, texts, None, shown))
    assert_same(pair_view(question, texts, sources=sources, names=shown),
                reference_pair_view(question, texts, sources, shown))


@pytest.mark.parametrize("n", SIZES)
def test_every_route_equals_the_oracle_at_each_size(n: int, threads: str) -> None:
    rng = np.random.default_rng(n)
    for question in QUESTIONS[:4]:
        _check(question, _texts(rng, n), rng)  # few names: the route that keeps the GIL up to n = 64
        _check(question, _name_texts(rng, n, 70, 5), rng)  # at n = 64: names held twice x n > 4096, two products
        _check(question, _name_texts(rng, n, 400, 12), rng)  # many names and title words: the counted route


def _routes(pools: list[list[str]]) -> list[tuple[str, str]]:
    """The route each pool's ``pair_view`` takes: split or counted, one product or two."""
    seen: set[str] = set()
    marked, one = pv._names_marked, pv._one_product

    def spy_marked(*args: Any) -> Any:
        seen.add("split")
        return marked(*args)

    def spy_one(*args: Any) -> Any:
        seen.add("one product")
        return one(*args)

    out = []
    with patch.multiple(pv, _names_marked=spy_marked, _one_product=spy_one):
        for texts in pools:
            seen.clear()
            pair_view("Who wrote Dune?", texts)
            out.append(("split" if "split" in seen else "counted", "one" if "one product" in seen else "two"))
    return out


def _route_pools() -> list[list[str]]:
    rng = np.random.default_rng(0)
    return [_texts(rng, 50), _name_texts(rng, 64, 70, 5), _name_texts(rng, 50, 400, 12),
            _name_texts(rng, 64, 1700, 70), _texts(rng, 65)]


def _threads_alive(alive: bool) -> Any:
    """``diverse_core.gil_blocks`` sees another thread (``alive``) or none, whatever runs."""
    return patch.object(gil_blocks, "threading", SimpleNamespace(active_count=lambda: 2 if alive else 1))


def test_the_routes_are_the_ones_meant() -> None:
    """The pools above reach each route (so that the equality tests cover them)."""
    with _threads_alive(True):
        assert _routes(_route_pools()) == [
            ("split", "one"),  # few names
            ("split", "two"),  # names held twice x n > SMALL_WORK
            ("split", "two"),  # more than KEEP names and title words (real pools of 50 chunks: 300-1,100)
            ("counted", "two"),  # more than SMALL_WORK names
            ("counted", "two"),  # n > 64
        ]
    with _threads_alive(False):  # one thread: no release costs a switch; the counted route is quicker
        assert {r[0] for r in _routes(_route_pools())} == {"counted"}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 100_000), st.sampled_from(SIZES), st.sampled_from(QUESTIONS), st.integers(3, 300),
       st.integers(0, 8))
def test_random_name_pools_equal_the_oracle(seed: int, n: int, question: str, names: int, per_text: int) -> None:
    for alive in (True, False):  # both routes
        rng = np.random.default_rng(seed)
        with _threads_alive(alive):
            _check(question, _name_texts(rng, n, names, per_text), rng)


def test_pieces_and_get_split_index_work_at_chunk_boundaries() -> None:
    assert pieces(0) == (slice(0, 0),) and pieces(500) == (slice(0, 500),)
    assert pieces(501) == (slice(0, 500), slice(500, 501)) and pieces(501, split=False) == (slice(0, 501),)
    mark = np.arange(2000, dtype=np.int64) * 3
    for size in (0, 1, 499, 500, 501, 1000, 1001, 1999):
        ids = np.random.default_rng(size).integers(0, 2000, size=size)
        for split in (True, False):
            got = get(mark, ids, split)
            assert got.dtype == np.int64 and got.tolist() == (ids * 3).tolist()


def _release_counter() -> object:
    """A reader of this thread's count of ``PyEval_SaveThread`` calls (GIL releases), from the uprobe
    ``benchmarks/gil_counter.py`` describes; skips where there is none (it needs Linux x86-64 and root)."""
    event = "/sys/kernel/tracing/events/probe_libpython3/PyEval_SaveThread/id"
    if platform.system() != "Linux" or platform.machine() != "x86_64" or not os.access(event, os.R_OK):
        pytest.skip("no PyEval_SaveThread uprobe (see benchmarks/gil_counter.py)")
    libc = ctypes.CDLL(None, use_errno=True)
    attr = bytearray(128)
    with open(event) as f:
        struct.pack_into("IIQ", attr, 0, 2, 128, int(f.read()))  # PERF_TYPE_TRACEPOINT, size, config
    fd = libc.syscall(298, ctypes.c_char_p(bytes(attr)), 0, -1, -1, 0)  # perf_event_open: this thread
    if fd < 0:
        pytest.skip(f"perf_event_open failed (errno {ctypes.get_errno()})")
    keep = ctypes.PyDLL(None)  # a read that keeps the GIL
    buf = ctypes.c_uint64()

    def count() -> int:
        keep.read(fd, ctypes.byref(buf), 8)
        return buf.value

    return count


@pytest.mark.usefixtures("another_thread")  # with one thread alive the gathers are not split (work_blocks)
def test_a_small_pool_lets_go_of_the_gil_at_most_three_times() -> None:
    count = _release_counter()
    rng = np.random.default_rng(7)
    pools = [_name_texts(rng, 50, 20, 4) for _ in range(4)] + [_texts(rng, n) for n in (23, 50, 64)]
    for texts in pools:
        pair_view("Which film did Dune and Paris make?", texts)  # warm
        pair_view("Which film did Dune and Paris make?", texts, sources=[str(i % 7) for i in range(len(texts))])
    for texts in pools:
        for sources in (None, [str(i % 7) for i in range(len(texts))]):
            c0 = count()  # type: ignore[operator]
            pair_view("Which film did Dune and Paris make?", texts, sources=sources)
            assert count() - c0 <= 3, (len(texts), sources is not None)  # type: ignore[operator]


@pytest.mark.usefixtures("another_thread")
def test_a_pool_of_many_names_lets_go_of_the_gil_at_most_five_times() -> None:
    """Pools like real chunks' (hundreds of names, many held twice): two products and a cast more."""
    count = _release_counter()
    rng = np.random.default_rng(11)
    pools = [_name_texts(rng, 50, 400, 12), _name_texts(rng, 50, 300, 20), _name_texts(rng, 64, 70, 5)]
    for texts in pools:
        pair_view("Which film did Dune and Paris make?", texts)  # warm
    for texts in pools:
        c0 = count()  # type: ignore[operator]
        pair_view("Which film did Dune and Paris make?", texts)
        assert count() - c0 <= 5, len(texts)  # type: ignore[operator]

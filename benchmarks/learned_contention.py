"""The warm learned text call under contention: CPU per call at 1 vs N threads, and GIL releases per call.

Builds random pools (``--pools`` of them, 50 candidates of dimension 384 each, float32 as a vector
store returns them; ``--hotpotqa``: the HotpotQA dev ``chunks`` pools instead) with real-looking
``"Title: body"`` texts (capitalised names, shared titles,
question words among the bodies) and calls ``dc.select("learned", ..., question=..., texts=...)``
with k=10, warm (every text read once before timing). Prints

* ``cpu``: the thread CPU time per call (``time.thread_time``, median and mean) with 1 caller and
  with ``--threads`` callers, each calling on its own pools, and the ratio of the two;
* ``gil`` (Linux, root): how often the calling thread releases the GIL per call, per piece of the
  call (input checks, text view, query state, picks; and the embedding-variant call) and attributed
  to the Python line that was running, read from a uprobe on ``PyEval_SaveThread`` that must exist
  first (see ``benchmarks/gil_counter.py``).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_contention.py cpu --threads 16
"""

from __future__ import annotations

import argparse
import collections
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import diverse_core as dc
import numpy as np

_WORDS = ("river", "album", "film", "band", "city", "novel", "war", "church", "station", "league", "season",
          "island", "county", "party", "company", "school", "museum", "actor", "singer", "writer", "director",
          "born", "released", "founded", "located", "played", "won", "named", "served", "married", "built")
_NAMES = ("Dune", "Herbert", "Tacoma", "Paris", "Lyon", "Mercer", "Oakland", "Bristol", "Verdi", "Ostrava",
          "Kellogg", "Harrow", "Nile", "Brennan", "Sofia", "Quincy", "Malta", "Rhodes", "Carver", "Dalton")


def make_pools(count: int, n: int = 50, dim: int = 384, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` pools: query vector, (n, dim) float32 candidates, question and n texts."""
    rng = np.random.default_rng(seed)
    pools = []
    for _ in range(count):
        centre = rng.normal(size=dim)
        cands = (centre + 2.0 * rng.normal(size=(n, dim))).astype(np.float32)
        query = (centre + 1.5 * rng.normal(size=dim)).astype(np.float32)
        names = rng.choice(len(_NAMES), size=3, replace=False)
        question = (f"Which {_WORDS[rng.integers(len(_WORDS))]} did {_NAMES[names[0]]} and "
                    f"{_NAMES[names[1]]} {_WORDS[rng.integers(len(_WORDS))]} in {_NAMES[names[2]]}?")
        titles = [f"{_NAMES[a]} {_NAMES[b]}" for a, b in rng.integers(len(_NAMES), size=(12, 2))]
        texts = []
        for _ in range(n):
            body = []
            for _ in range(int(rng.integers(25, 50))):
                body.append(_NAMES[rng.integers(len(_NAMES))] if rng.random() < 0.15
                            else _WORDS[rng.integers(len(_WORDS))] + ("s" if rng.random() < 0.3 else ""))
            texts.append(f"{titles[rng.integers(len(titles))]}: The {' '.join(body)}.")
        pools.append({"query": query, "cands": cands, "question": question, "texts": texts})
    return pools


def hotpotqa_pools(count: int) -> list[dict[str, Any]]:
    """The first ``count`` HotpotQA dev ``chunks`` pools as :func:`make_pools` gives its own."""
    from hotpot_pools import dev_inputs

    _, inputs = dev_inputs(None, count)
    return [{"query": i.query_embedding, "cands": i.embeddings, "question": i.question, "texts": list(i.texts)}
            for i in inputs]


def call(p: dict[str, Any], k: int) -> object:
    return dc.select("learned", p["query"], p["cands"], k, question=p["question"], texts=p["texts"])


def cpu(pools: list[dict[str, Any]], k: int, threads: int, per_thread: int) -> None:
    def caller(mine: list[dict[str, Any]]) -> list[float]:
        out = []
        for i in range(per_thread):
            t0 = time.thread_time()
            call(mine[i % len(mine)], k)
            out.append(1000.0 * (time.thread_time() - t0))
        return out

    rows = {}
    for callers in (1, threads):
        with ThreadPoolExecutor(callers) as pool:
            shares = [pools[i::callers] for i in range(callers)]
            t0 = time.perf_counter()
            ms = [x for f in [pool.submit(caller, s) for s in shares] for x in f.result()]
            wall = time.perf_counter() - t0
        rows[callers] = statistics.median(ms)
        print(f"callers {callers:2d}: cpu ms/call median {statistics.median(ms):.3f} mean {statistics.mean(ms):.3f}; "
              f"calls/s {len(ms) / wall:.0f}", flush=True)
    print(f"cpu per call, {threads} callers / 1 caller (medians): {rows[threads] / rows[1]:.2f}")


def gil(pools: list[dict[str, Any]], k: int, n: int, root: str) -> None:  # pragma: no cover (needs root)
    from gil_counter import by_line, release_counter

    count = release_counter()
    c0 = count()
    for i in range(n):
        call(pools[i % len(pools)], k)
    print(f"GIL releases per call (untraced): {(count() - c0) / n:.1f}")
    _gil_pieces(pools, k, n, count)
    traced, lines = by_line(lambda i: call(pools[i % len(pools)], k), n, count, root)
    print(f"GIL releases per call (traced): {traced:.1f}")
    for per_call, where in lines:
        print(f"  {per_call:6.2f}  {where}")


def _gil_pieces(pools: list[dict[str, Any]], k: int, n: int, count: Any) -> None:  # pragma: no cover (needs root)
    """GIL releases per call of each piece of the text call (as ``LearnedSelector.choose`` runs them), and of
    the embedding-variant call."""
    import inspect

    from diverse_core.learned import LearnedSelector, QueryState, pair_view
    from diverse_core.validation import prepare_inputs

    sel = LearnedSelector.default()
    model = sel.variants["text"]
    stacked = {"stacked": True} if "stacked" in inspect.signature(QueryState.build).parameters else {}
    pieces: collections.Counter[str] = collections.Counter()
    for i in range(n):
        p = pools[i % len(pools)]
        c = count()
        prep = prepare_inputs(p["query"], p["cands"], k)
        pieces["input checks"] += count() - c
        c = count()
        pv = pair_view(p["question"], p["texts"])
        pieces["text view"] += count() - c
        c = count()
        state = QueryState.build(prep, pv, **stacked)
        pieces["query state"] += count() - c
        c = count()
        model.picks(state)
        pieces["picks"] += count() - c
        c = count()
        dc.select("learned", p["query"], p["cands"], k)
        pieces["embedding-variant call"] += count() - c
    print("GIL releases per call, by piece: " + ", ".join(f"{name} {v / n:.1f}" for name, v in pieces.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("mode", choices=["cpu", "gil"])
    ap.add_argument("--pools", type=int, default=64)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--calls", type=int, default=200, help="calls per caller (cpu) or in all (gil)")
    ap.add_argument("--hotpotqa", action="store_true",
                    help="the HotpotQA dev chunks pools (50 candidates, real texts) instead of the made-up ones")
    args = ap.parse_args(argv)
    pools = hotpotqa_pools(args.pools) if args.hotpotqa else make_pools(args.pools)
    for p in pools:
        call(p, args.k)  # warm: every text read once
    if args.mode == "cpu":
        cpu(pools, args.k, args.threads, args.calls)
    else:
        import os

        from gil_counter import parked_thread

        with parked_thread():  # as in a service: the library splits small work while other threads live
            gil(pools, args.k, args.calls, os.path.dirname(os.path.dirname(os.path.abspath(dc.__file__))) + "/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The pieces of one warm learned-selector call (text variant), timed back to back on the same pool.

``adaptive_speed.py --stages`` times each stage over a state prepared once per query, interleaved with the
other rows; this script instead runs the pieces of one ``LearnedSelector.choose`` call in the order the call
runs them (input checks, text checks, variant choice, the text view, the query state, the picks on the
fresh state and once more on the same state) and then the whole call, per query, and keeps each piece's best
of ``--repeat`` rounds; it also counts each piece's minor page faults (a piece that grows the heap pays
for fresh pages: on glibc that depends on the order and size of a call's large arrays). The pieces of a call should add up to the call; what ``adaptive_speed.py`` measures
beyond them comes from the rows run between its calls. Pools: the HotpotQA dev ``chunks`` pools of 50
candidates, k = 5 (``--k``), every text read once before (warm).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_call_pieces.py
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import os
import resource
import sys
import time
from collections.abc import Callable
from typing import Any


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--parked-thread", action="store_true",
                    help="time with a second Python thread alive, as in a service (small work split into "
                         "GIL-keeping blocks; diverse_core.gil_blocks.work_blocks)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diverse_core.adaptive.inputs import pick_variant, text_inputs
    from diverse_core.learned import LearnedSelector, QueryState, pair_view
    from diverse_core.validation import prepare_inputs
    from hotpot_pools import dev_inputs

    k = args.k
    _, inputs = dev_inputs(args.cache_dir, args.questions, k)
    # as the call builds it (the per-pick stack kept for its picks; versions before it had no such option)
    stacked = {"stacked": True} if "stacked" in inspect.signature(QueryState.build).parameters else {}
    sel = LearnedSelector.default("chunks")
    model = sel.variants["text"]
    for i in inputs:  # every text read once: warm
        sel.choose(i.query_embedding, i.embeddings, k, question=i.question, texts=i.texts)

    total: dict[str, float] = {}
    faults: dict[str, int] = {}
    from gil_counter import parked_thread

    with parked_thread() if args.parked_thread else contextlib.nullcontext():
        for i in inputs:
            best: dict[str, float] = {}

            def timed(name: str, fn: Callable[[], Any], best: dict[str, float] = best) -> Any:
                f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
                t0 = time.perf_counter()
                out = fn()
                best[name] = min(best.get(name, float("inf")), time.perf_counter() - t0)
                faults[name] = faults.get(name, 0) + resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0
                return out

            for _ in range(args.repeat):
                prep = timed("input checks", lambda i=i: prepare_inputs(i.query_embedding, i.embeddings, k, None))
                given = timed("text checks", lambda i=i, prep=prep: text_inputs(i.question, i.texts, prep.n))
                timed("variant choice", lambda: pick_variant(sel.variants, True, "auto"))
                pv = timed("text view (pair_view)", lambda given=given: pair_view(*given))
                st = timed("query state (QueryState.build)", lambda prep=prep, pv=pv: QueryState.build(prep, pv, **stacked))
                timed("picks, fresh state", lambda st=st: model.picks(st, None))
                timed("picks, same state again", lambda st=st: model.picks(st, None))
                timed("whole call (choose)", lambda i=i: sel.choose(i.query_embedding, i.embeddings, k,
                                                                       question=i.question, texts=i.texts))
            for name, value in best.items():
                total[name] = total.get(name, 0.0) + value
    ms = {name: 1000.0 * v / len(inputs) for name, v in total.items()}
    pieces = [n for n in ms if n not in ("picks, same state again", "whole call (choose)")]
    print(f"{len(inputs)} HotpotQA dev pools (chunks, 50 candidates, k={k}), warm; per query the best of "
          f"{args.repeat} rounds" + ("; a second Python thread parked" if args.parked_thread else ""))
    print("| piece | ms / query | page faults / run |")
    print("|---|---|---|")
    for name, value in ms.items():
        print(f"| {name} | {value:.3f} | {faults[name] / (args.repeat * len(inputs)):.1f} |")
    print(f"pieces of one call (fresh state) add up to {sum(ms[n] for n in pieces):.3f} ms; "
          f"the whole call {ms['whole call (choose)']:.3f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())

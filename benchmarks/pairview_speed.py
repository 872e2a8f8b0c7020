"""The learned selector's text view (``pair_view``) alone, warm, on the 200 HotpotQA dev pools of 50 candidates.

Per pool the best of ``--repeat`` calls, summed over the pools, for the plain call (``pair_view(question,
texts)``) and the call with metadata (``sources=`` the page ids, ``names=`` the page titles: what
``text_inputs`` passes for LangChain and LlamaIndex users). ``--baseline FILE`` times another version of
``learned/pairview.py`` (e.g. main's: ``git show fa2cb6b:shared/diverse_core/learned/pairview.py > /tmp/pv.py``)
interleaved with this one in the same process and prints the ratio. ``--gil`` (Linux, root) also counts
how often one call releases the GIL, from a uprobe on ``PyEval_SaveThread`` that must exist first (see
``benchmarks/gil_counter.py``); ``--parked-thread`` runs with a second Python thread alive, as in a
service (the route that keeps the GIL).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/pairview_speed.py --baseline /tmp/pv.py --gil
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import time
from collections.abc import Callable
from typing import Any


def pools(cache_dir: str | None, count: int) -> list[tuple[str, list[str], list[str], list[str | None]]]:
    """``(question, texts, sources, names)`` of the first ``count`` HotpotQA dev questions (50 candidates)."""
    from hotpot_pools import dev_inputs

    task, inputs = dev_inputs(cache_dir, count)
    out = []
    for i in inputs:
        assert i.units is not None and i.sources is not None
        names = [task.doc_titles[d] or None for d in task.unit_doc[i.units].tolist()]
        out.append((i.question, list(i.texts), list(i.sources), names))
    return out


def load_version(path: str) -> Callable[..., Any]:
    """``pair_view`` of another copy of ``learned/pairview.py`` (imported as a sibling module)."""
    spec = importlib.util.spec_from_file_location("diverse_core.learned._baseline_pairview", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.pair_view  # type: ignore[no-any-return]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--questions", type=int, default=200)
    ap.add_argument("--baseline", default=None, help="another learned/pairview.py to time alongside")
    ap.add_argument("--gil", action="store_true", help="count GIL releases per call (root, uprobe)")
    ap.add_argument("--parked-thread", action="store_true",
                    help="run with a second Python thread alive, as in a service (the split route)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from diverse_core.learned import pair_view

    data = pools(args.cache_dir, args.questions)
    versions = {"this": pair_view}
    if args.baseline:
        versions["baseline"] = load_version(args.baseline)
    calls = {"plain": lambda fn, p: fn(p[0], p[1]),
             "sources+names": lambda fn, p: fn(p[0], p[1], sources=p[2], names=p[3])}
    print(f"{len(data)} HotpotQA dev pools (chunks, 50 candidates), warm; per pool the best of {args.repeat} calls")
    print("| call | version | ms / call | GIL releases / call |")
    print("|---|---|---|---|")
    from gil_counter import parked_thread, release_counter

    count = release_counter() if args.gil else None
    with parked_thread() if args.parked_thread else contextlib.nullcontext():
        _time(data, versions, calls, args.repeat, count)
    return 0


def _time(data: list[Any], versions: dict[str, Callable[..., Any]], calls: dict[str, Callable[..., Any]],
          repeat: int, count: Callable[[], int] | None) -> None:
    for label, call in calls.items():
        for fn in versions.values():
            for p in data:  # every text (and name) read once: warm
                call(fn, p)
        total = dict.fromkeys(versions, 0.0)
        for p in data:
            best = dict.fromkeys(versions, float("inf"))
            for _ in range(repeat):  # the versions interleaved
                for name, fn in versions.items():
                    t0 = time.perf_counter()
                    call(fn, p)
                    best[name] = min(best[name], time.perf_counter() - t0)
            for name in versions:
                total[name] += best[name]
        for name, fn in versions.items():
            releases = "-"
            if count is not None:
                c0 = count()
                for p in data:
                    call(fn, p)
                releases = f"{(count() - c0) / len(data):.1f}"
            print(f"| {label} | {name} | {1000.0 * total[name] / len(data):.4f} | {releases} |")
        if "baseline" in versions:
            print(f"| {label} | this / baseline | {total['this'] / total['baseline']:.3f} | |")


if __name__ == "__main__":
    sys.exit(main())

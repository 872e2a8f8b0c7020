"""One warm selection call on real pools, per method, and the same across two source trees (A/B).

What does one call cost once a service is warm? On the first ``--pools`` HotpotQA dev questions under
the ``chunks`` protocol (fetch_k = 50 candidates each, k = 5, packaged MiniLM embeddings from the
disk cache, ``--cache-dir``; the first run embeds about 6,400 texts) every tree (``--tree NAME=PATH``,
repeatable; default this checkout) times, in its own subprocess (``benchmarks/trees.py``), through
the public ``diverse_core.select``:

* ``gmmr``: default parameters, vectors only (the reference a ``learned`` call is compared with);
* ``learned``: the default model with the question and the candidate texts (the text variant the
  faces run), warm: every pool is run once, untimed, before timing, so every text has been read;
* ``learned (vectors)``: the same model without texts;
* ``adaptive``: the learned λ selector with question and texts, warm.

Per pool each row's best of ``--repeat`` calls (rows interleaved call by call), averaged over the pools
(ms per call). The trees run ``--rounds`` times each, their order alternating round by round; printed:
the median over rounds per (tree, row), the range, ``x gmmr`` of the same tree, and the ratio of the
last to the first tree. The lead's A/B after a merge (issue 44: ``learned`` within 1.5x)::

    git worktree add /tmp/issue44-before 16905f1
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/warm_call.py \\
        --tree before=/tmp/issue44-before --tree after=. --rounds 6 --results-md benchmarks/RESULTS.md
    git worktree remove /tmp/issue44-before
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report import (  # this script's folder is on the path
    ab_table,
    add_output_arguments,
    end_section,
    machine_label,
    publish,
)
from trees import add_arguments, parse_trees, run_child

START, END = "<!-- warm-call:start (benchmarks/warm_call.py) -->", "<!-- warm-call:end -->"
SCRIPT = Path(__file__).resolve()
K = 5


def save_pools(cache_dir: str | None, count: int, folder: Path) -> Path:
    """The pools as plain arrays and strings (any tree can read them): ``pools.npz`` + ``pools.json``."""
    import numpy as np

    sys.path[:0] = [str(SCRIPT.parents[1] / "shared"), str(SCRIPT.parents[1]), str(SCRIPT.parent)]
    from hotpot_pools import dev_inputs

    _, inputs = dev_inputs(cache_dir, count)
    np.savez(folder / "pools.npz", **{f"q{i}": p.query_embedding for i, p in enumerate(inputs)},
             **{f"c{i}": p.embeddings for i, p in enumerate(inputs)})
    (folder / "pools.json").write_text(json.dumps(
        [{"question": p.question, "texts": list(p.texts)} for p in inputs]), encoding="utf-8")
    return folder


def child(folder: str, repeat: int) -> dict[str, Any]:
    import diverse_core as dc
    import numpy as np

    arrays = np.load(Path(folder) / "pools.npz")
    meta = json.loads((Path(folder) / "pools.json").read_text(encoding="utf-8"))
    pools = [(arrays[f"q{i}"], arrays[f"c{i}"], m["question"], m["texts"]) for i, m in enumerate(meta)]
    rows: dict[str, Callable[[Any], object]] = {
        "gmmr": lambda p: dc.select("gmmr", p[0], p[1], K),
        "learned": lambda p: dc.select("learned", p[0], p[1], K, question=p[2], texts=p[3]),
        "learned (vectors)": lambda p: dc.select("learned", p[0], p[1], K),
        "adaptive": lambda p: dc.select("adaptive", p[0], p[1], K, question=p[2], texts=p[3]),
    }
    for p in pools:  # warm: every text read, every model loaded
        for fn in rows.values():
            fn(p)
    total = dict.fromkeys(rows, 0.0)
    for p in pools:
        best = dict.fromkeys(rows, float("inf"))
        for _ in range(repeat):
            for name, fn in rows.items():
                t0 = time.perf_counter()
                fn(p)
                best[name] = min(best[name], time.perf_counter() - t0)
        for name in rows:
            total[name] += best[name]
    return {"ms": {name: 1000 * s / len(pools) for name, s in total.items()}, "core": str(Path(dc.__file__).parent)}


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    trees = list(dict.fromkeys(r["tree"] for r in rows))
    by = {(r["tree"], r["row"]): r for r in rows}
    keys = [(name,) for name in dict.fromkeys(r["row"] for r in rows)]

    def cells(t: str, key: tuple[str, ...]) -> list[str] | None:
        r, g = by.get((t, key[0])), by.get((t, "gmmr"))
        if r is None:
            return None
        return [f"{r['median']:.3f} ({r['lo']:.3f}-{r['hi']:.3f})", f"{r['median'] / g['median']:.2f}" if g else "-"]

    def median(t: str, key: tuple[str, ...]) -> float | None:
        r = by.get((t, key[0]))
        return r["median"] if r else None

    def per_gmmr(t: str, key: tuple[str, ...]) -> float | None:
        r, g = by.get((t, key[0])), by.get((t, "gmmr"))
        return r["median"] / g["median"] if r and g and key[0] != "gmmr" else None

    lines = [START, "## One warm call on real pools", "",
             f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/warm_call.py {meta['argv']}`",
             "", f"Measured {meta['machine']}; {meta['pools']} HotpotQA dev `chunks` pools of 50 candidates, k = {K}, "
             f"one BLAS thread; per pool the best of {meta['repeat']} interleaved calls, mean over pools; "
             f"median (range) over {meta['rounds']} rounds per tree, trees alternating. "
             "With two trees: the ratio of the medians, and of each tree's `x gmmr` (gMMR runs in the same processes: "
             "a change of machine load weighs on both).", "",
             *ab_table(["call"], keys, trees, ["ms (rounds)", "x gmmr"], cells, {"": median, " (x gmmr)": per_gmmr})]
    return end_section(lines, meta.get("trees"), END)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pools", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=4, help="subprocess runs per tree, trees alternating")
    ap.add_argument("--cache-dir", default=None, help="the embedding cache (default: the user cache folder)")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per subprocess run")
    add_output_arguments(ap)
    add_arguments(ap)
    args = ap.parse_args(argv)

    if args.child is not None:
        print(json.dumps(child(args.child[0], int(args.child[1]))), flush=True)
        return 0


    trees = parse_trees(args.tree)
    per_round: dict[tuple[str, str], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = save_pools(args.cache_dir, args.pools, Path(tmp))
        for rnd in range(args.rounds):
            for tree in (trees if rnd % 2 == 0 else trees[::-1]):
                out = run_child(tree, SCRIPT, [str(folder), str(args.repeat)], args.timeout)
                if "ms" not in out:
                    raise SystemExit(f"tree {tree.name}, round {rnd + 1}: {out.get('status')}")
                for name, ms in out["ms"].items():
                    per_round.setdefault((tree.name, name), []).append(ms)
                print(f"round {rnd + 1} {tree.name} ({out['core']}): "
                      + ", ".join(f"{n} {ms:.3f}" for n, ms in out["ms"].items()),
                      flush=True)
    rows = [{"tree": t, "row": n, "median": statistics.median(v), "lo": min(v), "hi": max(v), "rounds": v}
            for (t, n), v in per_round.items()]
    meta = {"argv": " ".join(argv if argv is not None else sys.argv[1:]), "machine": machine_label(),
            "pools": args.pools, "repeat": args.repeat, "rounds": args.rounds,
            "trees": {t.name: str(t.path) for t in trees} if args.tree else None}
    publish(render(rows, meta), START, END, args.results_md, args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

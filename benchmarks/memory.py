"""Memory and time of ONE ``select`` call per method, each in a fresh subprocess with a memory cap.

What does one call cost at a large ``fetch_k``? For every registered method (or ``--methods``) and
every ``--n`` (candidates; d = ``--dim``, k = ``--k``; float32 unit vectors around 50 fixed-seed
topic centres, as a store returns them) a new Python process:

1. builds the inputs and calls the method once on the first 60 candidates (lazy imports, model
   files: what a warm service has already paid);
2. caps its address space at its current size plus ``--cap-gib`` (``RLIMIT_AS``; ``0``: no cap);
3. calls ``diverse_core.select(method, query, candidates, k)`` once with ``tracemalloc`` running
   (numpy's allocations are traced) and reports the traced peak (``peak``), the rise of the
   process's peak RSS (``rss+``) and the wall time of the call (tracemalloc's bookkeeping included).

Methods that read text (``--text-methods``, default ``learned`` and ``adaptive``) get a second row,
``METHOD + texts``: the same call with a question and one ``"Title: body"`` text per candidate, the
text variant the faces run.

A call that fails is reported by what it raised (``MemoryError`` when the cap is hit, or the typed
error a method raises above its documented limit); a call still running after ``--timeout``
seconds is killed and reported as a timeout, so no cell can take more than the cap or hang the run.

``--tree NAME=PATH`` (repeatable) runs each tree's code (``PATH/shared`` first on the path; see
``benchmarks/trees.py``) so a before/after table comes from one command::

    git worktree add /tmp/issue44-before 16905f1
    python benchmarks/memory.py --n 1000 10000 --cap-gib 4 --timeout 300 \\
        --tree before=/tmp/issue44-before --tree after=. --results-md benchmarks/RESULTS.md
    git worktree remove /tmp/issue44-before

Without ``--tree`` it measures this checkout. ``--json FILE`` keeps the rows.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from report import (  # this script's folder is on the path
    add_output_arguments,
    end_section,
    machine_label,
    publish,
)
from trees import add_arguments, parse_trees, run_child

START, END = "<!-- memory:start (benchmarks/memory.py) -->", "<!-- memory:end -->"
SCRIPT = Path(__file__).resolve()
WARM_N = 60


# ----------------------------------------------------------------------------- child
def _inputs(n: int, dim: int, seed: int = 0) -> tuple[Any, Any]:
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(50, dim))
    cand = centres[rng.integers(0, 50, size=n)] + 0.6 * rng.normal(size=(n, dim))
    cand /= np.linalg.norm(cand, axis=1, keepdims=True)
    query = centres[0] + 0.5 * rng.normal(size=dim)
    return (query / np.linalg.norm(query)).astype(np.float32), cand.astype(np.float32)


_WORDS = ("river", "album", "film", "band", "city", "novel", "war", "church", "station", "league", "season",
          "island", "county", "party", "company", "school", "museum", "actor", "singer", "writer", "born",
          "released", "founded", "located", "played", "won", "named", "served", "married", "built")


def _texts(n: int, seed: int = 1) -> tuple[str, list[str]]:
    """A question and ``n`` ``"Title: body"`` texts (200 titles, 30-word bodies) for the text readers."""
    import numpy as np

    rng = np.random.default_rng(seed)
    words = np.array(_WORDS + tuple(f"Name{i}" for i in range(300)))
    titles = [f"Page {a} {b}" for a, b in rng.integers(0, 1000, size=(200, 2))]
    body = words[rng.integers(0, len(words), size=(n, 30))]
    texts = [f"{titles[t]}: The {' '.join(row)}." for t, row in zip(rng.integers(0, 200, size=n), body, strict=True)]
    return "Which album did Name3 and Name7 release in the city of Name12?", texts


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmSize in /proc/self/status")


def child(method: str, n: int, dim: int, k: int, cap_gib: float, with_texts: bool) -> dict[str, Any]:
    import gc
    import resource
    import time
    import tracemalloc

    import diverse_core as dc

    query, cand = _inputs(n, dim)
    question, texts = _texts(n) if with_texts else ("", [])
    warm: dict[str, Any] = {"question": question, "texts": texts[:WARM_N]} if with_texts else {}
    extra: dict[str, Any] = {"question": question, "texts": texts} if with_texts else {}
    dc.select(method, query, cand[:WARM_N], min(k, WARM_N), **warm)
    gc.collect()
    if cap_gib > 0:
        limit = _address_space() + int(cap_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tracemalloc.start()
    t0 = time.perf_counter()
    try:
        picks = len(dc.select(method, query, cand, k, **extra).indices)
        status = "ok" if picks == k else f"{picks} picks"
    except MemoryError:
        status = "MemoryError"
    except Exception as e:  # noqa: BLE001 - reported, by type, in the row
        status = f"{type(e).__name__}: {str(e).splitlines()[0][:100] if str(e) else ''}"
    seconds = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"status": status, "seconds": seconds, "peak_mib": peak / 2**20, "rss_mib": (rss1 - rss0) / 1024}


def list_methods() -> dict[str, Any]:
    import diverse_core as dc

    return {"methods": list(dc.available_methods()), "core": str(Path(dc.__file__).parent)}


# ----------------------------------------------------------------------------- parent
def cell(r: dict[str, Any]) -> str:
    if r.get("status") == "ok":
        return f"{r['peak_mib']:,.1f} / {r['rss_mib']:,.0f} MiB, {r['seconds']:.2f} s"
    after = f" after {r['seconds']:.0f} s" if "seconds" in r else ""
    return f"**{r['status']}**{after}"


def render(rows: list[dict[str, Any]], meta: dict[str, Any]) -> str:
    trees = list(dict.fromkeys(r["tree"] for r in rows))
    ns = list(dict.fromkeys(r["n"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    by = {(r["tree"], r["n"], r["method"]): r for r in rows}
    cols = [(t, n) for n in ns for t in trees]
    head = "| method | " + " | ".join(f"{t}, n = {n:,}" if len(trees) > 1 else f"n = {n:,}" for t, n in cols) + " |"
    lines = [START, "## Memory: one select call per method", "",
             f"Command: `python benchmarks/memory.py {meta['argv']}`", "",
             f"Measured {meta['machine']}; d = {meta['dim']}, k = {meta['k']}, float32 candidates, one fresh "
             f"process per cell, address space capped at its size plus {meta['cap_gib']:g} GiB, "
             f"timeout {meta['timeout']:g} s. Cell: traced peak (tracemalloc, numpy included) / rise of peak "
             "RSS, wall time of the one call (with tracemalloc on). `+ texts`: the method's text variant (a question "
             "and one `Title: body` text per candidate, 200 titles). A failed cell names what the call raised.",
             "", head, "|---|" + "---|" * len(cols)]
    for m in methods:
        lines.append(f"| {m} | " + " | ".join(cell(by[(t, n, m)]) if (t, n, m) in by else "-" for t, n in cols) + " |")
    return end_section(lines, meta.get("trees"), END)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, nargs="+", default=[1000, 10_000])
    ap.add_argument("--dim", type=int, default=384)
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--methods", nargs="+", default=None, help="default: every registered method")
    ap.add_argument("--text-methods", nargs="*", default=["learned", "adaptive"],
                    help="methods also run with a question and texts (their text variant): row 'METHOD + texts'")
    ap.add_argument("--skip", nargs="*", default=[], metavar="N:METHOD",
                    help="cells not to run, e.g. '10000:learned + texts' (reported as skipped)")
    ap.add_argument("--cap-gib", type=float, default=4.0, help="extra address space per call (0: no cap)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per call before it is killed")
    add_output_arguments(ap)
    add_arguments(ap)
    args = ap.parse_args(argv)

    if args.child is not None:
        out = list_methods() if args.child == ["list"] else child(
            args.child[0], int(args.child[1]), int(args.child[2]), int(args.child[3]), float(args.child[4]),
            args.child[5] == "texts")
        print(json.dumps(out), flush=True)
        return 0


    trees = parse_trees(args.tree)
    rows: list[dict[str, Any]] = []
    for tree in trees:
        listed = run_child(tree, SCRIPT, ["list"], 120)
        if "methods" not in listed:
            raise SystemExit(f"tree {tree.name}: could not list its methods: {listed.get('status')}")
        print(f"tree {tree.name}: diverse_core from {listed['core']}", flush=True)
        methods = args.methods or listed["methods"]
        cases = [(m, False) for m in methods] + [(m, True) for m in methods if m in args.text_methods]
        for n in args.n:
            for m, with_texts in cases:
                label = f"{m} + texts" if with_texts else m
                if f"{n}:{label}" in args.skip:
                    r: dict[str, Any] = {"status": "skipped"}
                else:
                    r = run_child(tree, SCRIPT, [m, str(n), str(args.dim), str(args.k), str(args.cap_gib),
                                                 "texts" if with_texts else "vectors"],
                                  args.timeout + 60)  # + start-up, inputs and the warm-up call
                rows.append({"tree": tree.name, "n": n, "method": label, **r})
                print(json.dumps(rows[-1]), flush=True)
    meta = {"argv": " ".join(argv if argv is not None else sys.argv[1:]), "machine": machine_label(),
            "dim": args.dim, "k": args.k, "cap_gib": args.cap_gib, "timeout": args.timeout,
            "trees": {t.name: str(t.path) for t in trees} if args.tree else None}
    publish(render(rows, meta), START, END, args.results_md, args.json, {"meta": meta, "rows": rows})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

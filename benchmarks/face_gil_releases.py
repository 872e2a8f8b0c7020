"""GIL releases per retriever call of each face over pgvector (the calls ``benchmarks/throughput.py`` times).

Under 16 concurrent callers every release of the GIL can hand the interpreter to another thread, so
the count per call goes with the CPU a call costs at high concurrency. This script opens the kept
server of ``stores_scale.py``/``throughput.py`` (``--data-dir``, 100,000 rows and HNSW already loaded
and built), warms every query once, then counts the calling thread's releases per call for each
variant, in all and per Python line (a uprobe on ``PyEval_SaveThread``, root; see
``benchmarks/gil_counter.py``)::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
        python benchmarks/face_gil_releases.py --data-dir /tmp/pgscale/data --framework llamaindex \\
        --variants search gmmr learned --calls 50
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
for extra in (REPO / "shared", REPO, REPO / "benchmarks"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import stores_scale as scale  # noqa: E402
import throughput as tp  # noqa: E402
from gil_counter import by_line, parked_thread, release_counter  # noqa: E402


def main(argv: list[str] | None = None) -> int:  # pragma: no cover (needs root, the uprobe and a kept server)
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", required=True, help="a kept pgserver folder with the rows and HNSW loaded")
    ap.add_argument("--framework", choices=["langchain", "llamaindex"], default="llamaindex")
    ap.add_argument("--variants", nargs="+", default=["search", "gmmr", "learned"], choices=list(tp.VARIANTS))
    ap.add_argument("--fetch-k", type=int, default=50)
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--lines", action="store_true", help="also print the releases per Python line")
    args = ap.parse_args(argv)

    from urllib.parse import parse_qs, urlsplit

    import pgserver

    srv = pgserver.get_server(args.data_dir, cleanup_mode=None)
    host = parse_qs(urlsplit(srv.get_uri()).query).get("host", [args.data_dir])[0]
    texts, vecs, queries, qv = scale.make_data(100_000, 384, 2000, 100)
    qvecs = {q: v.tolist() for q, v in zip(queries, qv, strict=True)}
    calls, close = tp.pg_stores(host, args.fetch_k, tp.Vectors(qvecs, 384), qvecs, 384)
    count = release_counter()
    with parked_thread():  # as in a service: the library splits small work while other threads live
        try:
            for variant in args.variants:
                fn = calls[args.framework][variant]
                for q in queries:
                    fn(q)  # warm: every query's texts and vectors seen once
                c0 = count()
                for i in range(args.calls):
                    fn(queries[i % len(queries)])
                print(f"{args.framework} {variant}: {(count() - c0) / args.calls:.1f} GIL releases per call", flush=True)
                if args.lines:
                    traced, lines = by_line(lambda i, fn=fn: fn(queries[i % len(queries)]), args.calls, count,
                                            str(REPO) + "/")
                    print(f"  traced: {traced:.1f} per call")
                    for per_call, where in lines:
                        print(f"  {per_call:6.2f}  {where}")
        finally:
            close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

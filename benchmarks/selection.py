"""Selection speed: diverse_core against peer implementations, measured in one run.

For every pool size ``n`` and dimension ``d`` (random unit vectors, float32, fixed
seed) and ``k = 10`` this times, through the public API (validation included):

* ours: ``topk``, ``mmr`` (lambda 0.5), ``gmmr`` (lambda 0.5), the whole 10-value
  ``gmmr`` sweep (lambda 0.1 .. 1.0), ``dartboard`` (sigma 0.1), ``vendi``
  (s 0.5, objective ``paper`` and ``vendirag``);
* peers: LangChain ``maximal_marginal_relevance``, LlamaIndex
  ``get_top_k_mmr_embeddings``, ``pyversity.mmr`` and ``vendirag.retriever.vrs_select``.

Repeats are interleaved (one call of every function per round) so that load from
other processes hits all of them alike; the table shows medians in milliseconds.
``--cache`` fixes the CPU-cache state each timed call starts from, the same for
every function: ``warm`` (default; the same call ran just before, as when a pool
was just produced), ``cold`` (64 MiB written first, so inputs come from memory) or
``as-is`` (whatever the previous function left, which depends on the order).
A peer whose first call exceeds ``--slow-limit`` seconds is timed once more only
and marked ``*``. Run::

    python benchmarks/selection.py            # full grid
    python benchmarks/selection.py --quick    # n in {100, 1000}, d = 384
    python benchmarks/selection.py --cell 1000 768    # one cell (the issue's targets)
    python benchmarks/selection.py --vendi-k          # Vendi k-scaling table only
    python benchmarks/selection.py --vendi-k --cell 200 8 --ks 10 200   # tiny d, k = n
    python benchmarks/selection.py --peer-strategies  # issue 28: each strategy vs its peer
    python benchmarks/selection.py --call-parts       # issue 35: one n=50 call, split by stage

``--results-md FILE`` also writes what was printed into FILE's section of that mode (``speed``,
``speed-peers``, ``vendi-k``, ``call-parts``), headed by the command and the machine.

``--vendi-k`` times ``select("vendi", s=0.5)`` at k = 10, 20, 50, 100 on one pool
(n = 1000, d = 384 unless ``--cell`` says otherwise), a 10-value ``sweep`` against a
loop of the same 10 selects, and with ``--reference`` the pre-speed-up implementation
(``tests/core/vendi_eig_ref.py``; k <= 50 only, it needs seconds). It reports wall
time and the process's CPU time (``time.process_time``): on a machine shared with
other work the wall time of a long call includes the time other processes held the
core, the CPU time does not.

``--peer-strategies`` times, per strategy, ours against the library that ships it
(pyversity 0.2: mmr, dpp, msd, cover, ssd at diversity 0.5 with their default other
parameters; divsel 0.1: GIST, linear utility ``max(0, 1 + cos)``, ``lam=1``, ``eps=0.1``,
exact diameter; set ``RAYON_NUM_THREADS=1`` for one core) at ``n=50`` and ``n=1000``
(``d=384``, ``k=10``) and ``n=1000, k=50``, interleaved, and prints ours/peer ratios.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import diverse_core as dc
import numpy as np

K = 10
LAMBDA = 0.5
SIGMA = 0.1
VENDI_S = 0.5
SWEEP = np.round(np.arange(1, 11) / 10.0, 1)


@dataclass
class Entry:
    """One timed function in one (n, d) cell."""

    name: str
    fn: Callable[[], Any]
    slow_ok: bool = False  # a peer: may be cut short when slow
    times: list[float] = field(default_factory=list)
    result: Any = None
    note: str = ""


def _peers(q: np.ndarray, x: np.ndarray, rel: np.ndarray) -> list[Entry]:
    out: list[Entry] = []
    try:
        from langchain_core.vectorstores.utils import maximal_marginal_relevance
    except ImportError:
        print("(langchain-core not installed: LangChain MMR skipped)")
    else:
        out.append(
            Entry(
                "LangChain maximal_marginal_relevance",
                lambda: maximal_marginal_relevance(q, x, lambda_mult=LAMBDA, k=K),
                slow_ok=True,
            )
        )
    try:
        from llama_index.core.indices.query.embedding_utils import get_top_k_mmr_embeddings
    except ImportError:
        print("(llama-index-core not installed: LlamaIndex MMR skipped)")
    else:
        q_list, x_list = q.tolist(), x.tolist()  # LlamaIndex works on lists of floats
        out.append(
            Entry(
                "LlamaIndex get_top_k_mmr_embeddings",
                lambda: get_top_k_mmr_embeddings(
                    q_list, x_list, similarity_top_k=K, mmr_threshold=LAMBDA
                )[1],
                slow_ok=True,
            )
        )
    try:
        import pyversity
    except ImportError:
        print("(pyversity not installed: pyversity.mmr skipped)")
    else:
        out.append(
            Entry(
                "pyversity.mmr",
                lambda: pyversity.mmr(x, rel, K, diversity=1.0 - LAMBDA).indices,
                slow_ok=True,
            )
        )
    try:
        from vendirag.retriever import vrs_select
    except ImportError:
        print("(vendirag not installed: vrs_select skipped)")
    else:
        out.append(
            Entry("vendirag vrs_select", lambda: vrs_select(x, q, k=K, s=VENDI_S), slow_ok=True)
        )
    return out


def _ours(q: np.ndarray, x: np.ndarray) -> list[Entry]:
    return [
        Entry("ours topk", lambda: dc.select("topk", q, x, K).indices),
        Entry("ours mmr", lambda: dc.select("mmr", q, x, K, lambda_mult=LAMBDA).indices),
        Entry("ours gmmr", lambda: dc.select("gmmr", q, x, K, lambda_mult=LAMBDA).indices),
        Entry("ours gmmr sweep (10 lambdas)", lambda: dc.sweep("gmmr", q, x, K, SWEEP).indices),
        Entry("ours dartboard", lambda: dc.select("dartboard", q, x, K, sigma=SIGMA).indices),
        Entry(
            "ours vendi (paper)",
            lambda: dc.select("vendi", q, x, K, s=VENDI_S, objective="paper").indices,
        ),
        Entry(
            "ours vendi (vendirag)",
            lambda: dc.select("vendi", q, x, K, s=VENDI_S, objective="vendirag").indices,
        ),
    ]


#: Written before each timed call in ``--cache cold`` mode: larger than any CPU cache here.
_EVICT = np.zeros(64 * 2**20 // 8)


def _timed(entry: Entry, cache: str = "as-is") -> float:
    if cache == "warm" and entry.note != "*":
        entry.fn()  # the same call untimed: its inputs and buffers are in cache
    elif cache == "cold":
        np.add(_EVICT, 1.0, out=_EVICT)  # evict the CPU caches
    t0 = time.perf_counter()
    entry.result = entry.fn()
    elapsed = time.perf_counter() - t0
    entry.times.append(elapsed)
    return elapsed


def run_cell(
    n: int, d: int, repeats: int, slow_limit: float, seed: int, cache: str = "warm"
) -> list[Entry]:
    """Time every function on one random pool of ``n`` unit vectors of dimension ``d``."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.normal(size=d).astype(np.float32)
    q /= np.linalg.norm(q)
    rel = x @ q
    entries = _ours(q, x) + _peers(q, x, rel)
    for e in entries:  # warm-up call (imports, caches); also probes slow peers
        if _timed(e) > slow_limit and e.slow_ok:
            e.note = "*"
        e.times.clear()
    for _ in range(repeats):
        for e in entries:
            if e.note == "*" and e.times:
                continue
            _timed(e, cache)
    return entries


VENDI_KS = (10, 20, 50, 100)
VENDI_REF_MAX_K = 50


@dataclass
class KEntry:
    """One timed Vendi call of the k-scaling table: wall and CPU seconds per repeat."""

    name: str
    fn: Callable[[], Any]
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)
    result: Any = None


def run_vendi_k(
    n: int, d: int, repeats: int, seed: int, reference: bool, ks: tuple[int, ...] = VENDI_KS
) -> list[KEntry]:
    """Time Vendi selection at each k of ``ks`` on one pool (interleaved)."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = rng.normal(size=d).astype(np.float32)
    q /= np.linalg.norm(q)
    entries = [
        KEntry(f"select k={k}", lambda k=k: dc.select("vendi", q, x, k, s=VENDI_S).indices)
        for k in ks
    ]
    sweep_k = 50 if 50 in ks else max(ks)
    entries.append(
        KEntry(f"sweep k={sweep_k} (10 s)", lambda: dc.sweep("vendi", q, x, sweep_k, SWEEP).indices)
    )
    entries.append(
        KEntry(
            f"loop of 10 selects k={sweep_k}",
            lambda: np.stack(
                [dc.select("vendi", q, x, sweep_k, s=float(s)).indices for s in SWEEP]
            ),
        )
    )
    if reference:
        import sys
        from pathlib import Path

        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "core"))
        from vendi_eig_ref import eig_reference_select

        for k in ks:
            if k <= VENDI_REF_MAX_K:
                entries.append(
                    KEntry(
                        f"pre-speed-up select k={k}",
                        lambda k=k: eig_reference_select(q, x, k, VENDI_S),
                    )
                )
    for e in entries:
        e.result = e.fn()  # warm-up
    for _ in range(repeats):
        for e in entries:
            e.fn()  # warm: the same call just before (as in the main table)
            w0, c0 = time.perf_counter(), time.process_time()
            e.result = e.fn()
            e.cpu.append(time.process_time() - c0)
            e.wall.append(time.perf_counter() - w0)
    return entries


def report_vendi_k(n: int, d: int, entries: list[KEntry], repeats: int) -> None:
    """Print the k-scaling table, the k=50 / k=10 ratio and the sweep check."""
    by = {e.name: e for e in entries}

    def cell(e: KEntry) -> str:
        return (
            f"{1e3 * statistics.median(e.wall):.1f} | {1e3 * min(e.wall):.1f} | "
            f"{1e3 * statistics.median(e.cpu):.1f} | {1e3 * min(e.cpu):.1f}"
        )

    print(
        f"\n## vendi k-scaling (n={n}, d={d}, float32, s={VENDI_S}; {repeats} interleaved "
        "rounds, warm)\n"
    )
    base_k = min(int(e.name.split("=")[1]) for e in entries if e.name.startswith("select k="))
    print(
        f"| call | wall median ms | wall best ms | CPU median ms | CPU best ms | CPU / k={base_k} |"
    )
    print("|---|---|---|---|---|---|")
    base = statistics.median(by[f"select k={base_k}"].cpu)
    for e in entries:
        print(f"| {e.name} | {cell(e)} | {statistics.median(e.cpu) / base:.1f} |")
    sweep = next(e for e in entries if e.name.startswith("sweep"))
    loop = next(e for e in entries if e.name.startswith("loop"))
    rows = [(f"{sweep.name} / {loop.name}", sweep, loop, "<= 1")]
    if "select k=50" in by and "select k=10" in by:
        rows.insert(0, ("select k=50 / select k=10", by["select k=50"], by["select k=10"], "<= 25"))
    print("\n| ratio | wall (median) | wall (best) | CPU (median) | CPU (best) | target |")
    print("|---|---|---|---|---|---|")
    for label, a, b, target in rows:
        vals = [
            statistics.median(a.wall) / statistics.median(b.wall),
            min(a.wall) / min(b.wall),
            statistics.median(a.cpu) / statistics.median(b.cpu),
            min(a.cpu) / min(b.cpu),
        ]
        print(f"| {label} | " + " | ".join(f"{v:.2f}" for v in vals) + f" | {target} |")
    same = all(
        _same(by[f"pre-speed-up select k={k}"].result, by[f"select k={k}"].result)
        for k in [int(e.name.split("=")[1]) for e in entries if e.name.startswith("select k=")]
        if f"pre-speed-up select k={k}" in by
    )
    sweep_same = np.array_equal(np.asarray(sweep.result), np.asarray(loop.result))
    print(
        f"\nsweep picks == loop picks: {'yes' if sweep_same else 'no'}"
        + (
            f"; picks == pre-speed-up picks: {'yes' if same else 'no'}"
            if any(name.startswith("pre-speed-up") for name in by)
            else ""
        )
    )


def _ms(e: Entry) -> float:
    return 1e3 * statistics.median(e.times)


def _same(a: Any, b: Any) -> bool:
    return [int(i) for i in a] == [int(i) for i in b]


#: (strategy, our parameters, the peer's call) for ``--peer-strategies``.
PEER_STRATEGIES = ("mmr", "dpp", "msd", "cover", "ssd", "gist")
PEER_CELLS = ((50, 10), (1000, 10), (1000, 50))


def _peer_pair(
    name: str, q: np.ndarray, x: np.ndarray, rel: np.ndarray, k: int
) -> tuple[Callable[[], Any], Callable[[], Any]] | None:
    """(ours, peer) for one strategy, or ``None`` when the peer is not installed."""
    try:
        if name == "gist":
            import divsel
        else:
            import pyversity
    except ImportError:
        return None
    if name == "gist":
        weights = np.ascontiguousarray(np.maximum(1.0 + rel, 0.0), dtype=np.float64)
        return (
            lambda: dc.select("gist", q, x, k, lam=1.0, eps=0.1).indices,
            lambda: divsel.gist_select(x, weights, k=k, lam=1.0, eps=0.1),
        )
    params = {"lambda_mult": 0.5} if name == "mmr" else {"diversity": 0.5}
    peer = getattr(pyversity, name)
    return (
        lambda: dc.select(name, q, x, k, **params).indices,
        lambda: peer(x, rel, k, diversity=0.5).indices,
    )


def peer_strategies(repeats: int, seed: int, clock: str = "wall") -> None:
    """Print the ours/peer table of issue 28 (medians of interleaved warm calls).

    ``clock="cpu"`` times with this process's CPU time (``time.process_time``) instead of
    wall time: on an oversubscribed machine it leaves out the waits for a core.
    """
    now = time.process_time if clock == "cpu" else time.perf_counter
    d = 384
    rows: dict[str, list[str]] = {}
    for n, k in PEER_CELLS:
        rng = np.random.default_rng(seed)
        x = rng.normal(size=(n, d)).astype(np.float32)
        q = rng.normal(size=d).astype(np.float32)
        rel = (x @ q) / (np.linalg.norm(x, axis=1) * np.linalg.norm(q))
        for name in PEER_STRATEGIES:
            pair = _peer_pair(name, q, x, rel, k)
            if pair is None:
                rows.setdefault(name, []).append("peer not installed")
                continue
            times: tuple[list[float], list[float]] = ([], [])
            for _ in range(repeats):
                for fn, out in zip(pair, times, strict=True):
                    fn()  # warm: the same call just before
                    t0 = now()
                    fn()
                    out.append(now() - t0)
            ours, theirs = (1e3 * statistics.median(t) for t in times)
            rows.setdefault(name, []).append(f"{ours:.3f} / {theirs:.3f} = {ours / theirs:.2f}")
    threads = {v: os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "RAYON_NUM_THREADS")}
    print(
        f"# peer strategies: ours / peer in ms ({clock} clock, median of {repeats} interleaved "
        "warm calls), "
        f"float32 d={d}, seed={seed}; threads env {threads}\n"
    )
    print("| strategy (peer) | " + " | ".join(f"n={n} k={k}" for n, k in PEER_CELLS) + " |")
    print("|" + "---|" * (len(PEER_CELLS) + 1))
    for name, vals in rows.items():
        peer = "divsel" if name == "gist" else "pyversity"
        print(f"| {name} ({peer}) | " + " | ".join(vals) + " |")


def call_parts(repeats: int, seed: int, n: int = 50, k: int = 10, loops: int = 300) -> None:
    """Print where one ``dc.select`` call of each strategy spends its CPU time at ``n``, ``k``.

    Per strategy, the median over ``repeats`` rounds of ``loops`` calls each (CPU time per
    call, in microseconds) of: the whole ``dc.select``; ``prepare_inputs`` alone (validation
    and relevance); the method's own run on prepared inputs; and the rest (the parameter
    checks and building the ``Selection``: the whole less the two).
    """
    from diverse_core.registry import get_method
    from diverse_core.validation import prepare_inputs

    d = 384
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d)).astype(np.float32)
    q = rng.normal(size=d).astype(np.float32)
    prep = prepare_inputs(q, x, k)

    def per_call(fn: Callable[[], Any]) -> float:
        fn()
        times = []
        for _ in range(repeats):
            t0 = time.process_time()
            for _ in range(loops):
                fn()
            times.append((time.process_time() - t0) / loops)
        return 1e6 * statistics.median(times)

    print(
        f"# one dc.select call split (cpu clock, us per call, median of {repeats} rounds of {loops} calls), "
        f"float32 n={n} d={d} k={k}, seed={seed}\n"
    )
    print("| strategy | dc.select | prepare_inputs | method run | rest |")
    print("|---|---|---|---|---|")
    for name in PEER_STRATEGIES:
        params: dict[str, Any] = (
            {"lambda_mult": 0.5} if name == "mmr" else {"lam": 1.0, "eps": 0.1} if name == "gist" else {"diversity": 0.5}
        )
        spec = get_method(name)
        resolved = spec.resolve_params(params)
        whole = per_call(lambda: dc.select(name, q, x, k, **params))  # noqa: B023
        inputs = per_call(lambda: prepare_inputs(q, x, k))
        run = per_call(lambda: spec.run(prep, **resolved))  # noqa: B023
        print(f"| {name} | {whole:.1f} | {inputs:.1f} | {run:.1f} | {whole - inputs - run:.1f} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small grid: n in {100, 1000}, d=384")
    parser.add_argument("--repeats", type=int, default=7, help="timed rounds per cell (median)")
    parser.add_argument(
        "--slow-limit",
        type=float,
        default=3.0,
        help="seconds; a peer slower than this is timed once (marked *)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--cache",
        choices=("warm", "cold", "as-is"),
        default="warm",
        help="CPU cache state at each timed call: warm = the same call ran just before "
        "(the pool was just produced, as in a retrieval service); cold = caches evicted "
        "first; as-is = whatever the previous function left (order-dependent)",
    )
    parser.add_argument(
        "--cell",
        type=int,
        nargs=2,
        action="append",
        metavar=("N", "D"),
        help="time only this (n, d) cell (repeatable), e.g. --cell 1000 768",
    )
    parser.add_argument(
        "--vendi-k",
        action="store_true",
        help="only the Vendi k-scaling table (k = 10, 20, 50, 100; n=1000 d=384 unless --cell)",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="with --vendi-k: also time the pre-speed-up Vendi (tests/core/vendi_eig_ref.py)",
    )
    parser.add_argument(
        "--ks",
        type=int,
        nargs="+",
        default=list(VENDI_KS),
        help="with --vendi-k: the k values (default 10 20 50 100)",
    )
    parser.add_argument(
        "--peer-strategies",
        action="store_true",
        help="issue 28: each strategy against the peer library that ships it",
    )
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="with --peer-strategies: wall time, or this process's CPU time (for an oversubscribed machine)",
    )
    parser.add_argument(
        "--call-parts",
        action="store_true",
        help="issue 35: where one dc.select call spends its CPU time at n=50, k=10 (validation, the method, the rest)",
    )
    parser.add_argument("--results-md", default=None, help="also write the printout into this file's section")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be >= 1")
    if args.results_md is None:
        run(args)
        return
    import contextlib
    import io
    import shlex
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from report import machine_label, replace_section

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        run(args)
    name, title = ("vendi-k", "Vendi at large k") if args.vendi_k else (
        "call-parts", "One small call, split by stage") if args.call_parts else (
        "speed-peers", "Speed: each strategy against the library that ships it") if args.peer_strategies else (
        "speed", "Speed: selection kernels against peers")
    command = " ".join(shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    body = "\n".join(line[2:] if line.startswith("# ") else line for line in out.getvalue().strip().splitlines())
    section = (f"<!-- {name}:start (benchmarks/selection.py) -->\n## {title}\n\n"
               f"Command: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 RAYON_NUM_THREADS=1 "
               f"python benchmarks/selection.py {command}`\n\nMeasured {machine_label()}.\n\n"
               f"{body}\n<!-- {name}:end -->")
    print(section)
    replace_section(Path(args.results_md), section, f"<!-- {name}:start (benchmarks/selection.py) -->",
                    f"<!-- {name}:end -->")


def run(args: argparse.Namespace) -> None:
    """Time and print what ``args`` asks for."""
    if args.vendi_k:
        threads = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
        print(
            f"# diverse_core Vendi k-scaling (seed={args.seed}); python "
            f"{platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
            f"BLAS threads env: {threads}"
        )
        for n, d in [(int(n), int(d)) for n, d in args.cell] if args.cell else [(1000, 384)]:
            entries = run_vendi_k(n, d, args.repeats, args.seed, args.reference, tuple(args.ks))
            report_vendi_k(n, d, entries, args.repeats)
        return
    if args.call_parts:
        call_parts(args.repeats, args.seed)
        return
    if args.peer_strategies:
        peer_strategies(args.repeats, args.seed, clock=args.clock)
        return
    grid = (
        [(int(n), int(d)) for n, d in args.cell]
        if args.cell
        else [(100, 384), (1000, 384)]
        if args.quick
        else [(n, d) for n in (100, 1000, 5000) for d in (384, 768)]
    )

    threads = {v: os.environ.get(v) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")}
    print(
        f"# diverse_core selection benchmark (k={K}, float32 unit vectors, seed={args.seed}, "
        f"median of {args.repeats} interleaved rounds, cache {args.cache})\n"
        f"python {platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} CPUs, "
        f"BLAS threads env: {threads}\n"
    )
    cells: dict[tuple[int, int], list[Entry]] = {}
    for n, d in grid:
        cells[(n, d)] = run_cell(n, d, args.repeats, args.slow_limit, args.seed, args.cache)

    names = [e.name for e in next(iter(cells.values()))]
    header = "| method | " + " | ".join(f"n={n} d={d}" for n, d in grid) + " |"
    print(header)
    print("|" + "---|" * (len(grid) + 1))
    for i, name in enumerate(names):
        row = [f"{_ms(cells[c][i]):.2f}{cells[c][i].note}" for c in grid]
        print(f"| {name} | " + " | ".join(row) + " |")
    print(
        "\nTimes in ms (median). * = slower than --slow-limit on the first call; timed once more."
    )

    def get(cell: list[Entry], name: str) -> Entry | None:
        return next((e for e in cell if e.name == name), None)

    print("\n| ratio | " + " | ".join(f"n={n} d={d}" for n, d in grid) + " | target |")
    print("|" + "---|" * (len(grid) + 2))
    specs = [
        (
            "gmmr sweep / pyversity.mmr",
            "ours gmmr sweep (10 lambdas)",
            "pyversity.mmr",
            "<= 1.5 at n=1000 d=768",
        ),
        ("LangChain MMR / ours mmr", "LangChain maximal_marginal_relevance", "ours mmr", ">= 30"),
        ("LlamaIndex MMR / ours mmr", "LlamaIndex get_top_k_mmr_embeddings", "ours mmr", "-"),
        (
            "vrs_select / ours vendi (vendirag)",
            "vendirag vrs_select",
            "ours vendi (vendirag)",
            ">= 50",
        ),
    ]
    for label, num, den, target in specs:
        vals = []
        for c in grid:
            a, b = get(cells[c], num), get(cells[c], den)
            vals.append("n/a" if a is None or b is None else f"{_ms(a) / _ms(b):.2f}")
        print(f"| {label} | " + " | ".join(vals) + f" | {target} |")

    print("\n| identical picks | " + " | ".join(f"n={n} d={d}" for n, d in grid) + " |")
    print("|" + "---|" * (len(grid) + 1))
    checks = [
        ("LangChain MMR == ours mmr", "LangChain maximal_marginal_relevance", "ours mmr"),
        ("LlamaIndex MMR == ours mmr", "LlamaIndex get_top_k_mmr_embeddings", "ours mmr"),
        ("pyversity.mmr == ours mmr", "pyversity.mmr", "ours mmr"),
        ("vrs_select == ours vendi (vendirag)", "vendirag vrs_select", "ours vendi (vendirag)"),
    ]
    for label, a_name, b_name in checks:
        vals = []
        for c in grid:
            a, b = get(cells[c], a_name), get(cells[c], b_name)
            vals.append(
                "n/a" if a is None or b is None else ("yes" if _same(a.result, b.result) else "no")
            )
        print(f"| {label} | " + " | ".join(vals) + " |")
    print(
        "\nNotes: LlamaIndex's MMR penalises similarity to the most recent pick only, and "
        "pyversity clips cosine similarities to [0, 1] in float32, so their picks can differ "
        "from classical MMR; LangChain's function is classical MMR."
    )


if __name__ == "__main__":
    main()

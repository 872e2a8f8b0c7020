"""``diverse-rag bench``: run the retrieval benchmark from the command line.

Also runnable as ``python -m diverse_core.eval.cli``. With no options it runs the
committed reproduction (HotpotQA, MuSiQue, 2Wiki x paragraphs/chunks, RGB paragraphs)
with the default method grid and writes into ``benchmarks/results``; ``RESULTS.md`` is
written only when ``--results-md`` is given.

Example:
    python -m diverse_core.eval.cli --datasets hotpotqa:paragraphs --quick 20 --out /tmp/bench
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Sequence
from typing import Any

from .config import DEFAULT_METHODS, DEFAULT_TASKS, BenchConfig, parse_method, parse_task
from .protocols import PROTOCOLS

__all__ = ["register", "add_arguments", "config_from_args", "run_from_args", "main"]

_DEFAULT_METHOD_SPECS = " ".join(
    ("cosine" if g.method == "topk" else g.method) + ("=" + ",".join(f"{v:g}" for v in g.values) if g.values else "")
    for g in DEFAULT_METHODS
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the benchmark options to ``parser``."""
    parser.add_argument(
        "--datasets",
        nargs="+",
        metavar="NAME[:PROTOCOLS]",
        help="datasets (hotpotqa musique 2wiki 2wiki_sampled rgb asqa), optionally with protocols, "
        "e.g. rgb:paragraphs hotpotqa:pool,chunks (default: the committed reproduction: "
        + " ".join(f"{d}:{p}" for d, p in DEFAULT_TASKS)
        + ")",
    )
    parser.add_argument(
        "--protocols",
        default="paragraphs,chunks",
        help=f"protocols for datasets given without ':' (comma list of {', '.join(PROTOCOLS)}; "
        "default paragraphs,chunks; unsupported pairs are skipped)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        metavar="SPEC",
        help="method grids NAME[=v1,v2|lo:hi:step][@key=value] (default: " + _DEFAULT_METHOD_SPECS + ")",
    )
    parser.add_argument("--k", type=int, default=5, help="passages chosen per question (default 5)")
    parser.add_argument("--fetch-k", type=int, default=50, help="cosine candidates before selection (default 50)")
    parser.add_argument("--quick", type=int, default=None, metavar="N", help="only the first N questions per dataset")
    parser.add_argument("--data-dir", default=None, help="benchmark data folder (default $DIVERSE_RAG_DATA or ../shared/data)")
    parser.add_argument("--cache-dir", default=None, help="embedding cache folder (default .cache/diverse-rag)")
    parser.add_argument("--out", default="benchmarks/results", help="output folder (default benchmarks/results)")
    parser.add_argument("--per-query-dir", default=None, help="per-query JSON folder (default OUT/per_query)")
    parser.add_argument("--results-md", default=None, help="also write this RESULTS.md")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")


def config_from_args(args: argparse.Namespace, command: str | None = None) -> BenchConfig:
    """Build a :class:`BenchConfig` from parsed arguments."""
    from .datasets import load_dataset  # noqa: F401  (fail early on a broken install)

    protocols = [p for p in args.protocols.split(",") if p]
    if args.datasets:
        tasks: list[tuple[str, str]] = []
        for spec in args.datasets:
            tasks.extend(parse_task(spec, protocols))
        tasks = _supported(tasks, explicit={s for s in args.datasets if ":" in s})
    else:
        tasks = list(DEFAULT_TASKS)
    methods = [parse_method(s) for s in args.methods] if args.methods else list(DEFAULT_METHODS)
    return BenchConfig(
        tasks=tasks,
        methods=methods,
        k=args.k,
        fetch_k=args.fetch_k,
        limit=args.quick,
        data_dir=args.data_dir,
        cache_dir=args.cache_dir,
        out_dir=args.out,
        per_query_dir=args.per_query_dir,
        results_md=args.results_md,
        plots=not args.no_plots,
        progress=not args.no_progress,
        command=command,
    )


def _supported(tasks: list[tuple[str, str]], explicit: set[str]) -> list[tuple[str, str]]:
    """Drop pairs a dataset does not support unless the protocol was named for that dataset."""
    from .datasets import SUPPORTED_PROTOCOLS

    named = {spec.partition(":")[0] for spec in explicit}
    out = []
    for d, p in tasks:
        if d in SUPPORTED_PROTOCOLS and d not in named and p not in SUPPORTED_PROTOCOLS[d]:
            print(f"[bench] skipping {d}:{p} (protocol not supported by this dataset)", file=sys.stderr)
            continue
        out.append((d, p))
    return out


def run_from_args(args: argparse.Namespace) -> int:
    """Run the benchmark described by ``args`` and print where the outputs went."""
    from .runner import run_benchmark

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = getattr(args, "command_line", None) or "diverse-rag " + " ".join(
        shlex.quote(a) for a in sys.argv[1:]
    )
    config = config_from_args(args, command)
    res = run_benchmark(config)
    print(
        f"[bench] done in {res.seconds['total']:.1f} s "
        f"(embedding {res.seconds['embedding']:.1f} s, {res.texts_embedded} new texts); "
        f"outputs in {config.out_dir}"
        + (f", {config.results_md}" if config.results_md else "")
    )
    return 0


def register(subparsers: Any) -> argparse.ArgumentParser:
    """Add the ``bench`` sub-command to a ``diverse-rag`` sub-parser set."""
    parser: argparse.ArgumentParser = subparsers.add_parser(
        "bench", help="retrieval benchmark on the real datasets (needs the bench extra)"
    )
    add_arguments(parser)
    parser.set_defaults(func=run_from_args)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Stand-alone entry point: ``python -m diverse_core.eval.cli [options]``."""
    parser = argparse.ArgumentParser(prog="python -m diverse_core.eval.cli", description=__doc__.split("\n")[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    raw = list(sys.argv[1:] if argv is None else argv)
    args.command_line = "python -m diverse_core.eval.cli " + " ".join(shlex.quote(a) for a in raw)
    return run_from_args(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

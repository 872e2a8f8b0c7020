"""The ``diverse-rag`` command: ``diverse-rag demo``, ``diverse-rag bench`` and ``diverse-rag train``.

This module is the composition root: the one core module that imports the harness
(the ``eval`` package), which in turn imports the library. Nothing else in the core
imports the harness (``tests/eval/test_eval_import_graph.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

__all__ = ["main", "build_parser"]


def _run_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo
    from .eval.cli import check_folder

    check_folder(args.out, "--out")
    run_demo(k=args.k, out_dir=args.out)
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command registered."""
    from . import __version__
    from .eval.cli import OneLineParser

    parser = OneLineParser(prog="diverse-rag", description="Diversity-aware retrieval tools")
    parser.add_argument("--version", action="version", version=f"diverse-rag {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="every selection method side by side on 40 packaged HotpotQA questions, offline")
    demo.add_argument("--k", type=int, default=4, help="paragraphs each method picks (default 4)")
    demo.add_argument("--out", default="demo_out", help="folder for the heatmap PNG, drawn when matplotlib is installed (default demo_out)")
    demo.add_argument("-v", "--verbose", action="store_true", help="show the traceback of an error")
    demo.set_defaults(func=_run_demo)
    from .eval.cli import register as register_bench
    from .eval.cli import register_train

    register_bench(sub)
    register_train(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``diverse-rag`` console script."""
    from .eval.cli import cli_errors

    parser = build_parser()
    args = parser.parse_args(argv)
    return cli_errors(args.func, args, "diverse-rag")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

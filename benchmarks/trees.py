"""Run a benchmark's measuring code against one or more source trees, each in its own subprocess.

A *tree* is a checkout of this repository (``NAME=PATH``; ``git worktree add /tmp/issue44-before <rev>``
makes one). Its code is put first on ``PYTHONPATH`` (``PATH/shared`` and ``PATH``) of a child
process that runs a script of *this* checkout with ``--child``; the child prints one JSON object as
its last line of output. Children get one BLAS thread and none of the machine-specific OpenBLAS
variables this machine sets (``OPENBLAS_CORETYPE``, ``OPENBLAS_L2_SIZE``), so both trees run alike.

Used by ``memory.py`` (one select call per subprocess) and ``stores.py`` (latency A/B).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["Tree", "parse_trees", "run_child", "add_arguments", "REPO"]

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Tree:
    """A named checkout whose ``shared/`` and root go first on the child's path."""

    name: str
    path: Path

    def env(self) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
        env.update(OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", RAYON_NUM_THREADS="1",
                   PYTHONPATH=os.pathsep.join([str(self.path / "shared"), str(self.path)]))
        return env


def add_arguments(ap: argparse.ArgumentParser) -> None:
    """``--tree NAME=PATH`` (repeatable) and the hidden ``--child`` a script's subprocesses run with."""
    ap.add_argument("--tree", action="append", default=None, metavar="NAME=PATH",
                    help="a checkout whose code to measure (repeatable; default: this checkout)")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)


def parse_trees(specs: list[str] | None) -> list[Tree]:
    """``["A=/old", "B=/new"]`` -> trees; ``None`` or ``[]`` -> this checkout alone, named ``this``."""
    if not specs:
        return [Tree("this", REPO)]
    trees = []
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise SystemExit(f"--tree takes NAME=PATH, got {spec!r}")
        root = Path(path).expanduser().resolve()
        if not (root / "shared" / "diverse_core" / "__init__.py").is_file():
            raise SystemExit(f"--tree {spec!r}: {root} is not a checkout (no shared/diverse_core)")
        trees.append(Tree(name, root))
    if len({t.name for t in trees}) != len(trees):
        raise SystemExit("--tree names must differ")
    return trees


def run_child(tree: Tree, script: Path, args: list[str], timeout: float | None) -> dict[str, Any]:
    """Run ``python SCRIPT --child ARGS`` on ``tree``'s code; its last stdout line parsed as JSON.

    A timeout, a crash or output that is not JSON comes back as ``{"status": ...}`` (never raised),
    so one exploding case is reported in its row instead of stopping the run.
    """
    cmd = [sys.executable, str(script), "--child", *args]
    try:
        done = subprocess.run(cmd, env=tree.env(), cwd=str(REPO), capture_output=True, text=True,
                              timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return {"status": f"timeout ({timeout:g} s)"}
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    if done.returncode == 0 and lines:
        try:
            out = json.loads(lines[-1])
            if isinstance(out, dict):
                return out
        except json.JSONDecodeError:
            pass
    if done.returncode < 0:
        return {"status": f"killed by signal {-done.returncode}"}
    tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
    return {"status": f"exit {done.returncode}: {tail[:160]}"}

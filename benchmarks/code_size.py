"""Lines of Python per package, for one checkout or before/after (issue 44's closing note).

Counts every line (``wc -l``) of the ``.py`` files of each package: the core's subpackages and its
root modules (``shared/diverse_core``), the two faces, and, apart from the library total, ``tests``
and ``benchmarks``. With two trees the table gives both counts and the difference::

    git worktree add /tmp/issue44-before 16905f1
    python benchmarks/code_size.py --tree before=/tmp/issue44-before --tree after=.
    git worktree remove /tmp/issue44-before

(At 16905f1: core 30,338, both faces 6,156, library 36,494; tests 27,429.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

LIBRARY = ("shared/diverse_core", "langchain_diverse", "llamaindex_diverse")


def lines(files: list[Path]) -> int:
    return sum(len(f.read_bytes().splitlines()) for f in files)


def count(root: Path) -> dict[str, int]:
    """``{package: lines}``: ``diverse_core/<sub>`` per subpackage, ``diverse_core (root modules)``, the
    faces, ``library`` (all three), ``tests``, ``benchmarks``."""
    core = root / "shared" / "diverse_core"
    out = {"diverse_core (root modules)": lines(sorted(core.glob("*.py")))}
    for sub in sorted(p for p in core.iterdir() if p.is_dir() and (p / "__init__.py").is_file()):
        out[f"diverse_core/{sub.name}"] = lines(sorted(sub.rglob("*.py")))
    out["diverse_core (all)"] = lines(sorted(core.rglob("*.py")))
    for face in LIBRARY[1:]:
        out[face] = lines(sorted((root / face).rglob("*.py")))
    out["library (core + faces)"] = sum(lines(sorted((root / p).rglob("*.py"))) for p in LIBRARY)
    for extra in ("tests", "benchmarks"):
        out[extra] = lines(sorted((root / extra).rglob("*.py")))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", action="append", default=None, metavar="NAME=PATH")
    args = ap.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from trees import parse_trees

    trees = parse_trees(args.tree)
    counts = {t.name: count(t.path) for t in trees}
    names = list(dict.fromkeys(k for c in counts.values() for k in c))
    head = ["package", *(t.name for t in trees)] + (["change"] if len(trees) > 1 else [])
    print("| " + " | ".join(head) + " |")
    print("|---|" + "---:|" * (len(head) - 1))
    for name in names:
        row = [counts[t.name].get(name) for t in trees]
        cells = [f"{v:,}" if v is not None else "-" for v in row]
        if len(trees) > 1:
            first, last = row[0] or 0, row[-1] or 0
            cells.append(f"{last - first:+,}")
        label = f"**{name}**" if name.startswith(("library", "diverse_core (all)")) else name
        print(f"| {label} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

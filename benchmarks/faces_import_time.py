"""Import time of the faces against their framework's own modules, in fresh processes.

For each statement it runs ``python -X importtime -c STATEMENT`` ``--runs`` times and
takes the median of the summed cumulative time of the top-level imports (what the
statement costs, interpreter start-up excluded). The baselines are the framework
modules a user of the face imports anyway (LangChain: ``langchain_core.retrievers``,
``vectorstores``, ``embeddings``, ``documents``; LlamaIndex: ``llama_index.core``)::

    python benchmarks/faces_import_time.py            # 15 runs each
    python benchmarks/faces_import_time.py --runs 5

Also prints whether ``import diverse_core`` pulled in ``scipy.stats``, torch or a framework.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = [
    ("diverse_core", "import diverse_core", None),
    ("langchain_core (retrievers, vectorstores, embeddings, documents)",
     "import langchain_core.retrievers, langchain_core.vectorstores, langchain_core.embeddings, "
     "langchain_core.documents", None),
    ("langchain_diverse", "import langchain_diverse", 1),
    ("llama_index.core", "import llama_index.core", None),
    ("llamaindex_diverse", "import llamaindex_diverse", 3),
]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    paths = [str(ROOT / "shared"), str(ROOT)]
    env["PYTHONPATH"] = os.pathsep.join(paths + [env.get("PYTHONPATH", "")])
    return env


def import_seconds(statement: str) -> float:
    """Seconds the top-level imports of ``statement`` take in a fresh interpreter."""
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", statement],
                         capture_output=True, text=True, env=_env(), check=True).stderr
    total = 0
    for line in out.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        _, cumulative, name = line.split("|")
        if cumulative.strip().isdigit() and not name.startswith("  "):  # top level only
            total += int(cumulative)
    return total / 1e6


def heavy_modules() -> list[str]:
    """Heavy or framework modules that ``import diverse_core`` loads (should be none)."""
    probe = ("import sys, diverse_core; print(' '.join(m for m in ('scipy.stats', 'torch', "
             "'langchain_core', 'llama_index', 'sentence_transformers') if m in sys.modules))")
    return subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          env=_env(), check=True).stdout.split()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args(argv)
    # Round-robin: every statement once per round, so load from other processes hits all alike.
    samples: list[list[float]] = [[] for _ in CASES]
    for _ in range(args.runs):
        for i, (_, statement, _) in enumerate(CASES):
            samples[i].append(import_seconds(statement))
    medians = [statistics.median(s) for s in samples]
    print(f"median of {args.runs} fresh processes each (interleaved), `python -X importtime`, "
          "sum of the top-level imports\n")
    print("| import | seconds | ratio to its framework |")
    print("|---|---:|---:|")
    for (label, _, base), median in zip(CASES, medians, strict=True):
        ratio = f"{median / medians[base]:.2f}" if base is not None else ""
        print(f"| `{label}` | {median:.3f} | {ratio} |")
    print(f"\nheavy modules loaded by `import diverse_core`: {heavy_modules() or 'none'}")


if __name__ == "__main__":
    main()

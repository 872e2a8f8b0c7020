"""Per-query cost of the framework faces: runs the LangChain and the LlamaIndex benchmarks.

    python benchmarks/faces.py            # full run
    python benchmarks/faces.py --quick    # smaller corpus, fewer repeats

Each half prints its own Markdown table (see ``faces_langchain.py`` and
``faces_llamaindex.py`` for the columns); both time the face against the core
selection on the same cached vectors and against the framework's own MMR.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import faces_langchain  # noqa: E402
import faces_llamaindex  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    """Run both halves with the same flags (only ``--quick`` is shared)."""
    args = list(sys.argv[1:] if argv is None else argv)
    shared = ["--quick"] if "--quick" in args else []
    print("## LangChain face\n")
    faces_langchain.main(shared)
    print("\n## LlamaIndex face\n")
    faces_llamaindex.main(shared)


if __name__ == "__main__":
    main()

"""Per-query cost of the framework faces: runs the LangChain and the LlamaIndex benchmarks.

    python benchmarks/faces.py            # full run
    python benchmarks/faces.py --quick    # smaller corpus, fewer repeats

Each half prints its own Markdown table (see ``faces_langchain.py`` and
``faces_llamaindex.py`` for the details). Both use the same decomposition, with
embeddings cached and medians of interleaved calls:

* ``core``: ``diverse_core.select`` on exactly the vectors the face hands it;
* ``fixed``: the framework's fixed per-call machinery, measured directly as the call
  time of a do-nothing subclass of the same base class (a ``BaseRetriever`` returning
  a prebuilt list; a ``BaseNodePostprocessor`` returning its input);
* ``own = face - fixed``: the face's own code, the core call included.
  ``own / core`` is the overhead factor the face adds over the core (issue 3's
  target: <= 1.10); ``face / core`` is the raw ratio including the framework.

Each half also compares against the framework's own MMR (LangChain:
``InMemoryVectorStore.max_marginal_relevance_search``; LlamaIndex:
``VectorStoreQueryMode.MMR``).
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

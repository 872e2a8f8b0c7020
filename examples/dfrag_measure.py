"""DF-RAG measurements on the benchmark data (chunks protocol).

    python examples/dfrag_measure.py sets                      # distinct sets per query, no LLM
    python examples/dfrag_measure.py timing --limit 3          # local SmolLM2, concurrency 1 vs 4
    python examples/dfrag_measure.py timing --llm simulated:0.5  # latency-bound stand-in endpoint

Pipeline vs Oracle rows come from the harness itself:

    diverse-rag bench --datasets hotpotqa:chunks --methods cosine gmmr=0.1:1:0.1 dfrag --quick 20
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from diverse_core.eval.dfrag_plugin import main  # noqa: E402

if __name__ == "__main__":
    raise SystemExit(main())

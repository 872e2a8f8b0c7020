"""``diverse-rag demo``: every method side by side on a small multi-hop corpus, offline.

Embeds the demo corpus with the packaged all-MiniLM-L6-v2 model, prints for each
question the chunks each method picks (with objective scores), how many of the
needed facts the set covers and how diverse it is, then writes a PNG heatmap of
the Jaccard overlap of the gMMR sets across lambda.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from ..api import select, sweep
from ..metrics import jaccard_matrix, mean_pairwise_similarity, vendi_score
from .corpus import CHUNKS, QUESTIONS, DemoQuestion

__all__ = ["DEMO_METHODS", "run_demo"]

#: (label, method, parameters) shown side by side.
DEMO_METHODS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("cosine top-k", "topk", {}),
    ("MMR λ=0.5", "mmr", {"lambda_mult": 0.5}),
    ("gMMR λ=0.5", "gmmr", {"lambda_mult": 0.5}),
    ("Dartboard σ=0.3", "dartboard", {"sigma": 0.3}),
    ("Vendi s=0.5", "vendi", {"s": 0.5}),
)

LAMBDA_GRID = tuple(round(0.1 * i, 1) for i in range(11))

Embedder = Callable[[Sequence[str]], NDArray[np.float32]]


def _facts_covered(question: DemoQuestion, picked: Sequence[str]) -> int:
    return sum(1 for group in question.facts if any(c in picked for c in group))


def _write_table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out.write(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=False)) + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for row in rows:
        out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=False)) + "\n")


def _plot_heatmap(matrix: NDArray[np.float64], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - depends on the bench extra
        raise ImportError('the heatmap needs matplotlib: pip install "diverse-rag[bench]"') from exc
    fig, ax = plt.subplots(figsize=(6, 5))
    image = ax.imshow(matrix, cmap="Blues", vmin=0.0, vmax=1.0)
    labels = [f"{v:.1f}" for v in LAMBDA_GRID]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("λ")
    ax.set_ylabel("λ")
    ax.set_title("Jaccard overlap of gMMR sets across λ (demo, mean of questions)")
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if matrix[i, j] > 0.6 else "black")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run_demo(
    k: int = 4,
    out_dir: str | os.PathLike[str] = "demo_out",
    embedder: Embedder | None = None,
    stream: TextIO | None = None,
) -> dict[str, Any]:
    """Run the demo and return what it printed as data.

    Args:
        k: chunks each method picks per question.
        out_dir: folder for the heatmap PNG.
        embedder: texts -> embeddings; defaults to the packaged MiniLM model.
        stream: where to print (standard output by default).

    Returns:
        ``{"questions": [...per-question results...], "heatmap": path}``.
    """
    import sys

    out = stream or sys.stdout
    if embedder is None:
        from ..embedders import get_default_embedder

        embedder = get_default_embedder()
    ids = list(CHUNKS)
    chunk_vecs = np.asarray(embedder([CHUNKS[i] for i in ids]), dtype=np.float64)
    question_vecs = np.asarray(embedder([q.question for q in QUESTIONS]), dtype=np.float64)
    results: list[dict[str, Any]] = []
    jaccards = []
    out.write(f"diverse-rag demo: {len(ids)} chunks, k={k}, every method picks from the whole corpus\n")
    for q, q_vec in zip(QUESTIONS, question_vecs, strict=False):
        out.write(f"\nQ: {q.question}\n   (answer: {q.answer}; needs {len(q.facts)} facts)\n\n")
        columns: list[list[str]] = []
        summary: dict[str, Any] = {}
        for label, method, params in DEMO_METHODS:
            sel = select(method, q_vec, chunk_vecs, k, **params)
            picked = [ids[i] for i in sel.indices]
            columns.append([f"{c} ({s:+.3f})" for c, s in zip(picked, sel.scores, strict=False)])
            vecs = chunk_vecs[sel.indices]
            summary[label] = {
                "chunks": picked,
                "scores": sel.scores.tolist(),
                "facts_covered": _facts_covered(q, picked),
                "vendi": vendi_score(vecs),
                "mean_pairwise_similarity": mean_pairwise_similarity(vecs),
            }
        header = ["rank"] + [label for label, _, _ in DEMO_METHODS]
        rows = [[str(r + 1)] + [col[r] for col in columns] for r in range(k)]
        rows.append(["facts"] + [f"{summary[lb]['facts_covered']}/{len(q.facts)}" for lb, _, _ in DEMO_METHODS])
        rows.append(["Vendi"] + [f"{summary[lb]['vendi']:.2f}" for lb, _, _ in DEMO_METHODS])
        rows.append(["mean sim"] + [f"{summary[lb]['mean_pairwise_similarity']:.2f}" for lb, _, _ in DEMO_METHODS])
        _write_table(out, header, rows)
        sw = sweep("gmmr", q_vec, chunk_vecs, k, values=LAMBDA_GRID)
        jaccards.append(jaccard_matrix(sw.indices))
        results.append({"question": q.question, "methods": summary,
                        "gmmr_sets": {f"{v:.1f}": [ids[i] for i in row] for v, row in zip(sw.values, sw.indices, strict=False)}})
    out.write("\nScores are each method's objective at the moment of the pick (cosine for top-k).\n")
    out.write("Vendi = effective number of distinct chunks (1..k); mean sim = mean pairwise cosine.\n")
    heatmap = Path(out_dir) / "gmmr_jaccard_heatmap.png"
    _plot_heatmap(np.mean(jaccards, axis=0), heatmap)
    out.write(f"\nWrote {heatmap} (Jaccard overlap of gMMR sets for λ = 0.0 … 1.0).\n")
    return {"questions": results, "heatmap": str(heatmap)}

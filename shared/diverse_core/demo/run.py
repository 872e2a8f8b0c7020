"""``diverse-rag demo``: every selection method side by side on real multi-hop questions, offline.

The packaged HotpotQA sample (40 dev questions, 400 paragraphs pooled into one corpus, two gold
paragraphs per question) with its precomputed all-MiniLM-L6-v2 vectors: for each question the
50 paragraphs closest to it are the candidates, and every registered built-in method picks ``k``
of them at its default parameters (``adaptive`` and ``learned`` also read the question and the
paragraphs' text). It prints three questions in full, then recall@k and redundancy over all 40,
and draws the Jaccard overlap of gMMR's sets across λ when matplotlib is installed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

import numpy as np
from numpy.typing import NDArray

from ..api import select, sweep
from ..metrics import jaccard_matrix, mean_pairwise_similarity
from ..registry import available_methods, get_method
from .sample import SampleQuestion, hotpotqa_sample, sample_vectors

__all__ = ["DEMO_METHODS", "FETCH_K", "SHOWN_QUESTIONS", "run_demo"]

#: Built-in methods in the order the demo shows them (any other registered method is not shown).
DEMO_METHODS: tuple[str, ...] = (
    "topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist", "adaptive", "learned",
)
#: Candidates per question: the paragraphs closest to it by cosine.
FETCH_K = 50
#: Sample questions printed in full (indices into the sample): three where `learned` finds both
#: gold paragraphs and cosine top-k one, chosen to show the difference; the summary covers all 40.
SHOWN_QUESTIONS: tuple[int, ...] = (3, 6, 19)
LAMBDA_GRID = tuple(round(0.1 * i, 1) for i in range(11))
_TEXT_METHODS = {"adaptive", "learned"}

_LEGEND = (
    "Columns:",
    "  gold      gold paragraphs among the picks (HotpotQA marks two per question)",
    "  picks     titles of the picked paragraphs in pick order; * marks a gold one",
    "  recall@{k}  gold paragraphs picked / gold paragraphs, all 40 questions (percent)",
    "  mean sim  mean pairwise cosine of the picks (lower = less redundant)",
    "  params    the parameters used: each method's defaults; adaptive and learned need none"
    " (shipped models, trained on TRAIN questions only, no LLM)",
)


def _label(method: str) -> tuple[str, str]:
    """``(method, its default parameters as text)``."""
    defaults = get_method(method).defaults
    shown = {k: v for k, v in defaults.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return method, " ".join(f"{k}={v:g}" for k, v in shown.items()) or "-"


def _write_table(out: TextIO, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    out.write(" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
    out.write("-+-".join("-" * w for w in widths) + "\n")
    for row in rows:
        out.write(" | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")


def _short(title: str, width: int = 22) -> str:
    return title if len(title) <= width else title[: width - 1] + "…"


def plot_heatmap(matrix: NDArray[np.float64], path: Path) -> bool:
    """Draw ``matrix`` (Jaccard overlap across λ) to ``path``; ``False`` when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(6, 5))
    image = ax.imshow(matrix, cmap="Blues", vmin=0.0, vmax=1.0)
    labels = [f"{v:.1f}" for v in LAMBDA_GRID]
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("λ")
    ax.set_ylabel("λ")
    ax.set_title("Jaccard overlap of gMMR sets across λ (mean of 40 questions)")
    for i in range(matrix.shape[0]):
        for j in range(matrix.shape[1]):
            ax.text(j, i, f"{matrix[i, j]:.2f}", ha="center", va="center", fontsize=6,
                    color="white" if matrix[i, j] > 0.6 else "black")
    fig.colorbar(image, ax=ax)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _pick(method: str, q: SampleQuestion, q_vec: NDArray[np.float32], cand: NDArray[np.intp],
          vectors: NDArray[np.float32], texts: Sequence[str], k: int) -> list[int]:
    params: dict[str, Any] = {}
    if method in _TEXT_METHODS:
        params = {"question": q.question, "texts": [texts[i] for i in cand]}
        if method == "learned":
            params["model"] = "paragraphs"  # the sample's units are whole paragraphs
    sel = select(method, q_vec, vectors[cand], k, **params)
    return [int(cand[i]) for i in sel.indices]


def run_demo(
    k: int = 4,
    out_dir: str | os.PathLike[str] = "demo_out",
    stream: TextIO | None = None,
    methods: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Run the demo and return what it printed as data.

    Args:
        k: paragraphs each method picks per question.
        out_dir: folder for the heatmap PNG (not written without matplotlib).
        stream: where to print (standard output by default).
        methods: the methods to show (default: every built-in in :data:`DEMO_METHODS`).

    Returns:
        ``{"recall": {method: percent}, "mean_sim": {...}, "picks": {method: [[passage index] per
        question]}, "heatmap": path or None}``.
    """
    out = stream or sys.stdout
    questions = hotpotqa_sample()
    vectors, q_vecs = sample_vectors()
    texts = [p for q in questions for p in q.passages]
    titles = [t for q in questions for t in q.titles]
    offsets = np.cumsum([0] + [len(q.passages) for q in questions])
    gold = [{int(offsets[i]) + g for g in q.gold} for i, q in enumerate(questions)]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    names = [m for m in (methods or DEMO_METHODS) if m in available_methods()]

    picks: dict[str, list[list[int]]] = {m: [] for m in names}
    jaccards = []
    for i, q in enumerate(questions):
        q_vec = q_vecs[i]
        cand = np.argsort(-(unit @ (q_vec / np.linalg.norm(q_vec))), kind="stable")[:FETCH_K]
        for m in names:
            picks[m].append(_pick(m, q, q_vec, cand, vectors, texts, k))
        sw = sweep("gmmr", q_vec, vectors[cand], k, values=LAMBDA_GRID)
        jaccards.append(jaccard_matrix(sw.indices))

    out.write(f"diverse-rag demo: {len(questions)} HotpotQA dev questions, {len(texts)} paragraphs in one corpus "
              f"(packaged sample, CC BY-SA 4.0).\nEach method picks k={k} of the {FETCH_K} paragraphs closest to "
              "the question (packaged all-MiniLM-L6-v2 vectors).\nFirst three questions where learned finds both gold "
              "paragraphs and cosine top-k does not (picked to show the difference), then all 40.\n")
    for i in SHOWN_QUESTIONS:
        if i >= len(questions):
            continue
        q = questions[i]
        out.write(f"\nQ: {q.question}\n   answer: {q.answer}; gold paragraphs: "
                  + ", ".join(q.titles[g] for g in q.gold) + "\n")
        rows = [[m, f"{len(set(picks[m][i]) & gold[i])}/{len(gold[i])}",
                 " · ".join(("*" if p in gold[i] else "") + _short(titles[p]) for p in picks[m][i])]
                for m in names]
        _write_table(out, ["method", "gold", "picks"], rows)

    recall = {m: 100.0 * float(np.mean([len(set(p) & g) / len(g) for p, g in zip(picks[m], gold, strict=True)]))
              for m in names}
    mean_sim = {m: float(np.mean([mean_pairwise_similarity(vectors[p]) for p in picks[m]])) for m in names}
    out.write(f"\nAll {len(questions)} questions:\n")
    rows = [[m, f"{recall[m]:.1f}", f"{mean_sim[m]:.2f}", _label(m)[1]] for m in names]
    _write_table(out, ["method", f"recall@{k}", "mean sim", "params"], rows)
    out.write("\n" + "\n".join(line.format(k=k) for line in _LEGEND) + "\n")

    path = Path(out_dir) / "gmmr_jaccard_heatmap.png"
    drawn = plot_heatmap(np.mean(jaccards, axis=0), path)
    if drawn:
        out.write(f"\nWrote {path} (Jaccard overlap of gMMR sets for λ = 0.0 … 1.0).\n")
    else:
        out.write("\nNo picture: matplotlib is not installed (pip install matplotlib draws the gMMR λ heatmap).\n")
    return {"recall": recall, "mean_sim": mean_sim, "picks": picks, "heatmap": str(path) if drawn else None}

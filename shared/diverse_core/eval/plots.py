"""PNG figures of a benchmark run (matplotlib, Agg backend; needs the ``bench`` extra).

* ``recall_vs_lambda.png``: headline metric of gMMR against lambda per task, with
  cosine top-k, MMR and the per-query Oracle as reference lines.
* ``gmmr_jaccard.png``: mean over questions of the Jaccard index between the gMMR sets
  picked at each pair of lambdas (Khan et al. 2026, Fig. 4 analogue).
* ``vendi_rank_agreement.png``: Kendall tau and Spearman rho of Vendi's pick order
  against cosine order, against ``s`` (Rezaei & Dieng 2025, Table 2 analogue).
* ``dartboard_rgb.png``: NDCG@k and set diversity against sigma for Dartboard on RGB,
  with cosine and MMR for reference (Pickett et al. 2024, Figs. 2-3 analogue).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ._deps import require
from .results import BenchResults, SettingResult, TaskResult

__all__ = ["draw_all", "plot_recall_vs_lambda", "plot_jaccard", "plot_vendi_agreement", "plot_dartboard"]


def _pyplot() -> Any:
    mpl = require("matplotlib", "benchmark plots")
    mpl.use("Agg")
    return require("matplotlib.pyplot", "benchmark plots")


def _curve(task: TaskResult, method: str, metric: str) -> tuple[list[float], list[float]]:
    xs, ys = [], []
    param = {"gmmr": "lambda_mult", "mmr": "lambda_mult", "dartboard": "sigma", "vendi": "s"}.get(method)
    for s in task.settings:
        value = s.params.get(param) if param else None
        if s.method == method and isinstance(value, (int, float)):
            xs.append(float(value))
            ys.append(s.mean(metric))
    return xs, ys


def _one(task: TaskResult, method: str) -> SettingResult | None:
    return next((s for s in task.settings if s.method == method), None)


def _grid_axes(plt: Any, n: int, width: float = 4.0, height: float = 3.2) -> tuple[Any, list[Any]]:
    cols = min(n, 3)
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(width * cols, height * rows), squeeze=False)
    flat = [a for row in axes for a in row]
    for ax in flat[n:]:
        ax.axis("off")
    return fig, flat[:n]


def _save(plt: Any, fig: Any, path: Path, title: str | None = None) -> bool:
    """Lay ``fig`` out (under ``title``), write it to ``path`` and close it; ``True`` (drawn)."""
    if title is not None:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def plot_recall_vs_lambda(results: BenchResults, path: Path) -> bool:
    """Headline metric vs gMMR lambda per task; returns False when there is nothing to draw."""
    tasks = [t for t in results.tasks if _curve(t, "gmmr", t.metric)[0]]
    if not tasks:
        return False
    plt = _pyplot()
    k = results.config["k"]
    fig, axes = _grid_axes(plt, len(tasks))
    for ax, t in zip(axes, tasks, strict=True):
        xs, ys = _curve(t, "gmmr", t.metric)
        ax.plot(xs, [100 * y for y in ys], "o-", label="gMMR")
        mx, my = _curve(t, "mmr", t.metric)
        if mx:
            ax.plot(mx, [100 * y for y in my], "s", label="MMR")
        for name, style in (("cosine", "--"), ("oracle", ":")):
            s = _one(t, name)
            if s is not None:
                ax.axhline(100 * s.mean(t.metric), linestyle=style, color="k" if name == "cosine" else "r",
                           label=name)
        ax.set_title(f"{t.dataset} / {t.protocol}")
        ax.set_xlabel("lambda_mult (1 = pure relevance)")
        ax.set_ylabel(f"{t.metric}@{k} (%)")
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return _save(plt, fig, path)


def plot_jaccard(results: BenchResults, path: Path) -> bool:
    """Mean Jaccard heatmaps of the gMMR sets across lambda, one panel per task."""
    tasks = [t for t in results.tasks if t.jaccard]
    if not tasks:
        return False
    plt = _pyplot()
    fig, axes = _grid_axes(plt, len(tasks), 4.2, 3.8)
    for ax, t in zip(axes, tasks, strict=True):
        im = ax.imshow(t.jaccard, vmin=0.0, vmax=1.0, cmap="Blues")
        labels = [f"{v:g}" for v in t.jaccard_values]
        ax.set_xticks(range(len(labels)), labels, rotation=90, fontsize=7)
        ax.set_yticks(range(len(labels)), labels, fontsize=7)
        ax.set_title(f"{t.dataset} / {t.protocol}", fontsize=9)
        ax.set_xlabel("lambda_mult")
        fig.colorbar(im, ax=ax, fraction=0.046)
    return _save(plt, fig, path, "gMMR: mean Jaccard index of chosen sets across lambda")


def plot_vendi_agreement(results: BenchResults, path: Path) -> bool:
    """Kendall tau and Spearman rho of Vendi picks vs cosine order against s."""
    tasks = [t for t in results.tasks if len(_curve(t, "vendi", "tau")[0]) > 1]
    if not tasks:
        return False
    plt = _pyplot()
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for t in tasks:
        xs, tau = _curve(t, "vendi", "tau")
        _, rho = _curve(t, "vendi", "rho")
        ax1.plot(xs, tau, "o-", label=f"{t.dataset}/{t.protocol}")
        ax2.plot(xs, rho, "o-", label=f"{t.dataset}/{t.protocol}")
    for ax, name in ((ax1, "Kendall tau"), (ax2, "Spearman rho")):
        ax.set_xlabel("s (0 = pure similarity)")
        ax.set_ylabel(name)
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    return _save(plt, fig, path, "Vendi: agreement of pick order with cosine order")


def plot_dartboard(results: BenchResults, path: Path) -> bool:
    """NDCG@k and diversity against sigma for Dartboard on the RGB tasks."""
    tasks = [t for t in results.tasks if t.dataset == "rgb" and _curve(t, "dartboard", "ndcg")[0]]
    if not tasks:
        return False
    plt = _pyplot()
    k = results.config["k"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(9, 3.6))
    for t in tasks:
        xs, nd = _curve(t, "dartboard", "ndcg")
        _, dv = _curve(t, "dartboard", "diversity")
        ax1.plot(xs, [100 * v for v in nd], "o-", label=f"Dartboard ({t.protocol})")
        ax2.plot(xs, dv, "o-", label=f"Dartboard ({t.protocol})")
        cos = _one(t, "cosine")
        if cos is not None:
            ax1.axhline(100 * cos.mean("ndcg"), linestyle="--", color="k", label="cosine")
            ax2.axhline(cos.mean("diversity"), linestyle="--", color="k", label="cosine")
        for s in t.settings:
            if s.method == "mmr":
                ax1.axhline(100 * s.mean("ndcg"), linestyle=":", color="gray")
                ax2.axhline(s.mean("diversity"), linestyle=":", color="gray")
                ax1.annotate(f"MMR {s.label}", (xs[0], 100 * s.mean("ndcg")), fontsize=7)
    ax1.set_ylabel(f"NDCG@{k} (%)")
    ax2.set_ylabel("diversity (1 - mean pairwise cosine)")
    for ax in (ax1, ax2):
        ax.set_xlabel("sigma")
        ax.grid(alpha=0.3)
    ax1.legend(fontsize=7)
    return _save(plt, fig, path, "Dartboard on RGB en_fact")


def draw_all(results: BenchResults, out_dir: Path) -> list[Path]:
    """Draw every applicable figure into ``out_dir``; returns the files written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fn in (
        ("recall_vs_lambda.png", plot_recall_vs_lambda),
        ("gmmr_jaccard.png", plot_jaccard),
        ("vendi_rank_agreement.png", plot_vendi_agreement),
        ("dartboard_rgb.png", plot_dartboard),
    ):
        if fn(results, out_dir / name):
            written.append(out_dir / name)
    return written

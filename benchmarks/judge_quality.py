"""How good must DF-RAG's Evaluator be? Recall vs simulated judge quality (issue 18).

A simulated judge (``benchmarks/judge_sim.py``) scores each gMMR λ-set by its
true gold recall plus Gaussian noise (``simjudge``, noise σ) or gets it right with
probability p (``simjudge_p``); DF-RAG's choice (argmax, ties -> upper median) follows,
with uniform sampling (every λ judged) or binary-search sampling. Dev questions,
``chunks`` protocol; the best fixed λ is the train-tuned one from ``split.json``
(``benchmarks/adaptive_split.py``). Writes ``benchmarks/results/judge_quality.png``,
``benchmarks/results/judge_quality.json`` and the judge section of RESULTS.md.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/judge_quality.py --cache-dir .cache/harness --results-md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import judge_sim  # noqa: F401  (registers simjudge, simjudge_p; this script's folder is on the path)
import numpy as np
from diverse_core.eval import BenchConfig, parse_method, run_benchmark

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- judge:start (benchmarks/judge_quality.py) -->", "<!-- judge:end -->"
NOISE = (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 1.0)
PROB = (1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.3, 0.0)


def _crossing(xs: list[float], ys: list[float], level: float) -> float | None:
    """First x (walking from the best judge) where the curve falls below ``level``, interpolated.

    None: even the perfect judge is below ``level``; inf: never below within the grid.
    """
    if ys[0] < level:
        return None
    for i in range(1, len(xs)):
        if ys[i - 1] >= level > ys[i]:
            t = (ys[i - 1] - level) / (ys[i - 1] - ys[i])
            return xs[i - 1] + t * (xs[i] - xs[i - 1])
    return float("inf")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--split-json", default=str(REPO / "benchmarks" / "results" / "split" / "split.json"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--quick", type=int, default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results"))
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--from-json", default=None, help="only re-render from a judge_quality.json")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = "python benchmarks/judge_quality.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if args.from_json:
        out = json.loads(Path(args.from_json).read_text())
        _plot(out, Path(args.out) / "judge_quality.png")
        _write_md(_markdown(out), args.results_md)
        return 0
    split = json.loads(Path(args.split_json).read_text())
    fixed: dict[str, tuple[str, float]] = {}
    learned: dict[str, float] = {}
    for t in split["tasks"]:
        if t["protocol"] == "chunks":
            row = next(r for r in t["rows"] if r["method"] == "gmmr" and r["note"] == "chosen on train")
            fixed[t["dataset"]] = (row["params"], row["mean"])
            ad = next((r for r in t["rows"] if r["method"] == "adaptive" and r["note"].startswith("trained on the")),
                      None)
            if ad is not None:
                learned[t["dataset"]] = ad["mean"]
    specs = ["cosine", "gmmr=0.1:1:0.1"]
    for seed in range(args.seeds):
        for sampling in ("uniform", "binary"):
            specs.append("simjudge=" + ",".join(f"{v:g}" for v in NOISE) + f"@sampling={sampling}@seed={seed}")
            specs.append("simjudge_p=" + ",".join(f"{v:g}" for v in PROB) + f"@sampling={sampling}@seed={seed}")
    cfg = BenchConfig(tasks=[(d, "chunks") for d in args.datasets], methods=[parse_method(s) for s in specs],
                      limit=args.quick, cache_dir=args.cache_dir, out_dir=None, progress=False, agreement_methods=())
    res = run_benchmark(cfg)
    out: dict[str, Any] = {"command": command, "noise": NOISE, "p": PROB, "seeds": args.seeds, "tasks": {}}
    for t in res.tasks:
        by = {(s.method, s.label): s for s in t.settings}
        cos = by[("cosine", "-")].mean("recall")
        oracle = next(s for (m, _), s in by.items() if m == "oracle").mean("recall")
        entry: dict[str, Any] = {"cosine": cos, "oracle": oracle, "fixed_label": fixed[t.dataset][0],
                                 "fixed": fixed[t.dataset][1], "n": len(t.qids),
                                 "learned": learned.get(t.dataset)}
        for mode, grid, key in (("simjudge", NOISE, "noise"), ("simjudge_p", PROB, "p")):
            for sampling in ("uniform", "binary"):
                rec, calls = [], []
                for v in grid:
                    ss = [by[(mode, f"{key}={v:g}, sampling={sampling}, seed={seed}")] for seed in range(args.seeds)]
                    rec.append(float(np.mean([s.mean("recall") for s in ss])))
                    calls.append(float(np.mean([i["calls"] for s in ss for i in s.info])))
                entry[f"{key}/{sampling}"] = {
                    "recall": rec, "calls": calls, "break_even": _crossing(list(grid), rec, entry["fixed"]),
                    "break_even_learned": None if entry["learned"] is None
                    else _crossing(list(grid), rec, entry["learned"]),
                }
        out["tasks"][t.dataset] = entry
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "judge_quality.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    _plot(out, Path(args.out) / "judge_quality.png")
    section = _markdown(out)
    print(section)
    _write_md(section, args.results_md)
    return 0


def _write_md(section: str, results_md: str | None) -> None:
    if results_md:
        md = Path(results_md)
        text = md.read_text(encoding="utf-8")
        if START in text:
            head, rest = text.split(START, 1)
            text = head + section + rest.split(END, 1)[1]
        else:
            anchor = "<!-- headline:end -->"
            text = text.replace(anchor, anchor + "\n\n" + section, 1) if anchor in text else text + "\n" + section
        md.write_text(text, encoding="utf-8")


def _plot(out: dict[str, Any], path: Path) -> None:
    from diverse_core.eval._deps import require

    mpl = require("matplotlib", "plots")
    mpl.use("Agg")
    plt = require("matplotlib.pyplot", "plots")
    names = list(out["tasks"])
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 6.4), squeeze=False)
    for col, name in enumerate(names):
        e = out["tasks"][name]
        for row, (key, grid, xlabel) in enumerate((("noise", out["noise"], "judge noise σ (0 = perfect judge)"),
                                                  ("p", out["p"], "P(judge right) (1 = perfect)"))):
            ax = axes[row][col]
            for sampling, style in (("uniform", "o-"), ("binary", "s--")):
                ax.plot(grid, [100 * v for v in e[f"{key}/{sampling}"]["recall"]], style, label=f"DF-RAG choice, {sampling}")
            ax.axhline(100 * e["oracle"], color="r", linestyle=":", label="Oracle")
            ax.axhline(100 * e["fixed"], color="g", linestyle="-.", label=f"best fixed ({e['fixed_label']}, train)")
            if e.get("learned") is not None:
                ax.axhline(100 * e["learned"], color="m", linestyle="-", alpha=0.6, label="learned selector (no LLM)")
            ax.axhline(100 * e["cosine"], color="k", linestyle="--", label="cosine")
            if key == "p":
                ax.invert_xaxis()
            ax.set_xlabel(xlabel)
            ax.set_ylabel("recall@5 (%)")
            ax.set_title(f"{name} / chunks (dev, n={e['n']})", fontsize=9)
            ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    fig.suptitle("DF-RAG's λ choice under a simulated judge of controlled quality")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _be(value: float | None, grid: list[float]) -> str:
    """A break-even point as shown in the table."""
    if value is None:
        return "never above"
    return f"beyond {grid[-1]:g}" if value == float("inf") else f"{value:.2f}"


def _markdown(out: dict[str, Any]) -> str:
    lines = [START, "## How good must DF-RAG's judge be? (simulated Evaluator, dev, `chunks`)", "",
             "```bash", out["command"], "```", "",
             "Each λ's gMMR set (λ = 0.1..1.0) gets one verdict per question: its true gold recall plus Gaussian "
             "noise σ (top), or its true recall with probability p and a uniform random score otherwise (bottom); "
             "DF-RAG then keeps the best-scored λ (ties: upper median), judging every λ (`uniform`, 10 Evaluator "
             "calls) or only where the binary search asks (`binary`). Recall@5 in percent, mean over "
             f"{out['seeds']} seeds; `calls` = Evaluator calls per question (DF-RAG adds its Planner and Generator "
             "calls to these). Break-even: the judge quality where DF-RAG's choice falls to the train-tuned best "
             "fixed λ (linear interpolation between grid points; `never above`: even the perfect judge does not beat "
             "it; `beyond x`: it still beats it at the grid's worst judge). A wrong verdict (p-variant) is a uniform "
             "random score in [0, 1], so it displaces the right set only when it happens to score higher. With binary "
             "search a *perfect* judge can do worse than a slightly noisy one: the true recall over λ has flat "
             "plateaus (ties), where the bisection stops on a local plateau; noise breaks those ties. Figure: "
             "`benchmarks/results/judge_quality.png`. `vs learned`: the same break-even against the learned "
             "λ selector (`method=\"adaptive\"`, text variant, no LLM call; its dev recall from the headline "
             "run): the judge quality DF-RAG needs before its Evaluator calls pay off over the free selector.", ""]
    for key, grid, name in (("noise", out["noise"], "σ"), ("p", out["p"], "p")):
        head = " | ".join(f"{name}={v:g}" for v in grid)
        lines += [f"| dataset | sampling | {head} | break-even {name} | vs learned | cosine | best fixed (train) | "
                  "learned | Oracle |", "|" + "---|" * (len(grid) + 8)]
        for d, e in out["tasks"].items():
            for sampling in ("uniform", "binary"):
                r = e[f"{key}/{sampling}"]
                cells = " | ".join(f"{100 * x:.1f} ({c:.1f})" for x, c in zip(r["recall"], r["calls"], strict=True))
                learned = e.get("learned")
                lines.append(f"| {d} | {sampling} | {cells} | {_be(r['break_even'], grid)} | "
                             f"{_be(r.get('break_even_learned'), grid) if learned is not None else '-'} | "
                             f"{100 * e['cosine']:.1f} | {100 * e['fixed']:.1f} ({e['fixed_label']}) | "
                             f"{'-' if learned is None else f'{100 * learned:.1f}'} | {100 * e['oracle']:.1f} |")
        lines.append("")
    lines += ["Cells: recall (Evaluator calls per question).", "", END]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())

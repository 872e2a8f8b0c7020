"""The learned set selector on dev, trained and chosen on TRAIN only (issue 25).

1. ``diverse_core.eval.train_learned.train(cv=True)``: for each protocol, the train questions
   of HotpotQA, MuSiQue and 2Wiki (dev overlap removed), the configuration chosen by
   5-fold cross-validation on them, the selector fitted and saved;
2. ``outofsample.run_split`` (``benchmarks/outofsample.py``) with the harness's default grids (cosine,
   MMR, gMMR, Dartboard, Vendi: best fixed value on train; ``adaptive`` trained on train;
   the per-question λ Oracle) plus two dev grids: retrieval-only DR-RAG
   (``drrag@mode=cfs@k1=2@fill=true``) and ``learned`` with the models of step 1;
3. the ``learned-selector`` section of ``benchmarks/RESULTS.md``: recall@k per cell, the
   paired difference to the better of ``adaptive`` and DR-RAG (bootstrap 95% intervals,
   pooled over the six cells and per cell), gap closed, searches per query, the CV table.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_split.py --cache-dir .cache/harness --results-md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import numpy as np
from report import replace_section  # benchmarks/report.py: this script's folder is on the path

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- learned-selector:start (benchmarks/learned_split.py) -->", "<!-- learned-selector:end -->"
DRRAG = "drrag@mode=cfs@k1=2@fill=true"
DATASETS = ("hotpotqa", "musique", "2wiki")
NAMES = {"hotpotqa": "HotpotQA", "musique": "MuSiQue", "2wiki": "2Wiki"}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from diverse_core.eval import MethodGrid, parse_method
    from diverse_core.eval.train_learned import train
    from outofsample import SplitConfig, run_split, split_payload

    out = Path(args.out)
    model_dir = out / "models"
    limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.train_limit)}
    cv_path = out / "learned_cv.json"
    out.mkdir(parents=True, exist_ok=True)
    train(args.datasets, args.protocols, model_dir, cv=not args.no_cv, cv_report=cv_path, cache_dir=args.cache_dir,
          train_limit=limit)
    dev_methods = {p: [parse_method(DRRAG), MethodGrid("learned", (), {"model": str(model_dir / f"learned_{p}.npz")})]
                   for p in args.protocols}
    cfg = SplitConfig(datasets=args.datasets, protocols=args.protocols, train_limit=limit or None,
                      dev_limit=args.dev_limit, cache_dir=args.cache_dir, out_dir=None, dev_methods=dev_methods,
                      model_dir=model_dir)
    res = run_split(cfg)
    payload = split_payload(res)
    payload["cv"] = json.loads(cv_path.read_text(encoding="utf-8")) if cv_path.is_file() else {}
    (out / "learned_split.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    return payload


def _pick(rows: list[dict[str, Any]], method: str, note_start: str = "") -> dict[str, Any] | None:
    return next((r for r in rows if r["method"] == method and r["note"].startswith(note_start)), None)


def _pct(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{100 * v:.1f}"


def _ci(d: np.ndarray, cfg: dict[str, Any]) -> str:
    from diverse_core.eval.stats import bootstrap_ci

    lo, hi = bootstrap_ci(d, n_boot=cfg["n_boot"], seed=cfg["seed"])
    return f"{100 * float(np.mean(d)):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def cells(payload: dict[str, Any]) -> list[dict[str, Any]]:
    """Per (dataset, protocol): the per-question dev recall of each compared method."""
    out = []
    for t in payload["tasks"]:
        rows = t["rows"]
        got = {
            "cosine": _pick(rows, "cosine"),
            "gmmr": _pick(rows, "gmmr", "chosen on train"),
            "adaptive": _pick(rows, "adaptive", "trained on the train sets"),
            "drrag": _pick(rows, "drrag", "dev grid"),
            "learned": _pick(rows, "learned", "dev grid"),
            "oracle": _pick(rows, "oracle"),
        }
        missing = [k for k, v in got.items() if v is None]
        if missing:
            raise SystemExit(f"{t['dataset']}/{t['protocol']}: rows missing: {missing}")
        out.append({"dataset": t["dataset"], "protocol": t["protocol"], "n": t["n_dev"], "n_train": t["n_train"],
                    "rows": got, "dev": {k: np.asarray(v["dev"], dtype=np.float64) for k, v in got.items()}})
    return out


def section(payload: dict[str, Any], command: str) -> str:
    """The whole ``learned-selector`` section of RESULTS.md."""
    lines = [START, "## Learned set selector (`learned`): picks the documents, not a λ (issue 25)", ""]
    if payload.get("tasks"):
        lines += dev_markdown(payload, command)
    else:
        lines += ["The dev split (`python benchmarks/learned_split.py --cache-dir ...`, every cell trained and tuned "
                  "on TRAIN) has not been run for this version: see the note below.", ""]
    for bench in payload.get("dev_bench", []):
        lines += bench_markdown(bench)
    if len(payload.get("dev_bench", [])) > 1:
        lines += pooled_bench_markdown(payload["dev_bench"])
    lines += extras_markdown(payload)
    lines += ["", END]
    return "\n".join(lines)


def dev_markdown(payload: dict[str, Any], command: str) -> list[str]:
    """The dev tables of a ``run_split`` payload with the ``learned`` and DR-RAG dev grids."""
    from diverse_core.eval.stats import permutation_p

    cfg = payload["config"]
    cs = cells(payload)
    pooled = {m: np.concatenate([c["dev"][m] for c in cs]) for m in cs[0]["dev"]}
    better = "adaptive" if pooled["adaptive"].mean() >= pooled["drrag"].mean() else "drrag"
    label = {"adaptive": "adaptive", "drrag": "DR-RAG"}
    lines = [
        "Reproduce (embeddings cached in `--cache-dir`; BLAS single-threaded with `OPENBLAS_CORETYPE` and "
        "`OPENBLAS_L2_SIZE` unset, `OPENBLAS_NUM_THREADS=1`):",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Dev recall@{cfg['k']} in percent (fetch_k={cfg['fetch_k']}, packaged MiniLM), out-of-sample protocol of "
        "`benchmarks/adaptive_split.py`: everything trained or tuned on the TRAIN questions only. `fixed gMMR` = the "
        "λ best on train; `adaptive` = the learned λ selector trained on train (text variant); `DR-RAG` = "
        f"retrieval-only `{DRRAG}` (shipped pair classifier, trained on train files; no LLM); `learned` = this "
        "method, its configuration chosen by 5-fold CV on train and trained on the train questions of the three "
        "datasets per protocol (text variant: the harness gives it the question and the candidate texts); "
        "`λ Oracle` = best gMMR λ per question using the gold labels (a ceiling, not a method). `gap` = share of the "
        "cosine → λ Oracle gap closed.",
        "",
        "| dataset | protocol | n | cosine | fixed gMMR (train) | adaptive | DR-RAG | **learned** | λ Oracle | "
        "gap: learned / adaptive | learned ≥ Oracle? |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    moon = []
    lines.insert(-3, "")
    lines.insert(-3, "Train questions used per cell (first N of the train files, dev overlap removed): " + ", ".join(
        f"{NAMES.get(c['dataset'], c['dataset'])} {c['protocol']} {c['n_train']}" for c in cs) + ".")
    for c in cs:
        r = c["rows"]
        ok = r["learned"]["mean"] >= r["oracle"]["mean"] - 1e-12
        moon.append(ok)
        lines.append(
            f"| {NAMES.get(c['dataset'], c['dataset'])} | {c['protocol']} | {c['n']} | {_pct(r['cosine']['mean'])} | "
            f"{_pct(r['gmmr']['mean'])} ({r['gmmr']['params']}) | {_pct(r['adaptive']['mean'])} | "
            f"{_pct(r['drrag']['mean'])} | **{_pct(r['learned']['mean'])}** | {_pct(r['oracle']['mean'])} | "
            f"{100 * r['learned']['gap_closed']:.0f}% / {100 * r['adaptive']['gap_closed']:.0f}% | "
            f"{'yes' if ok else 'no'} |"
        )
    lines += [
        "",
        f"Paired differences, `learned` minus each baseline, per question (bootstrap 95% interval, {cfg['n_boot']} "
        f"resamples; p = paired sign-flip permutation, {cfg['n_perm']} permutations). The better baseline pooled "
        f"over the {len(cs)} cells measured here is **{label[better]}** ({_pct(pooled[better].mean())} vs "
        f"{_pct(pooled['drrag' if better == 'adaptive' else 'adaptive'].mean())}).",
        "",
        "| cell | n | Δ vs adaptive | Δ vs DR-RAG | Δ vs fixed gMMR | Δ vs λ Oracle |",
        "|---|---|---|---|---|---|",
    ]
    for c in cs:
        d = c["dev"]
        lines.append(f"| {NAMES.get(c['dataset'], c['dataset'])} {c['protocol']} | {c['n']} | "
                     f"{_ci(d['learned'] - d['adaptive'], cfg)} | {_ci(d['learned'] - d['drrag'], cfg)} | "
                     f"{_ci(d['learned'] - d['gmmr'], cfg)} | {_ci(d['learned'] - d['oracle'], cfg)} |")
    n = len(pooled["learned"])
    lines.append(f"| **pooled** | {n} | {_ci(pooled['learned'] - pooled['adaptive'], cfg)} | "
                 f"{_ci(pooled['learned'] - pooled['drrag'], cfg)} | {_ci(pooled['learned'] - pooled['gmmr'], cfg)} | "
                 f"{_ci(pooled['learned'] - pooled['oracle'], cfg)} |")
    from diverse_core.eval.stats import bootstrap_ci

    diff = pooled["learned"] - pooled[better]
    lo, hi = bootstrap_ci(diff, n_boot=cfg["n_boot"], seed=cfg["seed"])
    worst = min(min(float(np.mean(c["dev"]["learned"] - c["dev"][b])) for b in ("adaptive", "drrag")) for c in cs)
    gaps = [c["rows"]["learned"]["gap_closed"] for c in cs]
    lines += [
        "",
        f"- **Minimum target** (pooled Δ vs the better baseline with its 95% interval above zero, and no cell worse "
        f"than either baseline by more than 0.5): pooled Δ vs {label[better]} = {100 * diff.mean():+.2f} "
        f"[{100 * lo:+.2f}, {100 * hi:+.2f}], p = {permutation_p(diff, n_perm=cfg['n_perm'], seed=cfg['seed']):.3g}; "
        f"worst cell Δ against either baseline {100 * worst:+.2f}: "
        f"**{'met' if lo > 0 and worst >= -0.005 else 'not met'}**.",
        f"- **Moonshot** (≥ λ Oracle on every cell measured): **{'met' if all(moon) else 'not met'}** "
        f"({sum(moon)} of {len(moon)} cells). Mean gap closed: learned {100 * float(np.mean(gaps)):.0f}%, "
        f"adaptive {100 * float(np.mean([c['rows']['adaptive']['gap_closed'] for c in cs])):.0f}%.",
    ]
    return lines


def extras_markdown(payload: dict[str, Any]) -> list[str]:
    """Searches per query, CV table and note."""
    lines: list[str] = [
        "- **Searches per query:** `learned` 1 (the fetch_k search; it reuses the candidates' embeddings and "
        "texts, no extra query embedding); `adaptive` 1; DR-RAG 1 + k1 = 3 (and k1 = 2 extra query embeddings "
        "of question + document). DR-RAG's concatenated searches run over the whole corpus, so it can return "
        "passages outside the 50 candidates the selectors see.",
    ]
    cv = payload.get("cv") or {}
    if cv:
        lines += ["", "How the configuration was chosen: 5-fold cross-validation on the TRAIN questions "
                  "(question i in fold i mod 5; mean held-out recall@5 of the text variant); dev was not used for "
                  "any choice.", "", "| protocol | train questions | configuration | train CV recall |",
                  "|---|---|---|---|"]
        for protocol, rep in cv.items():
            for row in rep["rows"]:
                c = row["config"]
                mark = " **(chosen)**" if c == rep["chosen"] else ""
                desc = f"rounds={c['rounds']}, l2={c['l2']:g}, split_first={c['split_first']}"
                lines.append(f"| {protocol} | {rep['n_questions']} | {desc}{mark} | {100 * row['cv_recall']:.2f} |")
    if payload.get("note"):
        lines += ["", payload["note"].strip()]
    return lines


def pooled_bench_markdown(benches: list[dict[str, Any]]) -> list[str]:
    """Dev cells pooled: learned vs each baseline that every cell has, paired per question, plus the moonshot."""
    from diverse_core.eval.stats import bootstrap_ci

    common = [k for k in benches[0]["per_question"] if k != "learned" and all(k in b["per_question"] for b in benches)]
    n = sum(b["n"] for b in benches)
    parts = []
    for base in common:
        dd = np.concatenate([np.asarray(b["per_question"]["learned"]) - np.asarray(b["per_question"][base])
                             for b in benches])
        lo, hi = bootstrap_ci(dd, n_boot=10_000, seed=0)
        parts.append(f"vs {base} {100 * dd.mean():+.2f} [{100 * lo:+.2f}, {100 * hi:+.2f}]")
    moon = [float(np.mean(b["per_question"]["learned"])) >= float(np.mean(b["per_question"]["λ Oracle"])) - 1e-12
            for b in benches if "λ Oracle" in b["per_question"]]
    cells = ", ".join(f"{NAMES.get(b['dataset'], b['dataset'])} {b['protocol']}" for b in benches)
    return [f"**Pooled over these dev cells** ({cells}; {n} questions), `learned` minus each, paired per question "
            "(bootstrap 95%): " + "; ".join(parts) + ".", "",
            f"- **Moonshot** (≥ λ Oracle on every cell): met on {sum(moon)} of {len(moon)} dev cells measured here.",
            ""]


def bench_markdown(bench: dict[str, Any]) -> list[str]:
    """A dev cell run by the harness at fixed (train-chosen) settings: per-question paired differences."""
    from diverse_core.eval.stats import bootstrap_ci

    vals = {k: np.asarray(v, dtype=np.float64) for k, v in bench["per_question"].items()}
    lines = [f"**Dev, {NAMES.get(bench['dataset'], bench['dataset'])} `{bench['protocol']}`** ({bench['n']} questions; "
             f"{bench['how']}):", "", "| " + " | ".join(vals) + " |", "|" + "---|" * len(vals),
             "| " + " | ".join(_pct(float(v.mean())) for v in vals.values()) + " |", ""]
    diffs = []
    for base in [k for k in vals if k != "learned"]:
        dd = vals["learned"] - vals[base]
        lo, hi = bootstrap_ci(dd, n_boot=10_000, seed=0)
        diffs.append(f"vs {base} {100 * dd.mean():+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]")
    return [*lines, "Paired difference `learned` minus each (bootstrap 95%): " + "; ".join(diffs) + ".", ""]


def bench_cell(per_query: Path, how: str, fixed_lambda: float) -> dict[str, Any]:
    """A dev cell from a ``diverse-rag bench`` per-query file (cosine, gMMR grid with the Oracle, adaptive,
    DR-RAG, learned): the per-question headline metric of each, gMMR at ``fixed_lambda`` (chosen on train)."""
    data = json.loads(per_query.read_text(encoding="utf-8"))
    metric = data["headline_metric"]
    out: dict[str, list[float]] = {}
    for s in data["settings"]:
        vals = s["metrics"][metric]
        if s["method"] in ("topk", "cosine"):
            out["cosine"] = vals
        elif s["method"] == "gmmr" and s["params"] == f"lambda_mult={fixed_lambda:g}":
            out[f"fixed gMMR λ={fixed_lambda:g}"] = vals
        elif s["method"] in ("adaptive", "learned", "oracle"):
            out[{"oracle": "λ Oracle"}.get(s["method"], s["method"])] = vals
        elif s["method"] == "drrag":
            out["DR-RAG"] = vals
    order = ["cosine", f"fixed gMMR λ={fixed_lambda:g}", "adaptive", "DR-RAG", "learned", "λ Oracle"]
    return {"dataset": data["dataset"], "protocol": data["protocol"], "n": len(data["qids"]), "how": how,
            "per_question": {k: out[k] for k in order if k in out}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"])
    ap.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N")
    ap.add_argument("--dev-limit", type=int, default=None)
    ap.add_argument("--no-cv", action="store_true", help="train the default configuration without the CV table")
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "learned"))
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--from-json", default=None, help="only re-render from a learned_split.json")
    ap.add_argument("--dev-bench-json", nargs="*", default=[], help="dev cells run at fixed settings (see docs)")
    ap.add_argument("--bench-per-query", nargs="*", default=[],
                    help="diverse-rag bench per-query files: one dev cell each (same --bench-how)")
    ap.add_argument("--bench-how", default="", help="how that dev cell's models were trained (shown)")
    ap.add_argument("--bench-lambda", type=float, default=0.9, help="the train-chosen fixed gMMR λ of that cell")
    ap.add_argument("--render-only", action="store_true", help="no split run: render the other inputs only")
    ap.add_argument("--note", default=None, help="a Markdown file appended to the section (scope, what was tried)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. "
               "python benchmarks/learned_split.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:])))
    if args.render_only:
        payload: dict[str, Any] = {}
    elif args.from_json:
        payload = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        command = payload.get("command", command)
    else:
        payload = run(args)
        payload["command"] = command
        Path(args.out, "learned_split.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    payload["dev_bench"] = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.dev_bench_json]
    for pq in args.bench_per_query:
        cell = bench_cell(Path(pq), args.bench_how, args.bench_lambda)
        Path(args.out).mkdir(parents=True, exist_ok=True)
        Path(args.out, f"dev_{cell['dataset']}_{cell['protocol']}.json").write_text(json.dumps(cell) + "\n",
                                                                                   encoding="utf-8")
        payload["dev_bench"].append(cell)
    if args.note:
        payload["note"] = Path(args.note).read_text(encoding="utf-8")
    text = section(payload, command)
    print(text)
    if args.results_md:
        replace_section(Path(args.results_md), text, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Out-of-sample headline: tune and train on TRAIN, report on dev (issue 18).

Runs :func:`outofsample.run_split` (``benchmarks/outofsample.py``) and writes
``benchmarks/results/split/split.json`` plus the headline section of
``benchmarks/RESULTS.md`` (between the ``headline:start`` / ``headline:end`` markers).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/adaptive_split.py --protocols chunks paragraphs \\
        --train-limit hotpotqa=200 musique=100 2wiki=500 --train-block musique=100 \\
        --cache-dir .cache/harness --results-md benchmarks/RESULTS.md
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

from diverse_core.eval import parse_method
from outofsample import SplitConfig, run_split, split_payload, write_split
from report import replace_section  # benchmarks/report.py: this script's folder is on the path

REPO = Path(__file__).resolve().parents[1]
START, END = "<!-- headline:start (benchmarks/adaptive_split.py) -->", "<!-- headline:end -->"
NAMES = {"cosine": "cosine", "mmr": "MMR", "gmmr": "gMMR", "dartboard": "Dartboard", "vendi": "Vendi",
         "adaptive": "adaptive (learned λ)", "oracle": "Oracle"}


def _pairs(items: list[str]) -> dict[str, int]:
    out = {}
    for item in items:
        name, _, value = item.partition("=")
        out[name] = int(value)
    return out


def _pct(v: float) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{100 * v:.1f}"


def _gap(v: float) -> str:
    return "-" if v is None or math.isnan(v) else f"{100 * v:.0f}%"


def target_markdown(payload: dict[str, Any], protocol: str = "chunks") -> list[str]:
    """The learned selector against the train-tuned fixed gMMR, per dataset and pooled (paired)."""
    from diverse_core.eval.stats import bootstrap_ci, permutation_p

    n_boot, n_perm, seed = payload["config"]["n_boot"], payload["config"]["n_perm"], payload["config"]["seed"]
    lines = [f"Learned selector vs the train-tuned fixed gMMR λ on `{protocol}` (dev; paired per question):", "",
             "| dataset | n | adaptive | fixed gMMR (train) | Δ [95% CI] | p | gap closed: adaptive / fixed |",
             "|---|---|---|---|---|---|---|"]
    pooled: list[float] = []
    gaps: list[tuple[float, float]] = []
    for t in payload["tasks"]:
        if t["protocol"] != protocol:
            continue
        rows = {(r["method"], r["note"]): r for r in t["rows"]}
        ad = next((r for (m, note), r in rows.items() if m == "adaptive" and note.startswith("trained on the")), None)
        gm = rows.get(("gmmr", "chosen on train"))
        if ad is None or gm is None:
            continue
        d = [a - b for a, b in zip(ad["dev"], gm["dev"], strict=True)]
        pooled += d
        lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
        gaps.append((ad["gap_closed"], gm["gap_closed"]))
        lines.append(f"| {t['dataset']} | {len(d)} | {_pct(ad['mean'])} | {_pct(gm['mean'])} ({gm['params']}) | "
                     f"{100 * sum(d) / len(d):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}] | "
                     f"{permutation_p(d, n_perm=n_perm, seed=seed):.3g} | {_gap(ad['gap_closed'])} / "
                     f"{_gap(gm['gap_closed'])} |")
    if pooled:
        lo, hi = bootstrap_ci(pooled, n_boot=n_boot, seed=seed)
        mean_gap = [sum(g[i] for g in gaps) / len(gaps) for i in (0, 1)]
        lines.append(f"| **pooled** | {len(pooled)} | | | {100 * sum(pooled) / len(pooled):+.1f} "
                     f"[{100 * lo:+.1f}, {100 * hi:+.1f}] | {permutation_p(pooled, n_perm=n_perm, seed=seed):.3g} | "
                     f"mean {_gap(mean_gap[0])} / {_gap(mean_gap[1])} |")
    return [*lines, ""]


def _train_used(payload: dict[str, Any]) -> str:
    """Which train questions the run used."""
    cfg = payload["config"]
    counts = ", ".join(f"{t['dataset']} {t['n_train']}" for t in payload["tasks"] if t["protocol"] == payload["tasks"][0]["protocol"])
    blocks = f"blocks of {cfg['train_block'] or 'the default size (HotpotQA/MuSiQue 200, 2Wiki 500)'} questions"
    if not cfg["train_limit"]:
        return (f"Train questions used: all of them ({counts}), in {blocks}, each block with its own pooled "
                "corpus, like dev.")
    return (f"Train questions used: the first N per train set, {cfg['train_limit']} ({counts}), in {blocks}, "
            "each block with its own pooled corpus, like dev.")


def _cell(r: dict[str, Any]) -> str:
    lo, hi = r["ci"]
    return f"{_pct(r['mean'])} [{_pct(lo)}, {_pct(hi)}]"


def headline_markdown(payload: dict[str, Any], command: str, note: str = "") -> str:
    cfg = payload["config"]
    lines = [
        START,
        "## Headline: tuned on TRAIN, reported on dev (out-of-sample)",
        "",
        "Reproduce (from the repository root; embeddings cached in `--cache-dir`):",
        "",
        "```bash",
        command,
        "```",
        "",
        f"Recall@{cfg['k']} in percent on the dev questions (fetch_k={cfg['fetch_k']}, packaged MiniLM), "
        "[paired-bootstrap 95% interval]. Every *best fixed* parameter (gMMR/MMR `lambda_mult`, Dartboard "
        "`sigma`, Vendi `s`) is the value with the best mean recall on the TRAIN questions "
        "(`shared/data/train/` + the HippoRAG train files; any question sharing an id or normalised text with "
        "a dev question removed), then scored once on dev. `adaptive` is the learned λ selector "
        "(`diverse_core.adaptive`, no LLM) trained on the train questions of the three datasets together, "
        "in its text-aware variant (the harness gives it the question and the candidate texts: it reads which "
        "question words and names each set contains, and a per-candidate gold-evidence probability); "
        "`Δ cos` = mean paired difference to cosine [95% interval], `p` = paired sign-flip permutation p-value "
        f"({cfg['n_perm']} permutations), `gap` = share of the cosine→Oracle gap closed. The Oracle picks the "
        "best λ per question with the gold labels (a ceiling, not a method).",
        "",
        _train_used(payload),
        "",
        "| dataset | protocol | method | chosen on train | train | dev recall [95% CI] | Δ cos [95% CI] | p | gap |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for t in payload["tasks"]:
        for r in t["rows"]:
            if r["note"].startswith("in-sample") or "only" in r["note"]:
                continue
            lo, hi = r["delta_ci"]
            delta = "-" if r["method"] == "cosine" else f"{100 * r['delta_vs_cosine']:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"
            p = "-" if r["method"] == "cosine" else f"{r['p_vs_cosine']:.3g}"
            gap = "-" if r["method"] in ("cosine", "oracle") else _gap(r["gap_closed"])
            label = "-" if r["method"] in ("cosine", "oracle") else r["params"].replace("model=adaptive_", "model: ")
            lines.append(f"| {t['dataset']} | {t['protocol']} | {NAMES.get(r['method'], r['method'])} | {label} | "
                         f"{_pct(r['train_mean'])} | {_cell(r)} | {delta} | {p} | {gap} |")
    protocols = list(dict.fromkeys(t["protocol"] for t in payload["tasks"]))
    lines += [""]
    for protocol in protocols:
        lines += target_markdown(payload, protocol)
    lines += ["Variants and in-sample references (not headline numbers):", "",
              "| dataset | protocol | method | setting | dev recall [95% CI] | Δ cos | gap |", "|---|---|---|---|---|---|---|"]
    for t in payload["tasks"]:
        for r in t["rows"]:
            if r["note"].startswith("in-sample") or "only" in r["note"]:
                lines.append(f"| {t['dataset']} | {t['protocol']} | {NAMES.get(r['method'], r['method'])} "
                             f"({r['note']}) | {r['params']} | {_cell(r)} | {100 * r['delta_vs_cosine']:+.1f} | "
                             f"{_gap(r['gap_closed'])} |")
    if note:
        lines += ["", note.strip()]
    lines += ["", END]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--datasets", nargs="+", default=["hotpotqa", "musique", "2wiki"])
    ap.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"])
    ap.add_argument("--methods", nargs="+", default=None, help="method grids (default: the harness default)")
    ap.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N")
    ap.add_argument("--train-block", nargs="*", default=[], metavar="NAME=N")
    ap.add_argument("--dev-limit", type=int, default=None)
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "split"))
    ap.add_argument("--results-md", default=None)
    ap.add_argument("--note", default=None, help="a Markdown file appended to the section (what was tried)")
    ap.add_argument("--from-json", nargs="+", default=None,
                    help="only re-render RESULTS.md from split.json files (their tasks concatenated)")
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    command = "python benchmarks/adaptive_split.py " + " ".join(shlex.quote(a) for a in (argv or sys.argv[1:]))
    if args.from_json:
        parts = [json.loads(Path(p).read_text()) for p in args.from_json]
        payload = {**parts[0], "tasks": [t for part in parts for t in part["tasks"]]}
        command = "\n".join(part.get("command", "") for part in parts)
        limits = [part["config"]["train_limit"] for part in parts]
        payload["config"] = {**parts[0]["config"], "train_limit": limits[0] if all(x == limits[0] for x in limits) else limits}
    else:
        kw: dict[str, Any] = {}
        if args.methods:
            kw["methods"] = [parse_method(m) for m in args.methods]
        cfg = SplitConfig(
            datasets=args.datasets, protocols=args.protocols, train_limit=_pairs(args.train_limit) or None,
            train_block=_pairs(args.train_block), dev_limit=args.dev_limit, cache_dir=args.cache_dir,
            out_dir=args.out, **kw,
        )
        res = run_split(cfg)
        payload = split_payload(res)
        payload["command"] = command
        write_split(res, Path(args.out))
        Path(args.out, "split.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
        print(f"[split] done in {res.seconds:.0f} s -> {args.out}/split.json")
    note = Path(args.note).read_text(encoding="utf-8") if args.note else ""
    section = headline_markdown(payload, command, note)
    print(section)
    if args.results_md:
        replace_section(Path(args.results_md), section, START, END)
    return 0


if __name__ == "__main__":
    sys.exit(main())

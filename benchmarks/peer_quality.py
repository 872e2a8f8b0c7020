"""Dev quality of every method, old and new (issue 28), at train-tuned parameters.

Runs :func:`outofsample.run_split` (``benchmarks/outofsample.py``) (recall@5, k=5, fetch_k=50, MiniLM) on
HotpotQA, MuSiQue and 2Wiki x chunks and paragraphs with the harness grids extended by the five
peer strategies; each method's parameter is chosen on TRAIN only, then reported on dev with a
paired 95% bootstrap interval against cosine and against the train-tuned gMMR. The per-question
Oracle (best set among all settings of all strategies) shows the headroom of the wider pool.
Writes ``split.json`` to ``--out`` and the ``peer-quality`` section of RESULTS.md::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 \\
      python benchmarks/peer_quality.py --cache-dir /work/cache/h28 \\
        --train-limit hotpotqa=200 musique=100 2wiki=500 --results-md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from diverse_core.eval import parse_method
from diverse_core.eval.config import DEFAULT_METHODS
from diverse_core.eval.stats import bootstrap_ci
from outofsample import SplitConfig, run_split, split_payload

START, END = "<!-- peer-quality:start -->", "<!-- peer-quality:end -->"
PEER_GRIDS = ("dpp=0:1:0.2", "msd=0:1:0.2", "cover=0:1:0.2", "ssd=0:1:0.2", "gist=0,0.25,0.5,1,2,4")


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def table(payload: dict[str, Any]) -> str:
    n_boot, seed = payload["config"]["n_boot"], payload["config"]["seed"]
    lines = ["| dataset | protocol | n | method | train-chosen | dev recall@5 | Δ vs cosine [95% CI] | "
             "Δ vs gMMR (train) [95% CI] |", "|---|---|---|---|---|---|---|---|"]
    for t in payload["tasks"]:
        rows = t["rows"]
        cos = next(r for r in rows if r["method"] in ("topk", "cosine"))
        gm = next((r for r in rows if r["method"] == "gmmr" and r["note"] == "chosen on train"), None)
        for r in rows:
            if r["method"] not in ("topk", "cosine", "oracle") and r["note"] != "chosen on train":
                continue
            cells = []
            for ref in (cos, gm):
                if ref is None or r is ref:
                    cells.append("")
                    continue
                d = [a - b for a, b in zip(r["dev"], ref["dev"], strict=True)]
                lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
                cells.append(f"{100 * sum(d) / len(d):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]")
            lines.append(f"| {t['dataset']} | {t['protocol']} | {len(r['dev'])} | {r['method']} | {r['params']} | "
                         f"{_pct(r['mean'])} | {cells[0]} | {cells[1]} |")
        # all-strategy Oracle: per question, the best of every strategy's train-chosen set (and cosine)
        chosen = [r for r in rows if r["method"] in ("topk", "cosine") or r["note"] == "chosen on train"]
        best = [max(vals) for vals in zip(*(r["dev"] for r in chosen), strict=True)]
        cells = []
        for ref in (cos, gm):
            if ref is None:
                cells.append("")
                continue
            d = [a - b for a, b in zip(best, ref["dev"], strict=True)]
            lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=seed)
            cells.append(f"{100 * sum(d) / len(d):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]")
        lines.append(f"| {t['dataset']} | {t['protocol']} | {len(best)} | **Oracle over all strategies** | "
                     f"per question | {_pct(sum(best) / len(best))} | {cells[0]} | {cells[1]} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cache-dir", required=True)
    ap.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N")
    ap.add_argument("--dev-limit", type=int, default=None)
    ap.add_argument("--out", default="benchmarks/results/peer_quality")
    ap.add_argument("--results-md", default=None)
    args = ap.parse_args()
    limits = {k: int(v) for k, v in (x.split("=") for x in args.train_limit)} or None
    methods = [*DEFAULT_METHODS, *(parse_method(s) for s in PEER_GRIDS)]
    cfg = SplitConfig(methods=methods, cache_dir=args.cache_dir, train_limit=limits,
                      dev_limit=args.dev_limit, adaptive=False, out_dir=args.out, progress=True)
    payload = split_payload(run_split(cfg))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    Path(args.out, "split.json").write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    section = (f"{START}\n## Peer strategies on dev (issue 28): recall@5 at train-tuned parameters\n\n"
               f"{table(payload)}\n\n`oracle` is the harness's per-question best gMMR lambda; **Oracle over all "
               f"strategies** is, per question, the best of the train-chosen sets of every strategy above "
               f"(cosine included): the headroom a learned selector choosing among strategies could reach.\n"
               f"Regenerate: `env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 python "
               f"benchmarks/peer_quality.py --cache-dir <copy of the harness cache> --train-limit hotpotqa=200 "
               f"musique=100 2wiki=500 --results-md benchmarks/RESULTS.md`\n{END}\n")
    print(section)
    if args.results_md:
        md = Path(args.results_md)
        text = md.read_text(encoding="utf-8")
        if START in text:
            head, rest = text.split(START, 1)
            text = head + section + rest.split(END, 1)[1].lstrip("\n")
        else:
            text = text.rstrip("\n") + "\n\n" + section
        md.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()

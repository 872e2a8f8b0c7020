"""Which shipped ``learned`` model to run by default, per input form (issue 45 item 1): dev splits only.

A store gives the selector one of a few input forms: titles in the texts (``"title: body"``),
titles as display ``names`` with source ids, source ids alone, or nothing. This script scores
cosine top-k and each shipped model (``chunks``, ``paragraphs``, ``chunks-notitle``,
``paragraphs-notitle``) per form on the dev splits: HotpotQA, MuSiQue and 2Wiki (``chunks`` and
``paragraphs`` protocols; titled or bare units) and the ``train_more`` dev folders (ExpertQA,
COVID-QA; bare units, document ids as sources), fetch_k = 50, k = 5, packaged MiniLM
(vectors from the disk cache). Recall@5 page-level (a gold page counts when any chosen unit of
it is picked) and support-level where the data marks supporting texts; each model − cosine with
a paired bootstrap 95% interval. ``--auto`` also scores ``model=None`` (the library's own choice).

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/default_model.py --auto --out benchmarks/results/default_model.json

``--limit hotpotqa=60 covidqa=100`` scores the first N dev questions of a set over a smaller corpus (their
own pools' passages; custom data: every unit of their gold units' sources), for a machine where
embedding the whole dev corpora does not fit.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
MULTIHOP = ("hotpotqa", "musique", "2wiki")
CUSTOM = ("expertqa", "covidqa")
MODELS = ("chunks", "paragraphs", "chunks-notitle", "paragraphs-notitle")
#: form -> (titled units, give sources, give names)
FORMS = {"text": (True, False, False), "text+ids": (True, True, False), "names+ids": (False, True, True),
         "ids": (False, True, False), "none": (False, False, False)}


def _tasks(data_dir: Path, datasets: list[str], protocols: list[str]) -> list[tuple[str, str, Any, str]]:
    """(dataset, protocol, benchmark, forms) to run."""
    from diverse_core.eval.customdata import load_custom_dir
    from diverse_core.eval.datasets import load_dataset

    out = []
    for name in datasets:
        if name in CUSTOM:
            out.append((name, "paragraphs", load_custom_dir(data_dir / "train_more" / name / "dev"), "bare"))
        else:
            bench = load_dataset(name, data_dir)
            out += [(name, p, bench, "all") for p in protocols]
    return out


def _first(bench: Any, limit: int | None) -> Any:
    """The first ``limit`` questions over the passages of their own pools (gold and distractors; custom data:
    every unit of their gold units' sources): a smaller pooled corpus (fewer distractors than the whole split's)."""
    from diverse_core.eval.records import Benchmark

    if limit is None:
        return bench
    records = bench.records[:limit]
    keep = {d for r in records for d in (*r.pool_doc_ids, *r.gold_doc_ids)}
    if not all(r.pool_doc_ids for r in bench.records):  # custom data: every unit of the gold units' sources
        sources = {bench.corpus[d].source for d in keep}
        keep = {d for d, doc in bench.corpus.items() if doc.source in sources}
    corpus = {d: doc for d, doc in bench.corpus.items() if d in keep}
    return Benchmark(bench.name, records, corpus, bench.protocols, bench.metric)


def _ci(d: np.ndarray, n_boot: int, rng: np.random.Generator) -> tuple[float, float, float]:
    idx = rng.integers(0, d.shape[0], size=(n_boot, d.shape[0]))
    means = d[idx].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def run(args: argparse.Namespace) -> dict[str, Any]:
    import diverse_core as dc
    from diverse_core.embedders import get_default_embedder
    from diverse_core.eval.disk_cache import DiskEmbeddingCache
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.runner import question_inputs, top_candidates

    cache = DiskEmbeddingCache(get_default_embedder(), "all-MiniLM-L6-v2", args.cache_dir, progress=False)
    models: list[str | None] = [*MODELS, *([None] if args.auto else [])]
    rows: list[dict[str, Any]] = []
    rng = np.random.default_rng(0)
    for name, protocol, bench, kind in _tasks(Path(args.data_dir), args.datasets, args.protocols):
        for form, (titled, give_ids, give_names) in FORMS.items():
            if (kind == "bare" and titled) or (kind == "bare" and give_names) or form not in args.forms:
                continue
            t0 = time.perf_counter()
            task = build_task(_first(bench, args.limit.get(name)), protocol, titles=titled)
            unit_emb = cache.embed(list(task.unit_texts))
            q_emb = cache.embed([r.question for r in task.records])
            if args.embed_only:
                print(f"[embed] {name}/{protocol}/{form} {len(task.unit_texts)} units", flush=True)
                continue
            cands = top_candidates(task, unit_emb, q_emb, args.fetch_k)
            page: dict[str, list[float]] = {"cosine": [], **{str(m): [] for m in models}}
            supp: dict[str, list[float]] = {k: [] for k in page}
            ran: dict[str, str] = {}
            for qi, inp in enumerate(question_inputs(task, unit_emb, q_emb, cands, args.k)):
                gold = set(task.gold[qi].tolist())
                support = task.support[qi] if task.support else None
                units = inp.units
                extra: dict[str, Any] = {}
                if give_ids:
                    extra["sources"] = list(inp.sources)
                if give_names:
                    extra["names"] = [task.doc_titles[d] or None for d in task.unit_doc[units].tolist()]
                picks = {"cosine": np.arange(args.k)}
                for m in models:
                    sel = dc.select("learned", inp.query_embedding, inp.embeddings, args.k, question=inp.question,
                                    texts=list(inp.texts), model=m, **extra)
                    picks[str(m)] = sel.indices
                    if m is None:
                        ran[str(sel.details.get("model"))] = "x"
                for key, local in picks.items():
                    chosen = units[local]
                    page[key].append(len(gold & set(task.unit_doc[chosen].tolist())) / len(gold))
                    if support is not None:
                        cs = set(chosen.tolist())
                        supp[key].append(sum(bool(cs.intersection(u.tolist())) for u in support) / len(support))
            for level, vals in (("page", page), ("support", supp)):
                if not vals["cosine"] or len(vals["cosine"]) < len(page["cosine"]):
                    continue
                cos = np.array(vals["cosine"])
                row: dict[str, Any] = {"dataset": name, "protocol": protocol, "form": form, "level": level,
                                       "n": len(cos), "cosine": float(cos.mean())}
                for m in models:
                    v = np.array(vals[str(m)])
                    row[str(m)] = float(v.mean())
                    row[f"{m} - cosine"] = _ci(v - cos, args.n_boot, rng)
                if None in models:
                    row["auto_ran"] = sorted(ran)
                rows.append(row)
            print(f"[done] {name}/{protocol}/{form} {len(task.records)} q, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    return {"k": args.k, "fetch_k": args.fetch_k, "rows": rows}


def table(rows: list[dict[str, Any]], level: str, auto: bool) -> str:
    models = [*MODELS, *(["None"] if auto else [])]
    head = "| form | cell | n | cosine | " + " | ".join(f"{m} (Δ, 95% CI)" for m in models) + " |"
    lines = [head, "|" + "---|" * (4 + len(models))]
    for r in sorted((r for r in rows if r["level"] == level), key=lambda r: (list(FORMS).index(r["form"]),)):
        cells = []
        for m in models:
            d, lo, hi = r[f"{m} - cosine"]
            cells.append(f"{100 * r[m]:.1f} ({100 * d:+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}])")
        lines.append(f"| {r['form']} | {r['dataset']} {r['protocol']} | {r['n']} | {100 * r['cosine']:.1f} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--data-dir", default=str(REPO.parent / "shared" / "data"))
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--datasets", nargs="+", default=[*CUSTOM, *MULTIHOP])
    ap.add_argument("--protocols", nargs="+", default=["chunks", "paragraphs"])
    ap.add_argument("--forms", nargs="+", default=list(FORMS))
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--fetch-k", type=int, default=50)
    ap.add_argument("--limit", nargs="*", default=[], metavar="NAME=N",
                    help="first N dev questions of set NAME, over their own passages only (see _first)")
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--auto", action="store_true", help="also model=None (the library's choice)")
    ap.add_argument("--embed-only", action="store_true", help="only fill the embedding cache")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    args.limit = {k: int(v) for k, _, v in (x.partition("=") for x in args.limit)}
    result = run(args)
    if args.embed_only:
        return
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result) + "\n", encoding="utf-8")
    for level in ("page", "support"):
        print(f"\nrecall@{args.k} in percent, {level}-level; Δ = model − cosine, paired bootstrap 95% interval\n")
        print(table(result["rows"], level, args.auto))


if __name__ == "__main__":
    main()

"""The learned selector with and without title prefixes, page- and support-level recall (issue 34).

One driver, four steps, everything tuned or trained on the TRAIN questions only:

1. ``prepare``: embed every unit and question the runs below need (dev and train, ``chunks``
   and ``paragraphs``, units with and without their ``"title: "`` prefix) into the disk cache;
2. ``train``: the title-free learned models (``learned_<protocol>_notitle.npz``: units without
   the prefix, page ids given as ``sources``, the way a store's metadata gives them);
3. ``split``: the out-of-sample protocol of ``benchmarks/learned_split.py`` (cosine, gMMR tuned on
   train, adaptive trained on train, the per-question λ Oracle) with ``learned`` as a dev grid,
   once on titled units (shipped models, no ids) and once on bare units with page ids (the
   title-free model, and the shipped titled model for reference); every row carries page-level
   recall (a gold page counts when any chosen unit of it is picked) and support-level recall
   (only when a chosen unit holds one of its supporting texts);
4. ``robust`` (``--robust``): HotpotQA and 2Wiki ``chunks`` at k ∈ {3, 5, 10} × fetch_k ∈
   {20, 50, 100}, each baseline tuned/trained at that setting, ``learned`` the shipped model
   (trained at k=5, fetch_k=50).

Jobs run in parallel processes (``--jobs``); each writes a JSON file into ``--out``.
``--render`` writes the RESULTS.md sections from those files.

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. \\
      python benchmarks/learned_titlefree.py --cache-dir .cache/harness --out benchmarks/results/learned_titlefree \\
      --jobs 15 --robust
    python benchmarks/learned_titlefree.py --out benchmarks/results/learned_titlefree --render \\
      --results-md benchmarks/RESULTS.md
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from typing import Any

from report import replace_section  # benchmarks/report.py: this script's folder is on the path

REPO = Path(__file__).resolve().parents[1]
DATASETS = ("hotpotqa", "musique", "2wiki")
PROTOCOLS = ("chunks", "paragraphs")
NAMES = {"hotpotqa": "HotpotQA", "musique": "MuSiQue", "2wiki": "2Wiki"}
ROBUST_K = (3, 5, 10)
ROBUST_FETCH = (20, 50, 100)
ROBUST_SETS = ("hotpotqa", "2wiki")


def _fake(texts: list[str]) -> Any:
    """A hashing bag-of-words stand-in for MiniLM (``--device fake``: plumbing checks only, no figures)."""
    import zlib

    import numpy as np

    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            out[i, zlib.crc32(w.encode()) % 64] += 1.0
    out += 1e-3
    return out / np.linalg.norm(out, axis=1, keepdims=True)


def _embedder(args: argparse.Namespace) -> Any:
    from diverse_core.embedders import MiniLMEmbedder

    if args.device == "fake":
        return _fake

    return MiniLMEmbedder(model_path=args.model_path, device=args.device, batch_size=args.batch_size)


def _no_ranx() -> None:
    """NDCG needs ranx (not reported here): skip it where ranx is not installed."""
    try:
        import ranx  # noqa: F401
    except ImportError:
        from diverse_core.eval import runner

        runner.ndcg_at_k = lambda runs, qrels, k: [math.nan] * len(runs)  # type: ignore[assignment]


def _cache(args: argparse.Namespace, embedder: Any = None) -> Any:
    from diverse_core.eval.disk_cache import DiskEmbeddingCache

    return DiskEmbeddingCache(embedder or _embedder(args), "all-MiniLM-L6-v2", args.cache_dir, progress=False)


def prepare(args: argparse.Namespace) -> dict[str, Any]:
    """Embed every text the jobs need (one process; on the GPU with ``--device cuda``)."""
    from diverse_core.eval.datasets import load_dataset
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.train_data import train_blocks

    t0 = time.perf_counter()
    texts: dict[str, None] = {}
    for name in DATASETS:
        dev = load_dataset(name, args.data_dir)
        blocks, _ = train_blocks(name, dev.records, args.data_dir, limit=_limits(args).get(name))
        benches = [dev.subset(args.dev_limit), *blocks]
        for bench in benches:
            texts.update(dict.fromkeys(r.question for r in bench.records))
            for protocol in PROTOCOLS:
                for titles in (True, False):
                    texts.update(dict.fromkeys(build_task(bench, protocol, titles=titles).unit_texts))
    cache = _cache(args)
    cache.embed(list(texts))
    return {"texts": len(texts), "seconds": round(time.perf_counter() - t0, 1), "embedded": cache.embedded}


def _limits(args: argparse.Namespace) -> dict[str, int]:
    return {k: int(v) for k, _, v in (x.partition("=") for x in args.train_limit)}


def train_job(args: argparse.Namespace, protocol: str) -> dict[str, Any]:
    """Fit the title-free model of ``protocol`` on TRAIN (bare units, page ids as sources)."""
    from diverse_core.eval.train_learned import train

    t0 = time.perf_counter()
    sel = train(DATASETS, [protocol], Path(args.out) / "models", data_dir=args.data_dir, cache_dir=args.cache_dir,
                train_limit=_limits(args), progress=False, titles=False, source_ids=True,
                embedder=_embedder(args))[protocol]
    return {"protocol": protocol, "info": sel.info, "seconds": round(time.perf_counter() - t0, 1)}


def split_job(args: argparse.Namespace, variant: str, protocol: str, datasets: tuple[str, ...] = DATASETS,
              k: int = 5, fetch_k: int = 50) -> dict[str, Any]:
    """One out-of-sample run: ``variant`` ``titled`` (shipped model, no ids) or ``notitle`` (bare units + ids)."""
    from diverse_core.eval import MethodGrid
    from diverse_core.learned import DEFAULT_MODELS
    from outofsample import SplitConfig, run_split, split_payload

    _no_ranx()
    shipped = str(DEFAULT_MODELS[protocol])
    dev: list[MethodGrid] = [MethodGrid("learned", (), {"model": shipped})]
    if variant == "notitle":
        dev.insert(0, MethodGrid("learned", (), {"model": str(Path(args.out) / "models" /
                                                             f"learned_{protocol}_notitle.npz")}))
    from diverse_core.eval.config import DEFAULT_METHODS

    methods = [g for g in DEFAULT_METHODS if g.method in ("topk", "gmmr")]  # gMMR's λ grid 0.0..1.0 as in learned_split
    cfg = SplitConfig(datasets=list(datasets), protocols=[protocol], methods=methods, k=k, fetch_k=fetch_k,
                      data_dir=args.data_dir, cache_dir=args.cache_dir, embedder=_embedder(args),
                      train_limit=_limits(args) or None, dev_limit=args.dev_limit, dev_methods={protocol: dev},
                      progress=False, titles=variant == "titled", source_ids=variant == "notitle",
                      n_boot=args.n_boot, n_perm=args.n_boot)
    t0 = time.perf_counter()
    payload = split_payload(run_split(cfg))
    payload.update({"variant": variant, "protocol": protocol, "k": k, "fetch_k": fetch_k,
                    "seconds_job": round(time.perf_counter() - t0, 1)})
    return payload


def _write(out: Path, name: str, payload: dict[str, Any]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / name).write_text(json.dumps(payload, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"[titlefree] wrote {name} ({payload.get('seconds_job', payload.get('seconds', '?'))} s)", flush=True)


def _run(fn_name: str, args: argparse.Namespace, *a: Any) -> tuple[str, dict[str, Any]]:
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    try:
        payload = globals()[fn_name](args, *a)
    except Exception as exc:  # reported, the other jobs go on
        import traceback

        payload = {"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()[-3000:]}
    return fn_name, payload


def run_all(args: argparse.Namespace) -> None:
    out = Path(args.out)
    if not args.skip_prepare:
        _write(out, "prepare.json", prepare(args))
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=ctx) as pool:
        pending: dict[Future[tuple[str, dict[str, Any]]], str] = {}
        for protocol in PROTOCOLS:
            pending[pool.submit(_run, "train_job", args, protocol)] = f"train_{protocol}.json"
        for protocol in PROTOCOLS:
            pending[pool.submit(_run, "split_job", args, "titled", protocol)] = f"split_titled_{protocol}.json"
        if args.robust:
            for k in ROBUST_K:
                for f in ROBUST_FETCH:
                    pending[pool.submit(_run, "split_job", args, "titled", "chunks", ROBUST_SETS, k, f)] = \
                        f"robust_k{k}_f{f}.json"
        while pending:
            done = next(iter(_wait(pending)))
            name = pending.pop(done)
            _, payload = done.result()
            _write(out, name, payload)
            if name.startswith("train_") and "error" not in payload:
                protocol = payload["protocol"]
                pending[pool.submit(_run, "split_job", args, "notitle", protocol)] = f"split_notitle_{protocol}.json"


def _wait(pending: dict[Future[Any], str]) -> set[Future[Any]]:
    from concurrent.futures import FIRST_COMPLETED, wait

    done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
    return done


# -- rendering ------------------------------------------------------------------------------


def _rows(task: dict[str, Any]) -> dict[str, dict[str, Any]]:
    pick = {}
    for r in task["rows"]:
        if r["method"] == "cosine":
            pick["cosine"] = r
        elif r["method"] == "gmmr" and r["note"].startswith("chosen on train"):
            pick["gmmr"] = r
        elif r["method"] == "adaptive" and r["note"].startswith("trained on the train sets"):
            pick["adaptive"] = r
        elif r["method"] == "oracle":
            pick["oracle"] = r
        elif r["method"] == "learned" and "notitle" in r["params"]:
            pick["learned_notitle"] = r
        elif r["method"] == "learned":
            pick["learned"] = r
    return pick


def _vals(row: dict[str, Any], metric: str) -> Any:
    import numpy as np

    return np.asarray(row["dev"] if metric == "page" else row["support"], dtype=np.float64)


def _ci(d: Any, n_boot: int) -> str:
    import numpy as np
    from diverse_core.eval.stats import bootstrap_ci

    lo, hi = bootstrap_ci(d, n_boot=n_boot, seed=0)
    return f"{100 * float(np.mean(d)):+.1f} [{100 * lo:+.1f}, {100 * hi:+.1f}]"


def _pct(v: Any) -> str:
    import numpy as np

    x = float(np.nanmean(v)) if len(v) else math.nan
    return "-" if math.isnan(x) else f"{100 * x:.1f}"


def _cells(out: Path, variant: str) -> list[dict[str, Any]]:
    cells = []
    for protocol in PROTOCOLS:
        path = out / f"split_{variant}_{protocol}.json"
        if not path.is_file():
            continue
        payload = json.loads(path.read_text(encoding="utf-8"))
        if "error" in payload:
            continue
        for t in payload["tasks"]:
            cells.append({"dataset": t["dataset"], "protocol": t["protocol"], "n": t["n_dev"], "rows": _rows(t)})
    return cells


def _table(cells: list[dict[str, Any]], learned: str, metric: str, n_boot: int) -> list[str]:
    import numpy as np

    lines = ["| cell | n | cosine | fixed gMMR (train) | adaptive | **learned** | λ Oracle | Δ learned − adaptive | "
             "Δ learned − fixed gMMR | Δ learned − λ Oracle |", "|---|---|---|---|---|---|---|---|---|---|"]
    pooled: dict[str, list[Any]] = {m: [] for m in ("adaptive", "gmmr", "oracle", learned)}
    for c in cells:
        r = c["rows"]
        if learned not in r:
            continue
        v = {m: _vals(r[m], metric) for m in ("cosine", "gmmr", "adaptive", learned, "oracle")}
        if np.all(np.isnan(v[learned])):
            continue
        for m in pooled:
            pooled[m].append(v[m])
        lines.append(
            f"| {NAMES[c['dataset']]} {c['protocol']} | {c['n']} | {_pct(v['cosine'])} | {_pct(v['gmmr'])} "
            f"({r['gmmr']['params']}) | {_pct(v['adaptive'])} | **{_pct(v[learned])}** | {_pct(v['oracle'])} | "
            f"{_ci(v[learned] - v['adaptive'], n_boot)} | {_ci(v[learned] - v['gmmr'], n_boot)} | "
            f"{_ci(v[learned] - v['oracle'], n_boot)} |")
    if pooled[learned]:
        p = {m: np.concatenate(x) for m, x in pooled.items()}
        lines.append(f"| **pooled** | {len(p[learned])} | | | | | | {_ci(p[learned] - p['adaptive'], n_boot)} | "
                     f"{_ci(p[learned] - p['gmmr'], n_boot)} | {_ci(p[learned] - p['oracle'], n_boot)} |")
    return lines


def render(args: argparse.Namespace) -> str:
    out = Path(args.out)
    cmd = ("env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OPENBLAS_NUM_THREADS=1 PYTHONPATH=shared:. python "
           "benchmarks/learned_titlefree.py --cache-dir .cache/harness --out benchmarks/results/learned_titlefree "
           "--jobs 15 --robust")
    lines = ["<!-- learned-titlefree:start (benchmarks/learned_titlefree.py) -->",
             "## Learned selector without title prefixes, and support-level recall (issue 34)", "",
             "Reproduce (then `--render --results-md benchmarks/RESULTS.md` writes this section):", "", "```bash", cmd,
             "```", ""]
    note = out / "NOTE.md"
    if note.is_file():
        lines += [note.read_text(encoding="utf-8").strip(), ""]
    titled, bare = _cells(out, "titled"), _cells(out, "notitle")
    for title, cells, learned, what in (
        ("Titled units (`\"title: text\"`), shipped models, no ids", titled, "learned", "page"),
        ("Titled units, support-level", titled, "learned", "support"),
        ("Bare units (no title prefix), page ids as `sources`, title-free model", bare, "learned_notitle", "page"),
        ("Bare units, page ids as `sources`, title-free model, support-level", bare, "learned_notitle", "support"),
        ("Bare units, page ids as `sources`, shipped titled model (reference)", bare, "learned", "page"),
        ("Bare units, page ids as `sources`, shipped titled model, support-level", bare, "learned", "support"),
    ):
        if not cells:
            continue
        level = ("page-level (lenient: any chosen unit of a gold page)" if what == "page" else
                 "support-level (strict: a chosen unit must hold a supporting text of the gold page)")
        lines += [f"**{title}**: dev recall@5 in percent, {level}; Δ with paired bootstrap 95% intervals "
                  f"({args.n_boot} resamples).", "", *_table(cells, learned, what, args.n_boot), ""]
    robust = sorted(out.glob("robust_k*_f*.json"),
                    key=lambda p: tuple(int(x[1:]) for x in p.stem.split("_")[1:]))
    if robust:
        lines += robust_markdown(robust, args.n_boot)
    lines.append("<!-- learned-titlefree:end -->")
    return "\n".join(lines)


def robust_markdown(paths: list[Path], n_boot: int) -> list[str]:
    import numpy as np

    lines = ["**k × fetch_k** (titled `chunks`, dev; fixed gMMR tuned and adaptive trained on HotpotQA + 2Wiki TRAIN at "
             "each setting; `learned` = the shipped model, trained at k=5, fetch_k=50; recall@k in percent, page / "
             "support):", "",
             "| dataset | k | fetch_k | n | fixed gMMR | adaptive | **learned** | λ Oracle | Δ learned − best other "
             "(page) |", "|---|---|---|---|---|---|---|---|---|"]
    for path in paths:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if "error" in payload:
            lines.append(f"| {path.stem} | | | | error: {payload['error'][:80]} | | | | |")
            continue
        for t in payload["tasks"]:
            r = _rows(t)
            if "learned" not in r:
                continue

            def both(m: str, r: dict[str, Any] = r) -> str:
                return f"{_pct(_vals(r[m], 'page'))} / {_pct(_vals(r[m], 'support'))}"

            best = max(("gmmr", "adaptive", "oracle"), key=lambda m, r=r: float(np.mean(_vals(r[m], "page"))))
            lines.append(f"| {NAMES[t['dataset']]} | {payload['k']} | {payload['fetch_k']} | {t['n_dev']} | "
                         f"{both('gmmr')} | {both('adaptive')} | **{both('learned')}** | {both('oracle')} | "
                         f"{_ci(_vals(r['learned'], 'page') - _vals(r[best], 'page'), n_boot)} vs {best} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--cache-dir", default=None)
    ap.add_argument("--data-dir", default=None)
    ap.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "learned_titlefree"))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--robust", action="store_true", help="also the k x fetch_k grid")
    ap.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N")
    ap.add_argument("--dev-limit", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=10_000)
    ap.add_argument("--device", default="cpu", help="torch device of the embedder (cpu, cuda)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--model-path", default=None, help="MiniLM folder (default: the packaged model)")
    ap.add_argument("--skip-prepare", action="store_true")
    ap.add_argument("--only", default=None, help="run one job: prepare | train:<protocol> | split:<variant>:<protocol>")
    ap.add_argument("--render", action="store_true", help="only write the Markdown section from --out")
    ap.add_argument("--results-md", default=None)
    args = ap.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if args.render:
        text = render(args)
        print(text)
        if args.results_md:
            replace_section(Path(args.results_md), text, "<!-- learned-titlefree:start (benchmarks/learned_titlefree.py) -->", "<!-- learned-titlefree:end -->")
        return 0
    if args.only:
        kind, *rest = args.only.split(":")
        fn = {"prepare": "prepare", "train": "train_job", "split": "split_job"}[kind]
        _, payload = _run(fn, args, *rest)
        _write(Path(args.out), args.only.replace(":", "_") + ".json", payload)
        return 0 if "error" not in payload else 1
    run_all(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Train the shipped adaptive λ selector: ``python -m diverse_core.eval.train_adaptive``.

One command, TRAIN questions only (HotpotQA, MuSiQue, 2Wiki train files, any question
shared with a dev file removed), ``chunks`` protocol, k=5, fetch_k=50, the packaged
MiniLM: builds every train question's candidate pool, the gMMR set of each λ in
0.1..1.0 and its features, labels each set with its gold recall (the harness's Oracle
labels), fits the ridge scorer (penalty by 5-fold cross-validation on train) and writes
``diverse_core/adaptive/models/gmmr_chunks.npz``. Deterministic: the same data give the
same file. Embeddings come from the disk cache (the first run embeds the train corpora).

Example:
    python -m diverse_core.eval.train_adaptive --protocol chunks --out /tmp/my_model.npz
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..adaptive import DEFAULT_MODEL, AdaptiveSelector
from ..embedders import EMBEDDERS, get_embedder
from .datasets import load_dataset
from .disk_cache import DiskEmbeddingCache, embedding_cache
from .protocols import build_task
from .records import Benchmark
from .runner import prepared_inputs
from .train_data import TRAIN_SETS, train_blocks

__all__ = ["adaptive_examples", "train", "main"]


def adaptive_examples(blocks: Sequence[Benchmark], protocol: str, cache: DiskEmbeddingCache, k: int, fetch_k: int,
                      *, titles: bool = True) -> list[Any]:
    """The selector's training records (:class:`~diverse_core.adaptive.QueryExample`) of the questions of ``blocks``.

    Each carries the question and candidate texts (for the text-aware variant) and is
    labelled with its sets' gold recall over all the question's gold passages (the
    harness's Oracle labels).
    """
    from ..adaptive import DEFAULT_LAMBDAS, query_example

    out = []
    for bench in blocks:
        task = build_task(bench, protocol, titles=titles)
        for qi, inp, prep in prepared_inputs(task, cache, k, fetch_k):
            assert inp.gold_groups is not None
            out.append(query_example(prep, inp.gold_groups, DEFAULT_LAMBDAS, question=inp.question,
                                     texts=inp.texts, n_gold=len(task.gold[qi])))
    return out


def train(
    datasets: Sequence[str] = TRAIN_SETS,
    protocol: str = "chunks",
    out: str | Path = DEFAULT_MODEL,
    *,
    data_dir: str | Path | None = None,
    cache_dir: str | Path | None = None,
    k: int = 5,
    fetch_k: int = 50,
    train_limit: Mapping[str, int] | None = None,
    train_block: Mapping[str, int] | None = None,
    progress: bool = True,
    embedder: Any = None,
) -> AdaptiveSelector:
    """Fit the selector on the train questions of ``datasets`` and save it to ``out``.

    ``train_limit`` / ``train_block`` (dataset -> N) select the first N train questions and
    the block size (:func:`~diverse_core.eval.train_data.train_blocks`).
    ``embedder``: default the packaged MiniLM; recorded in the model's info.
    """
    limits, sizes = train_limit or {}, train_block or {}
    cache = embedding_cache(embedder, None, cache_dir, progress=progress)
    examples, counts = [], {}
    for name in datasets:
        blocks, dropped = train_blocks(name, load_dataset(name, data_dir).records, data_dir,
                                       limit=limits.get(name), block=sizes.get(name))
        found = adaptive_examples(blocks, protocol, cache, k, fetch_k)
        examples += found
        counts[name] = len(found)
        if progress:
            print(f"[train] {name}/{protocol}: {len(found)} questions ({dropped} dropped: shared with dev)",
                  flush=True)
    sel = AdaptiveSelector.fit_examples(
        examples,
        info={"protocol": protocol, "train_sets": counts, "k": k, "fetch_k": fetch_k,
              "embedder": cache.model_name},
    )
    path = sel.save(out)
    if progress:
        for v, var in sel.variants.items():
            print(f"[train] {v}: alpha={var.scorer.alpha:g} cv={var.scorer.info['cv_pick_quality']}", flush=True)
        print(f"[train] -> {path} ({path.stat().st_size} bytes)", flush=True)
    return sel


def build_parser(prog: str = "python -m diverse_core.eval.train_adaptive") -> argparse.ArgumentParser:
    """The command's options (``diverse-rag train adaptive`` passes its own ``prog``)."""
    from .disk_cache import user_model_dir

    parser = argparse.ArgumentParser(prog=prog, description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=list(TRAIN_SETS), choices=list(TRAIN_SETS))
    parser.add_argument("--protocol", default="chunks", choices=["chunks", "paragraphs"])
    out = user_model_dir() / DEFAULT_MODEL.name
    parser.add_argument("--out", default=str(out),
                        help=f"model file (default: {out}; load it with model=PATH)")
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--embedder", default="minilm", choices=list(EMBEDDERS),
                        help="embedder (default minilm; e5 needs the e5 extra); recorded in the model's info")
    parser.add_argument("--cache-dir", default=None)
    parser.add_argument("--train-limit", nargs="*", default=[], metavar="NAME=N",
                        help="first N train questions of a dataset (default: all)")
    parser.add_argument("--train-block", nargs="*", default=[], metavar="NAME=N",
                        help="questions per train block (default: diverse_core.eval.train_data.TRAIN_BLOCK)")
    return parser


def main(argv: Sequence[str] | None = None, prog: str | None = None) -> int:
    """Command-line entry point."""
    args = (build_parser(prog) if prog else build_parser()).parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    t0 = time.perf_counter()
    pairs = [dict((k, int(v)) for k, _, v in (x.partition("=") for x in items))
             for items in (args.train_limit, args.train_block)]
    train(args.datasets, args.protocol, args.out, data_dir=args.data_dir, cache_dir=args.cache_dir,
          train_limit=pairs[0], train_block=pairs[1], embedder=get_embedder(args.embedder))
    print(f"[train] done in {time.perf_counter() - t0:.0f} s")
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

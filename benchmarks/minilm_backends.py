"""The packaged MiniLM on its two backends: numpy forward pass vs sentence-transformers on torch.

One process embeds the same chunk-sized texts (the first ``--n`` passages of the
2WikiMultihopQA corpus in ``../shared/data``, ``title. text``) with
``MiniLMEmbedder(backend="numpy")`` and ``MiniLMEmbedder(backend="torch")``, and prints for each
the model load time (with a 16-text warm-up) and texts per second, the numpy/torch speed ratio,
and the per-text cosine between the two backends' vectors. The texts go in slices of
``--slice`` texts, each slice to both backends in turn (alternating which goes first), so a
change of machine load during the run weighs on both alike::

    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/minilm_backends.py
    env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python benchmarks/minilm_backends.py --n 200

Needs the packaged model; the torch rows need the ``embeddings`` extra (skipped without it).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "shared"), str(ROOT)]

from diverse_core.embedders import MiniLMEmbedder  # noqa: E402

DEFAULT_DATA = ROOT.parent / "shared" / "data"


def load_texts(data_dir: Path, n: int) -> list[str]:
    """The first ``n`` corpus passages, ``title. text``."""
    path = data_dir / "2wikimultihopqa" / "2wikimultihopqa_corpus.json"
    if not path.exists():
        raise SystemExit(f"corpus not found at {path} (pass --data)")
    corpus = json.loads(path.read_text())
    return [f"{c['title']}. {c['text']}" for c in corpus[:n]]


def load(backend: str, texts: list[str], batch_size: int) -> tuple[MiniLMEmbedder, float]:
    """A loaded embedder of one backend and its load + 16-text warm-up seconds."""
    emb = MiniLMEmbedder(batch_size=batch_size, backend=backend)  # type: ignore[arg-type]
    start = time.perf_counter()
    emb(texts[:16])
    return emb, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1000, help="texts to embed")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--slice", type=int, default=100, help="texts per alternation")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    texts = load_texts(args.data, args.n)
    emb = MiniLMEmbedder(backend="numpy")
    from diverse_core.minilm_numpy import NumpyMiniLM

    tokenizer = NumpyMiniLM(emb.model_path).tokenizer
    lengths = np.array([len(tokenizer.encode(t, 256)) for t in texts])
    print(f"{len(texts)} passages, tokens per text (with [CLS]/[SEP], cut at 256): "
          f"median {np.median(lengths):.0f}, max {lengths.max()}; batch_size={args.batch_size}")
    backends = ["numpy"]
    if importlib.util.find_spec("sentence_transformers") and importlib.util.find_spec("torch"):
        backends.append("torch")
    else:
        print("torch: skipped (sentence-transformers or torch is not installed)")
    loaded = {backend: load(backend, texts, args.batch_size) for backend in backends}
    seconds = dict.fromkeys(backends, 0.0)
    parts: dict[str, list[np.ndarray]] = {backend: [] for backend in backends}
    for i, start in enumerate(range(0, len(texts), args.slice)):
        chunk = texts[start : start + args.slice]
        for backend in backends if i % 2 == 0 else backends[::-1]:
            began = time.perf_counter()
            parts[backend].append(loaded[backend][0](chunk))
            seconds[backend] += time.perf_counter() - began
    rates = {backend: len(texts) / seconds[backend] for backend in backends}
    for backend in backends:
        print(f"{backend:6s} load + 16-text warm-up {loaded[backend][1]:6.2f} s   "
              f"{rates[backend]:7.1f} texts/s")
    if "torch" in rates:
        a, b = np.concatenate(parts["numpy"]), np.concatenate(parts["torch"])
        cos = np.sum(a * b, axis=1)
        print(f"numpy / torch speed: {rates['numpy'] / rates['torch']:.2f}x")
        print(f"cosine(numpy, torch) per text: min {cos.min():.7f}, mean {cos.mean():.7f}")

if __name__ == "__main__":
    main()

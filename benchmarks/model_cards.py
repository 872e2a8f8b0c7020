"""Print the cards of the shipped trained models as one Markdown table (for ``benchmarks/RESULTS.md``).

One row per model file: its layout format, what it was trained on (sets and questions; which sets gave
source ids), k / fetch_k, the training embedder and the embedders it was validated on, its size, and
(``learned``) the text variant's five largest standardised step-model weights. Everything is read from
the files themselves (their ``info``); the full card of a ``learned`` model is
``ModelCard.from_selector(LearnedSelector.load(path)).markdown()``.

    PYTHONPATH=shared:. python benchmarks/model_cards.py
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1] / "shared" / "diverse_core"


def _row(path: Path) -> str:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        top = ""
        if meta.get("kind") == "learned":
            names = json.loads(str(z["text__step_meta"]))["feature_names"]
            w = z["text__step_weights"]
            best = np.argsort(-np.abs(w), kind="stable")[:5]
            top = ", ".join(f"{names[i]} {w[i]:+.2f}" for i in best)
    info = meta["info"]
    sets = ", ".join(f"{k} {v}" for k, v in info["train_sets"].items())
    ids = info.get("source_id_sets", ["all"] if info.get("source_ids") else [])
    return (f"| `{path.name}` | {meta['format']} | {sets} ({info['n_questions']}) | {', '.join(ids) or 'none'} | "
            f"{info['protocol']}, k={info['k']}, fetch_k={info['fetch_k']} | {info['embedder']} | "
            f"{', '.join(info.get('validated_embedders', [])) or '–'} | {path.stat().st_size / 1024:.0f} kB | {top} |")


def main() -> None:
    print("| file | format | trained on (questions) | source ids from | protocol | embedder | validated on | size | "
          "largest weights (text variant) |")
    print("|---|---|---|---|---|---|---|---|---|")
    for path in [*sorted((ROOT / "learned" / "models").glob("*.npz")), *sorted((ROOT / "adaptive" / "models").glob("*.npz"))]:
        print(_row(path))


if __name__ == "__main__":
    main()

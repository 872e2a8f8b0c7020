"""``vendi``: Vendi Retrieval Score selection (``vendi-rag.txt`` Eq. 1-2).

PLACEHOLDER: being implemented (issue 2). Currently a slow per-candidate reference.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..registry import MethodSpec, sweep_by_loop
from ..validation import PreparedInputs, check_unit_interval

__all__ = ["vendi_select", "SPEC"]


def _vs(kernel: NDArray[np.float64]) -> float:
    m = kernel.shape[0]
    w = np.linalg.eigvalsh(kernel / m)
    w = w[w > 1e-12]
    return float(np.exp(-(w * np.log(w)).sum()))


def vendi_select(prep: PreparedInputs, *, s: float = 0.5, **_: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    cand, rel, k = prep.candidates, prep.relevance, prep.k
    lo, hi = rel.min(), rel.max()
    reln = (rel - lo) / max(hi - lo, 1e-9)
    chosen: list[int] = []
    scores: list[float] = []
    for _step in range(k):
        best, best_val = -1, -np.inf
        for c in range(cand.shape[0]):
            if c in chosen:
                continue
            t = chosen + [c]
            m = len(t)
            vs = 0.0 if m == 1 else (_vs(cand[t] @ cand[t].T) - 1) / (m - 1)
            val = s * vs + (1 - s) * reln[t].mean()
            if val > best_val + 1e-12:
                best, best_val = c, val
        chosen.append(best)
        scores.append(best_val)
    return np.array(chosen, dtype=np.int64), np.array(scores)


def _check(params: dict[str, Any]) -> dict[str, Any]:
    params["s"] = check_unit_interval(params["s"], "s")
    return params


SPEC = MethodSpec(
    name="vendi",
    run=vendi_select,
    defaults={"s": 0.5},
    check=_check,
    param="s",
    run_sweep=lambda prep, values, **p: sweep_by_loop(vendi_select)(prep, values, "s", **p),
)

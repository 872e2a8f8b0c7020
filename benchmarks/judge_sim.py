"""A simulated DF-RAG Evaluator of known quality (no LLM): how good must the judge be?

DF-RAG scores the gMMR set of every ``lambda_mult`` with an LLM Evaluator and keeps the
best-scored one (ties: upper median). Here the Evaluator is simulated from the gold
passages, which the harness knows:

* ``simjudge`` (parameter ``noise``): the judge's score of a set is its true gold
  recall plus Gaussian noise of standard deviation ``noise``. ``noise=0`` is the
  per-question Oracle; large ``noise`` is a random choice.
* ``simjudge_p`` (parameter ``p``): each score is the set's true gold recall with
  probability ``p`` and a uniform random number in [0, 1] otherwise. ``p=1`` is the
  Oracle, ``p=0`` random.

Each set gets one verdict per question (drawn once, seeded by the question id, the
parameter and ``seed``), then the choice follows DF-RAG: ``sampling="uniform"``
evaluates every λ of the grid (one judge call each) and takes
:func:`~diverse_core.tuning.argmax_upper_median`; ``sampling="binary"`` calls the judge
only where :func:`~diverse_core.tuning.binary_search_sample` asks. ``info["calls"]``
records the judge calls of each question. Both are harness plugins: ::

    diverse-rag bench --plugin benchmarks.judge_sim --datasets hotpotqa:chunks \
        --methods cosine gmmr=0:1:0.1 "simjudge=0,0.1,0.2@sampling=binary"

They read :attr:`MethodInput.gold_groups`, which only simulations may do. This module serves
``benchmarks/judge_quality.py``; elsewhere load it with ``--plugin judge_sim`` from this folder
(``--plugin benchmarks.judge_sim`` from the repository root).
"""

from __future__ import annotations

import zlib
from typing import Any

import numpy as np
from diverse_core.adaptive import DEFAULT_LAMBDAS, coverage_labels, lambda_sets
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.plugins import MethodInput, MethodOutput, register_plugin
from diverse_core.tuning import argmax_upper_median, binary_search_sample
from diverse_core.validation import prepare_inputs
from numpy.typing import NDArray

__all__ = ["simulated_choice", "simjudge", "simjudge_p", "SAMPLINGS"]

SAMPLINGS = ("uniform", "binary")


def _rng(qid: str, quality: float, seed: int, mode: str) -> np.random.Generator:
    key = zlib.crc32(f"{mode}|{qid}|{quality:.6g}".encode())
    return np.random.default_rng([int(seed), key])


def simulated_choice(
    true_scores: NDArray[np.float64],
    judged: NDArray[np.float64],
    lambdas: NDArray[np.float64],
    sampling: str,
) -> tuple[float, int]:
    """DF-RAG's λ choice from the judge's scores: (chosen λ, judge calls)."""
    if sampling == "uniform":
        return argmax_upper_median(lambdas, judged), int(lambdas.size)
    if sampling == "binary":
        position = {float(v): i for i, v in enumerate(lambdas)}
        res = binary_search_sample(lambdas, lambda v: float(judged[position[float(v)]]))
        return res.chosen, res.n_evaluations
    raise InvalidParameterError(f"sampling must be one of {list(SAMPLINGS)}; got sampling={sampling!r}")


_LAST: dict[str, Any] = {}


def _sets_and_truth(inp: MethodInput, lambdas: NDArray[np.float64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """gMMR sets and their gold recall; the last question's are reused (the runner calls every
    setting of one question in a row)."""
    assert inp.gold_groups is not None
    emb = np.ascontiguousarray(inp.embeddings)
    key = (inp.qid, inp.k, emb.shape, hash(emb.tobytes()), hash(np.asarray(inp.gold_groups).tobytes()))
    if _LAST.get("key") != key:
        prep = prepare_inputs(inp.query_embedding, inp.embeddings, inp.k, None)
        sets, _ = lambda_sets(prep, lambdas)
        _LAST.update(key=key, sets=sets, true=coverage_labels(sets, inp.gold_groups))
    return _LAST["sets"], _LAST["true"]


def _judge(inp: MethodInput, mode: str, quality: float, sampling: str, seed: int) -> MethodOutput:
    if inp.gold_groups is None:
        raise InvalidParameterError("the simulated judge needs the harness's gold_groups (run it in the harness)")
    lambdas = np.asarray(DEFAULT_LAMBDAS, dtype=np.float64)
    sets, true = _sets_and_truth(inp, lambdas)
    rng = _rng(inp.qid, quality, seed, mode)
    if mode == "noise":
        judged = true + rng.normal(0.0, quality, size=true.shape) if quality > 0 else true.copy()
    else:
        right = rng.random(true.shape) < quality
        judged = np.where(right, true, rng.random(true.shape))
    lam, calls = simulated_choice(true, judged, lambdas, sampling)
    row = int(np.flatnonzero(lambdas == lam)[0])
    return MethodOutput(sets[row].tolist(), {"lambda": lam, "calls": calls})


def _check_common(sampling: str, seed: Any) -> None:
    if sampling not in SAMPLINGS:
        raise InvalidParameterError(f"sampling must be one of {list(SAMPLINGS)}; got sampling={sampling!r}")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InvalidParameterError(f"seed must be an integer; got seed={seed!r}")


def simjudge(inp: MethodInput, noise: float = 0.0, sampling: str = "uniform", seed: int = 0) -> MethodOutput:
    """Plugin ``simjudge``: judge score = true gold recall + N(0, noise^2)."""
    _check_common(sampling, seed)
    if not np.isfinite(noise) or noise < 0:
        raise InvalidParameterError(f"noise must be a finite number >= 0; got noise={noise!r}")
    return _judge(inp, "noise", float(noise), sampling, seed)


def simjudge_p(inp: MethodInput, p: float = 1.0, sampling: str = "uniform", seed: int = 0) -> MethodOutput:
    """Plugin ``simjudge_p``: judge score = true gold recall with probability p, else uniform noise."""
    _check_common(sampling, seed)
    if not 0.0 <= p <= 1.0:
        raise InvalidParameterError(f"p must be in [0, 1]; got p={p!r}")
    return _judge(inp, "p", float(p), sampling, seed)


register_plugin("simjudge", simjudge, param="noise", replace=True)
register_plugin("simjudge_p", simjudge_p, param="p", replace=True)

"""The simulated Evaluator: a perfect judge is the Oracle, binary search calls the judge less."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import BenchConfig, MethodInput, parse_method, run_benchmark
from test_eval_runner import _toy

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from judge_sim import simjudge, simjudge_p, simulated_choice  # noqa: E402  (benchmarks/judge_sim.py)


def _run(tmp_path: Path, embedder: Any, specs: list[str]) -> dict[str, Any]:
    cfg = BenchConfig(
        tasks=[("toy", "chunks")], benchmarks={"toy": _toy("toy", n_docs=60, n_q=12)},
        methods=[parse_method(s) for s in ["cosine", "gmmr=0:1:0.1", *specs]], k=3, fetch_k=12,
        embedder=embedder, model_name="fake", cache_dir=tmp_path / "c", out_dir=None, progress=False,
    )
    return {f"{s.method} {s.label}": s for s in run_benchmark(cfg).tasks[0].settings}


def test_a_perfect_judge_is_the_oracle_and_sampling_is_counted(tmp_path: Path, fake_embedder: Any) -> None:
    rows = _run(tmp_path, fake_embedder, ["simjudge=0@sampling=uniform", "simjudge=0@sampling=binary",
                                          "simjudge_p=1", "simjudge=5@seed=1"])
    oracle = next(v for k, v in rows.items() if k.startswith("oracle"))
    perfect = rows["simjudge noise=0, sampling=uniform"]
    assert perfect.per_query["recall"] == oracle.per_query["recall"]
    assert [i["lambda"] for i in perfect.info] == [i["lambda_mult"] for i in oracle.info]
    assert rows["simjudge_p p=1"].per_query["recall"] == oracle.per_query["recall"]
    assert all(i["calls"] == 10 for i in perfect.info)
    binary = rows["simjudge noise=0, sampling=binary"]
    assert all(1 <= i["calls"] <= 2 * math.ceil(math.log2(10)) for i in binary.info)
    assert np.mean([i["calls"] for i in binary.info]) < 10
    assert rows["simjudge noise=5, seed=1"].mean("recall") <= oracle.mean("recall")


def test_verdicts_are_seeded_and_checked() -> None:
    rng = np.random.default_rng(0)
    inp = MethodInput("q", rng.normal(size=8).astype(np.float32), ["t"] * 20,
                      rng.normal(size=(20, 8)).astype(np.float32), np.zeros(20), 3, qid="a",
                      gold_groups=np.where(rng.random(20) < 0.3, 1, -1))
    a, b = simjudge(inp, noise=0.3, seed=2), simjudge(inp, noise=0.3, seed=2)
    assert a.indices == b.indices and a.info == b.info
    with pytest.raises(InvalidParameterError, match="sampling"):
        simjudge(inp, sampling="ternary")
    with pytest.raises(InvalidParameterError, match="p must be"):
        simjudge_p(inp, p=1.5)
    with pytest.raises(InvalidParameterError, match="noise"):
        simjudge(inp, noise=-1.0)
    no_gold = MethodInput("q", inp.query_embedding, inp.texts, inp.embeddings, inp.relevance, 3)
    with pytest.raises(InvalidParameterError, match="gold_groups"):
        simjudge(no_gold)


def test_choice_rules() -> None:
    lams = np.array([0.1, 0.2, 0.3, 0.4])
    true = np.array([0.0, 1.0, 1.0, 0.5])
    assert simulated_choice(true, true, lams, "uniform") == (0.3, 4)  # tie 0.2/0.3 -> upper median
    lam, calls = simulated_choice(true, true, lams, "binary")
    assert lam in (0.2, 0.3) and calls < 4

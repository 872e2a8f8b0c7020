"""End-to-end runs of the harness on tiny data with a fake deterministic embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError, UnknownMethodError
from diverse_core.eval import (
    BenchConfig,
    MethodGrid,
    MethodInput,
    MethodOutput,
    parse_method,
    register_plugin,
    run_benchmark,
)
from diverse_core.eval.cli import add_arguments, config_from_args, register
from diverse_core.eval.metrics import recall_at_k
from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord

METHODS = [
    parse_method("cosine"),
    parse_method("mmr=0.5"),
    parse_method("gmmr=0:1:0.1"),
    parse_method("dartboard=0.1,0.3"),
    parse_method("vendi=0,0.5,1"),
]


def _toy(name: str, metric: str = "recall", n_docs: int = 40, n_q: int = 6) -> Benchmark:
    rng = np.random.default_rng(0)
    b = CorpusBuilder()
    ids = [b.add(f"Title {i}", f"Doc {i} first. Doc {i} second. Doc {i} third {'x' * (i % 3)}.") for i in range(n_docs)]
    recs = []
    for q in range(n_q):
        gold = tuple(rng.choice(ids, size=2, replace=False).tolist())
        pool = tuple(dict.fromkeys(gold + tuple(rng.choice(ids, size=6, replace=False).tolist())))
        recs.append(QARecord(f"q{q}", f"question {q}?", (f"Doc {gold[0]}",), gold, pool))
    return Benchmark(name, tuple(recs), b.docs, ("pool", "paragraphs", "chunks"), metric)


def _config(tmp_path: Path, embedder: Any, **kw: Any) -> BenchConfig:
    base: dict[str, Any] = {
        "tasks": [("toy", "paragraphs"), ("toy", "chunks"), ("toy", "pool"), ("rgb", "paragraphs")],
        "benchmarks": {"toy": _toy("toy"), "rgb": _toy("rgb", "ndcg")},
        "methods": METHODS,
        "k": 3,
        "fetch_k": 10,
        "embedder": embedder,
        "model_name": "fake",
        "cache_dir": tmp_path / "cache",
        "out_dir": tmp_path / "out",
        "results_md": tmp_path / "RESULTS.md",
        "progress": False,
    }
    base.update(kw)
    return BenchConfig(**base)


def test_end_to_end_outputs_and_invariants(tmp_path: Path, fake_embedder: Any, make_fake: Any) -> None:
    res = run_benchmark(_config(tmp_path, fake_embedder))
    out = tmp_path / "out"
    for name in ("summary.json", "summary.md", "recall_vs_lambda.png", "gmmr_jaccard.png",
                 "vendi_rank_agreement.png", "dartboard_rgb.png"):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    md = (tmp_path / "RESULTS.md").read_text()
    assert "| dataset | protocol | method | params | recall@3 |" in md
    assert "| dataset | protocol | method | params | ndcg@3 |" in md
    assert "| toy | chunks | oracle |" in md
    summary = json.loads((out / "summary.json").read_text())
    assert {r["method"] for r in summary["rows"]} == {"cosine", "mmr", "gmmr", "dartboard", "vendi", "oracle"}
    per_q = json.loads((out / "per_query" / "toy__paragraphs.json").read_text())
    assert len(per_q["qids"]) == 6

    for task in res.tasks:
        by = {(s.method, s.label): s for s in task.settings}
        cos, g1 = by[("cosine", "-")], by[("gmmr", "lambda_mult=1")]
        assert cos.picks == g1.picks  # lambda = 1 is pure relevance
        assert all(t == pytest.approx(1.0) for t in by[("vendi", "s=0")].per_query["tau"])
        # recall recomputed from the stored picks
        bench = _toy(task.dataset, task.metric)
        for qi, rec in enumerate(bench.records):
            assert cos.per_query["recall"][qi] == pytest.approx(
                recall_at_k(cos.picks[qi], rec.gold_doc_ids, k=len(cos.picks[qi]))
            )
        # the oracle takes the best lambda in 0.1..1.0 per question, ties -> upper median
        grid = [round(0.1 * i, 1) for i in range(1, 11)]
        scores = np.array([by[("gmmr", f"lambda_mult={v:g}")].per_query[task.metric] for v in grid])
        oracle = by[("oracle", "lambda_mult in 0.1..1 per query")]
        assert oracle.per_query[task.metric] == pytest.approx(scores.max(axis=0).tolist())
        for qi, lam in enumerate(task.oracle_lambdas):
            tied = sorted(v for v, s in zip(grid, scores[:, qi], strict=True) if s == scores[:, qi].max())
            assert lam == tied[len(tied) // 2]
        jac = np.array(task.jaccard)
        assert jac.shape == (11, 11) and np.allclose(np.diag(jac), 1.0)
        if task.protocol == "pool":
            pools = {d for r in bench.records for d in r.pool_doc_ids}
            assert all(set(p) <= pools for p in cos.picks)

    # a second run over the same texts embeds nothing
    again = make_fake()
    res2 = run_benchmark(_config(tmp_path, again, out_dir=None, results_md=None))
    assert again.calls == [] and res2.texts_embedded == 0


def test_plugin_hook(tmp_path: Path, fake_embedder: Any) -> None:
    seen: list[MethodInput] = []

    def last_k(inp: MethodInput, reverse: float = 0.0) -> MethodOutput:
        seen.append(inp)
        n = len(inp.texts)
        idx = list(range(n - inp.k, n))
        return MethodOutput(idx[::-1] if reverse else idx, {"n": n})

    register_plugin("last_k", last_k, param="reverse", replace=True)
    with pytest.raises(InvalidParameterError, match="already registered"):
        register_plugin("last_k", last_k)
    cfg = _config(tmp_path, fake_embedder, tasks=[("toy", "paragraphs")],
                  methods=[MethodGrid("topk"), parse_method("last_k=0,1")], out_dir=None, results_md=None)
    res = run_benchmark(cfg)
    assert len(seen) == 12  # 6 questions x 2 values
    assert seen[0].embeddings.shape == (10, 32) and np.all(np.diff(seen[0].relevance) <= 0)
    settings = {s.label: s for s in res.tasks[0].settings}
    assert settings["reverse=0"].info[0] == {"n": 10}
    assert set(settings["reverse=0"].picks[0]) == set(settings["reverse=1"].picks[0])


def test_bad_configs_fail_clearly(tmp_path: Path, fake_embedder: Any) -> None:
    with pytest.raises(InvalidParameterError, match="fetch_k must be >= k"):
        run_benchmark(_config(tmp_path, fake_embedder, k=5, fetch_k=3))
    # a grid without the Oracle's values runs (issue 18): the Oracle row is simply left out
    res = run_benchmark(_config(tmp_path, fake_embedder, methods=[parse_method("gmmr=0.5,1")], out_dir=None))
    assert [s.label for s in res.tasks[0].settings] == ["lambda_mult=0.5", "lambda_mult=1"]
    with pytest.raises(InvalidParameterError, match="unknown protocol"):
        run_benchmark(_config(tmp_path, fake_embedder, tasks=[("rgb", "sentences")]))
    with pytest.raises(UnknownMethodError):
        parse_method("nonsense=1")
    with pytest.raises(InvalidParameterError, match="lo:hi:step"):
        parse_method("gmmr=1:0:0.1")
    assert parse_method("dartboard=0.1@triage_k=20").params == {"triage_k": 20}


def test_cli_parsing_and_registration(tmp_path: Path) -> None:
    import argparse

    top = argparse.ArgumentParser()
    sub = top.add_subparsers(dest="command")
    register(sub)
    args = top.parse_args(["bench", "--datasets", "hotpotqa", "rgb:paragraphs", "2wiki", "--quick", "3",
                           "--methods", "cosine", "gmmr=0:1:0.1", "--out", str(tmp_path),
                           "--data-dir", str(tmp_path)])
    cfg = config_from_args(args)
    assert list(cfg.tasks) == [("hotpotqa", "paragraphs"), ("hotpotqa", "chunks"), ("rgb", "paragraphs"),
                               ("2wiki", "paragraphs"), ("2wiki", "chunks")]
    assert cfg.limit == 3 and [g.method for g in cfg.methods] == ["topk", "gmmr"]
    assert callable(args.func)
    plain = argparse.ArgumentParser()
    add_arguments(plain)
    skipped = config_from_args(plain.parse_args(["--datasets", "rgb", "--protocols", "paragraphs,chunks",
                                                   "--data-dir", str(tmp_path)]))
    assert list(skipped.tasks) == [("rgb", "paragraphs")]


def test_real_data_quick_run(tmp_path: Path, real_data: Path, fake_embedder: Any) -> None:
    cfg = BenchConfig(
        tasks=[("hotpotqa", "pool"), ("musique", "paragraphs")],
        methods=[MethodGrid("topk"), parse_method("gmmr=0:1:0.1")],
        limit=4, data_dir=real_data, embedder=fake_embedder, model_name="fake",
        cache_dir=tmp_path / "c", out_dir=tmp_path / "o", plots=False, progress=False,
    )
    res = run_benchmark(cfg)
    assert [len(t.qids) for t in res.tasks] == [4, 4]
    hp = res.tasks[0]
    cos = next(s for s in hp.settings if s.method == "cosine")
    assert all(len(p) == 5 for p in cos.picks)
    assert all(0.0 <= r <= 1.0 for r in cos.per_query["recall"])


def test_results_markdown_without_an_oracle(tmp_path: Path, fake_embedder: Any) -> None:
    cfg = _config(tmp_path, fake_embedder, methods=[parse_method("cosine")], oracle_lambdas=(),
                  tasks=[("toy", "paragraphs")], plots=False)
    run_benchmark(cfg)
    assert "No Oracle row" in (tmp_path / "RESULTS.md").read_text()

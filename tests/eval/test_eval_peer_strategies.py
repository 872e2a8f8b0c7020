"""The harness takes the five peer strategies (issue 28) by name, with parameter grids."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from diverse_core.eval import BenchConfig, parse_method, run_benchmark
from test_eval_runner import _toy

PEERS = ["dpp=0,0.5,1", "msd=0.2,0.8", "cover=0.5@gamma=0.25", "ssd=0.5@window=2", "gist=0,1,4"]


@pytest.mark.parametrize("spec", PEERS)
def test_parse_method_reads_the_grid(spec: str) -> None:
    grid = parse_method(spec)
    assert grid.values and grid.param in ("diversity", "lam")


def test_harness_runs_every_peer_strategy(tmp_path: Path, fake_embedder: Any) -> None:
    cfg = BenchConfig(
        tasks=[("toy", "paragraphs")],
        benchmarks={"toy": _toy("toy")},
        methods=[parse_method("cosine"), *(parse_method(s) for s in PEERS)],
        k=3,
        fetch_k=10,
        embedder=fake_embedder,
        model_name="fake",
        cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "out",
        results_md=tmp_path / "RESULTS.md",
        progress=False,
    )
    run_benchmark(cfg)
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    assert {"dpp", "msd", "cover", "ssd", "gist"} <= {r["method"] for r in rows}
    assert all(r["n"] == 6 for r in rows)

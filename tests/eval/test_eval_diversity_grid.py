"""The harness takes a grid over the shared diversity knob: ``gmmr@diversity=0:1:0.25`` (issue 36 item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core import select
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import BenchConfig, parse_method, run_benchmark
from diverse_core.eval.plugins import MethodInput
from diverse_core.eval.runner import _picks_for_grid
from test_eval_runner import _toy


def test_parse_diversity_grid() -> None:
    grid = parse_method("gmmr@diversity=0:1:0.25")
    assert grid.values == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert grid.param == "diversity" and grid.over == "diversity"
    assert grid.settings()[1] == {"diversity": 0.25}
    assert parse_method("vendi@diversity=0,0.5@objective=paper").params == {"objective": "paper"}
    single = parse_method("dartboard@diversity=0.4")  # one value: a fixed parameter
    assert single.over is None and single.params == {"diversity": 0.4}


@pytest.mark.parametrize("spec", ["gmmr=0.5,1@diversity=0:1:0.5", "topk=0,1"])
def test_bad_diversity_grids_are_typed_errors(spec: str) -> None:
    with pytest.raises(InvalidParameterError):
        parse_method(spec)


def test_grid_rows_equal_select_with_diversity() -> None:
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=8), rng.normal(size=(20, 8))
    inp = MethodInput(question="q", query_embedding=q, texts=[str(i) for i in range(20)], embeddings=c,
                      relevance=c @ q, k=4)
    picks = _picks_for_grid(parse_method("dartboard@diversity=0,0.5,1"), inp)
    for params, local, _, _ in picks:
        assert list(local) == select("dartboard", q, c, 4, diversity=params["diversity"]).indices.tolist()
    # topk has no trade-off: a diversity grid over it gives the top-k in every row
    top = select("topk", q, c, 4).indices.tolist()
    rows = _picks_for_grid(parse_method("topk@diversity=0,0.5,1"), inp)
    assert [params["diversity"] for params, *_ in rows] == [0.0, 0.5, 1.0]
    assert all(list(local) == top for _, local, _, _ in rows)


def test_harness_runs_a_diversity_grid(tmp_path: Path, fake_embedder: Any) -> None:
    cfg = BenchConfig(
        tasks=[("toy", "paragraphs")],
        benchmarks={"toy": _toy("toy")},
        methods=[parse_method("cosine"), parse_method("gmmr@diversity=0:1:0.5"), parse_method("gist@diversity=0,1")],
        k=3,
        fetch_k=10,
        embedder=fake_embedder,
        model_name="fake",
        cache_dir=tmp_path / "cache",
        out_dir=tmp_path / "out",
        results_md=tmp_path / "RESULTS.md",
        progress=False,
    )
    cfg.validate()
    run_benchmark(cfg)
    rows = json.loads((tmp_path / "out" / "summary.json").read_text())["rows"]
    labels = {(r["method"], r["params"]) for r in rows}
    assert ("gmmr", "diversity=0.5") in labels and ("gist", "diversity=1") in labels


def test_command_line_takes_a_diversity_grid(tmp_path: Path) -> None:
    from diverse_core.cli import build_parser
    from diverse_core.eval.cli import config_from_args

    args = build_parser().parse_args(["bench", "--datasets", "hotpotqa", "--methods", "cosine",
                                      "gmmr@diversity=0:1:0.25", "dartboard@diversity=0.5",
                                      "--out", str(tmp_path), "--data-dir", str(tmp_path)])
    cfg = config_from_args(args)
    gm = cfg.methods[1]
    assert gm.over == "diversity" and gm.values == (0.0, 0.25, 0.5, 0.75, 1.0)
    assert cfg.methods[2].params == {"diversity": 0.5}
    cfg.validate(require_tasks=False)

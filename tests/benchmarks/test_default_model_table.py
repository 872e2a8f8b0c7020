"""benchmarks/default_model.py: the Oracle's λ choice, the paired intervals, the pooled rows and --cached-only."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import default_model as dm  # noqa: E402


def test_oracle_takes_the_best_page_recall_ties_to_the_upper_median() -> None:
    lambdas = [0.1, 0.5, 0.9]
    page = np.array([[0.5, 1.0, 1.0, np.nan, 0.0],
                     [1.0, 1.0, 0.5, np.nan, 0.0],
                     [1.0, 1.0, 0.0, np.nan, 0.5]])
    # q0: 0.5 and 0.9 tie -> upper median 0.9; q1: all tie -> 0.5; q2: 0.1 alone; q3: all NaN -> last; q4: 0.9
    assert dm.oracle_pick(page, lambdas).tolist() == [2, 1, 0, 2, 2]


def test_paired_ci_of_a_constant_difference_is_that_constant() -> None:
    assert dm.paired_ci(np.full(7, 0.25), n_boot=500) == pytest.approx((0.25, 0.25, 0.25))
    assert dm.paired_ci(np.full(6, -0.5), ["a", "a", "b", "b", "c", "c"], n_boot=500) == pytest.approx((-0.5,) * 3)


def test_paired_ci_without_groups_is_the_library_bootstrap() -> None:
    from diverse_core.eval.stats import bootstrap_ci

    d = np.array([1.0, 0.0, 0.5, 1.0, -0.5, 0.0, 1.0])
    assert dm.paired_ci(d, n_boot=2000) == (pytest.approx(d.mean()), *bootstrap_ci(d, n_boot=2000, seed=0))


def test_groups_resample_whole_questions() -> None:
    """Ten entries of two questions (five cells each): the resampled mean is 0, 0.5 or 1, each end with
    probability 1/4, so the interval is [0, 1]; as ten independent questions it is much narrower."""
    d = np.array([1.0] * 5 + [0.0] * 5)
    assert dm.paired_ci(d, ["q1"] * 5 + ["q2"] * 5, n_boot=4000) == (0.5, 0.0, 1.0)
    _, lo, hi = dm.paired_ci(d, n_boot=4000)
    assert 0.0 < lo < 0.5 < hi < 1.0
    # unequal group sizes: the mean is over entries (0.75), not over groups (0.5)
    assert dm.paired_ci(np.array([1.0, 1.0, 1.0, 0.0]), ["a", "a", "a", "b"], n_boot=500)[0] == 0.75


def test_comparisons_name_every_delta_the_issue_reads() -> None:
    assert dm.comparisons(["cosine", "auto", "gmmr", "adaptive", "oracle"]) == [
        ("auto", "cosine"), ("gmmr", "cosine"), ("adaptive", "cosine"), ("oracle", "cosine"),
        ("auto", "oracle"), ("adaptive", "gmmr")]
    assert dm.comparisons(["auto", "chunks"]) == []


def _cell(dataset: str, form: str, cos: list[float], auto: list[float]) -> dict:
    scores = {lv: {"cosine": np.array(cos), "auto": np.array(auto)} for lv in dm.LEVELS}
    scores["support"] = {m: np.full(len(cos), np.nan) for m in ("cosine", "auto")}  # no support annotation
    return {"dataset": dataset, "protocol": "paragraphs", "form": form, "scores": scores,
            "qids": [f"q{i}" for i in range(len(cos))]}


def test_summarise_pools_the_multihop_cells_only() -> None:
    cells = [_cell("hotpotqa", "text", [0.5, 1.0], [1.0, 1.0]), _cell("2wiki", "text", [0.0, 0.5], [0.5, 0.5]),
             _cell("expertqa", "ids", [1.0, 1.0], [0.0, 0.0])]
    rows = dm.summarise(cells, ["cosine", "auto"], n_boot=200)
    assert all(r["level"] == "page" for r in rows)  # no support level without the annotation
    pooled = [r for r in rows if r["dataset"] == "pooled multi-hop"]
    assert [(r["form"], r["n"]) for r in pooled] == [("text", 4), ("all", 4)]
    assert pooled[0]["auto - cosine"][0] == pytest.approx(0.25)  # (0.5 + 0 + 0.5 + 0) / 4; expertqa left out
    table = dm.table(rows, "page", ["cosine", "auto"])
    assert "| expertqa paragraphs | ids | 2 | 100.0 | 0.0 (-100.0 [-100.0, -100.0]) |" in table


def test_cached_only_skips_instead_of_embedding(tmp_path: Path) -> None:
    for embedder in dm.EMBEDDERS:
        cache = dm.make_cache(embedder, str(tmp_path), cached_only=True)
        with pytest.raises(dm.NotCached):
            cache.embed(["a text nobody cached"])
        with pytest.raises(dm.NotCached):
            cache.embed_queries(["a question nobody cached?"])

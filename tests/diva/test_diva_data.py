"""Loaders of the ambiguous-question benchmarks (skip without ../shared/data)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from diverse_core.eval import DATASETS, SUPPORTED_PROTOCOLS, build_task, load_dataset
from diverse_core.eval.ambiguous import load_asqa_interpreted, normalize_question

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def data() -> Path:
    env = os.environ.get("DIVERSE_RAG_DATA")
    path = Path(env) if env else (REPO / ".." / "shared" / "data").resolve()
    if not (path / "condambigqa" / "mcaqa.json").is_file():
        pytest.skip(f"benchmark data not found at {path} (set DIVERSE_RAG_DATA)")
    return path


def test_registered_in_the_harness() -> None:
    for name in ("condambigqa", "situatedqa", "ambignq"):
        assert name in DATASETS and name in SUPPORTED_PROTOCOLS
    assert SUPPORTED_PROTOCOLS["situatedqa"] == () and SUPPORTED_PROTOCOLS["ambignq"] == ()


def test_normalize_question() -> None:
    assert normalize_question("  Who's  the KING?? ") == "who s the king"


def test_condambigqa(data: Path) -> None:
    bench = load_dataset("condambigqa", data)
    assert len(bench.records) == 200 and bench.metric == "mrecall"
    first = bench.records[0]
    assert first.question == "How long is a rainbow six siege game?"
    assert first.answer_groups == (("four minutes",), ("three minutes",))
    assert first.meta["interpretations"][0] == "How long does a casual match last in Rainbow Six Siege?"
    for r in bench.records:
        assert 1 <= len(r.pool_doc_ids) <= 20 and r.answer_groups
        assert len(r.meta["interpretations"]) == len(r.answer_groups)
    assert sum(len(r.pool_doc_ids) for r in bench.records) >= len(bench.corpus) > 3000
    task = build_task(bench, "pool")
    assert task.pools is not None and len(task.pools[0]) == len(first.pool_doc_ids)


def test_asqa_interpretations_line_up(data: Path) -> None:
    bench = load_asqa_interpreted(data)
    assert len(bench.records) == 948
    r = bench.records[0]
    assert r.meta["interpretations"][0] == "Who has the highest goals in men's world international football?"
    assert all(len(x.meta["interpretations"]) == len(x.answer_groups) for x in bench.records)


def test_situatedqa(data: Path) -> None:
    bench = load_dataset("situatedqa", data)
    kinds = [r.meta["kind"] for r in bench.records]
    assert kinds.count("temp") == 1178 and kinds.count("geo") == 351  # distinct questions (data README)
    assert not bench.corpus and all(not r.pool_doc_ids for r in bench.records)
    weed = next(r for r in bench.records if r.question == "what is the legal amount of weed")
    assert ("10 grams or less",) in weed.answer_groups
    assert "what is the legal amount of weed in maryland" in weed.meta["interpretations"]
    assert len(weed.meta["contexts"]) == len(weed.answer_groups)


def test_ambignq(data: Path) -> None:
    bench = load_dataset("ambignq", data)
    assert len(bench.records) == 2002
    assert sum(r.meta["ambiguous"] for r in bench.records) == 1172  # data README
    single = bench.records[0]
    assert single.answer_groups == (("Tony Goldwyn", "Goldwyn"),)
    assert single.meta["interpretations"] == (single.question,)
    assert all(len(r.meta["interpretations"]) == len(r.answer_groups) >= 1 for r in bench.records)

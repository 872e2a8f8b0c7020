"""Train/dev protocol: no dev question reaches training; best fixed settings come from train.

The protocol itself (``run_split``) lives with the benchmark scripts that use it: ``benchmarks/outofsample.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.eval import parse_method
from diverse_core.eval.datasets import load_dataset
from diverse_core.eval.records import Benchmark, CorpusBuilder, QARecord
from diverse_core.eval.train_data import (
    TRAIN_SETS,
    drop_overlap,
    load_train,
    normalized_question,
    overlap,
    train_blocks,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from outofsample import SplitConfig, run_split  # noqa: E402


def _bench(name: str, questions: list[tuple[str, str]], seed: int) -> Benchmark:
    rng = np.random.default_rng(seed)
    b = CorpusBuilder()
    ids = [b.add(f"T{seed}-{i}", f"Doc {seed} {i} one. Doc {i} two. Doc {i} three.") for i in range(30)]
    recs = tuple(
        QARecord(qid, text, (), tuple(rng.choice(ids, size=2, replace=False).tolist()))
        for qid, text in questions
    )
    return Benchmark(name, recs, b.docs, ("paragraphs", "chunks"))


def test_real_train_files_share_no_id_or_question_with_dev(real_data: Path) -> None:
    for name in TRAIN_SETS:
        train = [r for b in load_train(name, real_data) for r in b.records]
        dev = load_dataset(name, real_data).records
        assert len(train) > 100
        assert not overlap(train, dev), name
        assert not {r.qid for r in train} & {r.qid for r in dev}
        assert not {normalized_question(r.question) for r in train} & {normalized_question(r.question) for r in dev}


def test_train_blocks_hold_their_own_questions_passages(real_data: Path) -> None:
    blocks = load_train("musique", real_data)
    for b in blocks:
        used = {d for r in b.records for d in (*r.pool_doc_ids, *r.gold_doc_ids)}
        assert used == set(b.corpus)
        assert all(r.gold_doc_ids for r in b.records)


def test_a_dev_question_planted_in_train_is_dropped(tmp_path: Path, fake_embedder: Any) -> None:
    dev = _bench("toy", [(f"d{i}", f"Dev question number {i}?") for i in range(8)], 1)
    train_qs = [(f"t{i}", f"Train question number {i}?") for i in range(12)]
    train_qs += [("d3", "a fresh text, same id as a dev question"), ("x9", "  DEV question, number 5 ")]
    train = _bench("toy_train0", train_qs, 2)
    kept, dropped = drop_overlap([train], dev.records)
    assert dropped == 2 and {r.qid for r in kept[0].records} == {f"t{i}" for i in range(12)}
    limited, dropped = train_blocks("toy", dev.records, limit=5, preloaded=[train])
    assert dropped == 2 and [r.qid for b in limited for r in b.records] == [f"t{i}" for i in range(5)]
    res = run_split(SplitConfig(
        datasets=["toy"], protocols=["paragraphs"], dev_sets={"toy": dev}, train_sets={"toy": [train]},
        methods=[parse_method("cosine"), parse_method("gmmr=0:1:0.1")], k=3, fetch_k=10,
        embedder=fake_embedder, model_name="fake", cache_dir=tmp_path / "c", n_boot=200, n_perm=200,
        folds=2, progress=False, model_dir=tmp_path / "m",
    ))
    task = res.tasks[0]
    assert task.dropped == 2 and task.n_train == 12
    assert not set(task.train_qids) & {r.qid for r in dev.records}
    assert not set(task.train_questions) & {normalized_question(r.question) for r in dev.records}
    methods = [r.method for r in task.rows]
    assert methods[0] == "cosine" and "adaptive" in methods and methods[-1] == "oracle"


def test_best_fixed_setting_is_chosen_on_train_not_dev(tmp_path: Path, fake_embedder: Any) -> None:
    dev = _bench("toy", [(f"d{i}", f"Dev question {i}?") for i in range(10)], 3)
    train = _bench("toy_train0", [(f"t{i}", f"Train question {i}?") for i in range(10)], 4)
    res = run_split(SplitConfig(
        datasets=["toy"], protocols=["chunks"], dev_sets={"toy": dev}, train_sets={"toy": [train]},
        methods=[parse_method("cosine"), parse_method("gmmr=0:1:0.1")], k=3, fetch_k=10,
        embedder=fake_embedder, model_name="fake", cache_dir=tmp_path / "c", n_boot=200, n_perm=200,
        adaptive=False, progress=False,
    ))
    task = res.tasks[0]
    row = next(r for r in task.rows if r.method == "gmmr" and r.note == "chosen on train")
    train_curve = task.train_curve["gmmr"]
    assert row.train_mean == pytest.approx(max(train_curve.values()))
    assert train_curve[row.label] == pytest.approx(row.train_mean)
    assert row.mean == pytest.approx(task.dev_curve["gmmr"][row.label])
    lo, hi = row.ci
    assert lo <= row.mean <= hi

"""Support-level recall (the strict chunk metric), title-free units and page ids as sources in the harness."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from diverse_core.eval import BenchConfig, MethodGrid, run_benchmark
from diverse_core.eval.protocols import build_task
from diverse_core.eval.records import Benchmark, Document, QARecord


def _bench() -> Benchmark:
    docs = {
        "g": Document("g", "Gold Page", "Filler one. Filler two. The answer is Oslo. Filler three.",
                      ("Filler one.", "Filler two.", "The answer is Oslo.", "Filler three.")),
        "d": Document("d", "Other", "Nothing here. Still nothing.", ("Nothing here.", "Still nothing.")),
    }
    rec = QARecord("q", "Where?", ("Oslo",), ("g",), support={"g": ("The answer is Oslo.",)})
    plain = QARecord("p", "What?", (), ("d",))  # no support annotation
    return Benchmark("toy", (rec, plain), docs, ("paragraphs", "chunks"))


def test_support_units_and_title_free_units() -> None:
    task = build_task(_bench(), "chunks")
    assert task.unit_texts[:3] == ("Gold Page: Filler one. Filler two.", "Gold Page: Filler two. The answer is Oslo.",
                                   "Gold Page: The answer is Oslo. Filler three.")
    assert task.support[0] is not None and task.support[0][0].tolist() == [1, 2]  # the windows holding the sentence
    assert task.support[1] is None
    bare = build_task(_bench(), "chunks", titles=False)
    assert bare.unit_texts[0] == "Filler one. Filler two." and not bare.titled
    assert bare.doc_titles == ("Gold Page", "Other") and bare.doc_sources == ("g", "d")
    assert build_task(_bench(), "paragraphs", titles=False).unit_texts[0].startswith("Filler one.")


def test_runner_reports_page_and_support_recall(tmp_path: Path, fake_embedder: Any) -> None:
    """A pick of window 0 (no supporting sentence) counts page-level but not support-level."""
    from diverse_core.eval.plugins import MethodOutput, register_plugin

    def first_window(inp: Any, **_: Any) -> MethodOutput:
        return MethodOutput(indices=[], units=[0])  # corpus unit 0: the gold page's first window

    def support_window(inp: Any, **_: Any) -> MethodOutput:
        return MethodOutput(indices=[], units=[2])  # unit 2 holds the supporting sentence

    register_plugin("first_window_test", first_window, replace=True)
    register_plugin("support_window_test", support_window, replace=True)
    cfg = BenchConfig(tasks=[("toy", "chunks")], benchmarks={"toy": _bench()}, k=1, fetch_k=10,
                      methods=[MethodGrid("first_window_test"), MethodGrid("support_window_test")],
                      embedder=fake_embedder, model_name="fake", cache_dir=tmp_path / "c", out_dir=None,
                      progress=False, oracle_lambdas=())
    res = run_benchmark(cfg)
    rows = {s.method: s for s in res.tasks[0].settings}
    assert rows["first_window_test"].per_query["recall"][0] == 1.0
    assert rows["first_window_test"].per_query["support"][0] == 0.0
    assert rows["support_window_test"].per_query["support"][0] == 1.0
    assert np.isnan(rows["support_window_test"].per_query["support"][1])  # no annotation: undefined


def test_learned_gets_page_ids_when_asked(tmp_path: Path, fake_embedder: Any, monkeypatch: Any) -> None:
    from diverse_core.learned import LearnedSelector

    seen: list[Any] = []
    original = LearnedSelector.choose_prepared

    def spy(self, prep, **kw):  # type: ignore[no-untyped-def]
        seen.append(kw.get("sources"))
        return original(self, prep, **kw)

    monkeypatch.setattr(LearnedSelector, "choose_prepared", spy)
    base = {"tasks": [("toy", "chunks")], "benchmarks": {"toy": _bench()}, "k": 2, "fetch_k": 5,
            "methods": [MethodGrid("learned")], "embedder": fake_embedder, "model_name": "fake",
            "cache_dir": tmp_path / "c", "out_dir": None, "progress": False, "oracle_lambdas": ()}
    run_benchmark(BenchConfig(**base))
    assert seen and all(s is None for s in seen)
    seen.clear()
    run_benchmark(BenchConfig(**base, titles=False, source_ids=True))
    assert seen and all(set(s) <= {"g", "d"} for s in seen)


def test_loaders_give_support_texts(real_data: Path) -> None:
    from diverse_core.eval.datasets import load_dataset

    hp = load_dataset("hotpotqa", real_data)
    rec = hp.records[0]
    assert set(rec.support) == set(rec.gold_doc_ids)
    sentences = {s for d in rec.gold_doc_ids for s in hp.corpus[d].sentences}
    assert all(s in sentences for v in rec.support.values() for s in v)  # supporting sentences, verbatim
    mq = load_dataset("musique", real_data).records[0]
    assert set(mq.support) <= set(mq.gold_doc_ids) and mq.answers[0] in [a for v in mq.support.values() for a in v]
    tw = load_dataset("2wiki", real_data).records[0]
    assert set(tw.support) == set(tw.gold_doc_ids) and tw.answers[0] in next(iter(tw.support.values()))
    task = build_task(hp.subset(20), "chunks")
    assert all(s is not None and len(s) == len(g) for s, g in zip(task.support, task.gold, strict=True))

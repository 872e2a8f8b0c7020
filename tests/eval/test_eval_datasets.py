"""Loaders on the real files (skipped when the data folder is absent) and protocols."""

from __future__ import annotations

from pathlib import Path

import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.datasets import load_dataset, resolve_data_dir
from diverse_core.eval.protocols import build_task
from diverse_core.eval.records import Benchmark, CorpusBuilder, Document, QARecord


@pytest.mark.parametrize(
    ("name", "n_questions", "n_docs"),
    [("hotpotqa", 200, None), ("musique", 200, None), ("2wiki", 1000, 6119), ("2wiki_sampled", 500, None), ("rgb", 100, None)],
)
def test_counts_match_the_data_readme(real_data: Path, name: str, n_questions: int, n_docs: int | None) -> None:
    bench = load_dataset(name, real_data)
    assert len(bench.records) == n_questions
    if n_docs is not None:
        assert len(bench.corpus) == n_docs
    for r in bench.records:
        assert r.gold_doc_ids, r.qid
        assert set(r.gold_doc_ids) <= set(bench.corpus)
        if r.pool_doc_ids:
            assert set(r.gold_doc_ids) <= set(r.pool_doc_ids)


def test_gold_structure(real_data: Path) -> None:
    hp = load_dataset("hotpotqa", real_data)
    assert all(len(r.gold_doc_ids) == 2 for r in hp.records)
    assert sum(len(r.pool_doc_ids) == 10 for r in hp.records) == 199
    mu = load_dataset("musique", real_data)
    assert sorted({len(r.gold_doc_ids) for r in mu.records}) == [2, 3, 4]
    wiki = load_dataset("2wiki", real_data)
    assert sum(len(r.gold_doc_ids) == 4 for r in wiki.records) == 235
    rgb = load_dataset("rgb", real_data)
    assert sum(len(r.gold_doc_ids) for r in rgb.records) <= 395  # positives, duplicates merged
    first = hp.records[0]
    titles = {hp.corpus[d].title for d in first.gold_doc_ids}
    assert titles == {"Nobody's Hero", "Neil Peart"}


def test_asqa_groups(real_data: Path) -> None:
    asqa = load_dataset("asqa", real_data)
    assert len(asqa.records) == 948
    assert sum(len(r.answer_groups) for r in asqa.records) <= 3184
    assert all(len(r.answer_groups) >= 1 for r in asqa.records)


def test_missing_data_dir_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="DIVERSE_RAG_DATA"):
        resolve_data_dir(tmp_path / "nope")
    with pytest.raises(FileNotFoundError, match="hotpot.json"):
        load_dataset("hotpotqa", tmp_path)
    with pytest.raises(InvalidParameterError, match="unknown dataset"):
        load_dataset("squad", tmp_path)


def _toy() -> Benchmark:
    b = CorpusBuilder()
    d0 = b.add("A", "One. Two. Three.")
    d1 = b.add("B", "Four.")
    assert b.add("A", "One. Two. Three.") == d0  # duplicate merged
    recs = (QARecord("q0", "?", ("x",), (d0,), (d0, d1)), QARecord("q1", "?", (), (d1,), (d1,)))
    return Benchmark("toy", recs, b.docs, ("pool", "paragraphs", "chunks"))


def test_protocols_on_toy_corpus() -> None:
    toy = _toy()
    para = build_task(toy, "paragraphs")
    assert para.unit_texts == ("A: One. Two. Three.", "B: Four.")
    assert para.pools is None and [g.tolist() for g in para.gold] == [[0], [1]]
    chunks = build_task(toy, "chunks")
    assert chunks.unit_texts == ("A: One. Two.", "A: Two. Three.", "B: Four.")
    assert chunks.unit_doc.tolist() == [0, 0, 1]
    pool = build_task(toy, "pool")
    assert [p.tolist() for p in pool.pools or ()] == [[0, 1], [1]]
    with pytest.raises(InvalidParameterError, match="protocol"):
        build_task(toy, "sentences")


def test_documents_with_source_sentences_use_them() -> None:
    docs = {"0": Document("0", "T", "a b. c d", ("a b.", "c d", "e"))}
    bench = Benchmark("s", (QARecord("q", "?", (), ("0",)),), docs, ("chunks",))
    assert build_task(bench, "chunks").unit_texts == ("T: a b. c d", "T: c d e")


def test_pool_protocol_leaves_out_questions_without_passages(caplog):
    from diverse_core.eval.protocols import build_task
    from diverse_core.eval.records import Benchmark, Document, QARecord

    docs = {"0": Document("0", "A", "One. Two."), "1": Document("1", "B", "Three.")}
    recs = (QARecord("q0", "?", (), ("0",), ("0", "1")), QARecord("q1", "?", (), (), ()))
    with caplog.at_level("WARNING", logger="diverse_core"):
        task = build_task(Benchmark("toy", recs, docs, ("pool",)), "pool")
    assert [r.qid for r in task.records] == ["q0"] and len(task.pools) == len(task.gold) == 1
    assert "1 of 2 questions have no passages" in caplog.text

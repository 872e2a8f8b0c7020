"""``diverse-rag train learned --data-dir <custom>``: a model and its card from your own labelled questions.

The toy set under ``tests/data/learned_toy`` (24 two-hop questions over 108 chunks of 36 pages,
each chunk with its page as ``source``) runs end to end in seconds: the embedder is a hashing
stand-in (no model download, no MiniLM), so the figures are plumbing checks, not quality claims.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import ModelFeatureMismatchError
from diverse_core.eval.customdata import load_custom_dir
from diverse_core.eval.datasets import DatasetFormatError
from diverse_core.learned import LearnedSelector
from diverse_core.learned.card import ModelCard, card_path

TOY = Path(__file__).resolve().parents[1] / "data" / "learned_toy"


def _hash_embed(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 64), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().replace("?", " ").replace(".", " ").split():
            out[i, zlib.crc32(w.encode()) % 64] += 1.0
    out += 1e-3
    return out / np.linalg.norm(out, axis=1, keepdims=True)


class _Hash:
    name = "hash-64"

    def __call__(self, texts: list[str]) -> np.ndarray:
        return _hash_embed(list(texts))


@pytest.fixture
def trained(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import diverse_core.embedders as embedders
    from diverse_core.cli import main

    monkeypatch.setattr(embedders, "get_default_embedder", lambda: _Hash())
    out = tmp_path / "mine.npz"
    assert main(["train", "learned", "--data-dir", str(TOY), "--out", str(out), "--fetch-k", "20",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    return out


def test_custom_train_writes_a_model_and_a_card_that_round_trips(trained: Path) -> None:
    card_file = card_path(trained)
    assert card_file == trained.with_name("mine.card.json") and card_file.with_suffix(".md").is_file()
    card = ModelCard.load(card_file)
    assert ModelCard.from_dict(json.loads(card_file.read_text(encoding="utf-8"))) == card
    assert ModelCard.from_dict(card.to_dict()) == card
    sel = LearnedSelector.load(trained)
    assert ModelCard.from_selector(sel, oof_recall=card.oof_recall, train_data=card.train_data) == card
    assert (card.k, card.fetch_k) == (5, 20)
    assert card.train_data["n_questions"] == 24 and card.train_data["n_corpus"] == 108
    assert card.train_data["sources_given"] and card.train_data["titles_given"]
    assert set(card.oof_recall) == {"cosine", "gmmr", "learned"}
    assert all(0.0 <= v <= 1.0 for v in card.oof_recall.values())
    assert card.features["text"][-7] == "same_source" and set(card.weights) == {"text", "embedding"}
    assert "| learned |" in card.markdown().replace("| cosine | gmmr | learned |", "| learned |")


def test_custom_model_selects_with_sources(trained: Path) -> None:
    rng = np.random.default_rng(0)
    q, cands = rng.normal(size=64), rng.normal(size=(12, 64))
    texts = [f"chunk {i}" for i in range(12)]
    sel = dc.select("learned", q, cands, 3, model=str(trained), question="q?", texts=texts,
                    sources=[f"s{i // 3}" for i in range(12)])
    assert sel.details["variant"] == "text" and len(set(sel.indices.tolist())) == 3


def _with_feature_renamed(trained: Path, path: Path, old: str, new: str) -> Path:
    data = dict(np.load(trained))
    for key in ("text__step_meta", "text__first_meta"):
        if key in data:
            meta = json.loads(str(data[key]))
            meta["feature_names"] = [(new if f == old else f) for f in meta["feature_names"]]
            data[key] = np.array(json.dumps(meta))
    with path.open("wb") as fh:
        np.savez(fh, **data)
    return path


def test_loading_a_model_with_other_features_is_a_typed_error(trained: Path, tmp_path: Path) -> None:
    bad = _with_feature_renamed(trained, tmp_path / "bad.npz", "same_source", "same_page")
    with pytest.raises(ModelFeatureMismatchError, match=r"missing: \['same_source'\].*unknown: \['same_page'\]"):
        LearnedSelector.load(bad)


def test_a_model_file_with_the_former_same_title_name_loads_and_picks_the_same(trained: Path, tmp_path: Path) -> None:
    older = _with_feature_renamed(trained, tmp_path / "older.npz", "same_source", "same_title")
    assert "same_title" in str(np.load(older)["text__step_meta"])
    rng = np.random.default_rng(3)
    q, cands = rng.normal(size=64), rng.normal(size=(12, 64))
    kw = {"question": "q?", "texts": [f"T{i % 4}: chunk {i}" for i in range(12)]}
    got = LearnedSelector.load(older).choose(q, cands, 4, **kw)
    want = LearnedSelector.load(trained).choose(q, cands, 4, **kw)
    assert LearnedSelector.load(older).variants["text"].step.feature_names[-7] == "same_source"
    assert got.indices.tolist() == want.indices.tolist() and np.array_equal(got.scores, want.scores)


def test_custom_format_errors_name_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n{"id": "a", "text": "y"}\n', encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text('{"id": "q", "question": "?", "gold": ["a"]}\n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"corpus.jsonl:2: duplicate id 'a'"):
        load_custom_dir(tmp_path)
    (tmp_path / "corpus.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text('{"id": "q", "question": "?", "gold": ["zz"]}\n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match=r"questions.jsonl:1: gold id\(s\) \['zz'\]"):
        load_custom_dir(tmp_path)
    (tmp_path / "questions.jsonl").write_text('{"id": "q", "question": "?"}\n', encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="'gold' must be a non-empty list"):
        load_custom_dir(tmp_path)


def test_toy_set_loads_with_sources_and_titles() -> None:
    bench = load_custom_dir(TOY)
    assert len(bench.records) == 24 and len(bench.corpus) == 108
    doc = bench.corpus["f0a"]
    assert doc.source == "the_salt_road.md" and doc.title == "The Salt Road" and ":" not in doc.text[:12]

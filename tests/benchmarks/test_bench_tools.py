"""The benchmark drivers' own machinery: trees, subprocess cells, memory caps and the A/B tables."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import code_size  # noqa: E402
import memory  # noqa: E402
import stores  # noqa: E402
import warm_call  # noqa: E402
from trees import Tree, parse_trees, run_child  # noqa: E402


def test_parse_trees_defaults_to_this_checkout_and_refuses_bad_specs(tmp_path: Path) -> None:
    assert parse_trees(None) == [Tree("this", ROOT)]
    assert parse_trees([f"a={ROOT}", f"b={ROOT}"]) == [Tree("a", ROOT), Tree("b", ROOT)]
    for bad in (["nopath"], ["=x"], [f"a={tmp_path}"], [f"a={ROOT}", f"a={ROOT}"]):
        with pytest.raises(SystemExit):
            parse_trees(bad)


def test_a_tree_runs_first_on_the_child_path() -> None:
    env = Tree("t", Path("/somewhere")).env()
    assert env["PYTHONPATH"].split(":")[:2] == ["/somewhere/shared", "/somewhere"]
    assert env["OPENBLAS_NUM_THREADS"] == "1"
    assert "OPENBLAS_CORETYPE" not in env


def test_run_child_reports_a_crash_and_a_timeout_as_rows(tmp_path: Path) -> None:
    crash = tmp_path / "crash.py"
    crash.write_text("import sys\nsys.stderr.write('boom here\\n')\nsys.exit(3)\n")
    assert run_child(Tree("this", ROOT), crash, [], 60) == {"status": "exit 3: boom here"}
    slow = tmp_path / "slow.py"
    slow.write_text("import time\ntime.sleep(60)\n")
    assert run_child(Tree("this", ROOT), slow, [], 0.5) == {"status": "timeout (0.5 s)"}
    fine = tmp_path / "fine.py"
    fine.write_text("print('noise')\nprint('{\"x\": 1}')\n")
    assert run_child(Tree("this", ROOT), fine, [], 60) == {"x": 1}


def test_memory_measures_one_call_per_method_and_text_variant(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    memory.main(["--n", "120", "--methods", "topk", "gmmr", "learned", "--text-methods", "learned",
                 "--cap-gib", "2", "--timeout", "120", "--json", str(out)])
    rows = json.loads(out.read_text())["rows"]
    assert [r["method"] for r in rows] == ["topk", "gmmr", "learned", "learned + texts"]
    assert all(r["status"] == "ok" and r["peak_mib"] >= 0 and r["seconds"] >= 0 for r in rows), rows


def test_memory_cap_turns_an_exploding_call_into_a_memory_error_row(tmp_path: Path) -> None:
    """``cover`` holds an (n, n) float64 matrix: 3,000 candidates need 69 MiB, the cap allows 1 MiB."""
    out = tmp_path / "m.json"
    memory.main(["--n", "3000", "--methods", "cover", "--text-methods", "--cap-gib", "0.001",
                 "--timeout", "120", "--json", str(out), "--skip", "3000:nothing"])
    (row,) = json.loads(out.read_text())["rows"]
    assert row["status"] == "MemoryError", row


def test_memory_skip_is_reported_not_run(tmp_path: Path) -> None:
    out = tmp_path / "m.json"
    memory.main(["--n", "50", "--methods", "topk", "--text-methods", "--skip", "50:topk", "--json", str(out)])
    assert json.loads(out.read_text())["rows"][0]["status"] == "skipped"
    assert "**skipped**" in memory.render(json.loads(out.read_text())["rows"], {
        "argv": "", "machine": "m", "dim": 384, "k": 10, "cap_gib": 4, "timeout": 300, "trees": None})


def test_the_ab_tables_give_the_ratio_of_the_last_tree_to_the_first() -> None:
    rows = [{"tree": t, "face": "langchain", "variant": v, "median": m, "lo": m, "hi": m}
            for t, v, m in (("A", "search", 10.0), ("A", "gmmr", 5.0), ("B", "search", 12.0), ("B", "gmmr", 6.0))]
    meta = {"argv": "", "machine": "m", "n": 30000, "dim": 384, "pgvector": "0.8", "fetch_k": 50, "k": 5,
            "rounds": 2, "queries": 10, "trees": None}
    line = next(x for x in stores.render(rows, meta).splitlines() if "| gmmr |" in x)
    assert line.endswith("| 1.20 | 1.00 |") and line.count("-50%") == 2  # B is slower, but so is its search
    rows = [{"tree": t, "row": r, "median": m, "lo": m, "hi": m}
            for t, r, m in (("A", "gmmr", 0.2), ("A", "learned", 0.4), ("B", "gmmr", 0.25), ("B", "learned", 0.5))]
    line = next(x for x in warm_call.render(rows, {"argv": "", "machine": "m", "pools": 2, "repeat": 1, "rounds": 2,
                                                   "trees": None}).splitlines() if x.startswith("| learned"))
    assert line.endswith("| 1.25 | 1.00 |") and line.count("| 2.00 |") == 2


def test_code_size_adds_up_per_package() -> None:
    got = code_size.count(ROOT)
    subs = [v for k, v in got.items() if k.startswith("diverse_core/") or k == "diverse_core (root modules)"]
    assert sum(subs) == got["diverse_core (all)"] > 0
    assert got["library (core + faces)"] == got["diverse_core (all)"] + got["langchain_diverse"] + got["llamaindex_diverse"]

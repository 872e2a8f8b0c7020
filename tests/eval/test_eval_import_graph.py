"""The harness modules import one way: runner -> results <- report / plots (no circle)."""

from __future__ import annotations

import ast
from pathlib import Path

EVAL = Path(__file__).resolve().parents[2] / "shared" / "diverse_core" / "eval"


def _local_imports(module: str) -> set[str]:
    tree = ast.parse((EVAL / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in ast.walk(tree):  # includes imports inside functions (lazy imports)
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
            found.add(node.module.split(".")[0])
    return found


def _reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        mod = todo.pop()
        for dep in _local_imports(mod):
            if dep not in seen and (EVAL / f"{dep}.py").is_file():
                seen.add(dep)
                todo.append(dep)
    return seen


def test_results_import_nothing_that_reads_them() -> None:
    assert not _reachable("results") & {"runner", "report", "plots"}


def test_report_and_plots_do_not_import_the_runner() -> None:
    for module in ("report", "plots"):
        assert "runner" not in _reachable(module), module


def test_no_module_of_the_harness_reaches_itself() -> None:
    for path in EVAL.glob("*.py"):
        mod = path.stem
        if mod == "__init__":
            continue
        assert mod not in _reachable(mod), f"import circle through {mod}"


def test_results_md_keeps_sections_other_scripts_maintain() -> None:
    from diverse_core.eval.report import keep_sections

    old = "# T\n\nintro\n\n<!-- a:start (x.py) -->\nA\n<!-- a:end -->\n\n## H\nold"
    new = keep_sections(old, "# T\n\nnew intro\n\n## H\nnew")
    assert new == "# T\n\n<!-- a:start (x.py) -->\nA\n<!-- a:end -->\n\nnew intro\n\n## H\nnew"
    assert keep_sections("", "# T\n\nbody") == "# T\n\nbody"

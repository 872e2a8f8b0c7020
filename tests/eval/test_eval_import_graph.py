"""The harness modules import one way: runner -> results <- report / plots (no circle)."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
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


# --- The core's layers run one way (issue 26): library -> harness -> command line. ---

CORE = EVAL.parent
#: The command line is the composition root: the one core module allowed above the harness.
ABOVE_THE_HARNESS = {CORE / "cli.py"}


def _library_files() -> list[Path]:
    return sorted(
        p for p in CORE.rglob("*.py") if EVAL not in p.parents and p not in ABOVE_THE_HARNESS
    )


def _absolute_imports(source: str, package: list[str]) -> set[str]:
    """Every module ``source`` (a module of ``package``) imports, lazy imports included."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join([*base, *([node.module] if node.module else [])])
            found.add(mod)
            found.update(f"{mod}.{alias.name}" for alias in node.names)
    return found


def _file_imports(path: Path) -> set[str]:
    package = ["diverse_core", *path.relative_to(CORE).parent.parts]
    return _absolute_imports(path.read_text(encoding="utf-8"), package)


def test_the_import_walk_resolves_relative_and_lazy_imports() -> None:
    source = (
        "from ...eval.metrics import f1_score\n"
        "def f():\n    from ... import eval\n    import diverse_core.eval.cli\n"
        "from .. import tuning\n"
    )
    found = _absolute_imports(source, ["diverse_core", "pipelines", "dfrag"])
    assert {"diverse_core.eval.metrics", "diverse_core.eval", "diverse_core.eval.cli"} <= found
    assert "diverse_core.pipelines.tuning" in found


def test_the_library_never_imports_the_harness() -> None:
    files = _library_files()
    assert len(files) > 50  # methods, pipelines, adaptive, llm, the top-level modules...
    offenders = {
        str(p.relative_to(CORE)): sorted(m for m in _file_imports(p) if m.startswith("diverse_core.eval"))
        for p in files
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_issue_grep_finds_nothing() -> None:
    """The check of issue 26, as written: no mention of the harness module path at all."""
    pattern = re.compile(r"diverse_core.eval|\.\.eval|\.\.\.eval")
    hits = [
        f"{p.relative_to(CORE)}:{n}: {line.strip()}"
        for p in _library_files()
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert hits == []


def test_importing_the_library_loads_no_harness_module() -> None:
    code = (
        "import sys, importlib\n"
        "for m in ('diverse_core', 'diverse_core.api', 'diverse_core.methods', 'diverse_core.adaptive',\n"
        "          'diverse_core.llm', 'diverse_core.pipelines', 'diverse_core.pipelines.dfrag',\n"
        "          'diverse_core.pipelines.diva', 'diverse_core.pipelines.vendirag',\n"
        "          'diverse_core.pipelines.drrag', 'diverse_core.dfrag', 'diverse_core.answer_metrics'):\n"
        "    importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.startswith('diverse_core.eval')))\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    assert out.stdout.strip() == "[]"

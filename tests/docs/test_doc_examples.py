"""Every code example of the documentation runs (``docs/**/*.md`` and ``README.md``).

One test per block, named ``<file>:<line>`` (the opening fence's line), e.g.
``tests/docs/test_doc_examples.py::test_python_block[docs/methods/gmmr.md:31]``. The blocks of
a file share one namespace and run in file order; selecting a single block with ``-k`` first
runs the blocks above it. See :mod:`mdblocks` for the convention (```` ```python notest ````
for blocks that need a network model).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import importlib.util
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from mdblocks import PYTHON_INFOS, Block, compare_output, read_blocks, shown_outputs

ROOT = Path(__file__).resolve().parents[2]
DOC_FILES = sorted((ROOT / "docs").rglob("*.md")) + [ROOT / "README.md"]
BLOCKS = [b for path in DOC_FILES for b in read_blocks(path)]
#: ``{file: {line of a Python block: the ```text block showing its printed output}}``.
SHOWN = {path: shown_outputs(read_blocks(path)) for path in DOC_FILES}


def _id(block: Block) -> str:
    return f"{block.path.relative_to(ROOT).as_posix()}:{block.line}"


class _FileRun:
    """The namespace and working folder of one Markdown file's blocks."""

    def __init__(self, path: Path) -> None:
        self.namespace: dict[str, Any] = {"__name__": f"doc_{path.stem.replace('-', '_')}"}
        self.folder = Path(tempfile.mkdtemp(prefix="docblocks-"))
        self.done = 0  # blocks of the file executed so far (runnable ones, in order)


_RUNS: dict[Path, _FileRun] = {}


@contextlib.contextmanager
def _inside(folder: Path) -> Any:
    before = os.getcwd()
    os.chdir(folder)
    try:
        yield
    finally:
        os.chdir(before)


class _Tee(io.StringIO):
    """Keeps what a block prints and still passes it on (pytest shows it on failure)."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out

    def write(self, text: str) -> int:
        self._out.write(text)
        return super().write(text)


def _execute(block: Block, run: _FileRun) -> str:
    """Run ``block`` in ``run``'s namespace and folder; return what it printed."""
    code = compile(block.code, _id(block), "exec")
    tee = _Tee(sys.stdout)
    with _inside(run.folder), contextlib.redirect_stdout(tee):  # files a block writes land in a temporary folder
        exec(code, run.namespace)  # the documentation's own examples
    return tee.getvalue()


def _check_shown_output(block: Block, printed: str) -> None:
    """A block followed by a ``<!-- doc: output -->`` block prints what that block shows."""
    shown = SHOWN[block.path].get(block.line)
    if shown is not None:
        problems = compare_output(printed, shown.code)
        assert problems == [], (
            f"{_id(block)} prints something else than {_id(shown)} shows:\n" + "\n".join(problems)
            + f"\n--- printed ---\n{printed}"
        )


RUNNABLE = [b for b in BLOCKS if b.runs]


@pytest.mark.parametrize("block", RUNNABLE, ids=[_id(b) for b in RUNNABLE])
def test_python_block(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    in_file = [b for b in RUNNABLE if b.path == block.path]
    position = in_file.index(block)
    run = _RUNS.setdefault(block.path, _FileRun(block.path))
    for earlier in in_file[run.done : position]:  # blocks above it (when run alone)
        _execute(earlier, run)
    if run.done > position:  # already ran (a re-run in one session): start the file afresh
        run = _RUNS[block.path] = _FileRun(block.path)
        for earlier in in_file[:position]:
            _execute(earlier, run)
    printed = _execute(block, run)
    run.done = position + 1
    _check_shown_output(block, printed)


# --- blocks marked <!-- doc: extra=... -->: each runs on its own with only that extra ---

ALONE = [b for b in BLOCKS if b.extras]
#: Top-level modules a block may import with each extra installed (besides the standard library).
_BASE_MODULES = {"numpy", "scipy", "diverse_core"}
EXTRA_MODULES = {
    "langchain": _BASE_MODULES | {"langchain_core", "langchain_diverse"},
    "llamaindex": _BASE_MODULES | {"llama_index", "llamaindex_diverse"},
}


@pytest.mark.parametrize("block", ALONE, ids=[_id(b) for b in ALONE])
def test_marked_block_runs_alone(block: Block, monkeypatch: pytest.MonkeyPatch) -> None:
    """A block marked ``extra=...`` needs no name from the blocks above it (fresh namespace)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    printed = _execute(block, _FileRun(block.path))
    _check_shown_output(block, printed)


def _imported_roots(code: str) -> set[str]:
    roots: set[str] = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("block", ALONE, ids=[_id(b) for b in ALONE])
def test_marked_block_imports_only_its_extras(block: Block) -> None:
    """Every extra a block names is a real extra, and the block imports nothing beyond it."""
    for extra in block.extras:
        assert extra in EXTRA_MODULES, f"{_id(block)}: extra={extra} has no module list in this test"
        extra_names = _PYPROJECT_EXTRAS
        assert extra_names is None or extra in extra_names, f"{_id(block)}: pyproject.toml has no extra {extra!r}"
        beyond = _imported_roots(block.code) - EXTRA_MODULES[extra] - set(sys.stdlib_module_names)
        assert beyond == set(), f"{_id(block)} imports {sorted(beyond)}, which [{extra}] does not install"


def _pyproject_extras() -> set[str] | None:
    try:
        import tomllib
    except ImportError:  # Python 3.10
        return None
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(data["project"]["optional-dependencies"])


_PYPROJECT_EXTRAS = _pyproject_extras()


def test_every_readme_block_names_its_install_line() -> None:
    """Every runnable README block says which extra it runs on (CI runs it in that extra's venv)."""
    readme = [b for b in RUNNABLE if b.path == ROOT / "README.md"]
    assert readme, "the README has runnable blocks"
    unmarked = [_id(b) for b in readme if not b.extras]
    assert unmarked == [], f"mark them <!-- doc: extra=... --> (the extra whose install line they need): {unmarked}"


def test_check_extras_runs_the_readme_blocks() -> None:
    """``.ci/check_extras.sh`` runs every marked block of the README and docs/ in a fresh venv per set
    of install lines (``mdblocks.py keys`` / ``run --install``), not only its smoke script."""
    script = (ROOT / ".ci" / "check_extras.sh").read_text(encoding="utf-8")
    assert "tests/docs/mdblocks.py\" keys" in script and "--install \"$key\"" in script
    assert "README.md" in script and '"$ROOT/docs"' in script
    assert "--no-deps" in script and "WEIGHT_PACKAGES" in script


def test_every_python_block_is_marked() -> None:
    """A Python-looking block must say ``python`` (runs) or ``python notest`` (does not)."""
    bad = [f"{_id(b)} ```{b.info}" for b in BLOCKS if b.is_python and " ".join(b.info.split()) not in PYTHON_INFOS]
    assert bad == [], f"use ```python or ```python notest: {bad}"


def test_the_docs_have_examples() -> None:
    assert len(DOC_FILES) > 10
    assert len(RUNNABLE) > 30, len(RUNNABLE)


# --- shell blocks: the commands they show exist ---

_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=\S*$")


def _commands(block: Block) -> list[list[str]]:
    """The command lines of a shell block (continuations joined, comments and env prefixes dropped)."""
    text = re.sub(r"\\\n", " ", block.code)
    out: list[list[str]] = []
    for raw in text.splitlines():
        line = raw.strip().removeprefix("$ ")
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        while words and (_ENV.match(words[0]) or words[0] in {"env", "-u"} or words[0].isupper()):
            words = words[1:]
        if words:
            out.append(words)
    return out


SHELL = [b for b in BLOCKS if b.language in {"bash", "sh", "shell", "console"}]


def _parser() -> argparse.ArgumentParser:
    from diverse_core.cli import build_parser

    return build_parser()


@pytest.mark.parametrize("block", SHELL, ids=[_id(b) for b in SHELL])
def test_shell_block_commands_exist(block: Block) -> None:
    for words in _commands(block):
        if words[0] == "diverse-rag":
            try:
                _parser().parse_args(words[1:])
            except SystemExit as exc:  # argparse's way of refusing
                raise AssertionError(f"{_id(block)}: `{' '.join(words)}` does not parse") from exc
        elif words[0].startswith("python") and len(words) > 1:
            args = words[1:]
            if args[0] == "-m":
                assert importlib.util.find_spec(args[1]) is not None, f"{_id(block)}: no module {args[1]}"
            elif args[0].endswith(".py"):
                assert (ROOT / args[0]).is_file(), f"{_id(block)}: no file {args[0]}"
        elif words[0] == "make":
            targets = re.findall(r"^([\w-]+):", (ROOT / "Makefile").read_text(), re.MULTILINE)
            for target in words[1:]:
                assert target in targets, f"{_id(block)}: no make target {target}"


def test_python_snippets_refer_to_existing_files() -> None:
    """``python examples/x.py`` / ``benchmarks/x.py`` named anywhere in the docs exist."""
    missing = []
    for path in DOC_FILES:
        for rel in re.findall(r"(?<![\w/.(])((?:examples|benchmarks)/[\w/.-]+\.(?:py|md|json|png))", path.read_text()):
            if not (ROOT / rel).exists() and "*" not in rel:
                missing.append(f"{path.relative_to(ROOT)}: {rel}")
    assert missing == []



# --- install lines: the text above a marked block shows exactly what CI installs for it ---

_PIP_LINE = re.compile(r"pip install [^`\n]*")


@pytest.mark.parametrize("block", ALONE, ids=[_id(b) for b in ALONE])
def test_marked_block_shows_exactly_its_install_lines(block: Block) -> None:
    """``.ci/check_extras.sh`` installs :func:`mdblocks.install_lines` and nothing more, so the
    reader's header must name the same lines (issue 47: the MiniLM weights line was missing)."""
    from mdblocks import install_lines, text_above

    above = text_above(block)
    shown = [m.strip() for m in _PIP_LINE.findall(above)]
    assert sorted(shown) == sorted(install_lines(block)), (
        f"{_id(block)}: the text above shows {shown}; CI installs {install_lines(block)}")


def test_readme_is_short() -> None:
    """Install, the two swaps, the headline table, links: the rest lives in docs/ (issue 47)."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 250, len(lines)


def test_readme_and_getting_started_lead_with_diversity() -> None:
    """The one-line swaps teach the shared knob ``diversity=``, not a method's own parameter (issue 44)."""
    for page in (ROOT / "README.md", ROOT / "docs" / "getting-started.md"):
        swaps = [b for b in read_blocks(page) if b.runs and b.extras][:2]
        assert swaps and all("diversity" in b.code and "lambda_mult" not in b.code for b in swaps), page

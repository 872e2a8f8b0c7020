"""Every list of methods and pipelines in the docs and docstrings matches the registries.

A new method registered in ``diverse_core`` (or a new built-in pipeline) fails these tests until
the methods index, the README's method table, the docstrings that enumerate methods and the API
reference name it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import diverse_core
import pytest
from diverse_core import api, available_methods
from diverse_core.pipelines import available_pipelines, get_pipeline
from diverse_core.registry import get_method

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = [ROOT / "shared" / "diverse_core", ROOT / "langchain_diverse", ROOT / "llamaindex_diverse"]


def _builtin_methods() -> set[str]:
    """Registered methods defined by the library itself (tests may register their own)."""
    return {m for m in available_methods() if get_method(m).run.__module__.startswith("diverse_core.")}


def _builtin_pipelines() -> set[str]:
    return {p for p in available_pipelines() if get_pipeline(p).__module__.startswith("diverse_core.pipelines.")}


def _table_methods(path: Path, header: str) -> set[str]:
    """The backticked names in the first column of the Markdown table whose header row starts with ``header``."""
    lines = path.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    names: set[str] = set()
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        names.update(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def test_the_registry_has_the_twelve_builtin_methods() -> None:
    assert _builtin_methods() == {
        "topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist", "adaptive", "learned",
    }


@pytest.mark.parametrize("page", ["docs/methods/index.md", "README.md"])
def test_method_tables_list_every_registered_method(page: str) -> None:
    assert _table_methods(ROOT / page, "| method |") == _builtin_methods()


def test_every_method_but_topk_has_a_page_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in sorted(_builtin_methods() - {"topk"}):
        assert (ROOT / "docs" / "methods" / f"{name}.md").is_file(), name
        assert f"methods/{name}.md" in nav, name


@pytest.mark.parametrize(
    ("where", "doc"),
    [("diverse_core", diverse_core.__doc__), ("diverse_core.select", api.select.__doc__)],
)
def test_docstrings_name_every_method(where: str, doc: str | None) -> None:
    missing = sorted(m for m in _builtin_methods() if f"``{m}``" not in (doc or "") and f'``"{m}"``' not in (doc or ""))
    assert missing == [], f"{where}'s docstring does not name {missing}"


def _docstrings() -> list[tuple[str, str]]:
    out = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                    doc = ast.get_docstring(node)
                    if doc:
                        out.append((f"{path.relative_to(ROOT)}:{getattr(node, 'name', '<module>')}", doc))
    return out


def test_no_docstring_lists_only_some_methods() -> None:
    """A docstring naming five or more methods is a list of them: it must name all of them."""
    names = _builtin_methods()
    partial = []
    for where, doc in _docstrings():
        found = {m for m in names if re.search(rf'``"?{m}"?``', doc)}
        if len(found) >= 5 and found != names:
            partial.append(f"{where}: names {sorted(found)}, not {sorted(names - found)}")
    assert partial == []


def test_the_pipelines_docstring_names_every_pipeline() -> None:
    import diverse_core.pipelines as pipelines

    missing = sorted(p for p in _builtin_pipelines() if f"``{p}``" not in (pipelines.__doc__ or ""))
    assert missing == [], f"diverse_core.pipelines' docstring does not name {missing}"


def test_the_pipeline_pages_cover_every_pipeline() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for name in sorted(_builtin_pipelines()):
        assert f"pipelines/{name}.md" in nav and f"reference/{name}.md" in nav, name


#: Subpackages that are not API: the demo behind ``diverse-rag demo``; ``dfrag``, the old import
#: path re-exporting :mod:`diverse_core.pipelines.dfrag` (documented there).
NOT_API = {"demo", "dfrag"}


def test_the_api_reference_covers_every_public_subpackage() -> None:
    core = ROOT / "shared" / "diverse_core"
    subpackages = {p.parent.name for p in core.glob("*/__init__.py") if not p.parent.name.startswith("_")}
    directives = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "reference").glob("*.md"))
    missing = sorted(s for s in subpackages - NOT_API if not re.search(rf"^::: diverse_core\.{s}\b", directives, re.M))
    assert missing == [], f"no API reference page renders diverse_core.{missing}"
    assert {"learned", "methods", "adaptive", "pipelines", "llm"} <= subpackages - NOT_API


PAPER_FILES = re.compile(r"\b(?:df-rag|vendi-rag|dr-rag|diva|dartboard)\.txt\b")


def test_papers_are_cited_not_named_by_file() -> None:
    """Citations give authors, title and venue/arXiv id (docs/papers.md), not the repository's text files."""
    files = [ROOT / "README.md", ROOT / "benchmarks" / "RESULTS.md", *sorted((ROOT / "docs").rglob("*.md"))]
    files += [p for package in PACKAGES for p in sorted(package.rglob("*.py"))]
    hits = [f"{p.relative_to(ROOT)}:{n}" for p in files
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if PAPER_FILES.search(line)]
    assert hits == []
    papers = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    for arxiv in ("2601.17212", "2502.11228", "2407.12101", "2409.02361", "2406.07348", "2405.18754"):
        assert f"arXiv:{arxiv}" in papers


@pytest.mark.parametrize("page", ["docs/frameworks/langchain.md", "docs/frameworks/llamaindex.md"])
def test_framework_pages_list_every_registered_method(page: str) -> None:
    """The ``- `method`: ...`` item of each framework page names exactly the registry's methods (issue 47)."""
    text = (ROOT / page).read_text(encoding="utf-8")
    item = re.search(r"^- `method`: (.*?)(?:;|\(and any)", text, re.MULTILINE | re.DOTALL)
    assert item, page
    assert set(re.findall(r"`(\w+)`", item.group(1))) == _builtin_methods()

"""diverse_core.text: the per-text cache (bounded, thread-safe, keyed by content) and the array view."""

from __future__ import annotations

import ast
import threading
from pathlib import Path

import diverse_core
import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.text import (
    TextFactsCache,
    content_terms,
    name_terms,
    read_text,
    view_from_facts,
)
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(diverse_core.__file__).parent


def _view_by_sets(question: str, texts: list[str]) -> tuple[list[list[bool]], list[list[bool]], list[set[str]]]:
    """The lexical view computed the slow, obvious way (word sets), for comparison."""
    terms = sorted(content_terms(question))
    names = sorted(name_terms(question, skip_first=True))
    facts = [read_text(t) for t in texts]
    term_hits = [[w in f.terms for w in terms] for f in facts]
    name_hits = [[w in f.terms for w in names] for f in facts]
    others = [set(f.names) - set(terms) for f in facts]
    return term_hits, name_hits, others


WORDS = ["Alien", "alien", "Ridley", "Scott", "was", "directed", "by", "born", "1979", "in", "South", "Shields", "the",
         "Paris:", "film", "A", "x"]


@settings(max_examples=60, deadline=None)
@given(question=st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join),
       texts=st.lists(st.lists(st.sampled_from(WORDS), min_size=0, max_size=10).map(" ".join), min_size=1,
                      max_size=8))
def test_array_view_equals_the_set_view(question: str, texts: list[str]) -> None:
    cache = TextFactsCache(maxsize=5)  # smaller than some inputs: evictions on the way
    view = view_from_facts(question, cache.get_many(texts), cache)
    term_hits, name_hits, others = _view_by_sets(question, texts)
    assert view.term_hits.tolist() == term_hits
    assert view.name_hits.tolist() == name_hits
    assert view.other_names.sum(axis=1).tolist() == [len(o) for o in others]
    # two candidates share exactly the other names both hold
    shared = view.other_names.astype(int) @ view.other_names.astype(int).T
    assert shared.tolist() == [[len(a & b) for b in others] for a in others]


def test_cache_is_bounded_and_lru() -> None:
    cache = TextFactsCache(maxsize=2)
    cache.get_many(["a one", "b two", "c three"])
    assert len(cache) == 2 and cache.misses == 3
    cache.get("b two")
    assert cache.hits == 1
    cache.get("d four")  # evicts "c three" (least recently used), keeps "b two"
    cache.get("b two")
    assert cache.hits == 2
    cache.get("c three")
    assert cache.misses == 5


def test_vocabulary_starts_over_and_ids_stay_consistent() -> None:
    cache = TextFactsCache(maxsize=100, max_words=3)
    first = cache.get_many(["Alpha beta gamma delta", "epsilon zeta"])
    again = cache.get_many(["Alpha beta gamma delta", "eta theta"])  # past max_words: a new generation
    assert again[0].generation != first[0].generation
    assert len({f.generation for f in again}) == 1
    view = view_from_facts("alpha and eta?", again, cache)
    assert view.term_hits.tolist() == [[True, False], [False, True]]


def test_cache_is_thread_safe() -> None:
    cache = TextFactsCache(maxsize=50)
    texts = [f"Text {i} about Topic{i % 7} and Name{i % 5}" for i in range(200)]
    errors: list[BaseException] = []

    def work(seed: int) -> None:
        rng = np.random.default_rng(seed)
        try:
            for _ in range(30):
                batch = [texts[j] for j in rng.choice(len(texts), 20, replace=False)]
                facts = cache.get_many(batch)
                view = view_from_facts("Topic3 Name2?", facts, cache)
                expect, _, _ = _view_by_sets("Topic3 Name2?", batch)
                assert view.term_hits.tolist() == expect
                assert len({f.generation for f in facts}) == 1
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(cache) <= 50


def test_bad_sizes_are_typed_errors() -> None:
    with pytest.raises(InvalidParameterError, match="maxsize"):
        TextFactsCache(maxsize=-1)
    with pytest.raises(InvalidParameterError, match="max_words"):
        TextFactsCache(max_words=1.5)  # type: ignore[arg-type]


def _imports(path: Path) -> list[tuple[str, bool]]:
    """``(module, at top level)`` of every ``from .. import`` in a core file, resolved to ``diverse_core.*``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = ".".join(path.relative_to(ROOT.parent).with_suffix("").parts[:-1])
    # top level: the module's own statements and those of its ``if TYPE_CHECKING:`` blocks
    top = {id(node) for node in tree.body}
    top |= {id(inner) for node in tree.body if isinstance(node, ast.If) for inner in node.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            out.append((f"{base}.{node.module}" if node.module else base, id(node) in top))
    return out


#: What each package of the text stack and the trained selectors may import from the core (besides errors,
#: validation and registry): the text stack at the bottom, the shared trained base above it, the two
#: selectors on top, neither importing the other.
ALLOWED = {
    "text": ("diverse_core.text",),
    "trained": ("diverse_core.text", "diverse_core.trained"),
    "adaptive": ("diverse_core.text", "diverse_core.trained", "diverse_core.adaptive", "diverse_core.methods"),
    "learned": ("diverse_core.text", "diverse_core.trained", "diverse_core.learned"),
}


@pytest.mark.parametrize("pkg", sorted(ALLOWED))
def test_text_and_trained_selectors_import_only_downwards_at_top_level(pkg: str) -> None:
    base = ("diverse_core.errors", "diverse_core.validation", "diverse_core.registry", "diverse_core._version",
            "diverse_core.tuning")
    for path in sorted((ROOT / pkg).glob("*.py")):
        for module, at_top in _imports(path):
            assert at_top, f"{path.name}: function-level import of {module}"
            assert module.startswith(ALLOWED[pkg] + base), f"{pkg}/{path.name} imports {module}"


def test_learned_does_not_import_a_pipeline() -> None:
    """Every selection method sits below every pipeline: learned/ and adaptive/ import no pipelines module."""
    for pkg in ("learned", "adaptive"):
        for path in (ROOT / pkg).glob("*.py"):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and "pipelines" in node.module:
                    raise AssertionError(f"{path.name} imports {node.module}")

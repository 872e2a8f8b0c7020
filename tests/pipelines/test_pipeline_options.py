"""A pipeline's options are declared once in the core (``Pipeline.OPTIONS``) and generated into
both faces and the harness (issue 36 item 1)."""

from __future__ import annotations

import hashlib
import inspect
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from diverse_core.pipelines import Pipeline
from diverse_core.pipelines.dfrag import DFRAG
from diverse_core.pipelines.diva import DIVA
from diverse_core.pipelines.drrag import DRRAG
from diverse_core.pipelines.options import POLICY_KEYWORDS, Option, face_options, harness_options
from diverse_core.pipelines.vendirag import VendiRAG
from two_search_pipeline import TwoSearch

BUILTIN = [DFRAG, DIVA, DRRAG, VendiRAG]
TEXTS = [f"fact {i}: the {w} river" for i, w in enumerate(["red", "blue", "green", "long", "short", "wide"])]


class WideSearch(TwoSearch):
    """The test pipeline with one more option, added in the core only."""

    name = "wide-search"
    OPTIONS = (
        Option("tag", "x", "a label put on every reason", str),
        Option("width", 3, "a new option no face mentions", int, bounds=">= 1", parse=lambda t: int(t) * 10),
    )

    def __init__(self, llm: Any = None, *, tag: str = "x", width: int = 3, **kw: Any) -> None:
        super().__init__(llm, tag=tag, **kw)
        if width < 1:
            raise InvalidParameterError(f"width must be >= 1; got width={width!r}")
        self.width = width


def undeclared_keywords(cls: type[Any]) -> dict[str, str]:
    """Where ``cls.OPTIONS`` and ``cls.__init__`` disagree: ``{name: what is wrong}`` (per-role
    models ``*_llm`` and the shared call policy left out)."""
    declared = {o.name: o for o in getattr(cls, "OPTIONS", ())}
    params = {
        name: p
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and name not in POLICY_KEYWORDS and not name.endswith("_llm")
        and p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    problems: dict[str, str] = {}
    for name, p in params.items():
        if name not in declared:
            problems[name] = "not declared in OPTIONS"
        elif not _same_default(declared[name].default, p.default):
            problems[name] = f"default {declared[name].default!r} in OPTIONS, {p.default!r} in __init__"
    for name in declared.keys() - params.keys():
        problems[name] = "declared in OPTIONS but not a keyword of __init__"
    return problems


def _same_default(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):  # arrays and the like
        return a is b


def _vec(text: str, dim: int = 16) -> list[float]:
    seed = int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)
    v = np.random.default_rng(seed).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


@pytest.mark.parametrize("cls", [*BUILTIN, WideSearch])
def test_declaration_matches_the_constructor(cls: type[Pipeline]) -> None:
    assert undeclared_keywords(cls) == {}


def test_a_keyword_missing_from_the_declaration_is_found() -> None:
    class Drifted(WideSearch):
        def __init__(self, llm: Any = None, *, tag: str = "y", width: int = 3, depth: int = 1, **kw: Any) -> None:
            super().__init__(llm, tag=tag, width=width, **kw)

    assert undeclared_keywords(Drifted) == {
        "depth": "not declared in OPTIONS", "tag": "default 'x' in OPTIONS, 'y' in __init__"}


def test_every_declared_option_is_documented_and_bounded_or_typed() -> None:
    for cls in BUILTIN:
        for option in cls.OPTIONS:
            assert option.doc, (cls.__name__, option.name)
            if option.choices is not None:
                assert option.default in option.choices, (cls.__name__, option.name)


# ---------------------------------------------------------------------------- LangChain
def test_langchain_faces_are_generated_from_the_declaration() -> None:
    pytest.importorskip("langchain_core")
    from langchain_diverse import DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever

    for face, cls in ((DFRAGRetriever, DFRAG), (DIVARetriever, DIVA), (DRRAGRetriever, DRRAG),
                      (VendiRAGRetriever, VendiRAG)):
        declared = {o.name: o.default for o in face_options(cls.OPTIONS)}
        assert set(face.pipeline_options()) == set(declared), face.__name__
        for name, default in declared.items():
            assert face.model_fields[name].default == default, (face.__name__, name)
    assert "classifier" in DRRAGRetriever.model_fields


def test_new_core_option_appears_in_the_langchain_face() -> None:
    pytest.importorskip("langchain_core")
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    from langchain_diverse import PipelineRetriever

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vec(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vec(text)

    class WideRetriever(PipelineRetriever):
        pipeline_class = WideSearch  # nothing else: the options come from the core

    assert WideRetriever.model_fields["width"].default == 3
    store = InMemoryVectorStore(Hash())
    store.add_texts(TEXTS)
    retriever = WideRetriever(vectorstore=store, k=2, fetch_k=6, width=7, tag="lc")
    assert retriever.pipeline.width == 7 and retriever.pipeline.tag == "lc"
    assert WideRetriever(vectorstore=store, k=2, fetch_k=6).pipeline.width == 3
    assert len(retriever.invoke(TEXTS[2])) == 2
    with pytest.raises(InvalidParameterError, match="width"):
        WideRetriever(vectorstore=store, k=2, fetch_k=6, width=0)


# ---------------------------------------------------------------------------- LlamaIndex
def test_llamaindex_faces_are_generated_from_the_declaration() -> None:
    pytest.importorskip("llama_index.core")
    from llamaindex_diverse import DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever

    for face, cls in ((DFRAGRetriever, DFRAG), (DIVARetriever, DIVA), (DRRAGRetriever, DRRAG),
                      (VendiRAGRetriever, VendiRAG)):
        assert face.options == tuple(o.name for o in face_options(cls.OPTIONS)), face.__name__


def test_new_core_option_appears_in_the_llamaindex_face() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import PipelineRetriever

    class WideRetriever(PipelineRetriever):
        pipeline_class = WideSearch
        llm_default_from_settings = False  # retrieval needs no LLM

    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=emb)
    retriever = WideRetriever(index, embed_model=emb, k=2, fetch_k=6, width=9)
    assert retriever.pipeline.width == 9
    with pytest.raises(InvalidParameterError, match="unknown option"):
        WideRetriever(index, embed_model=emb, colour="red")


# ---------------------------------------------------------------------------- harness
def test_harness_plugins_take_every_declared_option() -> None:
    from diverse_core.eval import dfrag_plugin, diva_plugin, drrag_plugin, vendirag_plugin

    for method, cls in ((dfrag_plugin.dfrag_method, DFRAG), (diva_plugin.diva_method, DIVA),
                        (drrag_plugin.drrag_method, DRRAG), (vendirag_plugin.vendirag_method, VendiRAG)):
        names = {o.name for o in harness_options(cls.OPTIONS)}
        assert names <= method.options, (cls.__name__, names - method.options)
        assert {"max_concurrency", "timeout", "max_retries"} <= method.options
    assert "classifier" in drrag_plugin.drrag_method.options  # left out before


def test_new_core_option_appears_in_the_harness() -> None:
    from diverse_core.eval import declare_pipeline_method
    from diverse_core.eval.plugins import MethodInput

    built: list[WideSearch] = []

    def build(params: dict[str, Any], k: int) -> WideSearch:
        built.append(WideSearch(params.pop("llm", None), k=k, **params))
        return built[-1]

    method = declare_pipeline_method("wide-search-test", build, needs_llm=False, pipeline=WideSearch)
    assert {"tag", "width"} <= method.options
    from diverse_core.pipelines import InMemorySource

    emb = np.array([_vec(t) for t in TEXTS])
    inp = MethodInput(question=TEXTS[1], query_embedding=emb[1], texts=TEXTS, embeddings=emb,
                      relevance=emb @ emb[1], k=2, units=np.arange(len(TEXTS)),
                      source_factory=lambda: InMemorySource(TEXTS, embedder=lambda ts: [_vec(t) for t in ts]))
    out = method(inp, width="4", tag="h")
    assert built[-1].width == 40  # converted by the option's own parse
    assert out.info["reasons"][0]["tag"] == "h"
    with pytest.raises(InvalidParameterError, match="unknown"):
        method(inp, colour="red")


def test_builtin_constructor_signatures_keep_their_keywords() -> None:
    for cls in BUILTIN:
        params = inspect.signature(cls.__init__).parameters
        for option in cls.OPTIONS:
            assert params[option.name].default == option.default or option.default is params[option.name].default


def test_a_registered_pipeline_runs_in_the_harness_without_a_plugin_of_its_own() -> None:
    from diverse_core.eval import get_plugin, parse_method
    from diverse_core.eval.plugins import MethodInput
    from diverse_core.pipelines import InMemorySource, register_pipeline

    register_pipeline(WideSearch, "wide-search-auto")
    grid = parse_method("wide-search-auto@width=2@tag=auto")
    assert grid.is_plugin
    plugin = get_plugin("wide-search-auto")
    assert {"tag", "width", "timeout"} <= plugin.fn.options  # type: ignore[attr-defined]
    emb = np.array([_vec(t) for t in TEXTS])
    inp = MethodInput(question=TEXTS[1], query_embedding=emb[1], texts=TEXTS, embeddings=emb,
                      relevance=emb @ emb[1], k=2, units=np.arange(len(TEXTS)),
                      source_factory=lambda: InMemorySource(TEXTS, embedder=lambda ts: [_vec(t) for t in ts]))
    out = plugin.fn(inp, **grid.params)
    assert out.info["reasons"][0]["tag"] == "auto" and len(out.indices) == 2

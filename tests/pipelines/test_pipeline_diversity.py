"""The shared ``diversity`` knob on the pipelines (issue 36 item 4): declared once in the core
(``PipelineDiversity`` -> ``OPTIONS``), mapped onto each pipeline's own option, refused by DR-RAG
with its reason, and carried to both faces and the harness without face code.

Scripted stand-ins play the LLMs (no model, no network)."""

from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import pytest
from diverse_core.errors import ConflictingParametersError, InvalidParameterError
from diverse_core.pipelines import InMemorySource, Pipeline
from diverse_core.pipelines.dfrag import DEFAULT_LAMBDAS, DFRAG, lambdas_for_diversity
from diverse_core.pipelines.diva import DIVA
from diverse_core.pipelines.diversity import PipelineDiversity, same_values
from diverse_core.pipelines.drrag import DRRAG
from diverse_core.pipelines.options import face_options, harness_options
from diverse_core.pipelines.vendirag import VendiRAG
from hypothesis import given
from hypothesis import strategies as st

BUILTIN = [DFRAG, DIVA, DRRAG, VendiRAG]
TEXTS = [f"fact {i}: the {w} river" for i, w in enumerate(["red", "blue", "green", "long", "short", "wide"])]
READINGS = ["Who won in 2018?", "Who won in 2019?"]


def diva_llm(prompt: str) -> str:
    if prompt.rstrip().endswith("Reason:"):
        return "The year is not fixed.\nKinds: [Time]"
    if prompt.rstrip().endswith("Unambiguous questions:"):
        return "1: Who won in 2018?\n2: Who won in 2019?"
    return "Verdict: Yes"


def vendi_llm(prompt: str) -> str:
    if prompt.rstrip().endswith("Ratings (JSON):"):
        return '{"coherence": 9, "relevance": 9, "query_alignment": 9}'
    return "steps" if prompt.rstrip().endswith("Reasoning:") else "an answer"


def dfrag_tied_llm(prompt: str) -> str:
    """A Planner and an Evaluator that scores every set the same: lambda* is the grid's upper median."""
    if "Plan:" in prompt and "Passages:" not in prompt:
        return "1) Find the fact"
    if "Evaluation:" in prompt:
        return "1. Score: 3. Reason: partly\nTotal Score: 3"
    return "an answer"


def _vec(text: str, dim: int = 16) -> list[float]:
    seed = int(hashlib.sha1(text.encode()).hexdigest()[:12], 16)
    v = np.random.default_rng(seed).normal(size=dim)
    return (v / np.linalg.norm(v)).tolist()


# ---------------------------------------------------------------------------- core: declaration
@pytest.mark.parametrize("cls", BUILTIN)
def test_every_pipeline_declares_diversity_for_both_faces_and_the_harness(cls: type[Pipeline[Any]]) -> None:
    (option,) = [o for o in cls.OPTIONS if o.name == "diversity"]
    assert option.default is None and option.bounds == "[0, 1]" and option.doc
    assert option in face_options(cls.OPTIONS) and option in harness_options(cls.OPTIONS)


def test_without_diversity_every_default_is_unchanged() -> None:
    diva, vendi, dfrag = DIVA(diva_llm), VendiRAG(vendi_llm), DFRAG(dfrag_tied_llm)
    assert (diva.mmr_lambda, diva.prune) == (0.5, "mean")
    assert vendi.initial_s == 0.8
    assert dfrag.lambdas == DEFAULT_LAMBDAS
    assert DRRAG(diversity=None).mode == "cfs"


@pytest.mark.parametrize("d", [0.0, 0.3, 0.5, 1.0])
def test_each_pipeline_maps_diversity_onto_its_own_option(d: float) -> None:
    diva = DIVA(diva_llm, diversity=d)
    assert diva.mmr_lambda == pytest.approx(1.0 - d) and diva.prune == "mmr"
    assert VendiRAG(vendi_llm, diversity=d).initial_s == d
    grid = DFRAG(dfrag_tied_llm, diversity=d).lambdas
    assert grid == lambdas_for_diversity(d) and grid[-1] == 1.0
    assert min(grid) == pytest.approx(max(0.1, round(1.0 - d, 1)))


def test_dfrag_grid_ends() -> None:
    assert lambdas_for_diversity(0.0) == (1.0,)  # relevance only: gMMR at lambda = 1
    assert lambdas_for_diversity(1.0) == DEFAULT_LAMBDAS  # the paper's grid
    assert lambdas_for_diversity(0.7) == (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)  # 1 - 0.7 keeps 0.3


@given(st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_every_map_is_monotone(a: float, b: float) -> None:
    lo, hi = sorted((a, b))
    assert DIVA(diva_llm, diversity=hi).mmr_lambda <= DIVA(diva_llm, diversity=lo).mmr_lambda
    assert VendiRAG(vendi_llm, diversity=hi).initial_s >= VendiRAG(vendi_llm, diversity=lo).initial_s
    small, large = lambdas_for_diversity(lo), lambdas_for_diversity(hi)
    assert set(small) <= set(large) and min(large) <= min(small)


# ---------------------------------------------------------------------------- core: both given, refusals
def test_the_native_option_wins_when_both_agree() -> None:
    assert DIVA(diva_llm, mmr_lambda=0.7, diversity=0.3).mmr_lambda == 0.7
    assert VendiRAG(vendi_llm, initial_s=0.4, diversity=0.4).initial_s == 0.4
    assert DFRAG(dfrag_tied_llm, lambdas=[0.7, 0.8, 0.9, 1.0], diversity=0.3).lambdas == (0.7, 0.8, 0.9, 1.0)
    assert DIVA(diva_llm, prune="mmr", diversity=0.2).prune == "mmr"


@pytest.mark.parametrize("build, names", [
    (lambda: DIVA(diva_llm, mmr_lambda=0.5, diversity=0.3), "mmr_lambda=0.5"),
    (lambda: DIVA(diva_llm, prune="max", diversity=0.3), "prune='max'"),
    (lambda: VendiRAG(vendi_llm, initial_s=0.8, diversity=0.3), "initial_s=0.8"),
    (lambda: DFRAG(dfrag_tied_llm, lambdas=[0.5, 1.0], diversity=0.3), "lambdas=(0.5, 1.0)"),
])
def test_conflicting_values_raise_a_typed_error_naming_both(build: Any, names: str) -> None:
    with pytest.raises(ConflictingParametersError, match="diversity=0.3") as info:
        build()
    assert names in str(info.value)


def test_out_of_range_diversity_names_the_parameter() -> None:
    for build in (lambda: DIVA(diva_llm, diversity=1.5), lambda: VendiRAG(vendi_llm, diversity=-0.1),
                  lambda: DFRAG(dfrag_tied_llm, diversity=2), lambda: DRRAG(diversity="high")):
        with pytest.raises(InvalidParameterError, match="diversity"):
            build()


def test_drrag_refuses_diversity_with_its_reason() -> None:
    with pytest.raises(InvalidParameterError, match="no relevance/diversity trade-off") as info:
        DRRAG(diversity=0.5)
    assert not isinstance(info.value, ConflictingParametersError)
    assert "k1" in str(info.value)


def test_dfrag_adaptive_evaluator_refuses_diversity() -> None:
    with pytest.raises(InvalidParameterError, match="evaluator='adaptive'"):
        DFRAG(None, evaluator="adaptive", diversity=0.5)


def test_the_knob_helper() -> None:
    knob = PipelineDiversity("x", lambda d: 2 * d, "x = 2 diversity", default=1.0)
    assert knob.resolve("Toy", None, None) == 1.0 and knob.resolve("Toy", 0.3, None) == 0.3
    assert knob.resolve("Toy", None, 0.25) == 0.5 and knob.resolve("Toy", 0.5, 0.25) == 0.5
    with pytest.raises(ConflictingParametersError, match=r"Toy: diversity=0.25 means x=0.5 \(x = 2 diversity\)"):
        knob.resolve("Toy", 0.6, 0.25)
    assert same_values((0.1, 0.2), [0.1, 0.2 + 1e-15]) and not same_values((0.1,), (0.1, 0.2))
    assert not same_values(True, 1.0)


# ---------------------------------------------------------------------------- direction over random pools
POOLS = 200


def _pool(seed: int, n: int = 24, dim: int = 8) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cands = rng.normal(size=(n, dim))
    cands /= np.linalg.norm(cands, axis=1, keepdims=True)
    readings = rng.normal(size=(3, dim))
    query = readings.mean(axis=0) + 0.3 * rng.normal(size=dim)
    return cands, readings, query


def _pairwise(emb: np.ndarray) -> float:
    unit = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    sims = unit @ unit.T
    return float(sims[np.triu_indices(len(emb), 1)].mean())


def _assert_direction(curves: dict[float, tuple[float, float]]) -> None:
    """Mean relevance and mean pairwise similarity of the picks do not rise as diversity rises."""
    (r0, s0), (r5, s5), (r1, s1) = (curves[d] for d in (0.0, 0.5, 1.0))
    assert r0 >= r5 - 1e-9 >= r1 - 2e-9, curves
    assert s0 >= s5 - 1e-9 >= s1 - 2e-9, curves
    assert (r0, s0) != (r1, s1), curves  # the knob moves something


def test_diva_direction_over_random_pools() -> None:
    """Given readings (no LLM): relevance = the mean similarity to the readings (what DIVA ranks by)."""
    curves = {}
    for d in (0.0, 0.5, 1.0):
        pipe = DIVA(None, k=4, fetch_k=24, per_interpretation_k=6, diversity=d)
        rel, sim = [], []
        for seed in range(POOLS):
            cands, readings, query = _pool(seed)
            vectors = {f"c{i}": v for i, v in enumerate(cands)} | {f"r{j}": v for j, v in enumerate(readings)}
            vectors["q"] = query
            src = InMemorySource(list(vectors)[:len(cands)], embedder=lambda ts, v=vectors: [v[t] for t in ts])
            res = pipe.run("q", src, generate=False, interpretations=["r0", "r1", "r2"])
            rel.append(np.mean([res.prune_scores[doc.id] for doc in res.documents]))
            sim.append(_pairwise(np.array([vectors[doc.text] for doc in res.documents])))
        curves[d] = (float(np.mean(rel)), float(np.mean(sim)))
    _assert_direction(curves)


def test_vendirag_direction_over_random_pools() -> None:
    """One judged iteration (the judge is satisfied): the chunks are VRS at s = diversity."""
    curves = {}
    for d in (0.0, 0.5, 1.0):
        pipe = VendiRAG(vendi_llm, k=4, fetch_k=24, diversity=d, max_retries=0)
        rel, sim = [], []
        for seed in range(POOLS):
            cands, _, query = _pool(seed)
            vectors = {f"c{i}": v for i, v in enumerate(cands)} | {"q": query}
            src = InMemorySource(list(vectors)[:len(cands)], embedder=lambda ts, v=vectors: [v[t] for t in ts])
            res = pipe.run("q", src)
            assert res.n_iterations == 1 and res.iterations[0].s == d
            rel.append(np.mean([doc.relevance for doc in res.documents]))
            sim.append(_pairwise(np.array([vectors[doc.text] for doc in res.documents])))
        pipe.close()
        curves[d] = (float(np.mean(rel)), float(np.mean(sim)))
    _assert_direction(curves)


def test_dfrag_direction_over_random_pools() -> None:
    """An Evaluator that ties every set: lambda* is the upper median of the grid diversity leaves."""
    curves, stars = {}, {}
    for d in (0.0, 0.5, 1.0):
        pipe = DFRAG(dfrag_tied_llm, k=4, diversity=d, max_retries=0)
        rel, sim, star = [], [], set()
        for seed in range(POOLS // 2):
            cands, _, query = _pool(seed)
            texts = [f"c{i}" for i in range(len(cands))]
            res = pipe.run("q", texts, query, cands)
            star.add(res.lambda_star)
            rel.append(np.mean([doc.relevance for doc in res.documents]))
            sim.append(_pairwise(cands[list(res.indices)]))
        pipe.close()
        curves[d], stars[d] = (float(np.mean(rel)), float(np.mean(sim))), star
    assert stars == {0.0: {1.0}, 0.5: {0.8}, 1.0: {0.6}}
    _assert_direction(curves)


# ---------------------------------------------------------------------------- LangChain face
def _lc_store() -> Any:
    from langchain_core.embeddings import Embeddings
    from langchain_core.vectorstores import InMemoryVectorStore

    class Hash(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [_vec(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            return _vec(text)

    store = InMemoryVectorStore(Hash())
    store.add_texts(TEXTS)
    return store


def test_langchain_faces_take_diversity() -> None:
    pytest.importorskip("langchain_core")
    from langchain_diverse import DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever

    store = _lc_store()
    common = {"vectorstore": store, "k": 2, "fetch_k": 6}
    for face in (DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever):
        assert face.model_fields["diversity"].default is None, face.__name__
    diva = DIVARetriever(llm=diva_llm, diversity=0.4, **common)
    assert diva.pipeline.mmr_lambda == pytest.approx(0.6) and diva.pipeline.prune == "mmr"
    assert DIVARetriever(llm=diva_llm, **common).pipeline.mmr_lambda == 0.5  # unchanged without it
    assert len(diva.invoke("Who won?")) == 2
    vendi = VendiRAGRetriever(llm=vendi_llm, diversity=0.25, **common)
    docs = vendi.invoke(TEXTS[1])
    assert vendi.pipeline.initial_s == 0.25 and {d.metadata["pipeline_reason"]["s"] for d in docs} == {0.25}
    dfrag = DFRAGRetriever(llm=dfrag_tied_llm, diversity=0.0, **common)
    docs = dfrag.invoke(TEXTS[2])
    assert dfrag.pipeline.lambdas == (1.0,)
    assert {d.metadata["pipeline_reason"]["lambda_mult"] for d in docs} == {1.0}
    with pytest.raises(ConflictingParametersError, match="mmr_lambda"):
        DIVARetriever(llm=diva_llm, diversity=0.4, mmr_lambda=0.5, **common)
    with pytest.raises(InvalidParameterError, match="no relevance/diversity trade-off"):
        DRRAGRetriever(diversity=0.5, **common)


# ---------------------------------------------------------------------------- LlamaIndex face
def test_llamaindex_faces_take_diversity() -> None:
    pytest.importorskip("llama_index.core")
    from llama_index.core import Document, VectorStoreIndex
    from llama_index.core.embeddings import MockEmbedding

    from llamaindex_diverse import DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever

    for face in (DFRAGRetriever, DIVARetriever, DRRAGRetriever, VendiRAGRetriever):
        assert "diversity" in face.options, face.__name__
    emb = MockEmbedding(embed_dim=8)
    index = VectorStoreIndex.from_documents([Document(text=t) for t in TEXTS], embed_model=emb)
    common: dict[str, Any] = {"embed_model": emb, "k": 2, "fetch_k": 6}
    diva = DIVARetriever(index, diva_llm, diversity=1.0, **common)
    assert diva.pipeline.mmr_lambda == 0.0 and diva.pipeline.prune == "mmr"
    assert len(diva.retrieve("Who won?")) == 2
    assert VendiRAGRetriever(index, vendi_llm, diversity=0.6, **common).pipeline.initial_s == 0.6
    assert DFRAGRetriever(index, dfrag_tied_llm, diversity=0.2, **common).pipeline.lambdas == (0.8, 0.9, 1.0)
    assert DFRAGRetriever(index, dfrag_tied_llm, **common).pipeline.lambdas == DEFAULT_LAMBDAS
    with pytest.raises(ConflictingParametersError, match="initial_s"):
        VendiRAGRetriever(index, vendi_llm, diversity=0.6, initial_s=0.5, **common)
    with pytest.raises(InvalidParameterError, match="no relevance/diversity trade-off"):
        DRRAGRetriever(index, None, diversity=0.5, **common)


# ---------------------------------------------------------------------------- harness
def _input(seed: int = 3) -> Any:
    from diverse_core.eval.plugins import MethodInput

    cands, readings, query = _pool(seed)
    vectors = {f"c{i}": v for i, v in enumerate(cands)} | {f"r{j}": v for j, v in enumerate(readings)}
    vectors["q"] = query
    texts = [f"c{i}" for i in range(len(cands))]

    def source() -> InMemorySource:
        return InMemorySource(texts, embedder=lambda ts: [vectors[t] for t in ts])

    unit = query / np.linalg.norm(query)
    return MethodInput(question="q", query_embedding=unit, texts=texts, embeddings=cands, relevance=cands @ unit,
                       k=4, meta={"interpretations": ["r0", "r1", "r2"]}, source_factory=source), source


def test_harness_takes_diversity_for_every_pipeline() -> None:
    from diverse_core.eval import parse_method
    from diverse_core.eval.dfrag_plugin import dfrag_method
    from diverse_core.eval.diva_plugin import diva_method
    from diverse_core.eval.drrag_plugin import drrag_method
    from diverse_core.eval.vendirag_plugin import vendirag_method

    for method in (dfrag_method, diva_method, drrag_method, vendirag_method):
        assert "diversity" in method.options
    assert parse_method("diva@diversity=0.3@interpretations=gold").params == {
        "diversity": 0.3, "interpretations": "gold"}

    inp, source = _input()
    direct = {d: [int(doc.id) for doc in DIVA(None, k=4, per_interpretation_k=6, diversity=d).run(
        "q", source(), generate=False, interpretations=["r0", "r1", "r2"]).documents] for d in (None, 1.0)}
    assert direct[None] != direct[1.0]  # this pool tells the two apart
    for d in (None, 1.0):
        params = {"interpretations": "gold", "per_interpretation_k": "6"} | ({} if d is None else {"diversity": str(d)})
        assert diva_method(inp, **params).indices == direct[d]

    # the dry runs follow the same rules: DF-RAG's upper-median lambda, Vendi-RAG's first s
    assert dfrag_method(inp, llm="none", diversity="0").info["lambda"] == 1.0
    assert dfrag_method(inp, llm="none", diversity="0.5").info["lambda"] == 0.8
    assert dfrag_method(inp, llm="none").info["lambda"] == 0.6  # unchanged without it
    assert vendirag_method(inp, llm="none", diversity="0.25").info["s"] == 0.25
    assert vendirag_method(inp, llm="none").info["s"] == 0.8
    with pytest.raises(ConflictingParametersError):
        vendirag_method(inp, llm="none", diversity="0.25", initial_s="0.5")
    with pytest.raises(InvalidParameterError, match="no relevance/diversity trade-off"):
        drrag_method(inp, diversity="0.5", mode="qdc")


def test_harness_diversity_grid_over_a_pipeline_plugin() -> None:
    """``diva@diversity=0:1:0.5`` is a grid over the knob, one setting per value, each run
    giving what the pipeline gives with that value; a plugin without the option is refused."""
    from diverse_core.eval import parse_method, plugins
    from diverse_core.eval.diva_plugin import diva_method

    grid = parse_method("diva@diversity=0:1:0.5@interpretations=gold@per_interpretation_k=6")
    assert grid.over == "diversity" and grid.values == (0.0, 0.5, 1.0)
    assert [s["diversity"] for s in grid.settings()] == [0.0, 0.5, 1.0]
    inp, source = _input()
    for setting in grid.settings():
        direct = DIVA(None, k=4, per_interpretation_k=6, diversity=setting["diversity"]).run(
            "q", source(), generate=False, interpretations=["r0", "r1", "r2"])
        got = diva_method(inp, **{key: str(value) for key, value in setting.items()})
        assert got.indices == [int(doc.id) for doc in direct.documents]

    plugins.register_plugin("no_knob_toy", lambda inp, width=0.5: None, param="width", replace=True)
    try:
        with pytest.raises(InvalidParameterError, match="no_knob_toy"):
            parse_method("no_knob_toy@diversity=0:1:0.5")
    finally:
        plugins._PLUGINS.pop("no_knob_toy", None)

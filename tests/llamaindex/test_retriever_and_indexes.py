"""DiverseRetriever and the postprocessor inside real LlamaIndex indexes and query engines."""

from __future__ import annotations

import pytest
from diverse_core.errors import InvalidParameterError
from li_fakes import KeyedEmbedding, unit
from llama_index.core import StorageContext, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor, DiverseRetriever

# Three near-duplicate chunks are the most relevant; three others cover other aspects.
QUERY = unit([1.0, 0.0, 0.0, 0.0])
CORPUS = {
    "dup one": unit([0.9, 0.30, 0.00, 0.00]),
    "dup two": unit([0.9, 0.31, 0.01, 0.00]),
    "dup three": unit([0.9, 0.29, 0.00, 0.01]),
    "aspect x": unit([0.9, 0.00, 0.40, 0.00]),
    "aspect y": unit([0.9, 0.00, 0.00, 0.40]),
    "aspect z": unit([0.9, -0.40, 0.00, 0.00]),
}
DUPS = {"dup one", "dup two", "dup three"}


@pytest.fixture
def embed() -> KeyedEmbedding:
    return KeyedEmbedding({**CORPUS, "the question": QUERY}, dim=4)


def _nodes() -> list[TextNode]:
    return [TextNode(text=text) for text in CORPUS]


def _texts(nodes: list[NodeWithScore]) -> list[str]:
    return [n.node.get_content() for n in nodes]


def _check_diverse(nodes: list[NodeWithScore]) -> None:
    texts = _texts(nodes)
    assert len(texts) == 3
    assert texts[0] in DUPS  # the most relevant chunk comes first
    assert len(DUPS & set(texts)) == 1  # ...and no second copy of it
    assert [n.node.metadata["selection_rank"] for n in nodes] == [0, 1, 2]


@pytest.fixture
def simple_index(embed: KeyedEmbedding) -> VectorStoreIndex:
    return VectorStoreIndex(_nodes(), embed_model=embed)


def _qdrant_index(embed: KeyedEmbedding) -> VectorStoreIndex:
    qdrant_client = pytest.importorskip("qdrant_client")
    qdrant = pytest.importorskip("llama_index.vector_stores.qdrant")
    client = qdrant_client.QdrantClient(location=":memory:")
    store = qdrant.QdrantVectorStore(client=client, collection_name="diverse_test")
    context = StorageContext.from_defaults(vector_store=store)
    return VectorStoreIndex(_nodes(), storage_context=context, embed_model=embed)


def test_plain_top3_is_all_duplicates(simple_index: VectorStoreIndex) -> None:
    plain = simple_index.as_retriever(similarity_top_k=3).retrieve("the question")
    assert set(_texts(plain)) == DUPS


def test_query_engine_with_node_postprocessor(simple_index: VectorStoreIndex, embed: KeyedEmbedding) -> None:
    pp = DiverseNodePostprocessor(top_n=3, method="gmmr", method_params={"lambda_mult": 0.5},
                                  embed_model=embed)
    engine = simple_index.as_query_engine(
        llm=MockLLM(), similarity_top_k=6, node_postprocessors=[pp]
    )
    response = engine.query("the question")
    _check_diverse(response.source_nodes)
    assert str(response)  # MockLLM answered over the chosen context
    # The docstore's nodes never received selection metadata.
    for node in simple_index.docstore.docs.values():
        assert "selection_rank" not in node.metadata


async def test_query_engine_async(simple_index: VectorStoreIndex, embed: KeyedEmbedding) -> None:
    pp = DiverseNodePostprocessor(top_n=3, method="mmr", method_params={"lambda_mult": 0.5},
                                  embed_model=embed)
    engine = simple_index.as_query_engine(llm=MockLLM(), similarity_top_k=6, node_postprocessors=[pp])
    response = await engine.aquery("the question")
    _check_diverse(response.source_nodes)


def test_texts_from_the_store_are_never_embedded_again(simple_index: VectorStoreIndex,
                                                       embed: KeyedEmbedding) -> None:
    indexed = dict(embed.sync_calls)  # what building the index embedded
    retriever = DiverseRetriever.from_index(simple_index, top_n=3, fetch_k=6)
    for _ in range(3):
        retriever.retrieve("the question")
    added = {t: embed.sync_calls[t] - indexed.get(t, 0) for t in embed.sync_calls}
    assert {t: c for t, c in added.items() if c} == {}  # read from SimpleVectorStore


@pytest.mark.parametrize(
    "method", ["mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "ssd", "gist"]
)
def test_retriever_from_index_every_method(simple_index: VectorStoreIndex, method: str) -> None:
    params = {"dartboard": {"sigma": 0.1}, "vendi": {"s": 0.9}, "msd": {"diversity": 0.9},
              "ssd": {"diversity": 0.9}}.get(method, {})
    retriever = DiverseRetriever.from_index(
        simple_index, top_n=3, fetch_k=6, method=method, method_params=params
    )
    _check_diverse(retriever.retrieve("the question"))


async def test_retriever_async_matches_sync(simple_index: VectorStoreIndex) -> None:
    retriever = DiverseRetriever.from_index(simple_index, top_n=3, fetch_k=6)
    sync = retriever.retrieve("the question")
    async_ = await retriever.aretrieve("the question")
    assert _texts(sync) == _texts(async_)
    _check_diverse(async_)


@pytest.mark.filterwarnings("ignore:Payload indexes have no effect:UserWarning")
def test_qdrant_store_query_engine_and_retriever(embed: KeyedEmbedding) -> None:
    index = _qdrant_index(embed)
    plain = index.as_retriever(similarity_top_k=3).retrieve("the question")
    assert set(_texts(plain)) == DUPS
    pp = DiverseNodePostprocessor(top_n=3, method="gmmr", embed_model=embed)
    response = index.as_query_engine(
        llm=MockLLM(), similarity_top_k=6, node_postprocessors=[pp]
    ).query("the question")
    _check_diverse(response.source_nodes)
    retriever = DiverseRetriever(index.as_retriever(similarity_top_k=6), top_n=3, embed_model=embed)
    _check_diverse(retriever.retrieve("the question"))


# ------------------------------------------------------------------ construction rules


def test_top_n_larger_than_fetch_k_is_rejected(simple_index: VectorStoreIndex) -> None:
    base = simple_index.as_retriever(similarity_top_k=2)
    with pytest.raises(InvalidParameterError, match="top_n=3 is larger than fetch_k=2"):
        DiverseRetriever(base, top_n=3)
    with pytest.raises(InvalidParameterError, match="top_n=5 is larger than fetch_k=4"):
        DiverseRetriever.from_index(simple_index, top_n=5, fetch_k=4)


def test_fetch_k_must_match_the_base_retriever(simple_index: VectorStoreIndex) -> None:
    base = simple_index.as_retriever(similarity_top_k=6)
    with pytest.raises(InvalidParameterError, match="fetch_k=10 but.*similarity_top_k=6"):
        DiverseRetriever(base, top_n=3, fetch_k=10)
    assert DiverseRetriever(base, top_n=3, fetch_k=6).fetch_k == 6


def test_postprocessor_or_settings_not_both(simple_index: VectorStoreIndex) -> None:
    base = simple_index.as_retriever(similarity_top_k=6)
    pp = DiverseNodePostprocessor(top_n=2)
    with pytest.raises(InvalidParameterError, match="not both"):
        DiverseRetriever(base, pp, method="mmr")
    assert DiverseRetriever(base, pp).postprocessor is pp


def test_base_must_be_a_retriever() -> None:
    with pytest.raises(InvalidParameterError, match="BaseRetriever"):
        DiverseRetriever(object(), top_n=2)  # type: ignore[arg-type]


class _FixedRetriever(BaseRetriever):
    """A retriever without ``similarity_top_k`` that returns two fixed nodes."""

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        return [
            NodeWithScore(node=TextNode(id_=t, text=t, embedding=CORPUS[t]), score=0.5)
            for t in ("dup one", "aspect x")
        ]


def test_unknown_fetch_k_returns_what_exists() -> None:
    retriever = DiverseRetriever(_FixedRetriever(), top_n=4)
    out = retriever.retrieve(QueryBundle("q", embedding=QUERY))
    assert _texts(out) == ["dup one", "aspect x"]


def test_callback_manager_is_shared(simple_index: VectorStoreIndex) -> None:
    retriever = DiverseRetriever.from_index(simple_index, top_n=2, fetch_k=6)
    assert retriever.postprocessor.callback_manager is retriever.callback_manager


def test_retriever_from_index_cover(simple_index: VectorStoreIndex) -> None:
    """Cover (facility location) may keep a second copy of a dense cluster: it covers mass."""
    retriever = DiverseRetriever.from_index(
        simple_index, top_n=3, fetch_k=6, method="cover", method_params={"diversity": 0.9}
    )
    nodes = retriever.retrieve("the question")
    assert len(nodes) == 3
    assert [n.node.metadata["selection_rank"] for n in nodes] == [0, 1, 2]
    assert {n.node.metadata["selection_method"] for n in nodes} == {"cover"}

"""DiverseNodePostprocessor: agreement with the core, metadata, no mutation, embeddings, errors."""

from __future__ import annotations

import copy
import json

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import (
    DimensionMismatchError,
    InvalidParameterError,
    UnknownMethodError,
)
from li_fakes import ExplodingEmbedding, KeyedEmbedding, unit
from llama_index.core import Settings
from llama_index.core.schema import MetadataMode, NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import SELECTION_METADATA_KEYS, DiverseNodePostprocessor

METHOD_PARAMS = {
    "topk": {},
    "mmr": {"lambda_mult": 0.4},
    "gmmr": {"lambda_mult": 0.6},
    "dartboard": {"sigma": 0.2},
    "vendi": {"s": 0.5},
    "dpp": {"diversity": 0.5},
    "msd": {"diversity": 0.5},
    "cover": {"diversity": 0.5, "gamma": 0.5},
    "ssd": {"diversity": 0.5, "window": 2},
    "gist": {"lam": 1.0, "eps": 0.1},
}


def _pool(n: int = 12, d: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=d), rng.normal(size=(n, d))


def _nodes(cands: np.ndarray, query: np.ndarray, with_embeddings: bool = True) -> list[NodeWithScore]:
    rel = cands @ query / np.linalg.norm(cands, axis=1) / np.linalg.norm(query)
    return [
        NodeWithScore(
            node=TextNode(
                id_=f"n{i}",
                text=f"chunk {i}",
                metadata={"source": f"doc{i % 3}"},
                embedding=vec.tolist() if with_embeddings else None,
            ),
            score=float(r),
        )
        for i, (vec, r) in enumerate(zip(cands, rel, strict=True))
    ]


@pytest.mark.parametrize("method", sorted(METHOD_PARAMS))
def test_matches_core_select_for_every_method(method: str) -> None:
    query, cands = _pool()
    params = METHOD_PARAMS[method]
    expected = dc.select(method, query, cands, 5, **params)
    pp = DiverseNodePostprocessor(top_n=5, method=method, method_params=params)
    out = pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))
    assert [n.node.node_id for n in out] == [f"n{i}" for i in expected.indices]
    got_scores = [n.node.metadata["selection_score"] for n in out]
    np.testing.assert_allclose(got_scores, expected.scores, rtol=1e-9)
    assert {n.node.metadata["selection_method"] for n in out} == {method}


def test_metadata_scores_and_json_friendly_params() -> None:
    query, cands = _pool()
    nodes = _nodes(cands, query)
    pp = DiverseNodePostprocessor(top_n=4, method="gmmr", method_params={"lambda_mult": 0.3})
    out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=query.tolist()))
    by_id = {n.node.node_id: n for n in nodes}
    for rank, item in enumerate(out):
        md = item.node.metadata
        assert md["selection_rank"] == rank
        assert md["selection_method"] == "gmmr"
        assert md["selection_params"] == {"lambda_mult": 0.3}
        assert md["source"] == by_id[item.node.node_id].node.metadata["source"]
        # The NodeWithScore score stays the retriever's relevance.
        assert item.score == by_id[item.node.node_id].score
        assert md["selection_relevance"] == pytest.approx(item.score)
        json.dumps(md)
    # Selection keys stay out of what the LLM and the embedder see.
    llm_text = out[0].node.get_content(metadata_mode=MetadataMode.LLM)
    embed_text = out[0].node.get_content(metadata_mode=MetadataMode.EMBED)
    for key in SELECTION_METADATA_KEYS:
        assert key not in llm_text and key not in embed_text
    assert "source" in llm_text


def test_selection_metadata_can_be_shown_to_the_llm() -> None:
    query, cands = _pool()
    pp = DiverseNodePostprocessor(top_n=2, method="mmr", hide_selection_metadata=False)
    out = pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))
    assert "selection_rank" in out[0].node.get_content(metadata_mode=MetadataMode.LLM)


def test_dartboard_scorer_is_recorded_by_name() -> None:
    query, cands = _pool()

    def my_scorer(pairs: list[tuple[int, int]]) -> list[float]:
        return [0.5] * len(pairs)

    pp = DiverseNodePostprocessor(
        top_n=3, method="dartboard", method_params={"variant": "hybrid", "scorer": my_scorer}
    )
    out = pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))
    shown = out[0].node.metadata["selection_params"]
    assert shown["scorer"].endswith("my_scorer")
    json.dumps(shown)


def test_inputs_are_not_mutated() -> None:
    query, cands = _pool()
    nodes = _nodes(cands, query)
    before = copy.deepcopy(nodes)
    pp = DiverseNodePostprocessor(top_n=4, method="mmr")
    out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=query.tolist()))
    assert [n.model_dump() for n in nodes] == [n.model_dump() for n in before]
    originals = {id(n.node) for n in nodes} | {id(n) for n in nodes}
    assert all(id(n) not in originals and id(n.node) not in originals for n in out)


def test_top_n_larger_than_pool_returns_every_node() -> None:
    query, cands = _pool(n=3)
    pp = DiverseNodePostprocessor(top_n=10, method="gmmr")
    out = pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))
    assert sorted(n.node.node_id for n in out) == ["n0", "n1", "n2"]
    assert [n.node.metadata["selection_rank"] for n in out] == [0, 1, 2]


def test_empty_input_gives_empty_output() -> None:
    pp = DiverseNodePostprocessor(top_n=3)
    assert pp.postprocess_nodes([], query_str="anything") == []


def test_k_is_an_alias_of_top_n() -> None:
    assert DiverseNodePostprocessor(k=7).top_n == 7
    assert DiverseNodePostprocessor(top_n=7, k=7).top_n == 7
    with pytest.raises(InvalidParameterError, match="top_n=3 and k=4"):
        DiverseNodePostprocessor(top_n=3, k=4)


def test_stored_node_embeddings_are_reused() -> None:
    query, cands = _pool()
    pp = DiverseNodePostprocessor(top_n=3, method="mmr", embed_model=ExplodingEmbedding(dim=6))
    out = pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))
    assert len(out) == 3


def test_text_is_embedded_once_per_distinct_text() -> None:
    embed = KeyedEmbedding(dim=4)
    texts = ["alpha", "beta", "alpha", "gamma", "beta"]  # duplicates within one call
    nodes = [
        NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=1.0) for i, t in enumerate(texts)
    ]
    pp = DiverseNodePostprocessor(top_n=3, method="gmmr", embed_model=embed)
    pp.postprocess_nodes(nodes, query_str="question")
    assert embed.sync_calls == {"alpha": 1, "beta": 1, "gamma": 1}
    pp.postprocess_nodes(nodes, query_str="question")  # second query: all cache hits
    assert embed.sync_calls == {"alpha": 1, "beta": 1, "gamma": 1}
    extra = [*nodes, NodeWithScore(node=TextNode(id_="n9", text="delta"), score=1.0)]
    pp.postprocess_nodes(extra, query_str="question")
    assert embed.sync_calls == {"alpha": 1, "beta": 1, "gamma": 1, "delta": 1}


def test_embedded_text_is_the_embed_metadata_view() -> None:
    embed = KeyedEmbedding(dim=4)
    node = TextNode(id_="x", text="body", metadata={"title": "T", "secret": "s"},
                    excluded_embed_metadata_keys=["secret"])
    pp = DiverseNodePostprocessor(top_n=1, embed_model=embed)
    pp.postprocess_nodes([NodeWithScore(node=node, score=1.0)], query_str="q")
    (text,) = embed.sync_calls
    assert text == node.get_content(metadata_mode=MetadataMode.EMBED)
    assert "title: T" in text and "secret" not in text


def test_mixed_nodes_use_stored_and_embedded_vectors() -> None:
    table = {"a": unit([1.0, 0.0, 0.0]), "b": unit([0.0, 1.0, 0.0])}
    embed = KeyedEmbedding(table)
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text="a"), score=0.9),
        NodeWithScore(node=TextNode(id_="c", text="c", embedding=unit([0.7, 0.7, 0.1])), score=0.8),
        NodeWithScore(node=TextNode(id_="b", text="b"), score=0.1),
    ]
    pp = DiverseNodePostprocessor(top_n=3, method="topk", embed_model=embed)
    out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=[1.0, 0.1, 0.0]))
    assert [n.node.node_id for n in out] == ["a", "c", "b"]
    assert embed.sync_calls == {"a": 1, "b": 1}


def test_query_is_embedded_when_the_bundle_has_no_embedding() -> None:
    embed = KeyedEmbedding({"question": [1.0, 0.0, 0.0]})
    query, cands = np.array([1.0, 0.0, 0.0]), np.array([[0.0, 1.0, 0.0], [1.0, 0.1, 0.0]])
    pp = DiverseNodePostprocessor(top_n=1, method="topk", embed_model=embed)
    out = pp.postprocess_nodes(_nodes(cands, query), query_str="question")
    assert out[0].node.node_id == "n1"


def test_node_scores_as_relevance() -> None:
    query, cands = _pool()
    nodes = _nodes(cands, query)
    flipped = [NodeWithScore(node=n.node, score=-float(n.score)) for n in nodes]
    pp = DiverseNodePostprocessor(top_n=3, method="topk", use_node_scores=True)
    out = pp.postprocess_nodes(flipped, QueryBundle("q", embedding=query.tolist()))
    expected = np.argsort([n.score for n in flipped])[::-1][:3]
    assert [n.node.node_id for n in out] == [f"n{i}" for i in expected]


def test_new_embed_model_object_gets_a_fresh_cache() -> None:
    first, second = KeyedEmbedding(dim=4), KeyedEmbedding(dim=4)
    nodes = [NodeWithScore(node=TextNode(id_="a", text="same text"), score=1.0)]
    pp = DiverseNodePostprocessor(top_n=1, embed_model=first)
    pp.postprocess_nodes(nodes, query_str="q")
    pp.embed_model = second
    pp.postprocess_nodes(nodes, query_str="q")
    assert first.sync_calls == {"same text": 1} and second.sync_calls == {"same text": 1}


# ------------------------------------------------------------------ bad input


def test_unknown_method_is_rejected_at_construction() -> None:
    with pytest.raises(UnknownMethodError, match="'bogus'"):
        DiverseNodePostprocessor(method="bogus")


@pytest.mark.parametrize(
    ("method", "params", "match"),
    [
        ("gmmr", {"lambda_mult": 1.5}, "lambda_mult=1.5"),
        ("mmr", {"lamda_mult": 0.5}, "unknown parameter"),
        ("dartboard", {"sigma": 0.0}, "sigma=0.0"),
        ("vendi", {"s": -0.1}, "s=-0.1"),
        ("topk", {"lambda_mult": 0.5}, "unknown parameter"),
    ],
)
def test_bad_method_params_are_rejected_at_construction(method: str, params: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        DiverseNodePostprocessor(method=method, method_params=params)


@pytest.mark.parametrize("top_n", [0, -1, 2.5, True])
def test_bad_top_n(top_n: object) -> None:
    with pytest.raises(InvalidParameterError, match="top_n"):
        DiverseNodePostprocessor(top_n=top_n)  # type: ignore[arg-type]


def test_unknown_keyword_is_a_type_error_not_silently_ignored() -> None:
    with pytest.raises(TypeError):
        DiverseNodePostprocessor(lambda_mult=0.5)  # type: ignore[call-arg]


def test_params_reassigned_after_construction_are_checked_at_call_time() -> None:
    query, cands = _pool()
    pp = DiverseNodePostprocessor(top_n=2, method="mmr")
    pp.method_params = {"lambda_mult": 2.0}
    with pytest.raises(InvalidParameterError, match="lambda_mult=2.0"):
        pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=query.tolist()))


def test_missing_query_is_an_error() -> None:
    query, cands = _pool()
    with pytest.raises(InvalidParameterError, match="needs the query"):
        DiverseNodePostprocessor().postprocess_nodes(_nodes(cands, query))


def test_node_without_text_or_embedding() -> None:
    nodes = [
        NodeWithScore(node=TextNode(id_="ok", text="fine"), score=1.0),
        NodeWithScore(node=TextNode(id_="blank", text="   "), score=1.0),
    ]
    pp = DiverseNodePostprocessor(top_n=1, embed_model=KeyedEmbedding())
    out = pp.postprocess_nodes(nodes, query_str="q")  # the blank node is left out, not fatal
    assert [n.node.node_id for n in out] == ["ok"]
    assert out[0].node.metadata["selection_params"]["blank_nodes"] == [1]
    with pytest.raises(InvalidParameterError, match="'blank'.*no embedding and no text"):
        pp.postprocess_nodes(nodes[1:], query_str="q")  # nothing left: the typed error names it


def test_stored_embeddings_of_different_sizes() -> None:
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text="a", embedding=[1.0, 0.0, 0.0]), score=1.0),
        NodeWithScore(node=TextNode(id_="b", text="b", embedding=[1.0, 0.0]), score=1.0),
    ]
    with pytest.raises(DimensionMismatchError, match="'b'.*has 2"):
        DiverseNodePostprocessor(top_n=1).postprocess_nodes(
            nodes, QueryBundle("q", embedding=[1.0, 0.0, 0.0])
        )


def test_embed_model_dimension_differs_from_stored_embeddings() -> None:
    nodes = [
        NodeWithScore(node=TextNode(id_="a", text="a", embedding=[1.0, 0.0, 0.0]), score=1.0),
        NodeWithScore(node=TextNode(id_="b", text="b"), score=1.0),
    ]
    pp = DiverseNodePostprocessor(top_n=1, embed_model=KeyedEmbedding(dim=5))
    with pytest.raises(DimensionMismatchError, match="3-d embedding.*5-d"):
        pp.postprocess_nodes(nodes, QueryBundle("q", embedding=[1.0, 0.0, 0.0]))


def test_query_dimension_differs_from_node_vectors() -> None:
    query, cands = _pool(d=6)
    pp = DiverseNodePostprocessor(top_n=2)
    with pytest.raises(DimensionMismatchError, match="query has dimension 4 .* same embeddings model"):
        pp.postprocess_nodes(_nodes(cands, query), QueryBundle("q", embedding=[1.0, 0.0, 0.0, 0.0]))


def test_use_node_scores_needs_scores() -> None:
    query, cands = _pool()
    nodes = [NodeWithScore(node=n.node, score=None) for n in _nodes(cands, query)]
    pp = DiverseNodePostprocessor(top_n=2, use_node_scores=True)
    with pytest.raises(InvalidParameterError, match="score=None"):
        pp.postprocess_nodes(nodes, QueryBundle("q", embedding=query.tolist()))


def test_unresolvable_default_embed_model_gives_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("IS_TESTING", raising=False)
    monkeypatch.setattr(Settings, "_embed_model", None)
    nodes = [NodeWithScore(node=TextNode(id_="a", text="needs embedding"), score=1.0)]
    with pytest.raises(InvalidParameterError, match="pass embed_model"):
        DiverseNodePostprocessor(top_n=1).postprocess_nodes(nodes, query_str="q")


def test_settings_embed_model_is_the_lazy_default(monkeypatch: pytest.MonkeyPatch) -> None:
    embed = KeyedEmbedding(dim=4)
    monkeypatch.setattr(Settings, "_embed_model", embed)
    nodes = [NodeWithScore(node=TextNode(id_="a", text="hello"), score=1.0)]
    DiverseNodePostprocessor(top_n=1).postprocess_nodes(nodes, query_str="q")
    assert embed.sync_calls == {"hello": 1}

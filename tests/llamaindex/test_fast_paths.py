"""The postprocessor's per-call behaviour.

Node texts are rendered as ``get_content`` renders them, returned nodes are copies that leave
the input alone, instrumentation
events reach handlers anywhere up the tree, and the plan is built again whenever the
settings change.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError
from li_fakes import CollectEvents, KeyedEmbedding
from llama_index.core.instrumentation import get_dispatcher
from llama_index.core.schema import (
    Document,
    IndexNode,
    MetadataMode,
    NodeWithScore,
    QueryBundle,
    TextNode,
)

from llamaindex_diverse import SELECTION_METADATA_KEYS, DiverseNodePostprocessor
from llamaindex_diverse._metadata import with_selection_metadata
from llamaindex_diverse._vectors import nodes_to_embed

MODES = [MetadataMode.EMBED, MetadataMode.LLM, MetadataMode.ALL, MetadataMode.NONE]


class _ShoutingNode(TextNode):
    """Overrides get_content: it must be called, never TextNode's rendering assumed."""

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        return self.text.upper()


def _variety() -> list[TextNode]:
    return [
        TextNode(text="plain"),
        TextNode(text="body", metadata={"title": "T", "page": 3}),
        TextNode(text="body", metadata={"title": "T", "secret": "s"},
                 excluded_embed_metadata_keys=["secret"], excluded_llm_metadata_keys=["title"]),
        TextNode(text="body", metadata={"only": "x"}, excluded_embed_metadata_keys=["only"]),
        TextNode(text="body", metadata={"k": "v"}, metadata_template="<{key}={value}>",
                 metadata_separator=" | ", text_template="{content}\n--\n{metadata_str}"),
        IndexNode(text="index node", index_id="i", metadata={"a": 1}),
        _ShoutingNode(text="loud", metadata={"a": 1}),
        Document(text="a document", metadata={"source": "file.txt"}),
    ]


@pytest.mark.parametrize("mode", MODES)
def test_nodes_to_embed_renders_what_get_content_returns(mode: MetadataMode) -> None:
    nodes = [NodeWithScore(node=n, score=0.5) for n in _variety()]
    nodes.insert(2, NodeWithScore(node=TextNode(text="has vector", embedding=[1.0, 0.0]), score=0.1))
    positions, texts = nodes_to_embed(nodes, mode)
    assert 2 not in positions
    assert texts == [nodes[i].node.get_content(metadata_mode=mode) for i in positions]


@pytest.mark.parametrize("blank", ["", "  \n"])
def test_blank_node_is_named_on_the_fast_path_too(blank: str) -> None:
    nodes = [NodeWithScore(node=TextNode(id_=f"n{i}", text=t), score=1.0)
             for i, t in enumerate(["ok", blank, "ok too"])]
    with pytest.raises(InvalidParameterError, match=r"node 'n1' \(position 1\)"):
        nodes_to_embed(nodes, MetadataMode.EMBED)


def test_postprocessor_embeds_the_new_text_after_a_node_changes() -> None:
    embed = KeyedEmbedding(dim=4)
    pp = DiverseNodePostprocessor(top_n=2, embed_model=embed)
    node = TextNode(id_="n0", text="old words", metadata={"title": "T"})
    other = TextNode(id_="n1", text="other", metadata={"title": "T"})
    pp.postprocess_nodes([NodeWithScore(node=node, score=1.0), NodeWithScore(node=other)],
                         query_str="q")
    node.text = "new words"
    node.metadata["title"] = "U"
    pp.postprocess_nodes([NodeWithScore(node=node, score=1.0), NodeWithScore(node=other)],
                         query_str="q")
    assert node.get_content(MetadataMode.EMBED) in embed.sync_calls
    assert embed.sync_calls[other.get_content(MetadataMode.EMBED)] == 1


# -- copies ------------------------------------------------------------------------------------
@pytest.mark.parametrize("hide", [True, False])
@pytest.mark.parametrize("node", _variety(), ids=lambda n: type(n).__name__)
def test_copy_matches_model_copy_and_leaves_the_input_alone(node: TextNode, hide: bool) -> None:
    item = NodeWithScore(node=node, score=0.25)
    before = item.model_dump()
    out = with_selection_metadata(item, method="mmr", params={"lambda_mult": 0.5}, rank=1,
                                  score=0.75, relevance=0.5, hide_from_models=hide)
    assert item.model_dump() == before
    assert type(out) is NodeWithScore and type(out.node) is type(node)
    assert out.node is not node and out.score == 0.25
    expected_metadata = {**node.metadata, "selection_method": "mmr",
                         "selection_params": {"lambda_mult": 0.5}, "selection_rank": 1,
                         "selection_score": 0.75, "selection_relevance": 0.5}
    assert out.node.metadata == expected_metadata
    update: dict[str, object] = {"metadata": expected_metadata}
    if hide:
        for attr in ("excluded_embed_metadata_keys", "excluded_llm_metadata_keys"):
            current = getattr(node, attr)
            update[attr] = current + [k for k in SELECTION_METADATA_KEYS if k not in current]
    reference = node.model_copy(update=update)
    assert out.node.model_dump() == reference.model_dump()
    assert out.node.model_fields_set == reference.model_fields_set
    assert out.node.get_content(MetadataMode.EMBED) == node.get_content(MetadataMode.EMBED) or not hide
    assert out.node.hash == reference.hash


def test_returned_nodes_carry_independent_params() -> None:
    rng = np.random.default_rng(0)
    nodes = [NodeWithScore(node=TextNode(text=f"t{i}", embedding=rng.normal(size=4).tolist()),
                           score=0.5) for i in range(6)]
    pp = DiverseNodePostprocessor(top_n=3, method="gmmr", method_params={"lambda_mult": 0.4})
    out = pp.postprocess_nodes(nodes, QueryBundle("q", embedding=rng.normal(size=4).tolist()))
    out[0].node.metadata["selection_params"]["lambda_mult"] = 9.0
    assert out[1].node.metadata["selection_params"] == {"lambda_mult": 0.4}
    assert all(set(SELECTION_METADATA_KEYS) <= set(n.node.metadata) for n in out)


# -- parameters reused only while unchanged ---------------------------------------------------
def _embedded_pool() -> tuple[list[NodeWithScore], QueryBundle]:
    rng = np.random.default_rng(1)
    nodes = [NodeWithScore(node=TextNode(text=f"t{i}", embedding=rng.normal(size=4).tolist()),
                           score=0.5) for i in range(6)]
    return nodes, QueryBundle("q", embedding=rng.normal(size=4).tolist())


def test_params_edited_in_place_after_a_call_are_checked() -> None:
    nodes, bundle = _embedded_pool()
    pp = DiverseNodePostprocessor(top_n=2, method="mmr", method_params={"lambda_mult": 0.5})
    pp.postprocess_nodes(nodes, bundle)
    pp.method_params["lambda_mult"] = 0.9
    out = pp.postprocess_nodes(nodes, bundle)
    assert out[0].node.metadata["selection_params"] == {"lambda_mult": 0.9}
    pp.method_params["lambda_mult"] = True  # equal to 1, but not a number
    with pytest.raises(InvalidParameterError, match="lambda_mult=True"):
        pp.postprocess_nodes(nodes, bundle)


def test_method_reassigned_after_a_call_is_used() -> None:
    nodes, bundle = _embedded_pool()
    pp = DiverseNodePostprocessor(top_n=2, method="mmr", method_params={"lambda_mult": 0.5})
    pp.postprocess_nodes(nodes, bundle)
    pp.method = "gmmr"
    assert pp.postprocess_nodes(nodes, bundle)[0].node.metadata["selection_method"] == "gmmr"


# -- events reach every handler up the tree ----------------------------------------------------
@pytest.fixture
def module_handler() -> Iterator[CollectEvents]:
    """A handler on the postprocessor module's own dispatcher (not the root)."""
    handler = CollectEvents(events=[])
    local = get_dispatcher("llamaindex_diverse.postprocessor")
    local.add_event_handler(handler)
    try:
        yield handler
    finally:
        local.event_handlers.remove(handler)


def test_a_handler_anywhere_up_the_tree_receives_the_events(module_handler: CollectEvents) -> None:
    nodes, bundle = _embedded_pool()
    DiverseNodePostprocessor(top_n=2).postprocess_nodes(nodes, bundle)
    kinds = [e.class_name() for e in module_handler.events]
    assert kinds == ["ReRankStartEvent", "ReRankEndEvent"]

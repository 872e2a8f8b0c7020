"""Reading ``PGVectorStore`` rows without building their nodes (``llamaindex_diverse._pg_rows``).

The rows are made as the store writes them (``node_to_metadata_dict(node, remove_text=True)``,
the text in its own column); what the row reading says (the node's source, whether it has
metadata, whether it can be selected on as a row) is checked against the node that
llama_index's own ``metadata_dict_to_node`` builds from the same row. No server needed.
"""

from __future__ import annotations

import json
import struct
from typing import Any, NamedTuple

import numpy as np
import pytest
from diverse_core.pgvector_sql import PgSearch
from llama_index.core.schema import (
    IndexNode,
    MetadataMode,
    NodeRelationship,
    RelatedNodeInfo,
    TextNode,
)
from llama_index.core.vector_stores.utils import metadata_dict_to_node, node_to_metadata_dict

from llamaindex_diverse._pg_rows import PgCandidates, _candidates, _ref_doc_id


class Row(NamedTuple):
    """The store's ``DBEmbeddingRow``."""

    node_id: str
    text: str
    metadata: dict[str, Any]
    custom_fields: dict[str, Any]
    similarity: float


def _row(node: Any, custom: dict[str, Any] | None = None) -> Row:
    # Through JSON, as the row comes back from the json column.
    meta = json.loads(json.dumps(node_to_metadata_dict(node, remove_text=True)))
    return Row(node.node_id, node.get_content(metadata_mode=MetadataMode.NONE), meta, custom or {}, 0.5)


def _source(node_id: str) -> dict[NodeRelationship, RelatedNodeInfo]:
    return {NodeRelationship.SOURCE: RelatedNodeInfo(node_id=node_id)}


NODES = {
    "plain": TextNode(text="alpha", id_="a"),
    "sourced": TextNode(text="beta", id_="b", relationships=_source("doc-1")),
    "source named None": TextNode(text="gamma", id_="c", relationships=_source("None")),
    "empty source id": TextNode(text="delta", id_="d", relationships=_source("")),
    "next only": TextNode(text="eps", id_="e",
                          relationships={NodeRelationship.NEXT: RelatedNodeInfo(node_id="x")}),
    "with metadata": TextNode(text="zeta", id_="f", metadata={"title": "Z"}),
    "metadata named like the store's keys": TextNode(text="eta", id_="g", metadata={"doc_id": "mine"}),
    "hidden metadata": TextNode(text="theta", id_="h", metadata={"k": 1},
                                excluded_embed_metadata_keys=["k"], excluded_llm_metadata_keys=["k"]),
    "sourced with metadata": TextNode(text="iota", id_="i", metadata={"a": "b"},
                                      relationships=_source("doc-2")),
    # nested metadata spelling out what an empty node's JSON looks like
    "look-alike text": TextNode(text="kappa", id_="j", metadata={
        "x": json.dumps({"metadata": {}, "excluded_embed_metadata_keys": []})}),
    "look-alike nested": TextNode(text="lambda", id_="k", metadata={
        "x": {"metadata": {}, "excluded_embed_metadata_keys": []}}),
}


@pytest.mark.parametrize("name", list(NODES))
def test_ref_doc_id_is_the_nodes(name: str) -> None:
    node = NODES[name]
    row = _row(node)
    known, ref = _ref_doc_id(row.metadata)
    assert known
    assert ref == metadata_dict_to_node(row.metadata).ref_doc_id == node.ref_doc_id


def _search(vectors: np.ndarray) -> PgSearch:
    search = PgSearch(fetch_k=len(vectors), binary=True, rewritten=True)
    search.raw = [struct.pack(f">hh{len(v)}f", len(v), 0, *v) for v in vectors.tolist()]
    return search


def _candidates_of(nodes: list[Any], custom: dict[str, Any] | None = None) -> PgCandidates | None:
    rows = [_row(n, custom) for n in nodes]
    vectors = np.arange(len(rows) * 3, dtype=np.float32).reshape(len(rows), 3)
    return _candidates([(r, None) for r in rows], _search(vectors), stand_in=None)  # type: ignore[arg-type]


@pytest.mark.parametrize("name", list(NODES))
def test_readable_exactly_when_the_node_has_no_metadata(name: str) -> None:
    node = NODES[name]
    found = _candidates_of([node])
    assert found is not None
    built = metadata_dict_to_node(found.rows[0].metadata)
    built.set_content(found.rows[0].text)
    assert found.readable() is (not built.metadata)
    if found.readable():
        assert found.sources == [node.ref_doc_id]
        for mode in MetadataMode:  # what a text-reading method is given: the node's content
            assert found.texts == [built.get_content(metadata_mode=mode)]
    else:
        with pytest.raises(ValueError, match="sources"):
            _ = found.sources


def test_custom_fields_are_metadata() -> None:
    found = _candidates_of([NODES["plain"]], custom={"extra": 1})
    assert found is not None and not found.readable()


def test_rows_decoded_in_order_with_scores() -> None:
    found = _candidates_of([NODES["plain"], NODES["sourced"]])
    assert found is not None
    np.testing.assert_array_equal(found.vectors, [[0, 1, 2], [3, 4, 5]])
    assert found.scores == [0.5, 0.5]
    assert found.readable() and found.sources == [None, "doc-1"]


@pytest.mark.parametrize(
    "nodes",
    [
        [TextNode(text="a", id_="same"), TextNode(text="b", id_="same")],  # the retriever drops repeats
        [TextNode(text="   ", id_="blank")],  # the node path names the blank node
        [IndexNode(text="i", id_="idx", index_id="other")],  # may be retrieved recursively
    ],
    ids=["repeated id", "blank text", "index node"],
)
def test_rows_that_must_become_nodes(nodes: list[Any]) -> None:
    assert _candidates_of(nodes) is None


def test_missing_vectors_mean_nodes() -> None:
    rows = [_row(NODES["plain"]), _row(NODES["sourced"])]
    search = _search(np.ones((1, 3), dtype=np.float32))  # one row came back without a vector
    assert _candidates([(r, None) for r in rows], search, stand_in=None) is None  # type: ignore[arg-type]


class _Counted(TextNode):
    """A node that records each read of its content."""

    def get_content(self, *args: Any, **kwargs: Any) -> str:
        READS.append(self.node_id)
        return super().get_content(*args, **kwargs)


READS: list[str] = []


def test_scored_nodes_log_only_when_debug_is_on(caplog: pytest.LogCaptureFixture) -> None:
    """The retriever's debug listing of the found nodes reads every node's content: built only
    when its logger would emit it (the same record then), never formatted for nothing."""
    import logging

    from llama_index.core.vector_stores.types import VectorStoreQueryResult

    from llamaindex_diverse._pg_rows import _WithVectors

    stand_in = object.__new__(_WithVectors)
    result = VectorStoreQueryResult(nodes=[_Counted(text="alpha", id_="a")], similarities=[0.5], ids=["a"])
    READS.clear()
    with caplog.at_level(logging.INFO, logger="llama_index.core.indices.utils"):
        scored = stand_in._scored(result)
    assert [(n.node.node_id, n.score) for n in scored] == [("a", 0.5)]
    assert READS == [] and not caplog.records
    with caplog.at_level(logging.DEBUG, logger="llama_index.core.indices.utils"):
        stand_in._scored(result)
    assert READS == ["a"]
    assert [r.getMessage().splitlines()[0] for r in caplog.records] == ["> Top 1 nodes:"]


@pytest.mark.parametrize("first", list(NODES))
def test_readable_rows_are_readable_one_by_one(first: str) -> None:
    """Several rows are readable exactly when each is; their sources are each row's."""
    for second in NODES:
        nodes = [NODES[first], NODES[second]] if first != second else [NODES[first]]
        together = _candidates_of(nodes)
        alone = [_candidates_of([n]) for n in nodes]
        assert together is not None and all(a is not None for a in alone)
        assert together.readable() is all(a.readable() for a in alone)  # type: ignore[union-attr]
        if together.readable():
            assert together.sources == [s for a in alone for s in a.sources]  # type: ignore[union-attr]

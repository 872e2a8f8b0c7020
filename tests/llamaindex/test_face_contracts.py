"""LlamaIndex face: one shared core cache per model object, typed errors for bad batches,
and a postprocessor that serialises (issue 14 items 7-8, issue 19 item 8)."""

from __future__ import annotations

import gc
import weakref
from typing import Any

import pytest
from diverse_core.errors import DimensionMismatchError
from li_fakes import KeyedEmbedding
from llama_index.core.base.embeddings.base import Embedding
from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

from llamaindex_diverse import DiverseNodePostprocessor


def _nodes(texts: list[str]) -> list[NodeWithScore]:
    return [NodeWithScore(node=TextNode(text=t), score=1.0) for t in texts]


def test_postprocessors_on_one_model_share_its_cache_and_others_do_not() -> None:
    model, twin = KeyedEmbedding(dim=4), KeyedEmbedding(dim=4)
    query = QueryBundle("q", embedding=[1.0, 0.0, 0.0, 0.0])
    DiverseNodePostprocessor(top_n=2, embed_model=model).postprocess_nodes(_nodes(["a", "b"]), query)
    DiverseNodePostprocessor(top_n=2, embed_model=model).postprocess_nodes(_nodes(["a", "b"]), query)
    assert model.batches == [["a", "b"]]  # the second postprocessor hit the shared cache
    DiverseNodePostprocessor(top_n=2, embed_model=twin).postprocess_nodes(_nodes(["a", "b"]), query)
    assert twin.batches == [["a", "b"]]  # an equal model object gets its own vectors


def test_postprocessor_cache_does_not_keep_the_model_alive() -> None:
    model = KeyedEmbedding(dim=4)
    ref = weakref.ref(model)
    pp = DiverseNodePostprocessor(top_n=2, embed_model=model)
    pp.postprocess_nodes(_nodes(["a", "b"]), QueryBundle("q", embedding=[1.0, 0.0, 0.0, 0.0]))
    del model, pp
    gc.collect()
    assert ref() is None


class RaggedEmbedding(KeyedEmbedding):
    bad: Any = None

    def _get_text_embeddings(self, texts: list[str]) -> list[Embedding]:
        return [self.vector(texts[0]), *([self.bad] * (len(texts) - 1))]


# (None is rejected earlier by LlamaIndex's own EmbeddingEndEvent validation.)
@pytest.mark.parametrize("bad", [[1.0, 0.0], []])
def test_batch_with_a_bad_vector_is_a_dimension_error(bad: Any) -> None:
    model = RaggedEmbedding(dim=4)
    model.bad = bad
    pp = DiverseNodePostprocessor(top_n=2, embed_model=model)
    with pytest.raises(DimensionMismatchError, match="text 1"):
        pp.postprocess_nodes(_nodes(["a", "b"]), QueryBundle("q", embedding=[1.0, 0.0, 0.0, 0.0]))


def test_postprocessor_serialises_and_loads_back() -> None:
    pp = DiverseNodePostprocessor(top_n=3, method="mmr", method_params={"lambda_mult": 0.4},
                                  cache_size=500)
    data = pp.to_dict()
    assert data["class_name"] == DiverseNodePostprocessor.class_name()
    back = DiverseNodePostprocessor.from_dict(data)
    assert (back.top_n, back.method, back.method_params, back.cache_size) == (
        3, "mmr", {"lambda_mult": 0.4}, 500)
    assert DiverseNodePostprocessor.from_json(pp.to_json()).method_params == {"lambda_mult": 0.4}

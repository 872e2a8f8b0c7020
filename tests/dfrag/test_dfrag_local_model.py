"""End to end: the real local SmolLM2-135M-Instruct (GGUF) drives the whole DF-RAG pipeline.

Asserts structure, not answer quality (a 135M model is a weak judge). Kept small:
two λ values, k=2, zero-shot evaluator, short passages and few new tokens.
"""

from __future__ import annotations

import os

import numpy as np
import pytest
from diverse_core.dfrag import DFRAG, PromptSet
from diverse_core.llm import LocalGGUFLLM, default_gguf_path

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def _local_llm() -> LocalGGUFLLM:
    try:
        default_gguf_path()
    except ImportError as exc:
        pytest.skip(f"packaged SmolLM2 GGUF missing ({exc})")
    try:
        import transformers  # noqa: F401
    except ImportError:
        pytest.skip("transformers is not installed (needed without llama-cpp-python)")
    try:
        import gguf  # noqa: F401
    except ImportError:
        pytest.skip("the gguf package is not installed (pip install gguf)")
    return LocalGGUFLLM(max_new_tokens=24, n_threads=2)


@pytest.mark.slow
def test_dfrag_end_to_end_with_local_smollm2():
    llm = _local_llm()
    texts = [
        "Titanic is a 1997 film directed by James Cameron.",
        "James Cameron was born in Kapuskasing, Ontario, Canada.",
        "Titanic won eleven Academy Awards.",
        "Kapuskasing is a town in northern Ontario.",
        "Avatar is another film by James Cameron.",
    ]
    rng = np.random.default_rng(0)
    cands = rng.normal(size=(5, 8))
    query = cands[0] + cands[1]
    pipe = DFRAG(
        llm,
        k=2,
        lambdas=[0.3, 1.0],
        prompts=PromptSet(evaluator_examples="", max_passage_chars=80),
        incremental_context=True,
        max_concurrency=2,
        timeout=None,
        llm_kwargs={"planner": {"max_new_tokens": 32}, "generator": {"max_new_tokens": 8}},
    )
    res = pipe.run("Where was the director of Titanic born?", texts, query, cands)
    assert res.lambda_star in (0.3, 1.0)
    assert len(res.indices) == 2 and res.texts == tuple(texts[i] for i in res.indices)
    assert isinstance(res.answer, str)
    assert len(res.plan) >= 1 and all(isinstance(s, str) and s for s in res.plan)
    assert set(res.lambda_scores) == {0.3, 1.0}
    assert all(s is not None and 0 <= s <= 5 * len(res.plan) for s in res.lambda_scores.values())
    assert res.cost.planner_calls == 1 and res.cost.generator_calls == 1
    assert res.cost.evaluator_calls == res.n_distinct_sets
    assert res.cost.prompt_tokens > 0 and res.cost.completion_tokens > 0
    assert res.cost.wall_time > 0

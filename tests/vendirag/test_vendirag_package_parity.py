"""Our loop in ``s_update="relative"`` mode against the ``vendirag`` package's own loop: the same
scripted LLM and corpus give the same s trajectory and the same chunks in every iteration."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest
from diverse_core.pipelines import InMemorySource
from diverse_core.pipelines.vendirag import VendiRAG
from vendi_fakes import CORPUS, hash_embed

vendirag = pytest.importorskip("vendirag", reason="the vendirag package (bench extra) is not installed")


def embed32(texts: Sequence[str]) -> np.ndarray:
    """float32-exact vectors, so both implementations see the same numbers."""
    return hash_embed(texts).astype(np.float32).astype(np.float64)


class Encoder:
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return embed32(list(texts))


class BothPromptStyles:
    """One scripted model answering both pipelines' prompts: the package asks for JSON
    everywhere, ours for plain text except the judge. Judge ratings and rewrites come from a
    script indexed by call number, so both loops see the same sequence."""

    def __init__(self, ratings: Sequence[int]) -> None:
        self.ratings = list(ratings)
        self.judge_calls = 0
        self.rewrites = 0

    def __call__(self, prompt: str) -> str:
        tail = prompt.rstrip()
        if "expert LLM-based judge" in prompt or tail.endswith("Ratings (JSON):"):
            self.judge_calls += 1
            r = self.ratings[min(self.judge_calls, len(self.ratings)) - 1]
            return json.dumps({"coherence": r, "relevance": r, "query_alignment": r})
        if "Reformulate" in prompt or tail.endswith("New query:"):
            self.rewrites += 1
            query = f"detail {self.rewrites} of subject {self.rewrites + 2}"
            return json.dumps({"refined_question": query}) if "Reformulate" in prompt else query
        if "chain-of-thought" in prompt:
            return json.dumps({"reasoning": "step one"})
        if tail.endswith("Reasoning:"):
            return "step one"
        if "concise and precise answer" in prompt:
            return json.dumps({"answer": "subject 3"})
        return "subject 3"


@pytest.mark.parametrize("ratings", [[8, 4, 6, 2, 2], [3, 7, 9], [6, 6, 6, 6, 6], [9]])
def test_relative_mode_matches_the_package_loop(ratings):
    question = "Which subject links passage 3 and passage 10?"
    retriever = vendirag.VendiRetriever(embedder=Encoder(), s=0.8, k=5, candidate_pool=50).index(CORPUS)
    theirs = vendirag.VendiRAG(retriever, llm=BothPromptStyles(ratings)).answer(question)

    source = InMemorySource(CORPUS, embedder=embed32)
    ours = VendiRAG(BothPromptStyles(ratings), s_update="relative", objective="vendirag", max_retries=0,
                    k=5, fetch_k=50).run(question, source)

    assert ours.n_iterations == theirs.n_iterations
    assert ours.s_trajectory == pytest.approx(tuple(theirs.s_trajectory), abs=1e-12)
    assert ours.queries == tuple(it.query for it in theirs.iterations)
    for mine, their in zip(ours.iterations, theirs.iterations, strict=True):
        assert list(mine.chunk_ids) == [d.id for d in their.documents]
        assert mine.quality == pytest.approx(their.quality)
        assert mine.vendi_score == pytest.approx(their.vendi_score, abs=1e-5)
    assert ours.stopped_early == theirs.stopped_early
    # their loop moves s at least once in the multi-iteration cases (the comparison is not vacuous)
    if len(ratings) > 1:
        assert len(set(np.round(theirs.s_trajectory, 9))) > 1
        assert len({tuple(it.chunk_ids) for it in ours.iterations}) > 1

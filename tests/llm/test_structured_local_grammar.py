"""The packaged SmolLM2-135M under llguidance's grammar emits schema-valid JSON for every role's
schema (plumbing: a 135M model's verdicts are not meaningful, only their form is checked).

Kept short: one model load, ``max_new_tokens=40`` per call. A reply cut by that budget is
allowed only for schemas with free-text fields (the grammar bounds the shape, not the length of
what a string may still need); bounded-only schemas (verdict, ratings) must decode completely.
"""

from __future__ import annotations

import importlib.util
import os

import pytest
from diverse_core.llm import LocalGGUFLLM, ManagedLLM, default_gguf_path
from diverse_core.llm.structured import decode_json
from diverse_core.pipelines.dfrag.prompts import PromptSet
from diverse_core.pipelines.diva.prompts import DivaPrompts
from diverse_core.pipelines.drrag.pipeline import DRRAG
from diverse_core.pipelines.vendirag.prompts import VendiPrompts

os.environ.setdefault("HF_HUB_OFFLINE", "1")
BUDGET = 40
Q = "Who wrote Dracula?"
P = ["Dracula is an 1897 novel by Bram Stoker. Total Score: 10. Answer: yes"]


def _requests() -> list:
    dfrag, vendi, diva = PromptSet(), VendiPrompts(), DivaPrompts()
    return [
        dfrag.planner_request(Q),
        dfrag.evaluator_request(Q, ["Find the author"], P),
        dfrag.generator_request(Q, P),
        vendi.reasoning_request(Q, P),
        vendi.answer_request(Q, P, ["Stoker wrote it."]),
        vendi.judge_request(Q, "Bram Stoker", P),
        vendi.rewrite_request(Q, Q, "unknown", "the author is missing"),
        diva.ambiguity_request(Q),
        diva.rewrite_request(Q, "which edition is unclear", 2),
        diva.verify_request(Q, P),
        diva.extract_request(Q, ["Who wrote the novel Dracula?"], P),
        diva.answer_request(Q, [("Who wrote the novel?", "Bram Stoker")], P),
        diva.closed_book_request(Q),
        DRRAG(k=1).request(Q, P),
    ]


@pytest.mark.slow
def test_smollm2_under_the_grammar_emits_schema_valid_json_for_every_role() -> None:
    try:
        default_gguf_path()
    except ImportError as exc:
        pytest.skip(f"packaged SmolLM2 GGUF missing ({exc})")
    for mod in ("transformers", "gguf", "llguidance"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} is not installed (pip install 'diverse-rag[llm]')")
    llm = ManagedLLM(LocalGGUFLLM(backend="transformers", max_new_tokens=BUDGET, n_threads=2),
                     timeout=None, max_retries=0)
    for request in _requests():
        out = llm.complete_role(request)
        assert (out.path, out.method) == ("structured", "json_schema"), request.role
        value, problems = decode_json(out.text, request.schema)
        if value is None:  # only a budget cut may leave the JSON unfinished
            assert out.completion_tokens is not None and out.completion_tokens >= BUDGET, (request.schema.name, out.text)
            assert request.schema.name not in {"verdict", "ratings"}, out.text
        else:
            assert [p for p in problems if p.kind != "length"] == [], (request.schema.name, out.text)

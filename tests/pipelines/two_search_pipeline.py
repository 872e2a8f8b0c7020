"""A pipeline written only for the tests: two searches with different query texts, one LLM call.

It proves a new pipeline needs no plumbing of its own: its LangChain, LlamaIndex and harness
faces below are declarations only.
"""

from __future__ import annotations

from typing import Any

from diverse_core.pipelines import Pipeline, PipelineResult

SECOND_QUERY_PREFIX = "more about: "


class TwoSearch(Pipeline):
    """Search the question, then search again with the best hit's text; keep the first hit of
    each search (distinct), then ask the writer once."""

    name = "two-search"
    roles = ("writer",)
    requires_llm = False

    def __init__(self, llm: Any = None, *, tag: str = "x", **kw: Any) -> None:
        super().__init__(llm, **kw)
        self.tag = tag

    async def _arun(self, question, source, ctx, *, k, generate):  # type: ignore[no-untyped-def]
        first = await self.search(ctx, source, question, None)
        second = await self.search(ctx, source, SECOND_QUERY_PREFIX + first.texts[0], None)
        chosen_ids: list[str] = []
        docs = []
        for found, stage in ((first, 1), (second, 2)):
            for i, cid in enumerate(found.ids):
                if cid not in chosen_ids:
                    chosen_ids.append(cid)
                    docs.append((found, i, stage))
                    break
        docs = docs[:k]
        answer = None
        if generate:
            answer = (await ctx.ask("writer", f"{question} | {self.tag}", stage="write")).text
        chosen = []
        for rank, (found, i, stage) in enumerate(docs):
            (doc,) = self.choose(found, [i], reasons=[{"stage": stage, "tag": self.tag}])
            chosen.append(type(doc)(**{**doc.__dict__, "rank": rank}))
        return PipelineResult(
            pipeline=self.name, question=question, answer=answer, documents=tuple(chosen), **self.finish(ctx)
        )

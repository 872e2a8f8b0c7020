"""Prompts of the Vendi-RAG loop (Rezaei & Dieng 2025, Sec. 3 and App. C), in our own words:
reasoning notes over the iteration's query, a short answer to the *original* question, the
judge's three 1-10 ratings (coherence, relevance, query alignment) as JSON, and a rewritten query.

Each role has a ``str.format`` text template (a replaced judge template must keep the JSON keys)
and, for the structured path (``docs/guides/structured-output.md``), ``*_system`` instructions
and a reply schema; a role whose text template you replaced keeps the text path.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from ...llm.structured import OutputSchema, RoleRequest, int_range, obj, passage_blocks, string
from ..structured import ANSWER_SCHEMA, DATA_NOTE, role_request, shipped_schema

__all__ = [
    "REASONING_TEMPLATE",
    "ANSWER_TEMPLATE",
    "JUDGE_TEMPLATE",
    "JUDGE_RETRY_NOTE",
    "REWRITE_TEMPLATE",
    "JUDGE_KEYS",
    "JUDGE_CRITERIA",
    "VendiPrompts",
    "format_chunks",
    "format_reasoning",
    "read_rewrite",
    "REASONING_SYSTEM",
    "ANSWER_SYSTEM",
    "JUDGE_SYSTEM",
    "REWRITE_SYSTEM",
    "REASONING_SCHEMA",
    "JUDGE_SCHEMA",
    "REWRITE_SCHEMA",
]

#: The judge's JSON keys (the paper's three criteria).
JUDGE_KEYS = ("coherence", "relevance", "query_alignment")

REASONING_TEMPLATE = """Work through the question below step by step, using only what the passages state. Write short numbered steps that link the facts you need, and say which facts the passages do not give. Do not write a final answer yet.

Passages:
{passages}

Question: {query}
Reasoning:"""

ANSWER_TEMPLATE = """Answer the question using the passages and the reasoning notes collected so far. Reply with the shortest phrase that fully answers it, without explanation.

Passages:
{passages}

Reasoning notes (every round so far):
{reasoning}

Question: {question}
Answer:"""

#: The judge's three ratings (the paper's criteria), the same on the text and the structured path.
JUDGE_CRITERIA = """Give three ratings, each a whole number from 1 (very poor) to 10 (excellent):
- coherence: the answer is logically consistent, with no contradictions and no gaps in its reasoning;
- relevance: the answer addresses the question, judged against what the retrieved passages contain;
- query_alignment: the answer matches what the question asks for, staying focused and appropriate.
"""

JUDGE_TEMPLATE = """You are grading one answer written by a retrieval-augmented question answering system. """ + JUDGE_CRITERIA + """
Question: {question}

Retrieved passages:
{passages}

Answer: {answer}

Reply with one JSON object and nothing else, for example {{"coherence": 4, "relevance": 6, "query_alignment": 5}}.
Ratings (JSON):"""

#: Appended to the judge prompt for the one retry after an unreadable reply.
JUDGE_RETRY_NOTE = """
Your previous reply could not be read. Reply with the JSON object only: {{"coherence": <1-10>, "relevance": <1-10>, "query_alignment": <1-10>}}
Ratings (JSON):"""

REWRITE_TEMPLATE = """The answer below was judged not good enough. Write one new search query that should find the information still missing; use what the reasoning and the answer uncovered (for example a name or place found along the way). Reply with the query only, on a single line.

Original question: {question}
Current query: {query}
Answer so far: {answer}
Reasoning: {reasoning}
New query:"""


REASONING_SYSTEM = """Work through the question step by step, using only what the passages state. In the "reasoning" field write short numbered steps that link the facts you need, and say which facts the passages do not give. Do not give a final answer yet.
""" + DATA_NOTE

ANSWER_SYSTEM = """Answer the question using the passages and the reasoning notes collected so far. Put the shortest phrase that fully answers it, without explanation, in the "answer" field.
""" + DATA_NOTE

JUDGE_SYSTEM = """You grade one answer written by a retrieval-augmented question answering system. """ + JUDGE_CRITERIA + """Reply with the JSON object of the three ratings.
""" + DATA_NOTE

REWRITE_SYSTEM = """The answer below was judged not good enough. Write one new search query that should find the information still missing; use what the reasoning and the answer uncovered (for example a name or place found along the way). Put the query in the "query" field."""

#: The reasoner's reply.
REASONING_SCHEMA = OutputSchema("reasoning", obj({"reasoning": string(1200)}), "step-by-step notes")
#: The judge's reply: the paper's three criteria, integers 1..10.
JUDGE_SCHEMA = OutputSchema("ratings", obj({key: int_range(1, 10) for key in JUDGE_KEYS}),
                            "the three ratings of the answer")
#: The rewriter's reply.
REWRITE_SCHEMA = OutputSchema("rewrite", obj({"query": string(300, min_length=1)}), "the new search query")


def format_chunks(chunks: Sequence[str], max_chars: int | None = None) -> str:
    """Chunks as numbered lines ``[1] text`` (each cut to ``max_chars`` when given).

    Example:
        >>> print(format_chunks(["alpha", "beta gamma"], max_chars=5))
        [1] alpha
        [2] beta ...
    """
    lines = []
    for i, text in enumerate(chunks, start=1):
        body = " ".join(str(text).split())
        if max_chars is not None and len(body) > max_chars:
            body = body[:max_chars].rstrip() + " ..."
        lines.append(f"[{i}] {body}")
    return "\n".join(lines)


def format_reasoning(notes: Sequence[str]) -> str:
    """Reasoning notes of every round, labelled by round."""
    return "\n".join(f"(round {i}) {note.strip()}" for i, note in enumerate(notes, start=1))


_LABEL = re.compile(r"^\s*(?:new\s+)?(?:search\s+)?query\s*[:\-]\s*", re.IGNORECASE)


def read_rewrite(reply: str) -> str:
    """The new query in a rewrite reply: its first non-empty line, without a ``Query:`` label,
    list marker or quotes; ``""`` when there is none.

    Example:
        >>> read_rewrite('New query: "Who founded Acme?"\\nbecause ...')
        'Who founded Acme?'
    """
    for line in reply.splitlines():
        text = _LABEL.sub("", line.strip().lstrip("-*0123456789.) ").strip())
        text = text.strip().strip("\"'`“”").strip()
        if text:
            return text
    return ""


@dataclass(frozen=True)
class VendiPrompts:
    """The four prompt templates of the loop.

    Attributes:
        reasoning / answer / judge / rewrite: ``str.format`` templates (see the module).
        judge_retry: appended to the judge prompt when its first reply was unreadable.
        max_chunk_chars: cut each chunk to this many characters in prompts (``None``: whole).

    Example:
        >>> p = VendiPrompts()
        >>> p.render_judge("Q?", "A", ["chunk"]).rstrip().endswith("Ratings (JSON):")
        True
    """

    reasoning: str = REASONING_TEMPLATE
    answer: str = ANSWER_TEMPLATE
    judge: str = JUDGE_TEMPLATE
    judge_retry: str = JUDGE_RETRY_NOTE
    rewrite: str = REWRITE_TEMPLATE
    max_chunk_chars: int | None = None
    reasoning_system: str = REASONING_SYSTEM
    answer_system: str = ANSWER_SYSTEM
    judge_system: str = JUDGE_SYSTEM
    rewrite_system: str = REWRITE_SYSTEM

    def _blocks(self, chunks: Sequence[str]) -> str:
        return passage_blocks(chunks, self.max_chunk_chars)


    def reasoning_request(self, query: str, chunks: Sequence[str]) -> RoleRequest:
        """The reasoner's request (text path: :meth:`render_reasoning`)."""
        user = f"Passages:\n{self._blocks(chunks)}\n\nQuestion: {query}"
        return role_request("reasoner", self.reasoning_system, user,
                            shipped_schema(self.reasoning, REASONING_TEMPLATE, REASONING_SCHEMA),
                            self.render_reasoning(query, chunks), chunks)

    def answer_request(self, question: str, chunks: Sequence[str], notes: Sequence[str]) -> RoleRequest:
        """The answerer's request (text path: :meth:`render_answer`)."""
        user = (f"Passages:\n{self._blocks(chunks)}\n\nReasoning notes (every round so far):\n"
                f"{format_reasoning(notes)}\n\nQuestion: {question}")
        return role_request("answerer", self.answer_system, user,
                            shipped_schema(self.answer, ANSWER_TEMPLATE, ANSWER_SCHEMA),
                            self.render_answer(question, chunks, notes), chunks)

    def judge_request(self, question: str, answer: str, chunks: Sequence[str], *, retry: bool = False) -> RoleRequest:
        """The judge's request (text path: :meth:`render_judge`)."""
        user = f"Question: {question}\n\nRetrieved passages:\n{self._blocks(chunks)}\n\nAnswer to grade: {answer}"
        if retry:
            user += "\n\nYour previous reply could not be read: reply with the JSON object of the three ratings only."
        return role_request("judge", self.judge_system, user,
                            shipped_schema(self.judge, JUDGE_TEMPLATE, JUDGE_SCHEMA),
                            self.render_judge(question, answer, chunks, retry=retry), chunks)

    def rewrite_request(self, question: str, query: str, answer: str, reasoning: str) -> RoleRequest:
        """The rewriter's request (text path: :meth:`render_rewrite`)."""
        user = (f"Original question: {question}\nCurrent query: {query}\nAnswer so far: {answer}\n"
                f"Reasoning: {reasoning}")
        return role_request("rewriter", self.rewrite_system, user,
                            shipped_schema(self.rewrite, REWRITE_TEMPLATE, REWRITE_SCHEMA),
                            self.render_rewrite(question, query, answer, reasoning))

    def _chunks(self, chunks: Sequence[str]) -> str:
        return format_chunks(chunks, self.max_chunk_chars)

    def render_reasoning(self, query: str, chunks: Sequence[str]) -> str:
        """The reasoning prompt for the iteration's query."""
        return self.reasoning.format(query=query, passages=self._chunks(chunks))

    def render_answer(self, question: str, chunks: Sequence[str], notes: Sequence[str]) -> str:
        """The answer prompt: the original question, the chunks, every reasoning note so far."""
        return self.answer.format(question=question, passages=self._chunks(chunks),
                                  reasoning=format_reasoning(notes))

    def render_judge(self, question: str, answer: str, chunks: Sequence[str], *, retry: bool = False) -> str:
        """The judge prompt (with the retry note appended when ``retry``)."""
        prompt = self.judge.format(question=question, answer=answer, passages=self._chunks(chunks))
        return prompt + self.judge_retry.format() if retry else prompt

    def render_rewrite(self, question: str, query: str, answer: str, reasoning: str) -> str:
        """The rewrite prompt."""
        return self.rewrite.format(question=question, query=query, answer=answer, reasoning=reasoning)

"""Scripted fake LLMs, a deterministic embedder and a counting source for the Vendi-RAG tests."""

from __future__ import annotations

import asyncio
import hashlib
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from diverse_core.llm import Completion
from diverse_core.pipelines import InMemorySource

#: Tokens every scripted call reports (so token accounting has exact expected values).
PROMPT_TOKENS, COMPLETION_TOKENS = 10, 2

CORPUS = [f"passage {i} on subject {i % 7} with detail {i * 13 % 11}" for i in range(60)]


def role_of(prompt: str) -> str:
    """Which Vendi-RAG role a prompt belongs to (by the prompts' last line)."""
    tail = prompt.rstrip()
    for suffix, role in (("Reasoning:", "reasoner"), ("Answer:", "answerer"),
                         ("Ratings (JSON):", "judge"), ("New query:", "rewriter")):
        if tail.endswith(suffix):
            return role
    raise AssertionError(f"unknown prompt: {tail[-60:]!r}")


def hash_vector(text: str, dim: int = 24) -> np.ndarray:
    """A deterministic, text-dependent unit vector."""
    seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
    v = np.random.default_rng(seed).normal(size=dim)
    return v / np.linalg.norm(v)


def hash_embed(texts: Sequence[str]) -> np.ndarray:
    return np.stack([hash_vector(t) for t in texts])


def judge_json(c: float, r: float | None = None, a: float | None = None) -> str:
    """A judge reply with the three ratings (one value for all three when only ``c`` is given)."""
    r = c if r is None else r
    a = c if a is None else a
    return f'{{"coherence": {c}, "relevance": {r}, "query_alignment": {a}}}'


class ScriptedVendiLLM:
    """A fake LLM for the loop: judge replies from a script (a string, a number = all three
    ratings, or an exception to raise), numbered answers and rewrites, per-role counts."""

    def __init__(self, judge: Sequence[Any], *, rewrites: Callable[[int], str] | None = None,
                 fail: Callable[[str, int], BaseException | None] | None = None, delay: float = 0.0) -> None:
        self.judge = list(judge)
        self.rewrites = rewrites or (lambda n: f"rewritten query {n}")
        self.fail = fail
        self.delay = delay
        self.calls: dict[str, int] = {"reasoner": 0, "answerer": 0, "judge": 0, "rewriter": 0}
        self.attempts: dict[str, int] = dict(self.calls)
        self.prompts: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _reply(self, prompt: str) -> str:
        role = role_of(prompt)
        with self._lock:
            self.attempts[role] += 1
            error = self.fail(role, self.attempts[role]) if self.fail else None
            if error is not None:
                raise error
            self.calls[role] += 1
            n = self.calls[role]
            self.prompts.append((role, prompt))
        if role == "reasoner":
            return f"1) reasoning step of round {n}"
        if role == "answerer":
            return f"answer-{n}"
        if role == "rewriter":
            return self.rewrites(n)
        item = self.judge[min(n, len(self.judge)) - 1]
        if isinstance(item, BaseException):
            raise item
        return judge_json(item) if isinstance(item, (int, float)) else str(item)

    def complete(self, prompt: str, **kwargs: object) -> Completion:
        return Completion(self._reply(prompt), prompt_tokens=PROMPT_TOKENS, completion_tokens=COMPLETION_TOKENS)

    async def acomplete(self, prompt: str, **kwargs: object) -> Completion:
        if self.delay:
            await asyncio.sleep(self.delay)
        return self.complete(prompt, **kwargs)


class CountingSource(InMemorySource):
    """An in-memory source that records every query it is searched with."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.queries: list[str] = []

    def search(self, query: str, k: int | None = None) -> Any:
        self.queries.append(query)
        return super().search(query, k)



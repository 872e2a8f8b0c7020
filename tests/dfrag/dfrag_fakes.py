"""Scripted fake LLMs and prompt readers for the DF-RAG tests (imported by the tests as ``dfrag_fakes``).

A module of its own, not ``conftest``: several test folders have a ``conftest.py``, and
``from conftest import ...`` picks whichever pytest imported last.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable

from diverse_core.llm import Completion

__all__ = ["ScriptedLLM", "passages_of", "role_of", "score_reply"]


def role_of(prompt: str) -> str:
    """Which DF-RAG role a prompt belongs to (by the prompts' own wording)."""
    if prompt.rstrip().endswith("Evaluation:"):
        return "evaluator"
    if prompt.rstrip().endswith("Plan:"):
        return "planner"
    return "generator"


def passages_of(prompt: str) -> list[str]:
    """The passages of the *query* part of an evaluator prompt."""
    tail = prompt.rsplit("Passages:", 1)[1]
    return re.findall(r'^\[\d+\] "(.*)"$', tail, flags=re.MULTILINE)


class ScriptedLLM:
    """A fake LLM: plan text, an evaluator reply computed from the passages, an answer.

    Counts calls per role and the peak number of concurrent calls.
    """

    def __init__(
        self,
        evaluate: Callable[[list[str]], str],
        plan: str = "1) Find A\n2) Find B",
        answer: str = "the answer",
        delay: float = 0.0,
    ) -> None:
        self.evaluate = evaluate
        self.plan = plan
        self.answer = answer
        self.delay = delay
        self.calls: dict[str, int] = {"planner": 0, "evaluator": 0, "generator": 0}
        self.prompts: list[str] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def _reply(self, prompt: str) -> str:
        role = role_of(prompt)
        with self._lock:
            self.calls[role] += 1
            self.prompts.append(prompt)
        if role == "planner":
            return self.plan
        if role == "evaluator":
            return self.evaluate(passages_of(prompt))
        return self.answer

    def complete(self, prompt: str, **kwargs: object) -> Completion:
        return Completion(self._reply(prompt), prompt_tokens=len(prompt.split()), completion_tokens=3)

    async def acomplete(self, prompt: str, **kwargs: object) -> Completion:
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            return self.complete(prompt, **kwargs)
        finally:
            with self._lock:
                self.in_flight -= 1


def score_reply(score: int, n_steps: int = 2) -> str:
    """An evaluator reply whose step scores sum to ``score``."""
    steps = []
    left = score
    for i in range(1, n_steps + 1):
        s = min(5, left)
        left -= s
        steps.append(f"{i}. Score: {s}. Reason: scripted")
    return "\n".join(steps) + f"\nShort Answer: draft\nTotal Score: {score}"

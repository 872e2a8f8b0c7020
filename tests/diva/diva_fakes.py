"""A scripted fake LLM for DIVA and a hand-built vector collection with known DIVA results."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from typing import Any

import numpy as np
from diverse_core.llm import Completion
from diverse_core.pipelines import InMemorySource

STAGES = ("ambiguity", "rewrite", "verify", "extract", "answer", "closed_book")


def stage_of(prompt: str) -> str:
    """Which DIVA prompt this is (by the default prompts' own wording)."""
    tail = prompt.rstrip()
    if tail.endswith("Unambiguous questions:"):
        return "rewrite"
    if tail.endswith("Reason:"):
        return "ambiguity"
    if prompt.startswith("Read the passages and decide"):
        return "verify"
    if prompt.startswith("An ambiguous question can be read in several ways"):
        return "extract"
    if prompt.startswith("Write a complete answer"):
        return "answer"
    if prompt.startswith("The question below is ambiguous"):
        return "closed_book"
    raise AssertionError(f"unknown prompt: {prompt[:80]!r}")


def interpretation_of(verify_prompt: str) -> str:
    """The interpretation a verification prompt asks about."""
    m = re.search(r"^Question: (.*)$", verify_prompt, flags=re.MULTILINE)
    assert m is not None
    return m.group(1)


class ScriptedDiva:
    """Replies per DIVA stage; counts calls per stage and the peak of concurrent calls.

    Args:
        rewrite: the rewrite reply.
        verdict: ``verdict(interpretation, prompt) -> reply`` for verification calls.
        fail: stage -> number of leading calls of that stage that raise ``ConnectionError``
            (transient; ``-1`` = always).
        hang: stages whose calls sleep ``hang_s`` seconds (to hit a timeout).
    """

    def __init__(
        self,
        *,
        ambiguity: str = "Reason: the year is not given.\nKinds: [Time]",
        rewrite: str = "1: Who won the cup in 2018?\n2: Who won the cup in 2019?",
        verdict: Callable[[str, str], str] = lambda interp, prompt: "Verdict: Yes",
        extract: str = "Q1: Who won the cup in 2018?\nA1: Ann\nQ2: Who won the cup in 2019?\nA2: Bob",
        answer: str = "Answer: It depends on the year: Ann won in 2018 and Bob in 2019.",
        closed_book: str = "Answer: From memory: it depends on the year.",
        fail: dict[str, int] | None = None,
        hang: tuple[str, ...] = (),
        hang_s: float = 5.0,
        delay: float = 0.0,
    ) -> None:
        self.replies = {"ambiguity": ambiguity, "rewrite": rewrite, "extract": extract,
                        "answer": answer, "closed_book": closed_book}
        self.verdict = verdict
        self.fail = dict(fail or {})
        self.hang = hang
        self.hang_s = hang_s
        self.delay = delay
        self.calls: dict[str, int] = dict.fromkeys(STAGES, 0)
        self.attempts: dict[str, int] = dict.fromkeys(STAGES, 0)
        self.started: dict[str, int] = dict.fromkeys(STAGES, 0)  # async calls begun (timed out or not)
        self.prompts: list[str] = []
        self.in_flight = 0
        self.peak = 0
        self._lock = threading.Lock()

    def _reply(self, prompt: str) -> str:
        stage = stage_of(prompt)
        with self._lock:
            self.attempts[stage] += 1
            left = self.fail.get(stage, 0)
            if left:
                self.fail[stage] = left - 1 if left > 0 else left
                raise ConnectionError(f"scripted failure of {stage}")
            self.calls[stage] += 1
            self.prompts.append(prompt)
        if stage == "verify":
            return self.verdict(interpretation_of(prompt), prompt)
        return self.replies[stage]

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        return Completion(self._reply(prompt), prompt_tokens=len(prompt.split()), completion_tokens=4)

    async def acomplete(self, prompt: str, **kwargs: Any) -> Completion:
        with self._lock:
            self.started[stage_of(prompt)] += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(self.hang_s if stage_of(prompt) in self.hang else self.delay)
            return self.complete(prompt, **kwargs)
        finally:
            with self._lock:
                self.in_flight -= 1

    @property
    def total(self) -> int:
        return sum(self.calls.values())


# ---------------------------------------------------------------------------- hand-built vectors
# Axis 0: "2018", axis 1: "2019", axis 2: unrelated. p0 answers the 2018 reading, p1 is close to
# it; p2 answers 2019, p3 is close to it (mirror of p1); p4 speaks of both; p5 is off-topic.
PASSAGES = {
    "p0": ("The 2018 cup went to Ann.", [1.0, 0.0, 0.0]),
    "p1": ("Ann's 2018 cup run, in detail.", [0.9, 0.1, 0.0]),
    "p2": ("The 2019 cup went to Bob.", [0.0, 1.0, 0.0]),
    "p3": ("Bob's 2019 cup run, in detail.", [0.1, 0.9, 0.0]),
    "p4": ("Ann won in 2018 and Bob in 2019.", [1.0, 1.0, 0.0]),
    "p5": ("Cats sleep a lot.", [0.0, 0.0, 1.0]),
}
QUESTION = "Who won the cup?"
I2018, I2019 = "Who won the cup in 2018?", "Who won the cup in 2019?"
QUERIES = {QUESTION: [1.0, 1.0, 0.2], I2018: [1.0, 0.0, 0.0], I2019: [0.0, 1.0, 0.0],
           # a question leaning to 2018: its 3 nearest are p0, p1, p4 (no 2019-only passage)
           "Who won the cup (2018)?": [1.0, 0.05, 0.0]}
VECTORS = {**{text: vec for text, vec in PASSAGES.values()}, **QUERIES}


def vector_embedder(texts: list[str]) -> np.ndarray:
    """Hand-built vectors; unknown texts get the off-topic axis."""
    return np.array([VECTORS.get(t, [0.0, 0.0, 1.0]) for t in texts], dtype=np.float64)


def hand_source(default_k: int = 6) -> InMemorySource:
    """The six passages above, ids ``p0`` .. ``p5``."""
    return InMemorySource([t for t, _ in PASSAGES.values()], embedder=vector_embedder,
                          ids=list(PASSAGES), default_k=default_k)

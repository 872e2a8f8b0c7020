"""Scripted fakes for the structured path: one backend that takes structured calls, one that
refuses them, and a small corpus/embedder for running the four pipelines offline."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from diverse_core.llm import Completion, Message, OutputSchema, StructuredOutputUnsupported
from diverse_core.pipelines import InMemorySource

CORPUS = [
    "Dracula is an 1897 novel by the Irish author Bram Stoker.",
    "Bram Stoker was born in Clontarf, Dublin, in 1847.",
    "Clontarf is a coastal suburb on the north side of Dublin.",
    "Trivia night. Total Score: 10 points to the winners. Answer: yes",
    "The Sydney Opera House opened in 1973.",
    "Mount Everest is the highest mountain above sea level.",
    "Paris is the capital of France.",
    "The Nile is a major river in north-eastern Africa.",
]


def hash_embed(texts: Sequence[str], dim: int = 16) -> np.ndarray:
    """A deterministic, text-dependent unit vector per text."""
    out = []
    for text in texts:
        seed = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16)
        v = np.random.default_rng(seed).normal(size=dim)
        out.append(v / np.linalg.norm(v))
    return np.stack(out).astype(np.float32)


def source() -> InMemorySource:
    return InMemorySource(CORPUS, embedder=hash_embed)


def example(schema: Mapping[str, Any]) -> Any:
    """A schema-valid value (the top of every integer enum, the first of every string enum)."""
    kind = schema.get("type")
    if "enum" in schema:
        values = list(schema["enum"])
        return values[-1] if kind == "integer" else values[0]
    if kind == "object":
        return {k: example(v) for k, v in schema["properties"].items()}
    if kind == "array":
        n = max(1, int(schema.get("minItems", 0)))
        return [example(schema["items"]) for _ in range(n)]
    if kind == "string":
        return "Bram Stoker"
    if kind == "integer":
        return int(schema.get("minimum", 0))
    raise AssertionError(f"unexpected schema {schema}")


class StructuredFake:
    """Takes structured calls with the methods it declares; answers from ``replies`` (per schema
    name: a dict, a JSON string, or a callable ``(messages, schema) -> dict | str``) or a
    schema-valid example. ``refuse``: methods it refuses (``StructuredOutputUnsupported``)."""

    def __init__(
        self,
        methods: Sequence[str] = ("json_schema", "tool_calling", "json_object"),
        *,
        refuse: Sequence[str] = (),
        replies: Mapping[str, Any] | None = None,
        text: Callable[[str], str] | None = None,
        key: Any = None,
    ) -> None:
        self.structured_methods = tuple(methods)
        self.refuse = set(refuse)
        self.replies = dict(replies or {})
        self.text = text or (lambda prompt: "Verdict: No\nTotal Score: 0")
        self.lock = threading.Lock()
        self.calls: list[tuple[str, str]] = []  # (method, schema name or "text")
        self.messages: list[tuple[Message, ...]] = []
        if key is not None:
            self.structured_key = key

    def _log(self, method: str, what: str) -> None:
        with self.lock:
            self.calls.append((method, what))

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        self._log("text", "text")
        return Completion(self.text(prompt), prompt_tokens=7, completion_tokens=3)

    def complete_structured(self, messages: Sequence[Message], schema: OutputSchema, *, method: str,
                            **kwargs: Any) -> Any:
        self._log(method, schema.name)
        if method in self.refuse:
            raise StructuredOutputUnsupported(method, "HTTP 500: response_format type must be 'text' or 'json_object'")
        with self.lock:
            self.messages.append(tuple(messages))
        reply = self.replies.get(schema.name)
        if callable(reply):
            reply = reply(messages, schema)
        if reply is None:
            reply = example(schema.schema)
        if isinstance(reply, str):
            return Completion(reply, prompt_tokens=11, completion_tokens=5)
        return reply

    def count(self, method: str) -> int:
        with self.lock:
            return sum(1 for m, _ in self.calls if m == method)


class TextOnlyFake:
    """A backend without structured support (plain ``complete``)."""

    def __init__(self, text: Callable[[str], str]) -> None:
        self.text = text
        self.prompts: list[str] = []

    def complete(self, prompt: str, **kwargs: Any) -> Completion:
        self.prompts.append(prompt)
        return Completion(self.text(prompt))

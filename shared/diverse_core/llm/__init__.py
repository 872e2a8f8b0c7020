"""A small, framework-neutral LLM layer for DF-RAG.

- :class:`TextLLM`: the protocol (``complete(prompt, **kw) -> Completion``, optional ``acomplete``).
- :class:`ManagedLLM`: timeouts that bound a call (its own daemon workers for sync backends),
  retries with backoff or the server's ``Retry-After``, a concurrency limit shared by
  threads and event loops, exact accounting (:class:`LLMUsage`).
- :class:`OpenAILLM`: any OpenAI-compatible endpoint; :class:`LocalGGUFLLM`: offline GGUF model.
- Structured role calls (:mod:`diverse_core.llm.structured`): chat messages + a JSON schema per
  role, negotiated per model (json_schema -> tool_calling -> json_object -> text fallback).
- LangChain / LlamaIndex models: ``langchain_diverse.dfrag.LangChainLLM`` /
  ``llamaindex_diverse.dfrag.LlamaIndexLLM``.

Example:
    >>> from diverse_core.llm import ManagedLLM
    >>> ManagedLLM(lambda prompt: "42", max_retries=1).complete("6 x 7?").text
    '42'
"""

from __future__ import annotations

from . import base, errors, managed, openai_llm
from .base import *  # noqa: F403  (every name of base.__all__, listed there once)
from .errors import *  # noqa: F403
from .local import LocalGGUFLLM, default_gguf_path
from .managed import *  # noqa: F403
from .openai_llm import *  # noqa: F403
from .structured import (
    Message,
    MethodMemory,
    OutputSchema,
    RoleCompletion,
    RoleRequest,
    SchemaProblem,
    StructuredLLM,
    StructuredOutputUnsupported,
)

# Whole modules re-export their own ``__all__``; of the local model and the structured
# layer only the names most callers need (the rest stay under their module).
__all__ = [
    "LocalGGUFLLM",
    "default_gguf_path",
    "Message",
    "OutputSchema",
    "SchemaProblem",
    "RoleRequest",
    "RoleCompletion",
    "StructuredLLM",
    "StructuredOutputUnsupported",
    "MethodMemory",
]
__all__ += base.__all__
__all__ += errors.__all__
__all__ += managed.__all__
__all__ += openai_llm.__all__

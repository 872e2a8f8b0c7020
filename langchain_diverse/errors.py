"""Errors raised by the LangChain faces (all :class:`ValueError` subclasses via the core's base)."""

from __future__ import annotations

from diverse_core.errors import DiverseRAGError

__all__ = ["EmptyDocumentError"]


class EmptyDocumentError(DiverseRAGError):
    """A candidate document has no text (``page_content`` empty, blank or not a string)."""

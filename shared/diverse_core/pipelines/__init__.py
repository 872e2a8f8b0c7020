"""LLM-driven retrieval pipelines built on the framework-neutral core (DIVA, ...).

Each pipeline lives in its own sub-package; this package imports none of them eagerly.
"""

from __future__ import annotations

__all__: list[str] = []

"""The offline demo behind ``diverse-rag demo``."""

from __future__ import annotations

from .run import DEMO_METHODS, run_demo

__all__ = ["run_demo", "DEMO_METHODS"]

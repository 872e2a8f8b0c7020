"""The offline demo behind ``diverse-rag demo`` and the packaged HotpotQA sample it runs on."""

from __future__ import annotations

from .run import DEMO_METHODS, run_demo
from .sample import hotpotqa_sample, sample_vectors

__all__ = ["run_demo", "DEMO_METHODS", "hotpotqa_sample", "sample_vectors"]

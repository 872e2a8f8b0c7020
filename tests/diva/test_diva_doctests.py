"""The docstring examples of the DIVA modules run as tests."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "diverse_core.pipelines.diva",
    "diverse_core.pipelines.diva.retrieval",
    "diverse_core.pipelines.diva.prompts",
    "diverse_core.pipelines.diva.parsing",
    "diverse_core.pipelines.diva.quality",
    "diverse_core.pipelines.diva.pipeline",
    "diverse_core.pipelines.diva.result",
    "diverse_core.eval.ambiguous",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0

"""Lazy imports of the optional benchmark dependencies (the ``bench`` extra)."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]

_HINT = 'install the bench extra: pip install "diverse-rag[bench]"'


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise an ImportError that names the ``bench`` extra.

    Args:
        module: dotted module name, e.g. ``"matplotlib.pyplot"``.
        purpose: what the module is needed for (used in the error message).
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        top = module.split(".")[0]
        raise ImportError(f"{top} is needed for {purpose} (import failed: {exc}); {_HINT}") from exc

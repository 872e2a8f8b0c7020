"""Module attributes imported on first use (PEP 562), for packages whose heavier parts most users
never touch."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, namespace: dict[str, Any], names: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` that import ``names`` (name -> relative
    module) on first access and then keep them in ``namespace`` (the module's ``globals()``).

    Example:
        >>> ns: dict = {}
        >>> getattr_, dir_ = lazy_exports("diverse_core", ns, {"vendi_score": ".metrics"})
        >>> getattr_("vendi_score").__name__, "vendi_score" in ns
        ('vendi_score', True)
    """

    def __getattr__(name: str) -> Any:
        if name in names:
            value = getattr(importlib.import_module(names[name], package), name)
            namespace[name] = value
            return value
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__

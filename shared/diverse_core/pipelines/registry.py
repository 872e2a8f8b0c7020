"""Pipelines by name, for the harness (``--methods NAME@...``) and anything else that names one."""

from __future__ import annotations

import importlib
from typing import Any

from ..errors import UnknownMethodError
from ..pipeline_names import BUILTIN_PIPELINES as _BUILTIN

__all__ = ["register_pipeline", "get_pipeline", "available_pipelines"]

_REGISTERED: dict[str, type[Any]] = {}


def register_pipeline(cls: type[Any], name: str | None = None) -> type[Any]:
    """Make a :class:`~diverse_core.pipelines.Pipeline` subclass available by name (its ``name``
    attribute unless ``name`` is given). Usable as a class decorator.

    Example:
        >>> from diverse_core.pipelines import Pipeline
        >>> @register_pipeline
        ... class Noop(Pipeline):
        ...     name, roles, requires_llm = "noop-doc", (), False
        ...     async def _arun(self, question, source, ctx, *, k, generate): ...
        >>> get_pipeline("noop-doc") is Noop
        True
    """
    _REGISTERED[name or cls.name] = cls
    return cls


def get_pipeline(name: str) -> type[Any]:
    """The pipeline class registered as ``name``.

    Raises:
        UnknownMethodError: naming the known pipelines.
    """
    if name not in _REGISTERED and name in _BUILTIN:
        module, attr = _BUILTIN[name].split(":")
        _REGISTERED[name] = getattr(importlib.import_module(module), attr)
    if name not in _REGISTERED:
        raise UnknownMethodError(f"unknown pipeline {name!r}; known: {available_pipelines()}")
    return _REGISTERED[name]


def available_pipelines() -> list[str]:
    """Names of the registered and built-in pipelines, sorted."""
    return sorted(set(_BUILTIN) | set(_REGISTERED))

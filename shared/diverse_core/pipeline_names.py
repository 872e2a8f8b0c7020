"""The built-in pipelines by name, as ``"module:Class"`` paths: for code that names them without
importing them (the pipeline registry; the framework faces' lazy export tables, which build each
pipeline's face names from this one list).

Example:
    >>> BUILTIN_PIPELINES["dfrag"], builtin_pipeline_classes()["vendirag"]
    ('diverse_core.pipelines.dfrag:DFRAG', 'VendiRAG')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["BUILTIN_PIPELINES", "builtin_pipeline_classes", "pipeline_faces", "face_attribute"]

#: Built-in pipelines, imported on first use: name -> "module:class".
BUILTIN_PIPELINES = {
    "dfrag": "diverse_core.pipelines.dfrag:DFRAG",
    "drrag": "diverse_core.pipelines.drrag:DRRAG",
    "diva": "diverse_core.pipelines.diva:DIVA",
    "vendirag": "diverse_core.pipelines.vendirag:VendiRAG",
}


def builtin_pipeline_classes() -> dict[str, str]:
    """The built-in pipelines' class names by pipeline name (nothing is imported)."""
    return {name: path.rpartition(":")[2] for name, path in BUILTIN_PIPELINES.items()}


def pipeline_faces(*patterns: str) -> dict[str, str]:
    """A framework face's lazy export table for the built-in pipelines: each name that
    ``patterns`` make of a pipeline (``{cls}``: its class name, ``{name}``: its name) -> the
    face's module of that pipeline (``".<name>"``).

    Example:
        >>> pipeline_faces("{cls}Retriever", "create_{name}_chain")["create_diva_chain"]
        '.diva'
    """
    classes = builtin_pipeline_classes()
    return {p.format(cls=cls, name=name): f".{name}" for name, cls in classes.items() for p in patterns}


def face_attribute(module: str, attr: str, makers: Mapping[str, Callable[[str], Any]]) -> Any:
    """A framework face module's ``__getattr__``: the face that ``makers[pattern](name)`` makes for the
    built-in pipeline ``name`` whose name by ``pattern`` is ``attr``, so every pipeline in the list has
    its faces without face code of its own.

    Raises:
        AttributeError: ``attr`` names no built-in pipeline's face.

    Example:
        >>> face_attribute("m", "DIVAThing", {"{cls}Thing": str.upper})
        'DIVA'
    """
    for name, cls in builtin_pipeline_classes().items():
        for pattern, make in makers.items():
            if attr == pattern.format(cls=cls, name=name):
                return make(name)
    raise AttributeError(f"module {module!r} has no attribute {attr!r}")

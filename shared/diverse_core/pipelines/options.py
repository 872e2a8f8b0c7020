"""A pipeline's own options, declared once in the core for both faces and the harness.

Each pipeline class lists its options in ``OPTIONS`` (a tuple of :class:`Option`): the
LangChain retriever's pydantic fields, the LlamaIndex retriever's accepted keywords and the
harness plugin's ``@key=value`` names are generated from it, so an option added there
reaches every face without touching them. The constructor keeps its explicit signature
(typed, documented); ``tests/pipelines/test_pipeline_options.py`` checks that every
keyword of it, apart from the shared call policy (:data:`POLICY_KEYWORDS`) and the per-role
models (``*_llm``), is declared with the same default.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .roles import CallPolicy

__all__ = ["Option", "POLICY_KEYWORDS", "face_options", "harness_options", "undeclared_keywords"]

#: Constructor keywords every pipeline shares (the faces and the harness set them themselves):
#: the model, ``k`` and the call policy (:class:`~diverse_core.pipelines.roles.CallPolicy`).
POLICY_KEYWORDS = frozenset({"llm", "k", *CallPolicy.__annotations__})


@dataclass(frozen=True)
class Option:
    """One constructor option of a pipeline.

    Attributes:
        name: the constructor keyword.
        default: its default (the constructor's).
        doc: one line on what it does.
        type: the type the LangChain face declares for its field (``Any``: any value; the
            pipeline's constructor validates either way).
        bounds: the accepted values in words (``">= 1"``, ``"[0, 1]"``); ``choices`` when
            the option is one of a few names.
        choices: the accepted values when there are few (``("cfs", "cis", "qdc")``).
        faces: whether the framework faces expose it (``False`` for ``fetch_k``, which the
            faces set from their own field).
        harness: whether the harness takes it as ``@name=value`` (``False`` for objects
            that a command line cannot spell, unless ``parse`` builds one).
        parse: turns the harness's text value into the option's value (default: the
            harness's ``coerce``: ``true``/``false``, ``none``, numbers, else the text).

    Example:
        >>> Option("m", 5, "hits examined per concatenated search", int, bounds=">= 1").name
        'm'
    """

    name: str
    default: Any
    doc: str
    type: Any = Any
    bounds: str = ""
    choices: tuple[Any, ...] | None = None
    faces: bool = True
    harness: bool = True
    parse: Callable[[str], Any] | None = None


def face_options(options: Sequence[Option]) -> tuple[Option, ...]:
    """The options a framework face exposes."""
    return tuple(o for o in options if o.faces)


def harness_options(options: Sequence[Option]) -> tuple[Option, ...]:
    """The options the harness takes as ``@name=value``."""
    return tuple(o for o in options if o.harness)


def undeclared_keywords(cls: type[Any]) -> dict[str, str]:
    """Where ``cls.OPTIONS`` and ``cls.__init__`` disagree: ``{name: what is wrong}`` (empty
    when they agree). Per-role models (``*_llm``) and :data:`POLICY_KEYWORDS` are left out.

    Example:
        >>> class Toy:
        ...     OPTIONS = (Option("width", 3, "how wide"),)
        ...     def __init__(self, llm=None, *, k=4, width=3, depth=1): ...
        >>> undeclared_keywords(Toy)
        {'depth': 'not declared in OPTIONS'}
    """
    declared = {o.name: o for o in getattr(cls, "OPTIONS", ())}
    params = {
        name: p
        for name, p in inspect.signature(cls.__init__).parameters.items()
        if name != "self" and name not in POLICY_KEYWORDS and not name.endswith("_llm")
        and p.kind is inspect.Parameter.KEYWORD_ONLY
    }
    problems: dict[str, str] = {}
    for name, p in params.items():
        if name not in declared:
            problems[name] = "not declared in OPTIONS"
        elif not _same_default(declared[name].default, p.default):
            problems[name] = f"default {declared[name].default!r} in OPTIONS, {p.default!r} in __init__"
    for name in declared.keys() - params.keys():
        problems[name] = "declared in OPTIONS but not a keyword of __init__"
    return problems


def _same_default(a: Any, b: Any) -> bool:
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):  # arrays and the like
        return a is b

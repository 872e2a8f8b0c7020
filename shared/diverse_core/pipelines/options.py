"""A pipeline's own options, declared once in the core for both faces and the harness.

Each pipeline class lists its options in ``OPTIONS`` (a tuple of :class:`Option`): the
LangChain retriever's pydantic fields, the LlamaIndex retriever's accepted keywords and the
harness plugin's ``@key=value`` names are generated from it, so an option added there
reaches every face without touching them. The constructor keeps its explicit signature
(typed, documented); a test checks that both declare the same defaults.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import InvalidParameterError
from .roles import CallPolicy

__all__ = ["Option", "POLICY_KEYWORDS", "check_choice", "face_options", "harness_options"]

T = TypeVar("T")

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


def check_choice(value: T, name: str, allowed: Sequence[Any]) -> T:
    """``value`` when it is one of ``allowed``.

    Raises:
        InvalidParameterError: naming ``name``, the accepted values and ``value``.

    Example:
        >>> check_choice("cfs", "mode", ("qdc", "cfs"))
        'cfs'
    """
    if not isinstance(value, Hashable) or value not in allowed:
        raise InvalidParameterError(f"{name} must be one of {list(allowed)}; got {name}={value!r}")
    return value

"""How a pipeline reads the shared ``diversity`` knob (issue 36): one :class:`PipelineDiversity`
per pipeline maps ``diversity`` in [0, 1] (0 = pure relevance, 1 = the pipeline's most diverse
setting) onto the pipeline's own trade-off option, as
:class:`~diverse_core.registry.DiversityMap` does for the selection methods. The native option
defaults to ``None`` ("not given"): it wins when both are given and must then agree
(:class:`~diverse_core.errors.ConflictingParametersError`); with neither, the pipeline keeps its
own default.

Example:
    >>> knob = PipelineDiversity("mmr_lambda", lambda d: 1.0 - d, "mmr_lambda = 1 - diversity", 0.5)
    >>> knob.resolve("DIVA", None, None), knob.resolve("DIVA", None, 0.25), knob.resolve("DIVA", 0.75, 0.25)
    (0.5, 0.75, 0.75)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ConflictingParametersError, InvalidParameterError
from ..registry import DIVERSITY
from ..validation import check_unit_interval
from .options import Option

__all__ = ["PipelineDiversity", "same_values"]


def same_values(a: Any, b: Any) -> bool:
    """Whether two option values are equal, numbers (and tuples of numbers) up to rounding.

    Example:
        >>> same_values((0.7, 0.8), (0.7000000000000001, 0.8)), same_values(0.5, 0.6)
        (True, False)
    """
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return len(a) == len(b) and all(same_values(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-12)
    return bool(a == b)


@dataclass(frozen=True)
class PipelineDiversity:
    """How one pipeline reads ``diversity``.

    Attributes:
        param: the pipeline's own option that ``diversity`` sets; ``None`` when the pipeline
            has no relevance/diversity trade-off (every value but ``None`` is then refused,
            with :attr:`reason`).
        to_native: ``diversity -> value of param``, monotone (the pipeline's docs say in which
            sense).
        formula: the mapping in words, for errors and docs (``"mmr_lambda = 1 - diversity"``).
        default: the value of ``param`` when neither it nor ``diversity`` is given (the
            pipeline's own default).
        reason: with ``param=None``, why ``diversity`` is refused.

    Example:
        >>> none = PipelineDiversity(None, reason="it has no such trade-off")
        >>> none.resolve("Toy", None, None) is None
        True
    """

    param: str | None
    to_native: Callable[[float], Any] | None = None
    formula: str = ""
    default: Any = None
    reason: str = ""

    def option(self) -> Option:
        """The ``diversity`` option of the pipeline's ``OPTIONS`` (faces and harness)."""
        if self.param is None:
            doc = f"the shared relevance/diversity knob; not taken: {self.reason}"
        else:
            doc = f"the shared relevance/diversity knob, 0 = relevance only: {self.formula}"
        return Option(DIVERSITY, None, doc, float | None, bounds="[0, 1]")

    def resolve(self, owner: str, given: Any, diversity: Any) -> Any:
        """The value of :attr:`param` to use: ``given`` (the native option, ``None`` = not
        given), else what ``diversity`` means, else :attr:`default`.

        Raises:
            InvalidParameterError: ``diversity`` outside [0, 1], or given to a pipeline that
                does not take it.
            ConflictingParametersError: both given, and they disagree.
        """
        if diversity is None:
            return self.default if given is None else given
        value = check_unit_interval(diversity, DIVERSITY)
        if self.param is None or self.to_native is None:
            raise InvalidParameterError(f"{owner} does not take diversity={diversity!r}: {self.reason}")
        mapped = self.to_native(value)
        if given is None:
            return mapped
        if same_values(given, mapped):
            return given
        raise ConflictingParametersError(
            f"{owner}: diversity={diversity!r} means {self.param}={mapped!r} ({self.formula}), "
            f"but {self.param}={given!r} was also given; pass one of them"
        )

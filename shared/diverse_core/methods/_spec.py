"""How the built-in kernels declare their parameters.

Most kernels check each parameter on its own (a range, a type), so their ``check`` is
built from one checker per name (:func:`checked`). Two families share their whole
trade-off declaration:

* MMR and gMMR: ``lambda_mult`` in [0, 1] (default 0.5), ``lambda_mult = 1 - diversity``
  (:func:`lambda_mult_method`);
* the four strategies shared with pyversity (DPP, MSD, cover, SSD): their own ``diversity``
  in [0, 1] (default 0.5) is the trade-off, read as is (:func:`diversity_method`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..registry import DIVERSITY, DiversityMap, MethodSpec, RunFn, SweepFn
from ..validation import check_unit_interval

__all__ = ["Checker", "checked", "optional", "lambda_mult_method", "diversity_method"]

#: ``checker(value, name) -> value`` (normalised), raising a typed error that names ``name``.
Checker = Callable[[Any, str], Any]


def checked(**checkers: Checker) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A :attr:`~diverse_core.registry.MethodSpec.check` that runs each named parameter's
    checker, in the order given (the other parameters pass as they are).

    Example:
        >>> from diverse_core.validation import check_positive
        >>> checked(scale=check_positive)({"scale": 2, "other": "x"})
        {'scale': 2.0, 'other': 'x'}
    """

    def check(params: dict[str, Any]) -> dict[str, Any]:
        for name, checker in checkers.items():
            params[name] = checker(params[name], name)
        return params

    return check


def optional(checker: Checker) -> Checker:
    """``checker`` for a parameter that may also be ``None`` (left as is)."""
    return lambda value, name: None if value is None else checker(value, name)


def lambda_mult_method(name: str, run: RunFn, run_sweep: SweepFn) -> MethodSpec:
    """The spec of an MMR-style method: ``lambda_mult`` in [0, 1] (default 0.5; 1 is pure
    relevance), which ``diversity`` sets as ``1 - diversity``."""
    return MethodSpec(
        name=name,
        run=run,
        defaults={"lambda_mult": 0.5},
        check=checked(lambda_mult=check_unit_interval),
        param="lambda_mult",
        diversity=DiversityMap("lambda_mult", lambda d: 1.0 - d, "lambda_mult = 1 - diversity"),
        run_sweep=run_sweep,
    )


def diversity_method(name: str, run: RunFn, run_sweep: SweepFn, **others: tuple[Any, Checker]) -> MethodSpec:
    """The spec of a method whose trade-off parameter is its own ``diversity`` in [0, 1]
    (default 0.5; 0 is pure relevance), the shared knob read as is.

    ``others``: the method's other parameters, ``name=(default, checker)``.
    """
    return MethodSpec(
        name=name,
        run=run,
        defaults={DIVERSITY: 0.5, **{key: default for key, (default, _) in others.items()}},
        check=checked(diversity=check_unit_interval, **{key: check for key, (_, check) in others.items()}),
        param=DIVERSITY,
        diversity=DiversityMap(DIVERSITY, float, "diversity (the method's own parameter)"),
        run_sweep=run_sweep,
    )

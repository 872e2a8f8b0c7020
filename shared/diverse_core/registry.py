"""Registry of selection methods: name -> :class:`MethodSpec`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .errors import ConflictingParametersError, InvalidParameterError, UnknownMethodError
from .validation import check_unit_interval

__all__ = [
    "MethodSpec",
    "DiversityMap",
    "DIVERSITY",
    "TEXT_PARAMS",
    "SOURCE_PARAMS",
    "register_method",
    "get_method",
    "available_methods",
    "with_diversity",
    "given_once",
]

IndexScores = tuple[NDArray[np.int64], NDArray[np.float64]]
#: ``(indices, scores, details)``: a run that also reports what it chose (see ``Selection.details``).
IndexScoresDetails = tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]
RunFn = Callable[..., IndexScores | IndexScoresDetails]
SweepFn = Callable[..., IndexScores]


#: The shared trade-off knob every method and face accepts: ``diversity`` in [0, 1].
DIVERSITY = "diversity"


@dataclass(frozen=True)
class DiversityMap:
    """How a method reads the shared ``diversity`` knob (0 = pure relevance, 1 = its most
    diverse setting).

    Attributes:
        param: the method's own trade-off parameter that ``diversity`` sets, or ``None``
            when the method has none (``topk``).
        to_native: ``diversity -> param value``, monotone (``None`` with ``param=None``).
        formula: the mapping in words, as the methods index shows it
            (``"lambda_mult = 1 - diversity"``).
        accepts: with ``param=None``, the ``diversity`` values the method accepts
            (``topk``: ``(0.0,)``, it is pure relevance); any other value raises.
        reason: with ``param=None``, why other values are refused (said in the error).
        constant: with ``param=None``, the method has no trade-off and every ``diversity`` in
            [0, 1] runs its one setting (``topk``: its most diverse setting is the top-k
            itself), a constant, hence monotone, map; ``accepts`` is then not used.

    Example:
        >>> gm = DiversityMap("lambda_mult", lambda d: 1.0 - d, "lambda_mult = 1 - diversity")
        >>> gm.native(0.25)
        0.75
    """

    param: str | None
    to_native: Callable[[float], float] | None = None
    formula: str = ""
    accepts: tuple[float, ...] = ()
    reason: str = ""
    constant: bool = False

    def native(self, diversity: float) -> float:
        """The value of :attr:`param` that ``diversity`` (already checked to lie in [0, 1]) means."""
        if self.to_native is None:
            raise InvalidParameterError("this method has no trade-off parameter for diversity to set")
        return float(self.to_native(diversity))


@dataclass(frozen=True)
class MethodSpec:
    """How the core runs one selection method.

    Attributes:
        name: registered name (``"gmmr"``).
        run: ``run(prep, **params) -> (indices (k,), scores (k,))``, or
            ``(indices, scores, details)`` where ``details`` (a small JSON-friendly dict) says
            what the method chose (``adaptive``: ``lambda_mult`` and ``variant``).
        defaults: every accepted parameter with its default value.
        check: ``check(params) -> params`` validates values (ranges) and returns
            them normalised; unknown names are rejected before it is called.
        param: name of the trade-off parameter that :func:`diverse_core.sweep`
            varies, or ``None`` when the method has none (``topk``).
        run_sweep: ``run_sweep(prep, values, **params) -> (indices (L, k), scores (L, k))``;
            every value of the grid computed together.
        reads_text: whether the method also reads the query text and the candidate texts
            (its ``question`` and ``texts`` parameters, filled in by the framework faces and
            the harness, never shown in the selection metadata).
        diversity: how the shared ``diversity`` knob maps to the method's own parameter
            (see :class:`DiversityMap`); ``None``: the method does not accept ``diversity``
            (unless it is its own parameter's name).
        reads_sources: whether the method also takes one source id and display name per
            candidate (its ``sources`` and ``names`` parameters, :data:`SOURCE_PARAMS`), filled in
            by the faces from the documents' metadata and by the harness from the page ids.
        guarded: whether the near-duplicate guard (:mod:`diverse_core.near_duplicates`) applies to
            the method's picks (``topk``, the plain relevance baseline, is never guarded).
    """

    name: str
    run: RunFn
    defaults: Mapping[str, Any] = field(default_factory=dict)
    check: Callable[[dict[str, Any]], dict[str, Any]] = lambda p: p
    param: str | None = None
    run_sweep: SweepFn | None = None
    reads_text: bool = False
    diversity: DiversityMap | None = None
    reads_sources: bool = False
    guarded: bool = True

    @property
    def setting_defaults(self) -> dict[str, Any]:
        """The defaults a user sets (:data:`TEXT_PARAMS` and :data:`SOURCE_PARAMS` left out for a
        method that reads them)."""
        return {k: v for k, v in self.defaults.items() if k not in self.filled_params}

    @property
    def filled_params(self) -> tuple[str, ...]:
        """The parameters the faces and the harness fill in themselves."""
        return (*(TEXT_PARAMS if self.reads_text else ()), *(SOURCE_PARAMS if self.reads_sources else ()))

    def resolve_params(self, params: Mapping[str, Any], *, face: bool = False, where: str = "") -> dict[str, Any]:
        """Fill defaults, reject unknown names and validate ranges.

        ``diversity`` (when it is not the method's own parameter's name) is mapped to the
        method's parameter by :attr:`diversity`; see :meth:`diversity_params`.
        ``diversity=None`` counts as not given. With ``face=True`` the parameters come from a user
        of a framework face, which passes :attr:`filled_params` itself: a user may not give them,
        and the result leaves them out (it is what the selection metadata shows); ``where`` is
        appended to the error messages.

        Raises:
            InvalidParameterError: an unknown name, a bad value, or (``face``) a filled parameter given.
        """
        if face:
            given = sorted(set(params) & set(self.filled_params))
            if given:
                what = "the query text and the candidate texts" if set(given) & set(TEXT_PARAMS) else (
                    "the candidates' source ids and titles (from their metadata: choose the key with source_key=)")
                raise InvalidParameterError(
                    f"method {self.name!r} reads {what}, which the face passes itself; remove {given} from "
                    f"method_params{where}"
                )
        if DIVERSITY in params and DIVERSITY not in self.defaults:
            params = self.diversity_params(params)
        elif params.get(DIVERSITY, 0.0) is None:  # the method's own ``diversity``, not given
            params = {k: v for k, v in params.items() if k != DIVERSITY}
        unknown = sorted(set(params) - set(self.defaults))
        if unknown:
            raise InvalidParameterError(
                f"unknown parameter(s) {unknown} for method {self.name!r}; "
                f"accepted: {sorted(self.defaults)}"
            )
        merged = dict(self.defaults)
        merged.update(params)
        resolved = self.check(merged)
        for name in self.filled_params if face else ():
            resolved.pop(name, None)
        return resolved

    def diversity_params(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """``params`` with ``diversity`` replaced by the method's own parameter.

        The native name wins when both are given; they must then agree.

        Raises:
            InvalidParameterError: ``diversity`` outside [0, 1], or a value the method does
                not accept (a method declaring ``accepts``).
            ConflictingParametersError: both given, and they disagree.

        Example:
            >>> get_method("gmmr").diversity_params({"diversity": 0.2})
            {'lambda_mult': 0.8}
        """
        out = dict(params)
        given = out.pop(DIVERSITY)
        if given is None:  # not given (a face's unset field)
            return out
        value = check_unit_interval(given, DIVERSITY)
        mapping = self.diversity
        if mapping is None or mapping.param is None:
            if mapping is not None and (mapping.constant or value in mapping.accepts):
                return out
            why = mapping.reason if mapping is not None else "it declares no diversity mapping"
            allowed = f" (accepted: {list(mapping.accepts)})" if mapping is not None and mapping.accepts else ""
            raise InvalidParameterError(
                f"method {self.name!r} does not take diversity={params[DIVERSITY]!r}{allowed}: {why}"
            )
        native = mapping.native(value)
        if mapping.param in out:
            given = out[mapping.param]
            if isinstance(given, (int, float)) and not isinstance(given, bool) and math.isclose(
                float(given), native, rel_tol=1e-9, abs_tol=1e-12
            ):
                return out
            raise ConflictingParametersError(
                f"method {self.name!r}: diversity={params[DIVERSITY]!r} means "
                f"{mapping.param}={native!r} ({mapping.formula}), but {mapping.param}={given!r} "
                f"was also given; pass one of them"
            )
        out[mapping.param] = native
        return out


#: The parameters of a text-reading method (:attr:`MethodSpec.reads_text`) that the faces
#: and the harness fill in from the query text and the candidates' texts.
TEXT_PARAMS: tuple[str, ...] = ("question", "texts")

#: The parameters of a method that reads sources (:attr:`MethodSpec.reads_sources`) that the faces
#: fill in from the documents' metadata (``source`` / ``ref_doc_id``, ``title``).
SOURCE_PARAMS: tuple[str, ...] = ("sources", "names")


def with_diversity(params: Mapping[str, Any] | None, diversity: object, where: str = "") -> dict[str, Any]:
    """``params`` with a face's ``diversity=`` argument added (``None``: left as is).

    The faces take ``diversity`` as an argument of its own and hand it to the method with
    its other parameters, where :meth:`MethodSpec.resolve_params` maps it.

    Raises:
        ConflictingParametersError: ``params`` already holds a different ``diversity``.

    Example:
        >>> with_diversity({"gamma": 0.5}, 0.3)
        {'gamma': 0.5, 'diversity': 0.3}
    """
    out = dict(params or {})
    if diversity is None:
        return out
    given_once(DIVERSITY, diversity, out.get(DIVERSITY), f"diversity={diversity!r}",
               f"method_params={{'diversity': {out.get(DIVERSITY)!r}}}", where)
    out[DIVERSITY] = diversity
    return out


def given_once(name: str, first: object, second: object, first_as: str, second_as: str, where: str = "") -> None:
    """Check that a setting given two ways (``first_as``, ``second_as``: how each was written) agrees;
    ``None`` on either side counts as not given. The one error of every entry that takes a setting twice.

    Raises:
        ConflictingParametersError: both given, with different values.

    Example:
        >>> given_once("k", 3, 3, "k=3", "search_kwargs={'k': 3}")
    """
    if first is None or second is None:
        return
    try:
        same = bool(first == second)
    except (TypeError, ValueError):
        same = first is second
    if not same:
        raise ConflictingParametersError(
            f"{name} given twice with different values: {first_as} and {second_as}{where}; give it once"
        )


_REGISTRY: dict[str, MethodSpec] = {}


def register_method(spec: MethodSpec, *, replace: bool = False) -> None:
    """Add a method to the registry (``replace=True`` to overwrite an existing name)."""
    if spec.name in _REGISTRY and not replace:
        raise ValueError(f"method {spec.name!r} is already registered")
    _REGISTRY[spec.name] = spec


def get_method(name: str) -> MethodSpec:
    """Look up a registered method by name."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise UnknownMethodError(
            f"unknown method {name!r}; available methods: {available_methods()}"
        )
    return _REGISTRY[name]


def available_methods() -> list[str]:
    """Names of every registered method, sorted."""
    return sorted(_REGISTRY)

"""A selection plan: a method with its parameters resolved once, then run on every query.

:func:`make_plan` is the one place where a method's parameters are checked and the shared
``diversity`` knob is mapped to the method's own parameter. :func:`diverse_core.select` and the
framework faces both run a :class:`Plan`, so a parameter reaches the method by the same path
from every entry, and a face resolves its settings once, not on every call.

Example:
    >>> import numpy as np
    >>> p = make_plan("gmmr", diversity=0.25)
    >>> p.params
    {'lambda_mult': 0.75}
    >>> p.run(np.array([1.0, 0.0]), np.array([[1.0, 0.0], [0.6, 0.8]]), 1).indices.tolist()
    [0]
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .errors import InvalidParameterError
from .near_duplicates import DEFAULT_THRESHOLD, check_threshold, guard
from .registry import MethodSpec, get_method, with_diversity
from .result import Selection
from .text import source_inputs
from .validation import PreparedInputs, prepare_inputs

__all__ = ["Plan", "make_plan", "prepared", "shown_params"]

#: The key of ``Selection.details`` / ``Sweep.details`` listing the candidates left out.
DROPPED = "dropped"
#: The key of ``Selection.details`` listing the candidates the near-duplicate guard left out.
NEAR_DUPLICATES = "near_duplicates"
#: The plan option (not a method parameter) that sets the near-duplicate guard's threshold.
DUPLICATE_THRESHOLD = "duplicate_threshold"


def prepared(
    spec: MethodSpec, query: ArrayLike, candidates: ArrayLike, k: int, relevance: ArrayLike | None,
    params: dict[str, Any], on_bad: str,
) -> tuple[PreparedInputs, dict[str, Any]]:
    """The call's inputs with bad candidates screened out per ``on_bad`` (texts too, for a method
    that reads them), and ``params`` with its per-candidate values cut to the candidates kept."""
    texts = params.get("texts") if spec.reads_text else None
    prep = prepare_inputs(query, candidates, k, relevance, texts=texts, on_bad=on_bad)
    if prep.screen is None:
        return prep, params
    return prep, prep.screen.narrowed(params, len(prep.screen.kept) + len(prep.screen.dropped))


def _settings_key(method: object, params: Mapping[str, Any]) -> tuple[Any, ...]:
    """What a plan was built from: the method and each parameter's name, type and value
    (``True == 1``, but a plan checked for 1 must not run for ``True``)."""
    return (type(method), method, *((name, type(v), v) for name, v in params.items()))


@dataclass(frozen=True)
class Plan:
    """A method and its resolved parameters, ready to run on any number of queries.

    Attributes:
        spec: the registered method.
        params: its resolved parameters (defaults filled in, ``diversity`` mapped to the
            method's own parameter); for a face's plan, without the inputs the face passes
            per call (:attr:`~diverse_core.registry.MethodSpec.filled_params`).
        key: the settings the plan was built from (see :meth:`built_from`).
        duplicate_threshold: the near-duplicate guard's cosine threshold
            (:mod:`diverse_core.near_duplicates`), ``None`` when it is off.

    Example:
        >>> p = make_plan("mmr", {"lambda_mult": 0.3}, face=True)
        >>> p.method, p.shown, p.built_from("mmr", {"lambda_mult": 0.3}), p.built_from("mmr", {})
        ('mmr', {'lambda_mult': 0.3}, True, False)
    """

    spec: MethodSpec
    params: dict[str, Any]
    key: tuple[Any, ...]
    duplicate_threshold: float | None = None

    @property
    def method(self) -> str:
        """The method's registered name."""
        return self.spec.name

    @property
    def shown(self) -> dict[str, Any]:
        """A JSON-friendly copy of :attr:`params` (:func:`shown_params`), for the selection metadata of
        returned documents."""
        return shown_params(self.params)

    def built_from(self, method: object, params: Mapping[str, Any]) -> bool:
        """Whether this plan was built from ``method`` and ``params`` as they are now (a face's
        fields may be reassigned or edited in place; it then builds a new plan)."""
        try:
            return bool(self.key == _settings_key(method, params))
        except (TypeError, ValueError):  # e.g. array values: compare by building again
            return False

    def inputs(
        self,
        question: str | None,
        texts: Sequence[str],
        sources: Sequence[object] | None = None,
        names: Sequence[object] | None = None,
    ) -> dict[str, Any]:
        """The per-call inputs the method reads besides the vectors: ``question`` and ``texts``
        for a method that reads text, and the candidates' ``sources`` and display ``names``
        (metadata values, see :func:`~diverse_core.text.source_inputs`) for one that reads
        sources; nothing for the others or without a question."""
        if question is None or not self.spec.reads_text:
            return {}
        out: dict[str, Any] = {"question": question, "texts": list(texts)}
        if self.spec.reads_sources:
            out.update(source_inputs([None] * len(out["texts"]) if sources is None else sources, names))
        return out

    def run(
        self,
        query: ArrayLike,
        candidates: ArrayLike,
        k: int,
        *,
        relevance: ArrayLike | None = None,
        inputs: Mapping[str, Any] | None = None,
        on_bad: str = "drop",
    ) -> Selection:
        """Pick ``k`` of ``candidates`` for ``query`` (see :func:`diverse_core.select`);
        ``inputs``: from :meth:`inputs`; ``on_bad``: as in :func:`diverse_core.select`."""
        params = {**self.params, **(inputs or {})}
        prep, params = prepared(self.spec, query, candidates, k, relevance, params, on_bad)
        threshold = self.duplicate_threshold
        if threshold is None or not self.spec.guarded or prep.n < 2:
            out = self.spec.run(prep, **params)
            local = np.asarray(out[0], dtype=np.int64)
            scores = np.asarray(out[1], dtype=np.float64)
            details = dict(out[2]) if len(out) == 3 else {}
        else:
            local, scores, details = guarded_run(self.spec, prep, params, threshold)
        if prep.screen is not None:
            details[DROPPED] = prep.screen.details()
            if NEAR_DUPLICATES in details:
                details[NEAR_DUPLICATES] = prep.screen.kept[details[NEAR_DUPLICATES]].tolist()
        return Selection(
            indices=local if prep.screen is None else prep.screen.kept[local],
            scores=scores,
            relevance=prep.relevance[local],
            method=self.spec.name,
            params=self.params,
            details=details,
        )


def make_plan(
    method: str,
    params: Mapping[str, Any] | None = None,
    *,
    diversity: object = None,
    face: bool = False,
    where: str = "",
) -> Plan:
    """Check ``method`` and ``params`` once: the one entry for parameters and the ``diversity`` knob.

    Args:
        method: a registered method name.
        params: the method's parameters (``diversity`` may be among them).
        diversity: the shared knob given as an argument of its own (``None``: not given); it
            must agree with a ``diversity`` in ``params``.
        face: the caller is a framework face, which passes the query text, candidate texts and
            sources itself (:meth:`Plan.inputs`): a user may not give them, and the plan leaves them
            out of its parameters.
        where: context appended to error messages (``" (per-call arguments)"``).

    ``params`` may also hold ``duplicate_threshold``, the near-duplicate guard's cosine threshold
    (:mod:`diverse_core.near_duplicates`; ``None``: off), a setting of the plan rather than of the
    method: 0.95 for a face by default, off otherwise.

    Raises:
        UnknownMethodError: ``method`` is not registered.
        ConflictingParametersError: ``diversity`` given twice with different values, or with the
            method's own parameter set to another value.
        InvalidParameterError: an unknown parameter, a value out of range, or ``params`` not a dict.
    """
    if params is None:
        params = {}
    if not isinstance(params, Mapping):
        raise InvalidParameterError(f"method_params must be a dict; got method_params={params!r}{where}")
    spec = get_method(method)
    merged = with_diversity(params, diversity, where)
    key = _settings_key(method, merged)
    threshold = check_threshold(merged.pop(DUPLICATE_THRESHOLD, DEFAULT_THRESHOLD if face else None))
    resolved = spec.resolve_params(merged, face=face, where=where)
    return Plan(spec, resolved, key, threshold)


def guarded_run(
    spec: MethodSpec, prep: PreparedInputs, params: dict[str, Any], threshold: float
) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]:
    """``spec.run`` under the near-duplicate guard (:func:`~diverse_core.near_duplicates.guard`);
    the per-candidate parameters (``texts``, ``sources``, ``names``) follow the pool."""
    per_candidate = [name for name in spec.filled_params if name != "question"]
    last: dict[str, Any] = {}

    def run_on(pool: NDArray[np.int64]) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        sub, sub_params = prep, params
        if pool.shape[0] < prep.n:
            sub = PreparedInputs(prep.query, prep.vectors[pool], prep.inv_norms[pool],
                                 prep.relevance[pool], min(prep.k, int(pool.shape[0])))
            sub_params = dict(params)
            for name in per_candidate:
                values = params.get(name)
                if values is not None and len(values) == prep.n:
                    sub_params[name] = [values[i] for i in pool.tolist()]
        out = spec.run(sub, **sub_params)
        last.clear()
        if len(out) == 3:
            last.update(out[2])
        return pool[np.asarray(out[0], dtype=np.int64)], np.asarray(out[1], dtype=np.float64)

    texts = params.get("texts")
    indices, scores, dropped = guard(
        run_on, prep.vectors, prep.relevance, prep.k, threshold,
        texts if isinstance(texts, (list, tuple)) else None,
    )
    details = dict(last)
    if dropped.size:
        details[NEAR_DUPLICATES] = dropped.tolist()
    return indices, scores, details


def _json_value(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(value):
        module = getattr(value, "__module__", None)
        name = getattr(value, "__qualname__", None) or type(value).__qualname__
        return f"{module}.{name}" if module else name
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value


def shown_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``params`` that ``json.dumps`` accepts (numpy scalars as numbers, callables as their
    qualified name, anything else unserialisable as its ``repr``): what a document's metadata shows.

    Example:
        >>> shown_params({"lambda_mult": np.float64(0.5), "scorer": len})
        {'lambda_mult': 0.5, 'scorer': 'builtins.len'}
    """
    return {str(name): _json_value(value) for name, value in params.items()}

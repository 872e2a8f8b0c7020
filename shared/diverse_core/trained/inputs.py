"""Input handling shared by the two trained selectors, ``adaptive`` and ``learned``.

Both read the same optional inputs (the question and the candidate texts, a ``variant``
name, the ``diversity`` knob) and train from the same per-question lists; the checks and
the choice of variant live here once.

Example:
    >>> pick_variant(("embedding", "text"), has_text=True, variant="auto")
    'text'
    >>> check_choice_params({"variant": "auto", "diversity": None})
    {'variant': 'auto'}
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..errors import DimensionMismatchError, InvalidParameterError
from ..validation import PreparedInputs, check_unit_interval

__all__ = [
    "TrainedMethod",
    "VARIANTS",
    "check_choice_params",
    "check_per_question",
    "pick_variant",
    "source_lists",
    "text_inputs",
]

#: The variants a trained selector may hold, the text-aware one first.
VARIANTS = ("text", "embedding")


def text_inputs(question: str | None, texts: Sequence[str] | None, n: int) -> tuple[str, Sequence[str]] | None:
    """``(question, texts)`` when both are given (checked: one text per candidate), else None."""
    if question is None and texts is None:
        return None
    if question is None or texts is None:
        missing = "question" if question is None else "texts"
        raise InvalidParameterError(f"the text-aware selector needs both question and texts; {missing} is None")
    if not isinstance(question, str):
        raise InvalidParameterError(f"question must be a string; got question={question!r}")
    # one type lookup per text (the common case: all of them plain str), else the isinstance check per text
    if isinstance(texts, str) or (set(map(type, texts)) != {str} and not all(isinstance(t, str) for t in texts)):
        raise InvalidParameterError("texts must be a sequence of strings, one per candidate")
    if len(texts) != n:
        raise DimensionMismatchError(f"texts must give one text per candidate; got {len(texts)} texts for {n} candidates")
    return question, texts


def source_lists(sources: Sequence[object] | None, names: Sequence[object] | None,
                 n: int) -> tuple[list[object] | None, list[str | None] | None]:
    """``sources`` and ``names`` as lists, checked: one entry per candidate, hashable ids, names strings or None.

    Raises:
        DimensionMismatchError: another length. InvalidParameterError: a string instead of a sequence,
            an unhashable id, a name that is not a string.
    """
    out: list[list[Any] | None] = []
    for what, values in (("sources", sources), ("names", names)):
        if values is not None and isinstance(values, (str, bytes)):
            raise InvalidParameterError(f"{what} must be a sequence with one entry per candidate, not a string; "
                                        f"got {what}={values[:40]!r}")
        got = None if values is None else list(values)
        if got is not None and len(got) != n:
            raise DimensionMismatchError(f"{what} must give one entry per candidate; got {len(got)} for {n} candidates")
        out.append(got)
    src, shown = out
    try:
        dict.fromkeys(src or ())
    except TypeError as exc:
        raise InvalidParameterError(f"sources must hold hashable ids (str, int, ...) or None; {exc}") from exc
    if shown is not None and not all(x is None or isinstance(x, str) for x in shown):
        raise InvalidParameterError("names must hold strings (or None), one per candidate")
    return src, shown


def pick_variant(available: Collection[str], has_text: bool, variant: str) -> str:
    """The variant to run: ``"text"`` when texts are given and the model has it (``variant="auto"``).

    Raises:
        InvalidParameterError: an unknown ``variant``, or ``"text"`` without texts or without a text model.
    """
    if variant not in ("auto", *VARIANTS):
        raise InvalidParameterError(f"variant must be 'auto', 'text' or 'embedding'; got variant={variant!r}")
    if variant == "embedding":
        return "embedding"
    if variant == "text" and (not has_text or "text" not in available):
        why = "this model has no text variant" if "text" not in available else "question and texts are needed"
        raise InvalidParameterError(f"variant='text' cannot be used: {why}")
    return "text" if has_text and "text" in available else "embedding"


def check_choice_params(params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with ``variant`` checked and ``diversity`` a number in [0, 1] (left out when ``None``:
    the trained choice, so the resolved parameters read as before the knob existed)."""
    if params["variant"] not in ("auto", *VARIANTS):
        raise InvalidParameterError(f"variant must be 'auto', 'text' or 'embedding'; got variant={params['variant']!r}")
    if params.get("diversity") is None:
        params.pop("diversity", None)
    else:
        params["diversity"] = check_unit_interval(params["diversity"], "diversity")
    return params


def check_per_question(lists: Mapping[str, Sequence[Any] | None]) -> None:
    """Check the per-question training lists: every given one has one entry per question, and
    ``questions`` and ``texts`` come together.

    Raises:
        DimensionMismatchError: lists of different lengths. InvalidParameterError: only one of
            ``questions`` and ``texts``.
    """
    given = {name: x for name, x in lists.items() if x is not None}
    if len({len(x) for x in given.values()}) != 1:
        raise DimensionMismatchError(
            f"{', '.join(given)} must have one entry per question; got lengths {[len(x) for x in given.values()]}"
        )
    if (lists.get("questions") is None) != (lists.get("texts") is None):
        raise InvalidParameterError("give both questions and texts (for the text variant) or neither")


@dataclass(frozen=True)
class TrainedMethod:
    """The ``run``, ``run_sweep`` and ``check`` of a trained selector's :class:`~diverse_core.registry.MethodSpec`.

    Args:
        load: ``load(model) -> selector`` (the ``model`` parameter: None, a shipped name, a path or a selector).
        selector_type: the selector class a user may pass as ``model``.
        shipped: the names of the shipped models ``model`` may give.
        accepted: what ``model`` may be, in words (said in the error).
        details: ``details(choice, diversity) -> dict`` for ``Selection.details``.
        default: ``default(params) -> name``: the shipped model to run when ``model`` is None, chosen
            from the call's inputs, and said in the details as ``model`` (``None``: ``load(None)``).
    """

    load: Callable[[Any], Any]
    selector_type: type
    shipped: Collection[str]
    accepted: str
    details: Callable[[Any, float | None], dict[str, Any]]
    default: Callable[[Mapping[str, Any]], str] | None = None

    def run(self, prep: PreparedInputs, *, model: Any = None, diversity: float | None = None,
            **params: Any) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[str, Any]]:
        """The selection of one query (``params``: variant, question, texts, and sources/names if read)."""
        given = {} if diversity is None else {"diversity": diversity}  # the native call unchanged without it
        model = self._model(model, params)
        choice = self.load(model).choose_prepared(prep, **params, **given)
        details = self.details(choice, diversity)
        if self.default is not None and isinstance(model, (str, Path)):
            details["model"] = str(model)
        return choice.indices, choice.scores, details

    def sweep(self, prep: PreparedInputs, values: NDArray[np.float64], *, model: Any = None,
              **params: Any) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Every value of the ``diversity`` grid (the query's own work done once)."""
        choices = self.load(self._model(model, params)).sweep_prepared(prep, [float(v) for v in values], **params)
        return np.stack([c.indices for c in choices]), np.stack([c.scores for c in choices])

    def _model(self, model: Any, params: Mapping[str, Any]) -> Any:
        return self.default(params) if model is None and self.default is not None else model

    def check(self, params: dict[str, Any]) -> dict[str, Any]:
        """``model`` checked (a shipped name, an existing file or a selector), then :func:`check_choice_params`."""
        model = params["model"]
        if model is not None and not isinstance(model, (str, Path, self.selector_type)):
            raise InvalidParameterError(f"model must be {self.accepted}; got model={model!r}")
        if isinstance(model, (str, Path)) and str(model) not in self.shipped and not Path(model).is_file():
            shipped = f"a shipped model ({', '.join(map(repr, self.shipped))}) or " if self.shipped else ""
            raise InvalidParameterError(f"model must be {shipped}an existing model file; got model={str(model)!r} "
                                        "(no such file)")
        return check_choice_params(params)

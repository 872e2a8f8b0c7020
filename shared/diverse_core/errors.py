"""Typed errors raised by the core.

Every bad-input error is a :class:`ValueError` subclass so callers that already guard
with ``except ValueError`` keep working, and every message names the offending
parameter and its value. A store that fails to answer is a :class:`StoreError`
(a :class:`RuntimeError`).
"""

from __future__ import annotations

__all__ = [
    "DiverseRAGError",
    "InvalidParameterError",
    "EmptyCandidatesError",
    "DimensionMismatchError",
    "NonNumericInputError",
    "NonFiniteInputError",
    "ZeroVectorError",
    "UnknownMethodError",
    "ConflictingParametersError",
    "ModelFeatureMismatchError",
    "InvalidTextError",
    "StoreError",
    "StoreUnavailableError",
]


class DiverseRAGError(ValueError):
    """Base class of every error raised on bad input to ``diverse_core``."""


class InvalidParameterError(DiverseRAGError):
    """A parameter is outside its allowed range (e.g. ``lambda_mult=1.5``)."""


class EmptyCandidatesError(DiverseRAGError):
    """The candidate pool is empty."""


class DimensionMismatchError(DiverseRAGError):
    """Query, candidates or relevance scores have incompatible shapes."""


class NonNumericInputError(DimensionMismatchError):
    """An input array is not made of real numbers (strings, complex numbers, objects).

    A :class:`DimensionMismatchError` subclass: such inputs were reported as one
    before this class existed, so callers catching that keep working.
    """


class NonFiniteInputError(DiverseRAGError):
    """An input array contains NaN or infinity."""


class ZeroVectorError(DiverseRAGError):
    """A query or candidate vector has zero norm, so its cosine is undefined."""


class UnknownMethodError(DiverseRAGError):
    """The method name is not registered."""


class ConflictingParametersError(InvalidParameterError):
    """Two parameters that set the same thing disagree (e.g. ``diversity=0.2`` with
    ``lambda_mult=0.5`` for gMMR, where ``diversity=0.2`` means ``lambda_mult=0.8``)."""


class ModelFeatureMismatchError(InvalidParameterError):
    """A saved model was trained on other features than this version of the code computes (retrain it)."""


class InvalidTextError(DiverseRAGError):
    """A text cannot be used as given: not a string, or not valid Unicode (a lone surrogate such
    as ``"\\ud800"``, which has no UTF-8 encoding). The message names the record."""


class StoreError(RuntimeError):
    """A vector store (e.g. a Postgres database) failed to answer a query.

    Not a :class:`ValueError`: the input was fine, the store was not (like
    :class:`~diverse_core.llm.errors.LLMError` for a model). The driver's own error is the
    ``__cause__``.
    """


class StoreUnavailableError(StoreError, ConnectionError):
    """The store could not be reached or dropped the connection (the database is down or restarting);
    a later query may succeed once it is back."""

"""Typed errors raised by the core.

Every error is a :class:`ValueError` subclass so callers that already guard
with ``except ValueError`` keep working, and every message names the offending
parameter and its value.
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

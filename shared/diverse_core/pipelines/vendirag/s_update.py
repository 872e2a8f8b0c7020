"""How Vendi-RAG moves its diversity weight ``s`` after a judged iteration: small pure functions.

Every rule has the signature ``rule(s, quality, best) -> s_next`` where ``s`` is the weight the
iteration used, ``quality`` its judge quality ``Q_i`` in ``[0, 1]`` and ``best`` the highest
quality of any judged iteration so far, this one included.

* ``"paper"`` - ``s_{i+1} = 1 - Q_i``: Eq. 3 of Rezaei & Dieng 2025
  (``s_t = 1 - Q_{t-1} / max(Q)``) read with ``max(Q)`` the largest possible quality, 1. Low
  quality -> more diversity, high quality -> more relevance, and the step depends on this
  iteration's answer alone.
* ``"relative"`` - the rule of the ``vendirag`` package (0.2.0): a target
  ``clip(1 - Q_i / max(best, 0.01), 0, 1)`` (relative to the best quality so far), smoothed by
  an exponential moving average ``s_{i+1} = 0.3 s_i + 0.7 target``.
* ``"fixed"`` - ``s`` never moves.

Example:
    >>> round(next_s("paper", 0.8, 0.5, 0.5), 6)
    0.5
    >>> round(next_s("relative", 0.8, 0.4, 0.8), 6)  # target 0.5
    0.59
    >>> next_s("fixed", 0.8, 0.1, 0.9)
    0.8
"""

from __future__ import annotations

from collections.abc import Callable

from ..options import check_choice

__all__ = [
    "S_UPDATES",
    "RELATIVE_BETA",
    "RELATIVE_EPSILON",
    "paper_rule",
    "relative_rule",
    "fixed_rule",
    "next_s",
]

#: Momentum of the ``"relative"`` rule's moving average (the ``vendirag`` package's default).
RELATIVE_BETA = 0.3
#: Floor on the best quality in the ``"relative"`` rule's denominator.
RELATIVE_EPSILON = 0.01

SRule = Callable[[float, float, float], float]


def _unit(x: float) -> float:
    return min(1.0, max(0.0, float(x)))


def paper_rule(s: float, quality: float, best: float) -> float:
    """``1 - Q_i`` (clipped to [0, 1]); ``s`` and ``best`` are not used."""
    return _unit(1.0 - quality)


def relative_rule(
    s: float, quality: float, best: float, *, beta: float = RELATIVE_BETA, epsilon: float = RELATIVE_EPSILON
) -> float:
    """``beta * s + (1 - beta) * clip(1 - Q_i / max(best, epsilon), 0, 1)``."""
    target = _unit(1.0 - quality / max(best, epsilon))
    return beta * s + (1.0 - beta) * target


def fixed_rule(s: float, quality: float, best: float) -> float:
    """``s`` unchanged."""
    return s


#: The rules by name (the ``s_update`` option).
S_UPDATES: dict[str, SRule] = {"paper": paper_rule, "relative": relative_rule, "fixed": fixed_rule}


def next_s(rule: str, s: float, quality: float, best: float) -> float:
    """The weight for the next iteration under ``rule`` (see the module docstring)."""
    return float(S_UPDATES[check_choice(rule, "s_update", tuple(S_UPDATES))](s, quality, best))

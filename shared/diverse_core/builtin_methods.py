"""The twelve built-in selection methods, registered here and nowhere else.

The ten kernels live one module each in :mod:`diverse_core.methods`; the two trained selectors,
``adaptive`` (:mod:`diverse_core.adaptive`) and ``learned`` (:mod:`diverse_core.learned`), live in
packages of their own because they also hold their training code. This module sits above both,
so the kernels never import the trained selectors; ``import diverse_core`` imports it. A new
built-in method is one module with a ``SPEC`` (:class:`~diverse_core.registry.MethodSpec`) and
one entry in :data:`BUILTIN`.

Example:
    >>> from diverse_core.registry import get_method
    >>> [m.SPEC.name for m in BUILTIN][:3], get_method("gmmr") is BUILTIN[2].SPEC
    (['topk', 'mmr', 'gmmr'], True)
"""

from __future__ import annotations

from types import ModuleType

from . import adaptive, learned
from .methods import cover, dartboard, dpp, gist, gmmr, mmr, msd, ssd, topk, vendi
from .registry import register_method

__all__ = ["BUILTIN"]

#: The modules whose ``SPEC`` is a built-in method, in registration order.
BUILTIN: tuple[ModuleType, ...] = (topk, mmr, gmmr, dartboard, vendi, dpp, msd, cover, ssd, gist, adaptive, learned)

for _module in BUILTIN:
    register_method(_module.SPEC, replace=True)

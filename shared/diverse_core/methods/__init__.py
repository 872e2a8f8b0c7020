"""Every built-in selection method, registered here and nowhere else.

Importing this package (``import diverse_core`` does) registers the twelve built-in methods:
the ten kernels, one module each in this package, and the two trained selectors,
``adaptive`` (:mod:`diverse_core.adaptive`) and ``learned`` (:mod:`diverse_core.learned`),
which live in packages of their own because they also hold their training code. A new
method is one module with a ``SPEC`` (:class:`~diverse_core.registry.MethodSpec`) and one
entry in :data:`BUILTIN` below.
"""

from __future__ import annotations

from types import ModuleType

from .. import adaptive, learned
from ..registry import register_method
from . import cover, dartboard, dpp, gist, gmmr, mmr, msd, ssd, topk, vendi

__all__ = ["topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist", "BUILTIN"]

#: The modules whose ``SPEC`` is a built-in method, in registration order.
BUILTIN: tuple[ModuleType, ...] = (topk, mmr, gmmr, dartboard, vendi, dpp, msd, cover, ssd, gist, adaptive, learned)

for _module in BUILTIN:
    register_method(_module.SPEC, replace=True)

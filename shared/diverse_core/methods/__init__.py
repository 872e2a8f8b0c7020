"""The ten plain selection kernels, one module each.

Each module holds one method's run (and batched sweep) and its ``SPEC``
(:class:`~diverse_core.registry.MethodSpec`). The kernels import nothing of the core but the
errors, the input checks and the method contract (:mod:`diverse_core.registry`);
:mod:`diverse_core.builtin_methods` registers them, with the two trained selectors.
"""

from __future__ import annotations

from . import cover, dartboard, dpp, gist, gmmr, mmr, msd, ssd, topk, vendi

__all__ = ["topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist"]

"""Selection methods, one module each; importing this package registers them."""

from __future__ import annotations

from ..registry import register_method
from . import dartboard, gmmr, mmr, topk, vendi

__all__ = ["topk", "mmr", "gmmr", "dartboard", "vendi"]

for _module in (topk, mmr, gmmr, dartboard, vendi):
    register_method(_module.SPEC, replace=True)

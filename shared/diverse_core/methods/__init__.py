"""Selection methods, one module each; importing this package registers them."""

from __future__ import annotations

from ..registry import register_method
from . import cover, dartboard, dpp, gist, gmmr, mmr, msd, ssd, topk, vendi

__all__ = ["topk", "mmr", "gmmr", "dartboard", "vendi", "dpp", "msd", "cover", "ssd", "gist"]

for _module in (topk, mmr, gmmr, dartboard, vendi, dpp, msd, cover, ssd, gist):
    register_method(_module.SPEC, replace=True)

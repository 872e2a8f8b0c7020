"""``prepare_inputs`` on small pools: every bad input raises its typed error, and extreme but valid
rows still work."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core.errors import (
    DimensionMismatchError,
    NonFiniteInputError,
    NonNumericInputError,
    ZeroVectorError,
)


def _bad_inputs() -> list[tuple[str, object, object, type[Exception]]]:
    rng = np.random.default_rng(0)
    q, c = rng.normal(size=8), rng.normal(size=(6, 8))
    nan_c, inf_c, zero_c = c.copy(), c.copy(), c.copy()
    nan_c[3, 2], inf_c[1, 0], zero_c[4] = np.nan, np.inf, 0.0
    nan_q = q.copy()
    nan_q[0] = np.nan
    return [
        ("nan candidate", q, nan_c, NonFiniteInputError),
        ("inf candidate", q, inf_c, NonFiniteInputError),
        ("zero candidate", q, zero_c, ZeroVectorError),
        ("nan query", nan_q, c, NonFiniteInputError),
        ("zero query", np.zeros(8), c, ZeroVectorError),
        ("float32 inf", q.astype(np.float32), inf_c.astype(np.float32), NonFiniteInputError),
        ("dimension", q[:5], c, DimensionMismatchError),
        ("query 2-D", c, c, DimensionMismatchError),
        ("strings", q, c.astype(str), NonNumericInputError),
    ]


@pytest.mark.parametrize(("label", "q", "c", "error"), _bad_inputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_bad_inputs_raise_the_typed_error(
    label: str, q: object, c: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        dc.select("mmr", q, c, 3, on_bad="raise")  # the default drops bad candidates (test_bad_candidates)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_but_valid_rows_still_work(dtype: type) -> None:
    info = np.finfo(dtype)
    rng = np.random.default_rng(1)
    q = rng.normal(size=8).astype(dtype)
    for scale in (float(info.max) / 16, float(info.tiny) * 64):
        c = (rng.normal(size=(5, 8)) * scale).astype(dtype)
        sel = dc.select("mmr", q, c, 3)
        assert np.all(np.isfinite(sel.scores)) and len(set(sel.indices.tolist())) == 3

"""The small-pool fast path of ``prepare_inputs`` (issue 35 item 2): the same prepared inputs as
the full checks, bit for bit, and every bad input still reaches the full checks' typed errors."""

from __future__ import annotations

import diverse_core as dc
import numpy as np
import pytest
from diverse_core import validation
from diverse_core.errors import (
    DimensionMismatchError,
    NonFiniteInputError,
    NonNumericInputError,
    ZeroVectorError,
)


def _full(monkeypatch: pytest.MonkeyPatch, *args: object) -> validation.PreparedInputs:
    with monkeypatch.context() as m:
        m.setattr(validation, "_prepare_fast", lambda *a: None)
        return validation.prepare_inputs(*args)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [1, 7, 50, 300])
def test_fast_path_equals_the_full_checks_bit_for_bit(
    monkeypatch: pytest.MonkeyPatch, dtype: type, n: int
) -> None:
    rng = np.random.default_rng(n)
    for scale in (1e-3, 1.0, 1e3):
        q = (rng.normal(size=24) * scale).astype(dtype)
        c = (rng.normal(size=(n, 24)) * scale).astype(dtype)
        fast = validation._prepare_fast(q, c, 5)
        assert fast is not None
        full = _full(monkeypatch, q, c, 5)
        for name in ("query", "vectors", "inv_norms", "relevance"):
            a, b = getattr(fast, name), getattr(full, name)
            assert a.dtype == b.dtype and np.array_equal(a, b), name
        assert fast.k == full.k and fast.tie_rtol == full.tie_rtol
        assert not fast.vectors.flags.writeable and np.shares_memory(fast.vectors, c)
        for method in ("mmr", "gmmr", "msd", "dpp"):
            got = dc.select(method, q, c, 5).indices.tolist()
            with monkeypatch.context() as m:
                m.setattr(validation, "_prepare_fast", lambda *a: None)
                assert dc.select(method, q, c, 5).indices.tolist() == got


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
def test_bad_inputs_leave_the_fast_path_and_raise_the_typed_error(
    label: str, q: object, c: object, error: type[Exception]
) -> None:
    with pytest.raises(error):
        dc.select("mmr", q, c, 3, on_bad="raise")  # the default drops bad candidates (test_bad_candidates)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_extreme_but_valid_rows_take_the_full_path_and_still_work(dtype: type) -> None:
    info = np.finfo(dtype)
    rng = np.random.default_rng(1)
    q = rng.normal(size=8).astype(dtype)
    for scale in (float(info.max) / 16, float(info.tiny) * 64):
        c = (rng.normal(size=(5, 8)) * scale).astype(dtype)
        assert validation._prepare_fast(q, c, 3) is None  # norms outside the safe range
        sel = dc.select("mmr", q, c, 3)
        assert np.all(np.isfinite(sel.scores)) and len(set(sel.indices.tolist())) == 3

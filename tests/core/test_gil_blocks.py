"""``row_blocks``: whole-row blocks of at most KEEP elements for small arrays, one block otherwise;
``work_blocks``: those blocks only while another Python thread is alive."""

from __future__ import annotations

import pytest
from diverse_core.gil_blocks import KEEP, SMALL_WORK, row_blocks, work_blocks
from hypothesis import given
from hypothesis import strategies as st


def test_known_blocks() -> None:
    assert row_blocks(50, 50) == tuple(slice(a, a + 10) for a in range(0, 50, 10))
    assert row_blocks(64, 64) == (*(slice(a, a + 7) for a in range(0, 63, 7)), slice(63, 64))
    assert row_blocks(10, 50) == (slice(0, 10),)  # 500 elements: numpy keeps the GIL already
    assert row_blocks(65, 65) == (slice(0, 65),)  # more than SMALL_WORK: one call pays for its release
    assert row_blocks(2, 600) == (slice(0, 2),)  # a row longer than KEEP cannot be split by rows
    assert row_blocks(0, 50) == (slice(0, 0),)


@given(st.integers(0, 200), st.integers(0, 700))
def test_blocks_cover_every_row_once(rows: int, row_len: int) -> None:
    blocks = row_blocks(rows, row_len)
    covered = [i for b in blocks for i in range(rows)[b]]
    assert covered == list(range(rows))  # in order, each row once
    total = rows * row_len
    if KEEP < total <= SMALL_WORK and row_len <= KEEP:
        assert all(len(range(rows)[b]) * row_len <= KEEP for b in blocks)
        assert len(blocks) == -(-rows // (KEEP // row_len))
    else:
        assert blocks == (slice(0, rows),)


@pytest.mark.usefixtures("another_thread")
def test_work_blocks_split_while_another_thread_is_alive() -> None:
    assert work_blocks(50, 50) == row_blocks(50, 50) and len(work_blocks(50, 50)) == 5
    assert work_blocks(65, 65) == (slice(0, 65),)


@pytest.mark.usefixtures("alone")
def test_work_blocks_keep_one_block_in_a_process_with_one_thread() -> None:
    assert work_blocks(50, 50) == (slice(0, 50),)
    assert work_blocks(0, 50) == (slice(0, 0),)


@pytest.mark.usefixtures("another_thread")
def test_no_blocks_on_a_build_running_without_the_gil(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from diverse_core.gil_blocks import other_threads

    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: False, raising=False)
    assert not other_threads() and work_blocks(50, 50) == (slice(0, 50),)
    monkeypatch.setattr(sys, "_is_gil_enabled", lambda: True, raising=False)
    assert other_threads() and len(work_blocks(50, 50)) == 5

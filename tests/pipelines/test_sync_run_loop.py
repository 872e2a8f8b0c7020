"""A synchronous run's own event loop: ``on_sync_run_loop`` tells it apart, and ``off_loop`` runs
work inline there (no thread hop) but in a worker thread on any other loop."""

from __future__ import annotations

import asyncio
import threading

import pytest
from diverse_core.pipelines import InMemorySource
from diverse_core.pipelines.base import off_loop, on_sync_run_loop, run_sync
from diverse_core.pipelines.drrag import DRRAG


async def _where() -> tuple[bool, int, int]:
    """(on a sync run's loop, the loop's thread, the thread off_loop ran the work on)."""
    return on_sync_run_loop(), threading.get_ident(), await off_loop(threading.get_ident)


def test_sync_run_works_inline_on_its_own_loop() -> None:
    private, loop_thread, work_thread = run_sync(_where())
    assert private and work_thread == loop_thread


def test_other_loops_hop_to_a_worker_thread() -> None:
    private, loop_thread, work_thread = asyncio.run(_where())
    assert not private and work_thread != loop_thread
    assert not on_sync_run_loop()  # no loop running at all


def test_run_sync_inside_a_running_loop_marks_its_helper_loop_only() -> None:
    async def outer() -> tuple[bool, tuple[bool, int, int]]:
        return on_sync_run_loop(), run_sync(_where())  # a fresh loop in a helper thread

    outside, (private, loop_thread, work_thread) = asyncio.run(outer())
    assert not outside and private and work_thread == loop_thread


def test_worker_threads_of_a_sync_run_are_not_on_its_loop() -> None:
    async def probe() -> bool:
        return await asyncio.to_thread(on_sync_run_loop)

    assert run_sync(probe()) is False


def test_off_loop_passes_arguments_and_errors() -> None:
    assert run_sync(off_loop(divmod, 7, 2)) == (3, 1)
    assert asyncio.run(off_loop(divmod, 7, 2)) == (3, 1)
    with pytest.raises(ZeroDivisionError):
        run_sync(off_loop(divmod, 1, 0))


def test_drrag_selects_on_the_callers_thread_in_a_sync_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """DR-RAG's selection (CPU work) runs on a sync run's own thread, in a thread of its own
    under ``arun`` on a caller's loop; the result is the same either way."""
    threads: list[int] = []
    select = DRRAG._select

    def spy(self: DRRAG, *args: object) -> object:
        threads.append(threading.get_ident())
        return select(self, *args)

    monkeypatch.setattr(DRRAG, "_select", spy)
    src = InMemorySource(["Ann wrote Tales.", "Tales is a book.", "Bo lives in Oslo.", "Ann is Bo's aunt."],
                         embedder=lambda ts: [[t.count("Ann"), t.count("Tales"), t.count("Bo"), 1.0] for t in ts])
    pipe = DRRAG(k=2, mode="qdc")
    sync = pipe.run("Who wrote Tales?", src, generate=False)
    assert threads == [threading.get_ident()]
    async_ = asyncio.run(pipe.arun("Who wrote Tales?", src, generate=False))
    assert len(threads) == 2 and threads[1] != threading.get_ident()
    assert [d.id for d in async_.documents] == [d.id for d in sync.documents]

"""Count the calling thread's GIL releases, in all and per Python line (Linux, root, a uprobe).

numpy, BLAS and socket reads let go of the GIL; under many concurrent callers each release can
hand the interpreter to another thread (a context switch). This module reads how often the
calling thread called ``PyEval_SaveThread``, through a uprobe that must exist first::

    perf probe -x $(python -c 'import sysconfig,os;print(os.path.join(sysconfig.get_config_var("LIBDIR"),
        sysconfig.get_config_var("LDLIBRARY")))') PyEval_SaveThread

(remove it afterwards with ``perf probe -d 'probe_libpython3:*'``). Used by
``benchmarks/learned_contention.py gil`` and ``benchmarks/face_gil_releases.py``.

The library splits small arrays' work into GIL-keeping pieces only while another Python thread
is alive (``diverse_core.gil_blocks.work_blocks``), as in a service; :func:`parked_thread` keeps one
alive while a single-threaded script counts or times.
"""

from __future__ import annotations

import collections
import contextlib
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["PROBE_ID", "by_line", "parked_thread", "release_counter"]

#: The uprobe's tracepoint id file (tracefs).
PROBE_ID = "/sys/kernel/tracing/events/probe_libpython3/PyEval_SaveThread/id"


@contextlib.contextmanager
def parked_thread() -> Iterator[threading.Thread]:
    """A second Python thread that waits (holding nothing) until the block ends."""
    stop = threading.Event()
    parked = threading.Thread(target=stop.wait, name="parked", daemon=True)
    parked.start()
    try:
        yield parked
    finally:
        stop.set()
        parked.join(5)


def release_counter() -> Callable[[], int]:  # pragma: no cover (needs root and the uprobe)
    """A function that returns how many times this thread has released the GIL since the call.

    Raises:
        FileNotFoundError: the uprobe does not exist.
        OSError: ``perf_event_open`` refused (not root, or perf events disabled).
    """
    import ctypes
    import struct

    libc = ctypes.CDLL(None, use_errno=True)
    with open(PROBE_ID) as f:
        event = int(f.read())
    attr = bytearray(128)
    struct.pack_into("IIQ", attr, 0, 2, 128, event)  # PERF_TYPE_TRACEPOINT, size, config
    fd = libc.syscall(298, ctypes.c_char_p(bytes(attr)), 0, -1, -1, 0)  # x86-64 perf_event_open: this thread
    if fd < 0:
        raise OSError(ctypes.get_errno(), "perf_event_open")
    keep_gil = ctypes.PyDLL(None)  # a PyDLL call keeps the GIL (a CDLL call would count as a release)
    buf = ctypes.c_uint64()

    def count() -> int:
        keep_gil.read(fd, ctypes.byref(buf), 8)
        return buf.value

    return count


def by_line(call: Callable[[int], object], n: int, count: Callable[[], int], root: str
            ) -> tuple[float, list[tuple[float, str]]]:  # pragma: no cover (needs root and the uprobe)
    """Run ``call(i)`` for ``i < n`` under a line tracer; releases per call in all and per Python line.

    Returns:
        The traced releases per call, and ``(releases per call, "file:line (function)")`` for every line that
        released, file names relative to ``root`` or ``site-packages``, sorted by name.
    """
    hits: collections.Counter[tuple[str, int, str]] = collections.Counter()
    last: list[Any] = [None, 0]

    def tracer(frame: Any, event: str, arg: object) -> Any:
        c = count()
        if last[0] is not None and c != last[1]:
            hits[last[0]] += c - last[1]
        last[0] = (frame.f_code.co_filename.replace(root, "").split("site-packages/")[-1], frame.f_lineno,
                   frame.f_code.co_name)
        last[1] = count()
        return tracer

    c0 = count()
    sys.settrace(tracer)
    try:
        for i in range(n):
            call(i)
    finally:
        sys.settrace(None)
    total = (count() - c0) / n
    return total, [(c / n, f"{f}:{line} ({name})") for (f, line, name), c in sorted(hits.items())]

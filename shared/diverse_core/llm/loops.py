"""Which event loop a model's asynchronous client may serve: its pooled connections belong to
the loop that opened them, and fail on another ("Event loop is closed"). A synchronous
``pipeline.run()`` marks its own short-lived loop (:func:`private_loop`), which no model's async
client may serve; otherwise a model's async client serves the first loop that calls it through
this library (:func:`serves_running_loop`). Everything else uses the model's synchronous API.

Example:
    >>> import asyncio
    >>> class Model: ...
    >>> model = Model()
    >>> async def ask():
    ...     return serves_running_loop(model)
    >>> asyncio.run(ask()), asyncio.run(ask())  # bound to the first loop, not the second
    (True, False)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import weakref
from collections.abc import Iterator

__all__ = ["private_loop", "on_private_loop", "running_loop", "serves_running_loop"]

#: The loop that one synchronous run made for itself (seen by that run's tasks).
_PRIVATE: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "diverse_core_private_loop", default=None
)

_LOCK = threading.RLock()  # re-entrant: a finalizer may run during a collection under it
#: id(model) -> the loop its async client belongs to. Keyed by id (framework models are pydantic
#: objects: not hashable); an entry goes when its model is collected (``weakref.finalize``).
_BOUND: dict[int, weakref.ReferenceType[asyncio.AbstractEventLoop]] = {}


@contextlib.contextmanager
def private_loop(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Mark ``loop`` as one synchronous run's own loop for the code run inside the block."""
    token = _PRIVATE.set(loop)
    try:
        yield
    finally:
        _PRIVATE.reset(token)


def running_loop() -> asyncio.AbstractEventLoop | None:
    """The running event loop (``None`` outside one)."""
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def on_private_loop() -> bool:
    """Whether the running loop is one synchronous run's own (see :func:`private_loop`)."""
    loop = running_loop()
    return loop is not None and _PRIVATE.get() is loop


def serves_running_loop(model: object) -> bool:
    """Whether ``model``'s async client may serve a call on the running loop: not outside one,
    on a synchronous run's private loop, or on any loop but the first one that asked for
    ``model`` (for the model's lifetime, even after that loop closes)."""
    loop = running_loop()
    if loop is None or _PRIVATE.get() is loop:
        return False
    with _LOCK:
        ref = _BOUND.get(id(model))
        if ref is None:
            ref = _BOUND[id(model)] = weakref.ref(loop)
            try:
                weakref.finalize(model, _forget, id(model), ref)
            except TypeError:  # no weak reference: the entry stays (a few bytes per model)
                pass
    return ref() is loop


def _forget(key: int, ref: weakref.ReferenceType[asyncio.AbstractEventLoop]) -> None:
    with _LOCK:
        if _BOUND.get(key) is ref:
            del _BOUND[key]

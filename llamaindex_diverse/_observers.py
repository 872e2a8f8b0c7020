"""Whether anybody observes LlamaIndex's instrumentation (events and spans) or callbacks: when
nobody does, the faces may skip building the events or take shorter paths."""

from __future__ import annotations

from typing import Any

from llama_index.core.instrumentation.dispatcher import Dispatcher
from llama_index.core.instrumentation.event_handlers import NullEventHandler
from llama_index.core.instrumentation.span_handlers import NullSpanHandler

__all__ = ["has_event_handlers", "observed"]


def has_event_handlers(dispatcher: Dispatcher, *, spans: bool = False) -> bool:
    """Whether an event handler (with ``spans``, also a span handler) would see ``dispatcher``'s
    events, walking up the dispatcher tree as ``Dispatcher.event`` does; the root's default
    no-op handlers do not count.

    Example:
        >>> from llama_index.core.instrumentation import get_dispatcher
        >>> has_event_handlers(get_dispatcher("llamaindex_diverse.doc_example"))
        False
    """
    current: Dispatcher | None = dispatcher
    while current is not None:
        if any(type(h) is not NullEventHandler for h in current.event_handlers):
            return True
        if spans and any(type(h) is not NullSpanHandler for h in current.span_handlers):
            return True
        current = current.parent if current.propagate else None
    return False


def observed(dispatchers: tuple[Dispatcher, ...], *callback_managers: Any) -> bool:
    """Whether any of ``dispatchers`` has an event or span handler, or any callback manager a handler."""
    if any(getattr(cm, "handlers", None) for cm in callback_managers):
        return True
    return any(has_event_handlers(d, spans=True) for d in dispatchers)

"""Typed informer events and the bounded subscription that delivers them to async code.

* :class:`Added` (with ``is_in_initial_list``), :class:`Updated` (``old`` and ``new``),
  :class:`Deleted` (``obj`` may be a :class:`~informers.keys.DeletedFinalStateUnknown`
  tombstone, as client-go hands to ``OnDelete`` after a relist found the object gone): what a
  ``ResourceEventHandler`` is told, as values.
* :class:`Subscription`: an async iterator of those events with a bounded buffer.

**Overflow policy.** A subscription buffers at most ``max_buffer`` events. When an event arrives
with the buffer full, the subscription is *overflowed*: its buffer is dropped and the next
``__anext__`` raises :class:`SubscriptionOverflowError`. Nothing is silently skipped and the
informer is never slowed by a slow reader: a reader that falls behind learns it, and subscribes
again, which replays the cache's current contents as ``Added(is_in_initial_list=True)``
events (what client-go gives a handler added late) before the live events. ``max_buffer=None``
buffers without bound (the async handlers use it, as client-go's ``processorListener`` does).

One event loop; the informer pushes from its drain task, one task reads.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio

from informers.errors import InformersError

__all__ = [
    "DEFAULT_MAX_BUFFER",
    "Added",
    "Deleted",
    "InformerEvent",
    "Subscription",
    "SubscriptionOverflowError",
    "Updated",
]

DEFAULT_MAX_BUFFER = 10_000
"""Events a subscription buffers before it overflows (see the module docstring)."""


@dataclass(frozen=True)
class Added:
    """An object entered the cache; ``is_in_initial_list`` while the initial list is being
    delivered (client-go ``OnAdd(obj, isInInitialList)``)."""

    obj: Any
    is_in_initial_list: bool


@dataclass(frozen=True)
class Updated:
    """An object changed (or a resync/relist of an unchanged one: ``old`` and ``new`` with the
    same resourceVersion)."""

    old: Any
    new: Any


@dataclass(frozen=True)
class Deleted:
    """An object left the cache; ``obj`` is its last state or a
    :class:`~informers.keys.DeletedFinalStateUnknown`."""

    obj: Any


InformerEvent = Added | Updated | Deleted


class SubscriptionOverflowError(InformersError):
    """A subscription's reader fell more than ``max_buffer`` events behind; its buffered events
    were dropped. Subscribe again (the new subscription starts with the cache's contents)."""


class Subscription:
    """Events of one informer, as an async iterator (``async for event in subscription``).

    Ends (``StopAsyncIteration``) once closed and drained: by :meth:`close`, leaving its
    ``async with``, or the informer stopping. See the module docstring for the overflow
    policy.
    """

    def __init__(self, max_buffer: int | None = DEFAULT_MAX_BUFFER,
                 on_close: Callable[[Subscription], None] | None = None) -> None:
        if max_buffer is not None and max_buffer < 1:
            raise ValueError(f"max_buffer must be at least 1, got {max_buffer}")
        self.max_buffer = max_buffer
        self._buffer: deque[InformerEvent] = deque()
        self._wake = anyio.Event()
        self._closed = False
        self._overflowed = False
        self._on_close = on_close
        self.delivered = 0
        self.overflows = 0
        self.pushed = 0
        """Events buffered so far (the informer's count)."""
        self.handled = 0
        """Events an informer's handler task finished with (:meth:`mark_handled`)."""
        self.sync_mark: int | None = None
        """:attr:`pushed` when the informer had synced (or when this subscription started,
        if later): the events of the initial list."""
        self._synced = anyio.Event()

    def push(self, event: InformerEvent) -> None:
        """Queue ``event`` (the informer's drain task calls this)."""
        if self._closed or self._overflowed:
            return
        if self.max_buffer is not None and len(self._buffer) >= self.max_buffer:
            self._overflowed = True
            self.overflows += 1
            self._buffer.clear()
        else:
            self._buffer.append(event)
            self.pushed += 1
        self._wake.set()

    def __len__(self) -> int:
        return len(self._buffer)

    # -- a handler's sync (client-go's ResourceEventHandlerRegistration.HasSynced) -------------

    def mark_sync_point(self) -> None:
        """The informer synced: the events pushed so far are the initial list's (the informer
        calls this once)."""
        if self.sync_mark is None:
            self.sync_mark = self.pushed
            self._check_synced()

    def mark_handled(self) -> None:
        """A handler finished with one more event (an informer's handler task calls this)."""
        self.handled += 1
        self._check_synced()

    def _check_synced(self) -> None:
        if self.sync_mark is not None and self.handled >= self.sync_mark:
            self._synced.set()

    def has_synced(self) -> bool:
        """For a handler's subscription: whether its handler finished with every event of the
        initial list (client-go's ``processorListener`` ``HasSynced``; controller-runtime
        waits for it before its workers start)."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        """Wait until :meth:`has_synced`."""
        await self._synced.wait()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        """Stop receiving; what is buffered is still delivered. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        on_close, self._on_close = self._on_close, None
        if on_close is not None:
            on_close(self)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> InformerEvent:
        while not self._buffer:
            if self._overflowed:
                self._overflowed = False
                self.close()
                raise SubscriptionOverflowError(
                    f"subscription fell more than {self.max_buffer} events behind; its "
                    "buffered events were dropped: subscribe again")
            if self._closed:
                raise StopAsyncIteration
            await self._wake.wait()
            self._wake = anyio.Event()
        self.delivered += 1
        return self._buffer.popleft()

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()

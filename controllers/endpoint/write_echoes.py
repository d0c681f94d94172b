"""Tells the watch echoes of the controller's own Endpoints writes from other writers' changes.

Only the controller's ``watch_endpoints_updates`` extension needs it (a deliberate deviation
from upstream, whose ``NewEndpointController`` handles only Endpoints deletes, not adds and
updates): an Endpoints event re-syncs its Service unless the event is the echo of a write this
controller made. The echo races the write's response. It can be delivered before the ``POST``
or ``PUT`` returns, when the new resourceVersion is not known yet, or after a later write of
ours returned, when "the last version we wrote" is no longer its version. Comparing with one
remembered version gets both cases wrong: the controller then syncs again for nothing and logs
its own write as another writer's.
"""

from __future__ import annotations

import enum
import threading
from collections import deque

__all__ = ["DEFAULT_REMEMBERED_WRITES", "Echo", "WriteEchoTracker"]

DEFAULT_REMEMBERED_WRITES = 16
"""Unechoed versions kept per key, oldest dropped first. Our writes to one key are serial and
each needs the informer cache to hold the previous one (the stale-cache guard), so only a
handler lagging behind its own cache leaves several unechoed; the bound is a safety net, not a
tuning knob (no upstream counterpart: upstream does not watch Endpoints updates)."""


class Echo(enum.Enum):
    """What :meth:`WriteEchoTracker.classify` decided about an Endpoints event."""

    OWN = "own"
    """The echo of one of our writes: nothing to do."""
    FOREIGN = "foreign"
    """Not ours (as far as the tracker knows): the caller re-syncs."""
    PENDING = "pending"
    """A write is in flight: held back until it returns, then settled by
    :meth:`WriteEchoTracker.write_finished`."""


class _KeyState:
    __slots__ = ("held", "in_flight", "unechoed")

    def __init__(self, remembered: int) -> None:
        self.in_flight = 0
        # Versions our writes produced whose echoes were not delivered yet, oldest first.
        self.unechoed: deque[str] = deque(maxlen=remembered)
        # Versions delivered while a write was in flight, in delivery order.
        self.held: list[str] = []


class WriteEchoTracker:
    """Per Endpoints key (``namespace/name``): the versions our writes produced that the
    informer has not delivered yet, and whether a write is in flight.

    **Protocol.** The writer calls :meth:`write_started` before each create or update request
    and :meth:`write_finished` after it, always (``finally``), with the resourceVersion the
    write produced, or ``None`` when it failed or changed nothing. The event handler calls
    :meth:`classify` with each delivered version: :attr:`Echo.OWN` if one of our writes
    produced it; :attr:`Echo.PENDING` if it is unknown while a write is in flight (it may be
    that write's echo); :attr:`Echo.FOREIGN` otherwise. Versions held as pending are settled
    when the last write in flight finishes: :meth:`write_finished` returns those that turned
    out not to be ours, and the writer re-syncs for them. A write that failed but changed the
    object anyway (a lost response) makes its echo count as foreign: one extra sync.

    **Ordering assumption.** An informer delivers one object's events in resourceVersion
    order, so once the echo of our version *v* is delivered, no version we recorded before *v*
    will be: they are forgotten then. A key is therefore held only while one of our writes is
    unechoed or in flight; at most :data:`DEFAULT_REMEMBERED_WRITES` versions per key (a
    dropped version's late echo counts as foreign: one extra sync).

    **Thread safety.** All methods may be called from any thread (one lock). The caller keeps
    the writes of one key serial (the work queue does); overlapping writes are tolerated
    (pending versions are settled when the last one finishes).

    Args:
        remembered: unechoed versions kept per key.
    """

    def __init__(self, remembered: int = DEFAULT_REMEMBERED_WRITES) -> None:
        if remembered < 1:
            raise ValueError(f"remembered must be >= 1, got {remembered!r}")
        self._remembered = remembered
        self._lock = threading.Lock()
        self._keys: dict[str, _KeyState] = {}

    def write_started(self, key: str) -> None:
        """A create or update request for ``key`` is about to be sent."""
        with self._lock:
            state = self._keys.get(key)
            if state is None:
                state = self._keys[key] = _KeyState(self._remembered)
            state.in_flight += 1

    def write_finished(self, key: str, resource_version: str | None) -> list[str]:
        """The request announced by :meth:`write_started` returned.

        Args:
            key: the Endpoints key.
            resource_version: the version the write produced; ``None`` (or empty) when it
                failed or did not change the object.

        Returns:
            The versions held back while writes were in flight that are not ours, in delivery
            order (empty while another write of the key is still in flight).
        """
        with self._lock:
            state = self._keys.get(key)
            if state is None or state.in_flight < 1:
                return []  # forgotten meanwhile (or no write_started): nothing to settle
            state.in_flight -= 1
            if resource_version:
                state.unechoed.append(resource_version)
            foreign: list[str] = []
            if state.in_flight == 0:
                held, state.held = state.held, []
                for rv in held:
                    if rv in state.unechoed:
                        state.unechoed.remove(rv)  # echoed already, while in flight
                    else:
                        foreign.append(rv)
            self._drop_if_idle(key, state)
            return foreign

    def classify(self, key: str, resource_version: str | None) -> Echo:
        """Decide about a delivered Endpoints version (see the class docstring)."""
        with self._lock:
            state = self._keys.get(key)
            if state is None or not resource_version:
                return Echo.FOREIGN
            if self._delivered(state, resource_version):
                self._drop_if_idle(key, state)
                return Echo.OWN
            if state.in_flight:
                state.held.append(resource_version)
                return Echo.PENDING
            return Echo.FOREIGN

    def forget(self, key: str) -> None:
        """Drop everything about ``key`` (its Service is gone); a write in flight for it
        then settles nothing."""
        with self._lock:
            self._keys.pop(key, None)

    def __len__(self) -> int:
        """The number of keys held (with a write in flight or an unechoed version)."""
        with self._lock:
            return len(self._keys)

    @staticmethod
    def _delivered(state: _KeyState, rv: str) -> bool:
        """If ``rv`` is one of ours, forget it and every older one; whether it was ours."""
        if rv not in state.unechoed:
            return False
        while state.unechoed.popleft() != rv:
            pass
        return True

    def _drop_if_idle(self, key: str, state: _KeyState) -> None:
        if not state.in_flight and not state.unechoed and not state.held:
            self._keys.pop(key, None)

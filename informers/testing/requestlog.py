"""The record of every request the embedded API server answered, for asserting request sequences.

Tests of a reflector check the exact list/watch calls it makes (client-go's reflector tests
do the same with a fake ListerWatcher); this log gives them that view over real HTTP.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from informers.clock import REAL_CLOCK, Clock

__all__ = ["RequestLog", "RequestRecord"]


@dataclass(frozen=True)
class RequestRecord:
    """One answered request.

    Attributes:
        verb: Kubernetes verb: ``get``, ``list``, ``watch``, ``create``, ``update``, ``patch``,
            ``delete``, ``deletecollection`` (``""`` for non-resource paths like ``/version``).
        resource: the plural (``pods``), ``""`` for non-resource paths.
        group: API group (``""`` for core).
        version: API version.
        namespace: namespace from the path, ``""`` when none.
        name: object name from the path, ``""`` for collections.
        subresource: ``status`` or ``""``.
        query: the query parameters (last value of each).
        status: the HTTP status sent (200 for a watch, even one that then sends an ERROR event).
        time: the server clock's ``now()`` when the status was sent.
        method: HTTP method.
        path: URL path.
    """

    verb: str
    resource: str
    group: str = ""
    version: str = ""
    namespace: str = ""
    name: str = ""
    subresource: str = ""
    query: dict[str, str] = field(default_factory=dict)
    status: int = 0
    time: float = 0.0
    method: str = ""
    path: str = ""


class RequestLog:
    """Thread-safe, append-only (until :meth:`clear`) list of :class:`RequestRecord`."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._records: list[RequestRecord] = []

    def append(self, record: RequestRecord) -> None:
        with self._cond:
            self._records.append(record)
            self._cond.notify_all()

    def records(self, verb: str | None = None, resource: str | None = None) -> list[RequestRecord]:
        """A copy of the records, oldest first, optionally filtered by verb and resource."""
        with self._cond:
            return [
                r for r in self._records
                if (verb is None or r.verb == verb) and (resource is None or r.resource == resource)
            ]

    def clear(self) -> None:
        with self._cond:
            self._records.clear()

    def wait_for(
        self, predicate: Callable[[list[RequestRecord]], bool], timeout: float,
        clock: Clock = REAL_CLOCK,
    ) -> bool:
        """Wait until ``predicate(records)`` holds; ``timeout`` is in seconds of ``clock``."""
        with self._cond:
            deadline = clock.now() + timeout
            while not predicate(list(self._records)):
                remaining = deadline - clock.now()
                if remaining <= 0:
                    return False
                clock.wait_condition(self._cond, remaining)
            return True

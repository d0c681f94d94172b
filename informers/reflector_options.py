"""The tunable options of a :class:`~informers.reflector.Reflector` (client-go
``ReflectorOptions``, ``tools/cache/reflector.go``), as one typed object that a factory or an
informer passes down unchanged."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from informers.backoff import Backoff

__all__ = ["DEFAULT_MIN_WATCH_TIMEOUT", "ReflectorOptions", "WatchErrorHandler"]

DEFAULT_MIN_WATCH_TIMEOUT = 300.0
"""client-go reflector.go ``defaultMinWatchTimeout`` (5 min); the maximum is twice the minimum."""

WatchErrorHandler = Callable[[Any, BaseException], None]
"""Called with the :class:`~informers.reflector.Reflector` and each list-and-watch failure
(client-go ``WatchErrorHandler``)."""


@dataclass(frozen=True)
class ReflectorOptions:
    """How a reflector lists and watches; every field's default is client-go's.

    Attributes:
        page_size: list page size; ``None`` applies client-go's policy (500 for the versions
            "" and "0", unpaginated otherwise unless the first list came back paginated;
            ``reflector.go`` ``list``).
        min_watch_timeout: each watch asks the server for a random whole number of seconds in
            ``[min, 2*min)``; honoured only above 300 s (client-go ``MinWatchTimeout``).
        watch_error_handler: called with list-and-watch failures (a failed list as a
            :class:`~informers.errors.ListError`, "failed to list <type>: <err>", as
            client-go's ``reflector.go`` ``list`` wraps it); ``None`` logs them as client-go's
            ``DefaultWatchErrorHandler`` does ("Failed to watch <type>: <err>").
        backoff: delays between failed attempts; ``None`` is client-go's (0.8 s doubling to
            30 s, jitter 1.0, reset after 2 min of success, ``reflector.go``
            ``NewReflectorWithOptions``), on the reflector's clock.
        use_watch_list: list with a streaming watch (``sendInitialEvents=true``) first and fall
            back to a paginated list (client-go ``WatchListClient``).
        read_timeout: seconds a watch connection may stay silent before it is taken as dead
            and re-opened from the last version; ``None`` uses the ListWatch's default, for
            the reflector's watches (which ask for bookmarks)
            :data:`informers.list_watch.DEFAULT_WATCH_READ_TIMEOUT`, 150 s: kube-apiserver's
            watch cache sends a bookmark about once a minute, so a healthy watch is rarely
            silent for two periods. Lower it to notice a dead path sooner (each quiet watch
            is then re-opened more often); keep it above the server's bookmark period.
        rng: the random source of the watch timeouts and the default backoff's jitter;
            ``None`` for a new unseeded one (tests pass a seeded one to replay a run).
    """

    page_size: int | None = None
    min_watch_timeout: float = DEFAULT_MIN_WATCH_TIMEOUT
    watch_error_handler: WatchErrorHandler | None = None
    backoff: Backoff | None = None
    use_watch_list: bool = False
    read_timeout: float | None = None
    rng: random.Random | None = None

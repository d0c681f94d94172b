"""Logs how far a long list got while it is received (:class:`ListProgress`)."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Callable

from informers.clock import Clock
from informers.list_watch import ListOptions, ListResult

__all__ = ["LIST_PROGRESS_PERIOD", "ListProgress"]

logger = logging.getLogger(__name__)

LIST_PROGRESS_PERIOD = 5.0
"""Seconds between progress lines while a list is received (objects so far, pages, elapsed).
client-go only logs a list's trace afterwards, when it took over 10 s
(``initTrace.LogIfLong``); a user waiting on a list of 100,000 objects wants to see it move."""


class ListProgress:
    """Logs, at most every :data:`LIST_PROGRESS_PERIOD`, how far a (paginated) list got: the
    objects received so far (counted as pages arrive, and within a page from the list
    function's ``progress`` calls), the pages and the elapsed time; and a closing line when
    the list took longer than one period. Used by the listing thread only."""

    def __init__(self, name: str, clock: Clock) -> None:
        self._name = name
        self._clock = clock
        self._start = self._next = clock.now()
        self._next += LIST_PROGRESS_PERIOD
        self._done = 0  # objects of the pages completed
        self._pages = 0
        self._logged = False

    def wrap(self, list_func: Callable[[ListOptions], ListResult]
             ) -> Callable[[ListOptions], ListResult]:
        def list_page(options: ListOptions) -> ListResult:
            page = list_func(dataclasses.replace(options, progress=self._in_page))
            self._pages += 1
            self._done += len(page.items)
            self._maybe_log(self._done)
            return page

        return list_page

    def _in_page(self, items_so_far: int) -> None:
        self._maybe_log(self._done + items_so_far)

    def _maybe_log(self, objects: int) -> None:
        now = self._clock.now()
        if now < self._next:
            return
        self._next = now + LIST_PROGRESS_PERIOD
        self._logged = True
        logger.info("%s: listing: %d objects received so far (%d pages, %.1fs)", self._name,
                    objects, self._pages, now - self._start)

    def finish(self, objects: int) -> None:
        """The list succeeded with ``objects``: a closing line if progress was logged."""
        if self._logged:
            logger.info("%s: listed %d objects in %d pages in %.1fs", self._name, objects,
                        self._pages, self._clock.now() - self._start)

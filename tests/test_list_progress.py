"""Progress lines while a long list is received: at most every LIST_PROGRESS_PERIOD, with the
objects so far (within a page, from the list function's progress calls), pages and time."""

from __future__ import annotations

import logging

from informers.clock import FakeClock
from informers.list_progress import LIST_PROGRESS_PERIOD
from informers.list_watch import ListOptions, ListResult, ListWatch
from informers.reflector import Reflector
from informers.reflector_options import ReflectorOptions
from informers.undelta_store import UndeltaStore


def pod(i: int) -> dict[str, object]:
    return {"metadata": {"name": f"p{i}", "namespace": "default", "resourceVersion": "1"}}


def test_a_slow_paginated_list_logs_its_progress_and_a_closing_line(caplog):
    clock = FakeClock()
    pages = 3
    calls: list[ListOptions] = []

    def list_page(options: ListOptions) -> ListResult:
        calls.append(options)
        page = len(calls)
        assert options.progress is not None
        for n in (100, 200):  # the page's items arrive in two chunks, 3 s apart
            clock.step(3.0)
            options.progress(n)
        items = [pod(page * 1000 + i) for i in range(200)]
        return ListResult(items, "7", None if page == pages else f"c{page}", None)

    def watch(options: ListOptions):
        raise AssertionError("only listing here")

    store = UndeltaStore(lambda objs: None, lambda o: o["metadata"]["name"])
    reflector = Reflector(ListWatch(list_page, watch), store,
                          ReflectorOptions(page_size=200), name="pods", clock=clock)
    with caplog.at_level(logging.INFO, logger="informers.list_progress"):
        reflector._list_all("0")
    lines = [r.getMessage() for r in caplog.records if r.name == "informers.list_progress"]
    # 6 s per page; a line at most every 5 s: after 6 s (page 1, 200 in), 12 s, 18 s.
    assert lines == [
        "pods: listing: 200 objects received so far (0 pages, 6.0s)",
        "pods: listing: 400 objects received so far (1 pages, 12.0s)",
        "pods: listing: 600 objects received so far (2 pages, 18.0s)",
        "pods: listed 600 objects in 3 pages in 18.0s",
    ]
    assert LIST_PROGRESS_PERIOD == 5.0


def test_a_quick_list_logs_nothing(caplog):
    clock = FakeClock()

    def list_page(options: ListOptions) -> ListResult:
        assert options.progress is not None
        options.progress(1)
        return ListResult([pod(1)], "1", None, None)

    reflector = Reflector(ListWatch(list_page, lambda o: iter(())), UndeltaStore(
        lambda objs: None, lambda o: o["metadata"]["name"]), name="pods", clock=clock)
    with caplog.at_level(logging.INFO, logger="informers.list_progress"):
        result, paginated = reflector._list_all("0")
    assert (len(result.items), paginated) == (1, False)
    assert [r for r in caplog.records if r.name == "informers.list_progress"] == []


def test_the_http_list_reports_items_as_they_are_decoded():
    from informers.client import list_watch_from_client
    from informers.testing import ApiServer

    with ApiServer() as server:
        for i in range(30):
            server.create({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": f"c{i}", "namespace": "default"}})
        seen: list[int] = []
        with server.api_client() as api:
            result = list_watch_from_client(api, "configmaps", "default").list(
                ListOptions(progress=seen.append))
    assert len(result.items) == 30
    assert seen and seen[-1] <= 30 and seen == sorted(seen)

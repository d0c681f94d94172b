"""The async informers (informers.aio) against the embedded API server over HTTP.

The first part is behaviour written once and run on three drivers: the threaded informer, and
the async one on asyncio and on trio (``driver`` fixture; the async driver runs the event loop
in a thread, tests/runtime_drivers.py): list + watch into the cache and the handlers, a 410 relist,
a hung watch replaced after the read timeout without a relist, a malformed line, 500 and 429
backoff. The second part is async-only API, on both anyio backends: typed subscription events
(with DeletedFinalStateUnknown), the overflow policy, wait_for_cache_sync's error and leaks
across enter/exit cycles.
"""

from __future__ import annotations

import random
import time
from typing import Any

import anyio
import pytest
from runtime_drivers import AsyncDriver
from test_informer_convergence import Recorder, ThreadedDriver

from informers.aio import (
    Added,
    AsyncSharedInformerFactory,
    Deleted,
    SubscriptionOverflowError,
    Updated,
)
from informers.backoff import Backoff
from informers.errors import AlreadyStartedError, CacheSyncTimeoutError
from informers.keys import DeletedFinalStateUnknown
from informers.reflector_options import ReflectorOptions
from informers.testing import ApiServer

WAIT = 10.0


def pod(name: str, ns: str = "default", **labels: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": dict(labels)},
            "spec": {"containers": [{"name": "c", "image": "nginx"}]}}


def options(read_timeout: float | None = None) -> ReflectorOptions:
    return ReflectorOptions(backoff=Backoff(initial=0.01, cap=0.05, reset_interval=2.0,
                                            rng=random.Random(7)),
                            read_timeout=read_timeout, rng=random.Random(7))


def eventually(check: Any, timeout: float = WAIT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.01)
    return bool(check())


@pytest.fixture
def api():
    with ApiServer() as server:
        yield server


@pytest.fixture(params=["threads", "asyncio", "trio"])
def driver(request):
    made = ThreadedDriver() if request.param == "threads" else AsyncDriver(request.param)
    yield made
    made.shutdown()


def names(indexer: Any) -> list[str]:
    return sorted(o["metadata"]["name"] for o in indexer.list())


def summary(events: list[tuple[Any, ...]]) -> list[tuple[str, str]]:
    out = []
    for ev in events:
        obj = ev[-1]
        if isinstance(obj, DeletedFinalStateUnknown):
            out.append((ev[0], "tombstone:" + obj.key))
        else:
            out.append((ev[0], obj["metadata"]["name"]))
    return out


# -- the same behaviour on every driver ---------------------------------------------------------


def test_list_then_watch_events_reach_the_cache_and_the_handler_in_order(api, driver):
    api.create(pod("a"), "pods", "default")
    api.create(pod("b"), "pods", "default")
    rec = Recorder()
    assert driver.start(api.api_client(), options(), rec) == {"pods": True}
    assert names(driver.indexer()) == ["a", "b"]
    api.create(pod("c"), "pods", "default")
    api.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
    api.delete("pods", "default", "b")
    # a pod's deletion: MODIFIED (deletionTimestamp set), then DELETED
    assert eventually(lambda: len(rec.snapshot()) == 6), summary(rec.snapshot())
    assert summary(rec.snapshot()) == [("add", "a"), ("add", "b"), ("add", "c"),
                                       ("update", "a"), ("update", "b"), ("delete", "b")]
    assert names(driver.indexer()) == ["a", "c"]
    assert driver.indexer().get_by_key("default/a")["metadata"]["labels"] == {"x": "1"}
    metrics = driver.metrics()
    assert (metrics.lists_total, metrics.list_errors_total, metrics.watch_errors_total) == (1, 0, 0)


def test_a_410_error_event_relists_at_the_last_version(api, driver):
    api.create(pod("a"), "pods", "default")
    assert driver.start(api.api_client(), options(), Recorder()) == {"pods": True}
    api.create(pod("b"), "pods", "default")  # the watch gets an event: not "very short"
    assert eventually(lambda: names(driver.indexer()) == ["a", "b"])
    api.fail_next(1, 410, verb="watch", resource="pods", in_stream=True)
    api.drop_watches()  # ends normally: the next watch gets the 410 ERROR event
    api.create(pod("c"), "pods", "default")
    assert eventually(lambda: names(driver.indexer()) == ["a", "b", "c"])
    metrics = driver.metrics()
    assert eventually(lambda: metrics.lists_total == 2), metrics
    assert metrics.list_errors_total == 0
    assert type(metrics.last_error).__name__ == "Expired"


def test_a_hung_watch_is_replaced_after_the_read_timeout_without_a_relist(api, driver):
    api.create(pod("a"), "pods", "default")
    # longer than a "very short watch" (1 s), which would be an error and relist
    assert driver.start(api.api_client(), options(read_timeout=1.1), Recorder()) == {
        "pods": True}
    assert eventually(lambda: api.watch_count("pods") == 1)
    metrics = driver.metrics()
    watches = metrics.watches_total
    api.hang_watches()
    assert eventually(lambda: metrics.watches_total == watches + 1)  # replaced
    api.resume_watches()
    api.create(pod("b"), "pods", "default")
    assert eventually(lambda: names(driver.indexer()) == ["a", "b"])
    assert metrics.lists_total == 1
    assert metrics.list_errors_total == 0


def test_a_malformed_watch_line_ends_the_watch_and_the_relist_catches_up(api, driver):
    api.create(pod("a"), "pods", "default")
    assert driver.start(api.api_client(), options(), Recorder()) == {"pods": True}
    assert eventually(lambda: api.watch_count("pods") == 1)
    assert api.inject_malformed_watch_line() == 1
    api.create(pod("b"), "pods", "default")
    assert eventually(lambda: names(driver.indexer()) == ["a", "b"])
    metrics = driver.metrics()
    assert eventually(lambda: metrics.lists_total == 2), metrics
    assert metrics.watch_errors_total == 1
    assert metrics.last_error.status.get("reason") == "InternalError"


def test_failed_lists_back_off_and_retry(api, driver):
    api.create(pod("a"), "pods", "default")
    api.fail_next(2, 500, verb="list", resource="pods")
    assert driver.start(api.api_client(), options(), Recorder()) == {"pods": True}
    metrics = driver.metrics()
    assert (metrics.lists_total, metrics.list_errors_total) == (3, 2)
    assert 0.01 <= driver_backoff(driver) < 0.1


def test_a_429_is_retried_no_sooner_than_its_retry_after(api, driver):
    api.create(pod("a"), "pods", "default")
    api.fail_next(1, 429, verb="list", resource="pods", retry_after=1)
    started = time.monotonic()
    assert driver.start(api.api_client(), options(), Recorder()) == {"pods": True}
    assert time.monotonic() - started >= 1.0
    assert driver_backoff(driver) == 1.0
    assert (driver.metrics().lists_total, driver.metrics().list_errors_total) == (2, 1)


def test_a_streaming_list_syncs_without_a_list_and_keeps_its_stream_for_the_watch(api, driver):
    for name in ("a", "b", "c"):
        api.create(pod(name), "pods", "default")
    opts = ReflectorOptions(use_watch_list=True, backoff=options().backoff, rng=random.Random(7))
    rec = Recorder()
    assert driver.start(api.api_client(), opts, rec) == {"pods": True}
    assert names(driver.indexer()) == ["a", "b", "c"]
    api.create(pod("d"), "pods", "default")
    assert eventually(lambda: names(driver.indexer()) == ["a", "b", "c", "d"])
    metrics = driver.metrics()
    assert (metrics.lists_total, metrics.watches_total, metrics.watch_errors_total) == (0, 1, 0)
    assert summary(rec.snapshot()) == [("add", "a"), ("add", "b"), ("add", "c"), ("add", "d")]


def driver_backoff(driver: Any) -> float:
    reflector = driver.informer._reflector
    return float(reflector.last_backoff)


# -- the async API, on asyncio and trio ----------------------------------------------------------

BACKENDS = ["asyncio", "trio"]


@pytest.fixture(params=BACKENDS)
def anyio_backend(request):
    return request.param


async def _next(sub: Any) -> Any:
    with anyio.fail_after(WAIT):
        return await sub.__anext__()


@pytest.mark.anyio
async def test_subscription_events_are_typed_and_a_missed_delete_is_a_tombstone(api):
    api.create(pod("a"), "pods", "default")
    api.create(pod("b"), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        sub = informer.subscribe()
        first = [await _next(sub), await _next(sub)]
        assert sorted((type(e).__name__, e.obj["metadata"]["name"], e.is_in_initial_list)
                      for e in first) == [("Added", "a", True), ("Added", "b", True)]
        api.create(pod("c"), "pods", "default")
        added = await _next(sub)
        assert isinstance(added, Added) and added.is_in_initial_list is False
        old_rv = informer.indexer.get_by_key("default/a")["metadata"]["resourceVersion"]
        api.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
        updated = await _next(sub)
        assert isinstance(updated, Updated)
        assert updated.old["metadata"]["resourceVersion"] == old_rv
        assert updated.new["metadata"]["labels"] == {"x": "1"}
        # the watch loses b's DELETED (cut mid-line): the relist finds b gone
        assert api.garble_watch_events(1, "DELETED", resource="pods") == 1
        api.delete("pods", "default", "b")
        marked = await _next(sub)  # MODIFIED: b's deletionTimestamp set
        assert isinstance(marked, Updated) and marked.new["metadata"]["name"] == "b"
        deleted = await _next(sub)
        assert isinstance(deleted, Deleted)
        assert isinstance(deleted.obj, DeletedFinalStateUnknown)
        assert deleted.obj.key == "default/b"
        lister = factory.lister("pods")
        assert sorted(o["metadata"]["name"] for o in lister.list()) == ["a", "c"]
        sub.close()  # what is buffered is still delivered (the relist's sync updates), then
        rest = [event async for event in sub]  # the iteration ends
        assert {(type(e).__name__, e.new["metadata"]["name"]) for e in rest} <= {
            ("Updated", "a"), ("Updated", "c")}


@pytest.mark.anyio
async def test_a_subscription_that_falls_behind_overflows_and_a_new_one_starts_over(api):
    for name in ("a", "b", "c"):
        api.create(pod(name), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        small = informer.subscribe(max_buffer=2)  # three cached objects: the third overflows
        with pytest.raises(SubscriptionOverflowError, match="more than 2 events"):
            await _next(small)
        assert small.closed
        again = informer.subscribe(max_buffer=3)
        got = sorted([(await _next(again)).obj["metadata"]["name"] for _ in range(3)])
        assert got == ["a", "b", "c"]


@pytest.mark.anyio
async def test_wait_for_cache_sync_names_the_informers_that_did_not_sync(api):
    api.create(pod("a"), "pods", "default")
    api.fail_next(10_000, 500, verb="list", resource="configmaps")
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        factory.informer_for("pods")
        factory.informer_for("configmaps")
        with pytest.raises(CacheSyncTimeoutError) as raised:
            await factory.wait_for_cache_sync(timeout=0.3)
        assert list(raised.value.unsynced) == ["configmaps"]
        assert "configmaps (last error: failed to list ConfigMap: 500" in str(raised.value)
        assert factory.informer_for("pods").has_synced()
    api.clear_faults()


@pytest.mark.anyio
async def test_async_handlers_get_every_event_in_order_and_a_failing_one_goes_on(api):
    api.create(pod("a"), "pods", "default")
    seen: list[tuple[str, str]] = []

    async def on_add(obj: Any, initial: bool) -> None:
        await anyio.sleep(0.001)
        if obj["metadata"]["name"] == "boom":
            raise RuntimeError("handler failure")
        seen.append(("add", obj["metadata"]["name"]))

    async def on_delete(obj: Any) -> None:
        seen.append(("delete", obj["metadata"]["name"]))

    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        informer.add_event_handler(on_add=on_add, on_delete=on_delete)
        await factory.wait_for_cache_sync(timeout=WAIT)
        for name in ("boom", "b", "c"):
            api.create(pod(name), "pods", "default")
        api.delete("pods", "default", "a")
        with anyio.fail_after(WAIT):
            while len(seen) < 4:
                await anyio.sleep(0.01)
    # leaving the block drained the handler: nothing arrives later
    assert seen == [("add", "a"), ("add", "b"), ("add", "c"), ("delete", "a")]


@pytest.mark.anyio
async def test_a_factory_runs_once(api):
    factory = AsyncSharedInformerFactory(api.api_client())
    async with factory:
        pass
    with pytest.raises(AlreadyStartedError):
        async with factory:
            pass


async def _cycles(api: ApiServer, count: int) -> None:
    api_client = api.api_client()
    baseline = len(anyio.get_running_tasks())
    for i in range(count):
        factory = AsyncSharedInformerFactory(api_client, options=options())
        async with factory:
            informer = factory.informer_for("pods")
            informer.subscribe()
            await factory.wait_for_cache_sync(timeout=WAIT)
        assert factory.transport is not None and factory.transport.is_closed
        assert len(anyio.get_running_tasks()) == baseline, f"tasks left after cycle {i}"
    with anyio.fail_after(WAIT):  # the server sees every connection closed
        while api.watch_count() or api.connections._connections:
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_100_factory_cycles_leave_no_task_or_connection_behind(api):
    api.create(pod("a"), "pods", "default")
    await _cycles(api, 100)


@pytest.mark.slow
@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # ~20 s; trio runs the 100 cycles
async def test_1000_factory_cycles_leave_no_task_or_connection_behind(api):
    api.create(pod("a"), "pods", "default")
    await _cycles(api, 1000)


@pytest.mark.anyio
async def test_https_with_the_configurations_ca_and_a_configuration_instead_of_a_client(api):
    api.create(pod("tls"), "pods", "default")
    secure = api.api_client(secure=True)
    async with AsyncSharedInformerFactory(secure.configuration, options=options()) as factory:
        factory.informer_for("pods")
        assert await factory.wait_for_cache_sync(timeout=WAIT) == {"pods": True}
        assert "default/tls" in factory.informer_for("pods").indexer.list_keys()


@pytest.mark.anyio
async def test_the_transport_writes_json_and_raises_typed_status_errors(api):
    from informers.aio import AsyncTransport
    from informers.errors import AlreadyExists, ApiConnectionError

    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "written", "namespace": "default"}, "data": {"a": "1"}}
    async with AsyncTransport(api.api_client()) as transport:
        created = await transport.request("POST", "/api/v1/namespaces/default/configmaps", body)
        assert created["metadata"]["name"] == "written"
        with pytest.raises(AlreadyExists):
            await transport.request("POST", "/api/v1/namespaces/default/configmaps", body)
    assert api.get("configmaps", "default", "written")["data"] == {"a": "1"}
    from kubernetes import client

    nowhere = client.Configuration(host="http://127.0.0.1:9")  # nothing listens there
    async with AsyncTransport(nowhere) as transport:
        with pytest.raises(ApiConnectionError) as raised:
            await transport.request("GET", "/api/v1/pods")
        assert raised.value.refused is True


@pytest.mark.anyio
async def test_factory_informers_have_the_namespace_index_listers_use(api):
    api.create(pod("in-default"), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        assert [o["metadata"]["name"] for o in informer.indexer.by_index("namespace", "default")
                if o["metadata"]["name"] == "in-default"] == ["in-default"]
        lister = factory.lister("pods").by_namespace("default")
        assert lister.get("in-default")["metadata"]["name"] == "in-default"


@pytest.mark.anyio
async def test_an_exception_leaving_the_block_cancels_everything_and_propagates(api):
    api.create(pod("a"), "pods", "default")
    factory = AsyncSharedInformerFactory(api.api_client(), options=options())
    with pytest.raises(ValueError, match="user code failed"):
        async with factory:
            factory.informer_for("pods").subscribe()
            await factory.wait_for_cache_sync(timeout=WAIT)
            raise ValueError("user code failed")
    assert factory.transport is not None and factory.transport.is_closed
    with anyio.fail_after(WAIT):
        while api.watch_count("pods"):
            await anyio.sleep(0.01)


@pytest.mark.anyio
async def test_a_cancellation_of_the_block_stops_everything(api):
    api.create(pod("a"), "pods", "default")
    factory = AsyncSharedInformerFactory(api.api_client(), options=options())
    with anyio.move_on_after(0.3) as scope:
        async with factory:
            factory.informer_for("pods")
            await anyio.sleep(60)
    assert scope.cancelled_caught
    assert factory.transport is not None and factory.transport.is_closed
    assert factory.informer_for("pods").has_synced()


@pytest.mark.anyio
async def test_a_handlers_registration_syncs_once_it_handled_the_initial_list(api):
    """client-go's registration HasSynced: the informer syncs when its cache holds the list; a
    slow handler's registration only once the handler finished with every initial add, and a
    handler added later once it handled its synthetic adds."""
    for name in ("a", "b", "c"):
        api.create(pod(name), "pods", "default")
    gate = anyio.Event()
    handled: list[str] = []

    async def slow_add(obj: Any, initial: bool) -> None:
        await gate.wait()
        handled.append(obj["metadata"]["name"])

    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        early = informer.add_event_handler(on_add=slow_add)
        await factory.wait_for_cache_sync(timeout=WAIT)
        await anyio.sleep(0.05)
        assert informer.has_synced() and not early.has_synced()
        assert handled == []
        gate.set()
        with anyio.fail_after(WAIT):
            await early.wait_synced()
        assert sorted(handled) == ["a", "b", "c"]
        late_seen: list[str] = []

        async def late_add(obj: Any, initial: bool) -> None:
            late_seen.append(obj["metadata"]["name"])

        late = informer.add_event_handler(on_add=late_add)
        assert late.sync_mark == 3
        with anyio.fail_after(WAIT):
            await late.wait_synced()
        assert sorted(late_seen) == ["a", "b", "c"]
        plain = informer.subscribe()
        assert plain.sync_mark == 3 and not plain.has_synced()  # a reader does not mark


# -- the threaded informer's options, on the async factory and informer ------------------------


@pytest.mark.anyio
async def test_a_compact_cache_hands_every_reader_and_subscription_its_own_copy(api):
    api.create(pod("a", app="web"), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options(),
                                          compact=True) as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        assert type(informer.indexer.get_lazy_by_key("default/a")).__name__ == "Encoded"
        lister = factory.lister("pods").by_namespace("default")
        read = lister.get("a")
        read["metadata"]["labels"]["mutated"] = "yes"  # a fresh copy: the cache is untouched
        assert lister.get("a")["metadata"]["labels"] == {"app": "web"}
        first, second = informer.subscribe(), informer.subscribe()
        one, two = await _next(first), await _next(second)
        assert isinstance(one, Added) and one.obj == two.obj and one.obj is not two.obj
        assert one.obj["metadata"]["name"] == "a" and one.is_in_initial_list
        api.patch("pods", "default", "a", {"metadata": {"labels": {"x": "1"}}})
        updated = await _next(first)
        assert isinstance(updated, Updated)
        assert (updated.old["metadata"]["labels"], updated.new["metadata"]["labels"]) == (
            {"app": "web"}, {"app": "web", "x": "1"})


@pytest.mark.anyio
async def test_the_factory_names_its_informers_so_their_queues_publish_metrics(api):
    prometheus_client = pytest.importorskip("prometheus_client")
    from informers.fifo_metrics import set_informer_metrics_provider
    from informers.fifo_prometheus_metrics import PrometheusInformerMetricsProvider

    api.create(pod("a"), "pods", "default")
    registry = prometheus_client.CollectorRegistry()
    previous = set_informer_metrics_provider(PrometheusInformerMetricsProvider(registry))
    try:
        async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
            informer = factory.informer_for("pods")
            await factory.wait_for_cache_sync(timeout=WAIT)
            created = api.create(pod("b"), "pods", "default")
            assert await informer.wait_for_resource_version(
                created["metadata"]["resourceVersion"], WAIT)
    finally:
        set_informer_metrics_provider(previous)
    labels = {"name": "pods", "group": "", "version": "v1", "resource": "pods"}
    assert registry.get_sample_value("informer_queued_items", labels) == 0
    count = registry.get_sample_value("informer_processing_latency_seconds_count", labels)
    assert count is not None and count >= 2  # the list and b's ADDED


@pytest.mark.anyio
async def test_the_mutation_detector_is_turned_on_by_the_environment_and_reports_on_stop(
        api, monkeypatch):
    """client-go's ``KUBE_CACHE_MUTATION_DETECTOR``: a handler editing a cached object is
    reported (here to ``mutation_failure_func``); the detector's thread compares once more
    when the informer stops and is joined."""
    from informers.aio import AsyncListWatch, AsyncSharedIndexInformer, AsyncTransport

    monkeypatch.setenv("KUBE_CACHE_MUTATION_DETECTOR", "true")
    api.create(pod("a"), "pods", "default")
    failures: list[str] = []

    async def careless(obj: Any, initial: bool) -> None:
        obj["metadata"].setdefault("labels", {})["edited"] = "in place"

    async with AsyncTransport(api.api_client()) as transport:
        informer = AsyncSharedIndexInformer(
            AsyncListWatch(transport, "pods", "default", drop_managed_fields=True),
            options=options(), name="pods", mutation_failure_func=failures.append)
        handler = informer.add_event_handler(on_add=careless)
        async with anyio.create_task_group() as tg:
            tg.start_soon(informer.run)
            with anyio.fail_after(WAIT):
                await handler.wait_synced()
            assert "informer-pods-mutation-detector" in _thread_names()
            informer.stop()
    assert "informer-pods-mutation-detector" not in _thread_names()
    assert failures and failures[-1] == "cache pods modified: default/a"


@pytest.mark.anyio
async def test_the_factory_passes_detect_mutations_and_no_detector_runs_by_default(api):
    api.create(pod("a"), "pods", "default")
    for detect, running in ((True, True), (None, False)):
        async with AsyncSharedInformerFactory(api.api_client(), options=options(),
                                              detect_mutations=detect) as factory:
            factory.informer_for("pods")
            await factory.wait_for_cache_sync(timeout=WAIT)
            assert ("informer-pods-mutation-detector" in _thread_names()) is running
        assert "informer-pods-mutation-detector" not in _thread_names()


def _thread_names() -> list[str]:
    import threading

    return [t.name for t in threading.enumerate()]


@pytest.fixture
def gc_state():
    """CPython's default thresholds and nothing frozen; restored afterwards."""
    import gc

    saved = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    yield
    gc.unfreeze()
    gc.set_threshold(*saved)


@pytest.mark.anyio
async def test_memory_tuning_freezes_the_initial_cache_once_it_synced(api, gc_state):
    import gc

    from informers.memory import MemoryTuning, gc_pause_depth

    api.create(pod("a"), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options(),
                                          memory_tuning=MemoryTuning()) as factory:
        factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        assert gc_pause_depth() == 0 and gc.isenabled()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (700, 10, 100)  # full collections 10x rarer
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        factory.informer_for("pods")  # without memory_tuning the collector is left alone
        await factory.wait_for_cache_sync(timeout=WAIT)
        assert gc.get_freeze_count() == 0 and gc.get_threshold() == (700, 10, 10)


@pytest.mark.anyio
async def test_the_factory_takes_the_threaded_ones_custom_resync_transform_and_clock(api):
    from informers.clock import FakeClock

    api.create(pod("a"), "pods", "default")
    clock = FakeClock()
    async with AsyncSharedInformerFactory(api.api_client(), options=options(), clock=clock,
                                          resync_period=60.0,
                                          custom_resync={"pods": 30.0}) as factory:
        pods, config_maps = factory.informer_for("pods"), factory.informer_for("configmaps")
        assert (pods.resync_check_period, config_maps.resync_check_period) == (30.0, 60.0)
        sub = pods.subscribe()
        await factory.wait_for_cache_sync(timeout=WAIT)
        assert isinstance(await _next(sub), Added)
        with anyio.fail_after(WAIT):  # the reflectors' resync timers wait on the fake clock
            while not clock.has_waiters():
                await anyio.sleep(0.01)
        clock.step(30.0)
        resynced = await _next(sub)
        assert isinstance(resynced, Updated) and resynced.old is resynced.new
        assert "managedFields" not in resynced.new["metadata"]  # the default transform

    def tag(obj: dict[str, Any]) -> dict[str, Any]:
        obj["metadata"].setdefault("annotations", {})["transformed"] = "once"
        return obj

    async with AsyncSharedInformerFactory(api.api_client(), options=options(),
                                          transform=tag) as factory:
        informer = factory.informer_for("pods")
        await factory.wait_for_cache_sync(timeout=WAIT)
        cached = factory.lister("pods").by_namespace("default").get("a")
        assert cached["metadata"]["annotations"] == {"transformed": "once"}
        # another transform sees the objects as sent: managedFields are decoded for it
        assert informer.list_watch.drop_managed_fields is False


@pytest.mark.anyio
async def test_the_reflector_lets_the_handlers_run_during_a_watch_burst(api):
    """A burst read from a full socket buffer never waits; the reflector still gives the loop to
    the handlers' tasks every ``YIELD_EVERY`` events, so no handler falls further behind (each
    queued update keeps its old object alive: the collector's cost)."""
    from informers.aio.reflector import YIELD_EVERY

    count = 200
    for i in range(count):
        api.create(pod(f"p{i:03d}"), "pods", "default")
    async with AsyncSharedInformerFactory(api.api_client(), options=options()) as factory:
        informer = factory.informer_for("pods")
        backlog: list[int] = []

        async def on_update(old: Any, new: Any) -> None:
            backlog.append(informer._handler_backlog())  # queued + buffered for this handler

        sub = informer.add_event_handler(on_update=on_update)
        await factory.wait_for_cache_sync(timeout=WAIT)
        with anyio.fail_after(WAIT):
            await sub.wait_synced()
        api.hang_watches()
        for i in range(count):
            api.patch("pods", "default", f"p{i:03d}", {"metadata": {"labels": {"burst": "1"}}})
        api.resume_watches()
        with anyio.fail_after(WAIT):
            while len(backlog) < count:
                await anyio.sleep(0.01)
    assert len(backlog) == count
    assert max(backlog) < YIELD_EVERY

"""Two sharded Managers on the embedded server and on the real kube-apiserver v1.36.3 (with
ShardedListAndWatch on): the server filters (every list answers shardInfo), each namespace is
reconciled last by the replica whose range holds its hash, and a replica that stops hands its
namespaces over."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from typing import Any

import prometheus_client
import pytest

from informers.controller import Controller, EnqueueRequestForObject
from informers.factory import SharedInformerFactory
from informers.list_watch import ListOptions
from informers.manager import SHARD_RING_CHECK, Manager
from informers.shard import assign
from informers.shard.coordinator import ShardCoordinator, ShardingConfig
from informers.shard.list_watch import ShardedListWatch
from informers.shard.membership import MemberLease
from informers.sharding import NAMESPACE_KEY, UID_KEY, fnv1a_64


def test_sharding_config_refuses_bad_values() -> None:
    with pytest.raises(ValueError, match="needs a ring name"):
        ShardingConfig("")
    with pytest.raises(ValueError, match=r"unsupported shard key 'object\.metadata\.name'"):
        ShardingConfig("r", key="object.metadata.name")
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        Manager(object(), factory=SharedInformerFactory(object()), sharding=ShardingConfig(
            "r", lease_duration=2, renew_deadline=3))


@pytest.mark.parametrize("key", [NAMESPACE_KEY, UID_KEY])
def test_two_replicas_share_the_keys(any_api_server: Any, key: str) -> None:
    srv = any_api_server
    label = f"shard-{srv.namespace}"
    namespaces = [srv.new_namespace("shard") for _ in range(6)]
    for ns in namespaces:
        srv.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "settings", "namespace": ns, "labels": {"shard-test": label}}})
    replicas = [f"{label}-a", f"{label}-b"]
    last: dict[str, str] = {}
    managers: dict[str, Manager] = {}
    stops: dict[str, threading.Event] = {}
    threads: dict[str, threading.Thread] = {}
    clients = []

    def only_ours(options: ListOptions) -> None:
        options.label_selector = f"shard-test={label}"

    registries: dict[str, Any] = {}
    for name in replicas:
        api = srv.api_client()
        clients.append(api)
        factory = SharedInformerFactory(api, tweak_list_options=only_ours)
        registries[name] = registry = prometheus_client.CollectorRegistry()
        manager = Manager(api, factory=factory, metrics_registry=registry, sharding=ShardingConfig(
            label, namespace=srv.namespace, key=key, name=name, lease_duration=3,
            renew_deadline=2, retry_period=0.25))

        def reconcile(key: str, name: str = name) -> None:
            last[key.split("/")[0]] = name

        controller = Controller(f"settings-{name}", reconcile)
        controller.watch(factory.core().v1().config_maps().informer(), EnqueueRequestForObject)
        manager.add(controller, needs_leader=False)
        managers[name] = manager
        stops[name] = threading.Event()
        threads[name] = threading.Thread(target=manager.start, args=(stops[name],))
        threads[name].start()

    hashed = {ns: ns if key == NAMESPACE_KEY else srv.get("configmaps", ns, "settings")[
        "metadata"]["uid"] for ns in namespaces}

    def wait_for(owners: list[str]) -> dict[str, str]:
        ranges = assign(owners)
        expected = {ns: next(r for r in owners if fnv1a_64(hashed[ns].encode()) in ranges[r])
                    for ns in namespaces}
        deadline = time.monotonic() + 20
        while last != expected:
            assert time.monotonic() < deadline, (last, expected)
            time.sleep(0.05)
        return expected

    try:
        wait_for(replicas)
        for manager in managers.values():
            assert manager.shard is not None
            lws = manager.shard.list_watches()
            assert len(lws) == 1 and isinstance(lws[0], ShardedListWatch)
            assert lws[0].server_filters is True
            assert manager.shard.metrics().filtered_on_client == 0
        for registry in registries.values():
            labels = {"ring": label}
            # A loaded machine can delay a renewal past the 3 s lease: the ring then settles
            # again, so the gauge is awaited rather than read once.
            deadline = time.monotonic() + 20
            while registry.get_sample_value("shard_ranges_owned", labels) != 1:
                assert time.monotonic() < deadline, registry.get_sample_value(
                    "shard_ranges_owned", labels)
                time.sleep(0.05)
            assert registry.get_sample_value("shard_members", {**labels, "state": "ready"}) == 2
            assert registry.get_sample_value("shard_keys_filtered_on_client_total",
                                             labels) in (None, 0.0)
            assert (registry.get_sample_value("shard_handover_seconds_count", labels) or 0) >= 1
        stopped = time.monotonic()
        stops[replicas[1]].set()
        threads[replicas[1]].join(10)
        wait_for(replicas[:1])
        assert time.monotonic() - stopped < 3.0  # released at once, not expired
    finally:
        for stop in stops.values():
            stop.set()
        for t in threads.values():
            t.join(10)
        for api in clients:
            api.close()


def test_a_coordinator_runs_again_after_a_stop(any_api_server: Any) -> None:
    srv = any_api_server
    api = srv.api_client()
    coordinator = ShardCoordinator(api, ShardingConfig(
        f"again-{srv.namespace}", namespace=srv.namespace, name=f"again-{srv.namespace}-a",
        lease_duration=3, renew_deadline=2, retry_period=0.25))
    try:
        for run in range(2):
            # A member that appears during this run is seen: the ring is watched again.
            other = MemberLease(api, srv.namespace, coordinator.config.ring,
                                f"again-{srv.namespace}-other-{run}")
            stop = threading.Event()
            thread = threading.Thread(target=coordinator.run, args=(stop,))
            thread.start()
            deadline = time.monotonic() + 10
            while coordinator.active() != assign([coordinator.name])[coordinator.name]:
                assert time.monotonic() < deadline, "never active"
                time.sleep(0.02)
            assert coordinator.ready()
            assert other.renew()
            while other.name not in coordinator.observer.states():
                assert time.monotonic() < deadline, "the ring is not watched"
                time.sleep(0.02)
            assert other.release()
            stop.set()
            coordinator.interrupt()
            thread.join(10)
            assert not thread.is_alive()
            assert not coordinator.active()
            lease = srv.get("leases", srv.namespace, coordinator.name)
            assert lease["spec"]["holderIdentity"] == ""  # released
    finally:
        api.close()


def _status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            resp.read()
            return int(resp.status)
    except urllib.error.HTTPError as err:
        with err:
            return int(err.code)


def test_readyz_fails_until_the_member_holds_its_lease(any_api_server: Any) -> None:
    """The ring's namespace does not exist yet: the Lease cannot be created (logged, retried),
    /readyz/shard-ring answers 503 although the caches synced; once the namespace exists,
    200."""
    srv = any_api_server
    ring_ns = f"{srv.namespace}-ring"
    api = srv.api_client()
    manager = Manager(api, health_address="127.0.0.1:0", sharding=ShardingConfig(
        "probe", namespace=ring_ns, name="probe-a", lease_duration=3, renew_deadline=2,
        retry_period=0.25))
    stop = threading.Event()
    thread = threading.Thread(target=manager.start, args=(stop,))
    thread.start()
    created = False
    try:
        deadline = time.monotonic() + 10
        while not manager.caches_synced():
            assert time.monotonic() < deadline
            time.sleep(0.02)
        assert manager.health_server is not None
        base = manager.health_server.url  # bound at start
        time.sleep(0.5)  # a few renewal attempts fail meanwhile
        assert _status(f"{base}/readyz/{SHARD_RING_CHECK}") == 503
        assert _status(f"{base}/readyz") == 503
        srv.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ring_ns}})
        created = True
        while _status(f"{base}/readyz") != 200:
            assert time.monotonic() < deadline + 10, "never ready"
            time.sleep(0.05)
        assert _status(f"{base}/readyz/{SHARD_RING_CHECK}") == 200
    finally:
        stop.set()
        thread.join(10)
        api.close()
        if created:
            srv.delete("namespaces", None, ring_ns)
    assert not thread.is_alive()

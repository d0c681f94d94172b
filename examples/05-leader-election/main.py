"""Leader election: two replicas of a Manager share a Lease; only the leader runs its controller,
and when the leader stops the standby takes over.

Every replica keeps its informers' caches warm (and its controller's queue collects keys), so
the standby starts reconciling the moment it acquires the Lease, without a relist. The
controller stamps the ConfigMaps labelled ``example.com/leader-election-demo`` with the
identity of the replica that reconciled them.

    python examples/05-leader-election/main.py          # two replicas here, embedded server
    python examples/05-leader-election/main.py --kubeconfig ~/.kube/config   # same, on a cluster

With ``--identity NAME`` it runs a single replica and no demo: start ``--identity a`` and
``--identity b`` in two terminals against one cluster, label a ConfigMap, and stop the leader
with Ctrl-C to watch the other take over.

The demo's lease timings (4 s lease, 3 s renew deadline, 0.5 s retry period) make the handover
quick; client-go's defaults are 15 s, 10 s and 2 s. A leader that stops releases the Lease, so
its standby takes over within a retry period; a leader that crashes is replaced once the Lease
expires.
"""

from __future__ import annotations

import argparse
import copy
import threading
from typing import Any

from informers import (
    LeaderElectionConfig,
    ListOptions,
    Manager,
    SharedInformerFactory,
    split_meta_namespace_key,
)
from informers.client import Client
from informers.controller import Controller, EnqueueRequestForObject
from informers.errors import NotFoundError
from informers.signals import SignalHandler
from informers.testing import connect
from informers.types import ConfigMap, Lease

LEASE = "leader-election-example"
LABEL = "example.com/leader-election-demo"
STAMP = "example.com/reconciled-by"


def only_demo_objects(options: ListOptions) -> None:
    options.label_selector = LABEL  # every list and watch asks only for the labelled ConfigMaps


def new_replica(api_client: Any, identity: str, namespace: str) -> Manager:
    """One replica: a Manager with leader election and one leader-only controller."""
    factory = SharedInformerFactory(api_client, namespace=namespace,
                                    tweak_list_options=only_demo_objects)
    election = LeaderElectionConfig(LEASE, namespace, identity=identity, lease_duration=4.0,
                                    renew_deadline=3.0, retry_period=0.5)
    manager = Manager(factory=factory, leader_election=election)
    config_maps = factory.core().v1().config_maps()
    lister = config_maps.lister()
    writer = Client(api_client)

    def reconcile(key: str) -> None:
        ns, name = split_meta_namespace_key(key)
        try:
            cached = lister.config_maps(ns).get(name)
        except NotFoundError:
            return
        if (cached["metadata"].get("annotations") or {}).get(STAMP) == identity:
            return
        stamped = copy.deepcopy(cached)  # cached objects are shared: never modify them
        stamped["metadata"].setdefault("annotations", {})[STAMP] = identity
        writer.update(stamped, resource="configmaps")  # if stale: Conflict, and a retry
        print(f"{identity} stamped {key}")

    controller = Controller(f"stamper-{identity}", reconcile)
    controller.watch(config_maps.informer(), EnqueueRequestForObject)
    manager.add(controller)  # needs_leader=True: runs only while this replica leads
    return manager


class Replica:
    """A replica running on its own thread, as if it were its own process."""

    def __init__(self, api_client: Any, identity: str, namespace: str) -> None:
        self.identity = identity
        self.manager = new_replica(api_client, identity, namespace)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.manager.start, args=(self.stop_event,),
                                       name=identity)

    def start(self) -> Replica:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.stop_event.set()
        self.thread.join()


def holder(api_client: Any, namespace: str) -> str:
    lease = Client(api_client).get("leases", LEASE, namespace, object_type=Lease)
    return lease.get("spec", {}).get("holderIdentity") or "(nobody)"


def demo(api_client: Any, namespace: str, stop: threading.Event, replicas: list[Replica]) -> None:
    """Start two replicas, let the leader work, stop it, and watch the standby take over."""
    reader = Client(api_client)

    def until(cond: Any) -> None:
        while not stop.is_set() and not cond():
            stop.wait(0.02)

    def stamp_of(name: str) -> str | None:
        cm = reader.get("configmaps", name, namespace, object_type=ConfigMap)
        return cm["metadata"].get("annotations", {}).get(STAMP)

    def create(name: str) -> None:
        reader.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": name, "labels": {LABEL: "true"}}}, namespace=namespace)

    a = Replica(api_client, "replica-a", namespace).start()
    replicas.append(a)
    until(a.manager.elected.is_set)
    b = Replica(api_client, "replica-b", namespace).start()
    replicas.append(b)
    until(b.manager.caches_synced)
    if stop.is_set():
        return
    print(f"replica-a leads, replica-b stands by; lease holder: {holder(api_client, namespace)}")
    create("first")
    until(lambda: stamp_of("first") == "replica-a")
    a.stop()
    print("replica-a stopped and released the lease")
    until(b.manager.elected.is_set)
    if stop.is_set():
        return
    print(f"replica-b took over; lease holder: {holder(api_client, namespace)}")
    create("second")
    until(lambda: stamp_of("first") == stamp_of("second") == "replica-b")


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig, or else a new embedded API server.
    with connect(args.kubeconfig) as (api_client, _):
        replicas: list[Replica] = []
        try:
            if args.identity:  # one replica, as in a Deployment; start the others elsewhere
                replicas.append(Replica(api_client, args.identity, args.namespace).start())
            else:
                demo(api_client, args.namespace, stop, replicas)
            stop.wait(args.duration)
        finally:
            for replica in replicas:
                replica.stop()
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="Two Manager replicas with leader election.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--namespace", default="default", help="of the Lease and the ConfigMaps")
    parser.add_argument("--identity", help="run one replica with this identity (no demo)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    signals = SignalHandler(stop)  # Ctrl-C sets the stop event; a second one exits at once
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        return run(args, signals.stop_event)
    finally:
        signals.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())

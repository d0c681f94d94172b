"""One replica of a sharded test controller, run as a process by tests/test_shard_replicas.py.

It reconciles every ConfigMap of the ring's share, over and over (each reconcile takes
``--work`` seconds and asks to be requeued soon), writing ``start`` and ``end`` lines with
the system-wide monotonic time to a log shared by all replicas (one ``os.write`` per line on
an ``O_APPEND`` file: lines do not interleave). SIGTERM stops it cleanly (Manager.run).

Usage: python tests/shard_replica.py KUBECONFIG RING NAME LOG LEASE_NAMESPACE [WORK]
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time

from kubernetes import config as kube_config

from informers.controller import Controller, EnqueueRequestForObject
from informers.controller.result import Result
from informers.factory import SharedInformerFactory
from informers.list_watch import ListOptions
from informers.manager import Manager
from informers.shard.coordinator import ShardingConfig

LEASE_DURATION = 3.0
RENEW_DEADLINE = 2.0
RETRY_PERIOD = 0.25


def main() -> None:
    kubeconfig, ring, name, log_path, lease_namespace = sys.argv[1:6]
    work = float(sys.argv[6]) if len(sys.argv) > 6 else 0.02
    logging.basicConfig(level=logging.INFO, format=f"{name} %(levelname)s %(name)s %(message)s")
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(event: str, key: str) -> None:
        line = json.dumps({"e": event, "k": key, "m": name, "t": time.monotonic()})
        os.write(fd, (line + "\n").encode())

    def reconcile(key: str) -> Result:
        note("start", key)
        time.sleep(work)
        note("end", key)
        return Result(requeue_after=0.05)

    api = kube_config.new_client_from_config(kubeconfig)

    def only_the_test_objects(options: ListOptions) -> None:
        options.label_selector = f"shard-test={ring}"

    factory = SharedInformerFactory(api, tweak_list_options=only_the_test_objects)
    manager = Manager(api, factory=factory, sharding=ShardingConfig(
        ring, namespace=lease_namespace, name=name, lease_duration=LEASE_DURATION,
        renew_deadline=RENEW_DEADLINE, retry_period=RETRY_PERIOD), shutdown_timeout=5)
    controller = Controller("shard-test", reconcile, workers=2, drain_timeout=2)
    controller.watch(factory.core().v1().config_maps().informer(),
                     EnqueueRequestForObject)
    manager.add(controller, needs_leader=False)
    note("ready", "")
    manager.run()
    note("stopped", "")


if __name__ == "__main__":
    main()

"""A tiny node agent: runs what a kubelet would run on this node, with a runtime of your own.

    python examples/02-node-agent/main.py                     # embedded API server + temp manifests
    python examples/02-node-agent/main.py --node-name node-1 \\
        --pod-manifest-path /etc/kubernetes/manifests --kubeconfig ~/.kube/config --duration 60

The agent merges static pod manifests and the pods bound to the node in the API server exactly as
the kubelet's PodConfig does, and calls ``PrintingRuntime`` -- replace it with your own
(containers, processes, VMs, ...) -- from one worker per pod: a pod is never handled by two
threads at once, updates for a busy pod coalesce to the latest, and failures are retried with
backoff.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
from collections.abc import Mapping
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import ApiClient

from controllers.kubelet import NodeAgent, SyncPodType, pod_key
from informers.clock import REAL_CLOCK
from informers.testing import ApiServer


class PrintingRuntime:
    """A Runtime that "runs" a pod by printing it; replace the prints with real work."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, dict[str, Any]] = {}

    def sync_pod(self, pod: Mapping[str, Any], update_type: SyncPodType) -> None:
        uid = pod["metadata"]["uid"]
        images = ", ".join(c["image"] for c in pod["spec"]["containers"])
        with self._lock:
            known = uid in self._running
            self._running[uid] = dict(pod)
        if not known:
            print(f"start  {pod_key(pod)} ({images})", flush=True)
        elif update_type == SyncPodType.UPDATE:
            print(f"update {pod_key(pod)} ({images})", flush=True)

    def kill_pod(self, pod: Mapping[str, Any]) -> None:
        with self._lock:
            known = self._running.pop(pod["metadata"]["uid"], None) is not None
        if known:
            print(f"stop   {pod_key(pod)}", flush=True)

    def running_pods(self) -> list[dict[str, Any]]:
        with self._lock:
            return list(self._running.values())


MANIFEST = """\
apiVersion: v1
kind: Pod
metadata:
  name: {name}
spec:
  containers:
  - name: main
    image: {image}
"""


def write_manifest(directory: str, name: str, image: str) -> None:
    tmp = os.path.join(directory, f".{name}.tmp")  # dot-files are ignored: write, then rename
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(MANIFEST.format(name=name, image=image))
    os.replace(tmp, os.path.join(directory, f"{name}.yaml"))


def demo(node: str, step: float) -> None:
    """Drive the agent with a short script against the embedded API server."""
    stop = threading.Event()
    with tempfile.TemporaryDirectory() as manifests, ApiServer() as server:
        client = server.api_client()
        write_manifest(manifests, "etcd", "etcd:3.5")
        pod = {"apiVersion": "v1", "kind": "Pod",
               "metadata": {"name": "web", "namespace": "default"},
               "spec": {"nodeName": node, "containers": [{"name": "main", "image": "nginx:1"}]}}
        with NodeAgent(node, pod_manifest_path=manifests, api_client=client,
                       runtime=PrintingRuntime(), housekeeping_period=0.5):
            for action in (
                lambda: server.create(pod),
                lambda: server.patch("pods", "default", "web", {"metadata": {
                    "labels": {"tier": "frontend"}}}),
                lambda: write_manifest(manifests, "etcd", "etcd:3.6"),
                lambda: server.delete("pods", "default", "web"),
                lambda: os.remove(os.path.join(manifests, "etcd.yaml")),
            ):
                REAL_CLOCK.sleep(step, stop)
                action()
            REAL_CLOCK.sleep(step, stop)
        client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--node-name", default="node-1")
    parser.add_argument("--pod-manifest-path")
    parser.add_argument("--kubeconfig")
    parser.add_argument("--duration", type=float, default=None)
    parser.add_argument("--step", type=float, default=1.0, help="demo: seconds between steps")
    args = parser.parse_args(argv)
    if not (args.pod_manifest_path or args.kubeconfig):
        demo(args.node_name, args.step)
        return 0
    client: ApiClient | None = None
    if args.kubeconfig:  # the official client's loader has no annotations
        client = kube_config.new_client_from_config(args.kubeconfig)  # type: ignore[no-untyped-call]
    with NodeAgent(args.node_name, pod_manifest_path=args.pod_manifest_path, api_client=client,
                   runtime=PrintingRuntime()):
        try:
            REAL_CLOCK.wait_event(threading.Event(), args.duration)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

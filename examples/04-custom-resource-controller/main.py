"""Runs the Widget operator (``widget.py``): every ``Widget`` (example.com/v1) owns a ConfigMap
of the same name whose data follow the Widget's spec, on top of its namespace's defaults.

Without ``--kubeconfig`` it runs on an embedded API server (``crd.yaml`` installed there too)
and plays a demo: a Widget created, changed, its ConfigMap edited by hand, defaults set, the
Widget deleted. ``docs/tutorial.md`` builds ``widget.py`` step by step.

    python examples/04-custom-resource-controller/main.py       # embedded API server and a demo
    kubectl apply -f examples/04-custom-resource-controller/crd.yaml
    python examples/04-custom-resource-controller/main.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from widget import DEFAULTS, WIDGETS, setup

from informers import Manager
from informers.client import Client
from informers.errors import NotFound
from informers.signals import SignalHandler
from informers.testing import connect
from informers.testing.runner import eventually, run_manager
from informers.yaml_loader import load_yaml

CRD_FILE = Path(__file__).resolve().parent / "crd.yaml"


def demo(client: Client) -> None:
    """Create, change and delete a Widget, tamper with its ConfigMap, set defaults."""

    def until(what: str, done: Callable[[dict[str, Any] | None], bool]) -> None:
        def config_map() -> dict[str, Any] | None:
            try:
                return client.get("configmaps", "blue", "default")
            except NotFound:
                return None

        eventually(lambda: done(config_map()), timeout=10, message=what)
        cm = config_map()
        print(f"{what}: ConfigMap default/blue {'is gone' if cm is None else cm['data']}")

    def data_is(**want: str) -> Callable[[dict[str, Any] | None], bool]:
        return lambda cm: cm is not None and cm.get("data") == want

    client.create({"apiVersion": WIDGETS.api_version, "kind": WIDGETS.kind,
                   "metadata": {"name": "blue", "namespace": "default"},
                   "spec": {"color": "blue", "size": 3}})
    until("widget created", data_is(color="blue", size="3"))
    client.patch(WIDGETS, "blue", {"spec": {"size": 5}}, "default")
    until("widget spec changed", data_is(color="blue", size="5"))
    client.patch("configmaps", "blue", {"data": {"color": "red"}}, "default")
    until("ConfigMap edited by hand", data_is(color="blue", size="5"))
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": DEFAULTS, "namespace": "default"},
                   "data": {"shape": "round"}})
    until("defaults set", data_is(color="blue", shape="round", size="5"))
    client.delete(WIDGETS, "blue", "default")
    until("widget deleted", lambda cm: cm is None)


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig (with crd.yaml applied), or else a new embedded API server.
    with connect(args.kubeconfig) as (api_client, server):
        client = Client(api_client, field_manager="widget-controller")
        if server is not None:  # the embedded server serves CRDs as kube-apiserver does
            client.create(load_yaml(CRD_FILE.read_text()))
            eventually(lambda: client.list(WIDGETS, "default") is not None)
        manager = Manager(api_client, shutdown_timeout=5.0)
        setup(manager, client, args.workers)
        with run_manager(manager):  # started, caches synced; stopped and joined on exit
            if server is not None:
                demo(client)
            stop.wait(args.duration)
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="A Widget controller that owns ConfigMaps.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent reconciles (default 2)")
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

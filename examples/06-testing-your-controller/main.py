"""A small controller, ready to be tested: every Namespace labelled ``team`` gets a ConfigMap
``team-info`` that names the team. ``test_main.py`` beside this file tests it against the
embedded API server with pytest; copy both and adapt them.

    python examples/06-testing-your-controller/main.py          # embedded API server and a demo
    python examples/06-testing-your-controller/main.py --kubeconfig ~/.kube/config
    pytest examples/06-testing-your-controller                  # its tests

The parts a test needs are separate: :class:`TeamInfoReconciler` (the logic, reading only
listers) and :func:`new_controller` (the wiring); ``main`` only adds the Manager, the demo and
the command line.
"""

from __future__ import annotations

import argparse
import threading
from typing import Any

from informers import Lister, Manager, SharedInformerFactory
from informers.client import Client
from informers.controller import (
    Controller,
    EnqueueRequestForObject,
    EnqueueRequestsFromMapFunc,
    LabelChangedPredicate,
    Result,
)
from informers.errors import NotFoundError
from informers.signals import SignalHandler
from informers.testing import ApiServer, connect

TEAM_LABEL = "team"
CONFIG_MAP = "team-info"


class TeamInfoReconciler:
    """Makes a Namespace's ``team-info`` ConfigMap match its ``team`` label.

    Reads the Namespace and the ConfigMap from listers (the informers' caches) and writes
    only when they differ; an API error raises, and the controller retries the key.
    """

    def __init__(self, api_client: Any, namespaces: Lister, config_maps: Lister) -> None:
        self.client = Client(api_client)
        self.namespaces = namespaces
        self.config_maps = config_maps

    def reconcile(self, key: str) -> Result | None:
        """``key`` is a Namespace's name (Namespaces are cluster-scoped)."""
        try:
            namespace = self.namespaces.get(key)
        except NotFoundError:
            return None  # deleted: its ConfigMaps went with it
        team = (namespace["metadata"].get("labels") or {}).get(TEAM_LABEL)
        if not team or namespace["metadata"].get("deletionTimestamp"):
            return None
        want: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": CONFIG_MAP, "namespace": key},
                                "data": {"team": team, "namespace": key}}
        try:
            have = self.config_maps.config_maps(key).get(CONFIG_MAP)
        except NotFoundError:
            self.client.create(want)
            return None
        if have.get("data") != want["data"]:
            want["metadata"]["resourceVersion"] = have["metadata"]["resourceVersion"]
            self.client.update(want)  # conditional on the resourceVersion read
        return None


def namespace_of_team_info(config_map: dict[str, Any]) -> list[str]:
    """Maps a ``team-info`` ConfigMap to its Namespace's key, so that an edit or a delete of
    it is put right; other ConfigMaps map to nothing."""
    meta = config_map["metadata"]
    return [meta["namespace"]] if meta["name"] == CONFIG_MAP else []


def new_controller(factory: SharedInformerFactory, api_client: Any) -> Controller:
    """The controller, wired to ``factory``'s informers (start the factory to run it)."""
    namespaces = factory.core().v1().namespaces()
    config_maps = factory.core().v1().config_maps()
    reconciler = TeamInfoReconciler(api_client, namespaces.lister(), config_maps.lister())
    controller = Controller("team-info", reconciler.reconcile)
    controller.watch(namespaces.informer(), EnqueueRequestForObject, LabelChangedPredicate())
    controller.watch(config_maps.informer(),
                     lambda c: EnqueueRequestsFromMapFunc(c, namespace_of_team_info))
    return controller


def demo(server: ApiServer, stop: threading.Event) -> None:
    def show_when(what: str, team: str | None) -> None:
        def current() -> str | None:
            cm = server.get("configmaps", "checkout", CONFIG_MAP)
            return None if cm is None else cm["data"]["team"]
        while not stop.is_set() and current() != team:
            stop.wait(0.02)
        print(f"{what}: team-info says team={current()}")

    server.create({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": "checkout", "labels": {TEAM_LABEL: "payments"}}})
    show_when("namespace created", "payments")
    server.patch("namespaces", None, "checkout", {"metadata": {"labels": {TEAM_LABEL: "shop"}}})
    show_when("label changed", "shop")
    server.delete("configmaps", "checkout", CONFIG_MAP)
    show_when("ConfigMap deleted by hand", "shop")


def run(args: argparse.Namespace, stop: threading.Event) -> int:
    # The cluster of the kubeconfig, or else a new embedded API server.
    with connect(args.kubeconfig) as (api_client, server):
        manager = Manager(api_client)
        assert manager.factory is not None
        manager.add(new_controller(manager.factory, api_client))

        def beside_the_manager() -> None:
            while not stop.is_set() and not manager.elected.is_set():
                stop.wait(0.02)  # until the caches synced and the controller started
            if server is not None:
                demo(server, stop)
            stop.wait(args.duration)
            stop.set()

        script = threading.Thread(target=beside_the_manager, name="demo", daemon=True)
        script.start()
        try:
            manager.start(stop)  # blocks until stop is set; then stops everything in order
        finally:
            stop.set()
            script.join()
    return 0


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(description="Give every team's Namespace a team-info "
                                                 "ConfigMap.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
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

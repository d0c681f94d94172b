"""examples/04-custom-resource-controller on both servers: the Widget CRD installed from its
``crd.yaml``, the controller built with ControllerBuilder (for_/owns/watches) and run with
run_manager; the ConfigMaps really exist, follow the Widget and its namespace's defaults, come
back when edited or deleted, go with their Widget; a name taken by another ConfigMap is a
terminal error.

The CRD is cluster-wide: on the shared real control plane it is installed by the first test
that needs it and deleted after this module's last test."""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from informers.client import Client
from informers.errors import AlreadyExists, NotFound
from informers.factory import SharedInformerFactory
from informers.manager import Manager
from informers.resources import Resource
from informers.testing.runner import eventually, run_manager
from informers.yaml_loader import load_yaml

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "04-custom-resource-controller"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", namespaced=False)


def load() -> Any:
    spec = importlib.util.spec_from_file_location("widget_example", EXAMPLE / "widget.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["widget_example"] = module
    spec.loader.exec_module(module)
    return module


example = load()
CRD = load_yaml((EXAMPLE / "crd.yaml").read_text())


def install_crd(client: Client) -> None:
    with contextlib.suppress(AlreadyExists):
        client.create(CRD)

    def established() -> bool:
        crd = client.get(CRDS, CRD["metadata"]["name"])
        return any(c["type"] == "Established" and c["status"] == "True"
                   for c in (crd.get("status") or {}).get("conditions") or [])

    eventually(established, timeout=10)


@pytest.fixture(scope="module")
def real_crd_deleted_at_the_end(request: pytest.FixtureRequest) -> Iterator[None]:
    plane = request.getfixturevalue("real_api_server")
    yield
    api = plane.api_client()
    try:
        with contextlib.suppress(NotFound):
            Client(api).delete(CRDS, CRD["metadata"]["name"])
    finally:
        api.close()


@pytest.fixture
def operator(any_api_server: Any, request: pytest.FixtureRequest
             ) -> Iterator[tuple[Manager, Client, str]]:
    api = any_api_server.api_client()
    client = Client(api, field_manager="widget-controller")
    if any_api_server.plane is not None:
        request.getfixturevalue("real_crd_deleted_at_the_end")
    install_crd(client)
    ns = any_api_server.namespace
    eventually(lambda: client.list(example.WIDGETS, ns) is not None)
    manager = Manager(api, factory=SharedInformerFactory(api, namespace=ns), shutdown_timeout=5)
    example.setup(manager, client, workers=1)
    yield manager, client, ns
    api.close()


def widget(name: str, ns: str, **spec: object) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "namespace": ns}, "spec": dict(spec)}


def test_config_maps_exist_and_follow_the_widget(operator: tuple[Manager, Client, str]) -> None:
    manager, client, ns = operator

    def cm(name: str) -> dict[str, Any] | None:
        try:
            return client.get("configmaps", name, ns)
        except NotFound:
            return None

    with run_manager(manager):
        created = client.create(widget("green", ns, color="green", size=1))
        uid = created["metadata"]["uid"]
        green = eventually(lambda: cm("green"))
        assert green["data"] == {"color": "green", "size": "1"}
        assert green["metadata"]["ownerReferences"] == [{
            "apiVersion": "example.com/v1", "kind": "Widget", "name": "green", "uid": uid,
            "controller": True, "blockOwnerDeletion": True}]
        assert green["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "widget-controller"}
        eventually(lambda: client.get(example.WIDGETS, "green", ns).get("status")
                   == {"observedGeneration": 1, "configMap": "green"})

        # The spec changes: the ConfigMap follows, and the status records the new generation.
        client.patch(example.WIDGETS, "green", {"spec": {"size": 2, "shape": "round"}}, ns)
        eventually(lambda: (cm("green") or {}).get("data")
                   == {"color": "green", "shape": "round", "size": "2"})
        eventually(lambda: client.get(example.WIDGETS, "green", ns).get("status")
                   == {"observedGeneration": 2, "configMap": "green"})

        # Edited or deleted by hand: put back (the owner's key is enqueued).
        client.patch("configmaps", "green", {"data": {"color": "red"}}, ns)
        eventually(lambda: (cm("green") or {}).get("data", {}).get("color") == "green")
        client.delete("configmaps", "green", ns)
        eventually(lambda: cm("green"))

        # The namespace's defaults (watches with a map function): under the Widget's spec.
        client.create({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "widget-defaults", "namespace": ns},
                       "data": {"color": "grey", "finish": "matte"}})
        eventually(lambda: (cm("green") or {}).get("data") == {
            "color": "green", "finish": "matte", "shape": "round", "size": "2"})

        # The Widget goes: so does its ConfigMap.
        client.delete(example.WIDGETS, "green", ns)
        eventually(lambda: cm("green") is None)


def test_a_config_map_whose_widget_is_gone_is_deleted(
        operator: tuple[Manager, Client, str]) -> None:
    manager, client, ns = operator
    with run_manager(manager):
        client.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
            "name": "ghost", "namespace": ns, "ownerReferences": [{
                "apiVersion": "example.com/v1", "kind": "Widget", "name": "ghost",
                "uid": "00000000-0000-0000-0000-000000000000", "controller": True}]}})

        def gone() -> bool:
            try:
                client.get("configmaps", "ghost", ns)
            except NotFound:
                return True
            return False

        eventually(gone)


def test_a_name_taken_by_another_config_map_is_a_terminal_error(
        operator: tuple[Manager, Client, str], caplog: pytest.LogCaptureFixture) -> None:
    manager, client, ns = operator
    client.create({"apiVersion": "v1", "kind": "ConfigMap",
                   "metadata": {"name": "taken", "namespace": ns}, "data": {"x": "y"}})
    caplog.set_level(logging.ERROR, "informers.controller.controller")
    with run_manager(manager):
        client.create(widget("taken", ns, color="red"))
        client.create(widget("free", ns, color="blue"))
        # one worker, a FIFO queue: "taken" was reconciled before "free"
        eventually(lambda: client.get("configmaps", "free", ns))
        messages = [r.getMessage() for r in caplog.records if f"{ns}/taken" in r.getMessage()]
        assert messages == [f'controller "widget-controller": terminal error reconciling '
                            f"{ns}/taken, not retrying: ConfigMap {ns}/taken exists and is not "
                            f"owned by Widget {ns}/taken"]
    taken = client.get("configmaps", "taken", ns)
    assert taken["data"] == {"x": "y"} and "ownerReferences" not in taken["metadata"]
    assert client.get(example.WIDGETS, "taken", ns).get("status") is None

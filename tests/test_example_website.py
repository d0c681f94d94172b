"""examples/07-website-operator on both servers: the builder, server-side apply of the owned
objects, the finalizer and the Ready condition; its demo; the reconciler's size."""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from pathlib import Path

import pytest

from informers.client import Client
from informers.errors import AlreadyExists, NotFound
from informers.factory import SharedInformerFactory
from informers.manager import Manager
from informers.resources import Resource
from informers.testing.runner import eventually, run_manager

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "07-website-operator"
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions",
                "CustomResourceDefinition", namespaced=False)


def load():
    if str(EXAMPLE) not in sys.path:  # website.py imports website_types, as main.py does
        sys.path.insert(0, str(EXAMPLE))
    spec = importlib.util.spec_from_file_location("website_example", EXAMPLE / "website.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["website_example"] = module
    spec.loader.exec_module(module)
    return module


website = load()


@pytest.fixture(scope="module")
def real_crd_deleted_at_the_end(request):
    """The CRD is cluster-wide on the shared real control plane: gone after this module."""
    plane = request.getfixturevalue("real_api_server")
    yield
    api = plane.api_client()
    try:
        with contextlib.suppress(NotFound):
            Client(api).delete(CRDS, website.CRD["metadata"]["name"])
    finally:
        api.close()


@pytest.fixture
def operator(any_api_server, request):
    api = any_api_server.api_client()
    client = Client(api, field_manager=website.MANAGER)
    if any_api_server.embedded is not None:
        any_api_server.embedded.register_resource("example.com", "v1", "websites", "Website",
                                                  has_status=True)
    else:
        request.getfixturevalue("real_crd_deleted_at_the_end")
        try:
            client.create(website.CRD, resource=CRDS)
        except AlreadyExists:
            pass
        def established() -> bool:
            crd = client.get(CRDS, "websites.example.com")
            return any(c["type"] == "Established" and c["status"] == "True"
                       for c in (crd.get("status") or {}).get("conditions") or [])

        eventually(established, timeout=10)
        eventually(lambda: client.list(website.WEBSITES, any_api_server.namespace) is not None)
    ns = any_api_server.namespace
    manager = Manager(api, factory=SharedInformerFactory(api, namespace=ns), shutdown_timeout=5)
    cleaned: list[str] = []
    website.setup(manager, client, cleanup=lambda site: cleaned.append(site["metadata"]["name"]))
    yield manager, client, ns, cleaned
    api.close()


def new_site(ns: str, **spec: object) -> dict:
    return {"apiVersion": "example.com/v1", "kind": "Website",
            "metadata": {"name": "site", "namespace": ns}, "spec": dict(spec)}


def test_the_website_gets_its_children_a_finalizer_and_a_ready_condition(operator):
    manager, client, ns, cleaned = operator
    with run_manager(manager):
        client.create(new_site(ns, message="hello", replicas=2, image="nginx:1.27"))
        service = eventually(lambda: client.get("services", "site", ns), timeout=10)
        assert service["metadata"]["ownerReferences"][0]["kind"] == "Website"
        cm = client.get("configmaps", "site", ns)
        assert cm["data"] == {"index.html": "hello"}
        dep = client.get("deployments", "site", ns)
        assert dep["spec"]["replicas"] == 2
        assert {e["manager"] for e in dep["metadata"]["managedFields"]} >= {website.MANAGER}
        site = eventually(lambda: client.get(website.WEBSITES, "site", ns)["status"])
        site = client.get(website.WEBSITES, "site", ns)
        assert site["metadata"]["finalizers"] == [website.FINALIZER]
        ready = site["status"]["conditions"][0]
        assert (ready["type"], ready["status"], ready["reason"]) == (
            "Ready", "False", "Progressing")
        # the Deployment becomes ready: the condition follows
        client.patch_status("deployments", "site",
                            {"status": {"replicas": 2, "readyReplicas": 2}}, ns)
        eventually(lambda: client.get(website.WEBSITES, "site", ns)["status"]["conditions"][0]
                   ["status"] == "True")
        # a spec change is applied
        client.patch(website.WEBSITES, "site", {"spec": {"message": "bye"}}, ns)
        eventually(lambda: client.get("configmaps", "site", ns)["data"]["index.html"] == "bye")
        # deletion runs the cleanup, then the finalizer goes and with it the Website
        client.delete(website.WEBSITES, "site", ns)
        eventually(lambda: "site" in cleaned)  # cleanups must be idempotent: a retry reruns it

        def gone() -> bool:
            try:
                client.get(website.WEBSITES, "site", ns)
            except NotFound:
                return True
            return False

        eventually(gone)


def test_the_demo_runs_on_the_embedded_server(capsys):
    spec = importlib.util.spec_from_file_location("website_main", EXAMPLE / "main.py")
    assert spec is not None and spec.loader is not None
    main = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(main)
    assert main.main(["--duration", "0"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "Website default/demo: ConfigMap, Deployment and Service applied"]


def test_the_reconciler_is_at_most_about_fifty_lines():
    source = (EXAMPLE / "website.py").read_text().splitlines()
    start = next(i for i, line in enumerate(source) if line.startswith("class WebsiteReconciler"))
    end = next(i for i, line in enumerate(source) if line.startswith("def setup"))
    body = [line for line in source[start:end] if line.strip()]
    assert len(body) <= 50, len(body)

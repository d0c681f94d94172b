"""informers.testing.crd_installer (envtest's CRD install) against the embedded server; the real
control plane runs it in tests/test_testing_pytest_plugin.py and the sharding parity suite."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from informers.errors import StatusError
from informers.testing.crd_installer import install_crds, uninstall_crds
from informers.testing.errors import ControlPlaneError

CRD_FILE = Path(__file__).resolve().parent.parent / "examples" / "07-website-operator" / "crd.yaml"


def widget_crd(plural: str = "widgets", kind: str = "Widget") -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.example.org"},
            "spec": {"group": "example.org", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
                         "openAPIV3Schema": {"type": "object",
                                             "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_install_from_paths_and_objects_then_update_and_uninstall(api_server, api_client):
    installed = install_crds(api_client, [CRD_FILE], crds=[widget_crd()])
    assert [c["metadata"]["name"] for c in installed] == ["websites.example.com",
                                                          "widgets.example.org"]
    assert api_server.list("customresourcedefinitions") != []
    api_server.create({"apiVersion": "example.org/v1", "kind": "Widget",
                       "metadata": {"name": "w", "namespace": "default"}})
    # Installing again updates what exists (envtest CreateCRDs), here adding a served version.
    changed = widget_crd()
    changed["spec"]["versions"].append(copy.deepcopy(changed["spec"]["versions"][0]))
    changed["spec"]["versions"][1].update(name="v2", storage=False)
    (updated,) = install_crds(api_client, crds=[changed])
    assert [v["name"] for v in updated["spec"]["versions"]] == ["v1", "v2"]
    assert api_server.get("widgets", "default", "w") is not None
    uninstall_crds(api_client, [changed, changed])  # gone twice: the second is skipped
    assert [c["metadata"]["name"] for c in api_server.list("customresourcedefinitions")] == [
        "websites.example.com"]


def test_bad_input(api_client, tmp_path):
    with pytest.raises(FileNotFoundError):
        install_crds(api_client, [tmp_path / "missing.yaml"])
    bad = widget_crd()
    bad["metadata"]["name"] = "wrong.example.org"
    with pytest.raises(StatusError) as info:
        install_crds(api_client, crds=[bad])
    assert info.value.code == 422


def test_a_crd_that_is_never_served_times_out_naming_it(api_client):
    install_crds(api_client, crds=[widget_crd()])
    # Same kind under another plural: NamesAccepted False, never Established.
    clash = widget_crd("gadgets", "Widget")
    with pytest.raises(ControlPlaneError) as info:
        install_crds(api_client, crds=[clash], max_wait=0.3, poll_interval=0.05)
    assert str(info.value) == ("CRDs not served after 0.3 s: gadgets.example.org not "
                               "Established")

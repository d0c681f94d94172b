"""The CRD manifest (informers.crdgen.crd and .resource): the whole object for a kind with two
versions, and the resource-level errors, each naming the kind, version or field.

Upstream: controller-tools v0.19.0 ``pkg/crd/spec.go`` (versions sorted by name, a single
version is the storage version, "has no storage version", "does not serve any version") and
``pkg/crd/markers/crd.go`` (the resource markers).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Any, NotRequired, TypedDict

import pytest

from informers.crdgen import PrinterColumn, Scale, crd, crds, custom_resource
from informers.crdgen import markers as m
from informers.crdgen.crd import API_VERSION_DESCRIPTION, KIND_DESCRIPTION
from informers.crdgen.errors import ResourceDefinitionError
from informers.crdgen.resource import plural_of

TYPE_META = {"apiVersion": {"type": "string", "description": API_VERSION_DESCRIPTION},
             "kind": {"type": "string", "description": KIND_DESCRIPTION},
             "metadata": {"type": "object"}}


class BoxSpecV1(TypedDict):
    size: Annotated[int, m.Minimum(1)]
    replicas: NotRequired[int]


class BoxStatus(TypedDict, total=False):
    replicas: int
    selector: str


@custom_resource(group="example.com", version="v1", kind="Box", storage=True, status=True,
                 scope="Cluster", short_names=("bx",), categories=("all",),
                 scale=Scale(label_selector_path=".status.selector"),
                 printer_columns=(PrinterColumn("Size", ".spec.size", "integer",
                                                description="how big", priority=1),),
                 selectable_fields=(".spec.size",))
@m.schema(m.XValidation("self.metadata.name.size() < 20", message="name too long"))
class BoxV1(TypedDict):
    """A Box."""

    spec: BoxSpecV1
    status: NotRequired[BoxStatus]


@custom_resource(group="example.com", version="v1alpha1", kind="Box", scope="Cluster",
                 short_names=("bx",), categories=("all",), deprecated=True,
                 deprecation_warning="example.com/v1alpha1 Box is deprecated; use v1")
class BoxV1alpha1(TypedDict):
    spec: dict[str, Any]


def test_the_crd_of_a_kind_with_two_versions():
    assert crd(BoxV1alpha1, BoxV1) == {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "boxes.example.com"},
        "spec": {
            "group": "example.com", "scope": "Cluster",
            "names": {"kind": "Box", "listKind": "BoxList", "plural": "boxes",
                      "singular": "box", "shortNames": ["bx"], "categories": ["all"]},
            "versions": [
                {"name": "v1", "served": True, "storage": True,
                 "schema": {"openAPIV3Schema": {
                     "type": "object", "description": "A Box.", "required": ["spec"],
                     "properties": {
                         **TYPE_META,
                         "spec": {"type": "object", "required": ["size"], "properties": {
                             "size": {"type": "integer", "minimum": 1},
                             "replicas": {"type": "integer"}}},
                         "status": {"type": "object", "properties": {
                             "replicas": {"type": "integer"},
                             "selector": {"type": "string"}}}},
                     "x-kubernetes-validations": [{"rule": "self.metadata.name.size() < 20",
                                                   "message": "name too long"}]}},
                 "additionalPrinterColumns": [{"name": "Size", "jsonPath": ".spec.size",
                                               "type": "integer", "description": "how big",
                                               "priority": 1}],
                 "selectableFields": [{"jsonPath": ".spec.size"}],
                 "subresources": {"status": {}, "scale": {
                     "specReplicasPath": ".spec.replicas",
                     "statusReplicasPath": ".status.replicas",
                     "labelSelectorPath": ".status.selector"}}},
                {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
                 "deprecationWarning": "example.com/v1alpha1 Box is deprecated; use v1",
                 "schema": {"openAPIV3Schema": {
                     "type": "object", "required": ["spec"],
                     "properties": {**TYPE_META, "spec": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}}},
            ]},
    }


def test_the_order_of_the_classes_does_not_matter():
    assert crd(BoxV1, BoxV1alpha1) == crd(BoxV1alpha1, BoxV1)


@custom_resource(group="example.com", version="v1")
@dataclasses.dataclass
class Policy:
    spec: dict[str, Any]


def test_one_version_is_the_storage_version_and_names_default_from_the_kind():
    made = crd(Policy)
    assert made["metadata"] == {"name": "policies.example.com"}
    assert made["spec"]["names"] == {"kind": "Policy", "listKind": "PolicyList",
                                     "plural": "policies", "singular": "policy"}
    assert made["spec"]["scope"] == "Namespaced"
    assert [(v["name"], v["served"], v["storage"]) for v in made["spec"]["versions"]] == [
        ("v1", True, True)]


@pytest.mark.parametrize(("kind", "plural"), [
    ("Backup", "backups"), ("Policy", "policies"), ("Gateway", "gateways"), ("Box", "boxes"),
    ("Status", "statuses"), ("Patch", "patches"), ("Mesh", "meshes"),
])
def test_plural_of(kind, plural):
    assert plural_of(kind) == plural


def _version(version: str, *, storage: bool | None = None, served: bool = True,
             **extra: Any) -> type:
    cls = type(f"Thing_{version}", (), {"__annotations__": {"spec": dict[str, Any]}})
    cls = dataclasses.dataclass(cls)
    return custom_resource(group="example.com", version=version, kind="Thing",
                           storage=storage, served=served, **extra)(cls)


@pytest.mark.parametrize(("classes", "message"), [
    (lambda: [_version("v1", storage=True), _version("v2", storage=True)],
     "things.example.com: exactly one version must be the storage version "
     "(custom_resource(storage=True)), v1 and v2 are: versions v1, v2"),
    (lambda: [_version("v1"), _version("v2")],
     "things.example.com: exactly one version must be the storage version "
     "(custom_resource(storage=True)), none is: versions v1, v2"),
    (lambda: [_version("v1", storage=False)],
     "things.example.com: exactly one version must be the storage version "
     "(custom_resource(storage=True)), none is: versions v1"),
    (lambda: [_version("v1", served=False)],
     "things.example.com: no version is served (custom_resource(served=True))"),
    (lambda: [_version("v1", storage=True), _version("v1")],
     "things.example.com: version v1 is declared twice (Thing_v1 and Thing_v1)"),
    (lambda: [_version("v1", storage=True), _version("v2", scope="Cluster")],
     "things.example.com: versions v1 (Thing_v1) and v2 (Thing_v2) disagree on scope: "
     "'Namespaced' != 'Cluster'"),
    (lambda: [_version("v1", scale=Scale())],
     "things.example.com v1: scale path .status.replicas must name a field under .status"),
    (lambda: [dataclasses.dataclass(type("Plain", (), {"__annotations__": {"a": int}}))],
     "'Plain' is not marked with custom_resource()"),
])
def test_resource_level_errors_name_the_crd_and_the_version(classes, message):
    with pytest.raises(ResourceDefinitionError) as caught:
        crd(*classes())
    assert str(caught.value) == message


class Closed(TypedDict):
    size: int


@custom_resource(group="example.com", version="v1",
                 printer_columns=(PrinterColumn("Age", ".spec.age"),),
                 selectable_fields=(".spec.name",))
class Strict(TypedDict):
    spec: Closed


@custom_resource(group="example.com", version="v1",
                 selectable_fields=(".spec.name",))
class StrictField(TypedDict):
    spec: Closed


@custom_resource(group="example.com", version="v1")
class WithMetadata(TypedDict):
    metadata: dict[str, Any]
    spec: Closed


def test_columns_and_selectable_fields_must_name_fields():
    with pytest.raises(ResourceDefinitionError) as caught:
        crd(Strict)
    assert str(caught.value) == ("stricts.example.com v1: printer column 'Age' names "
                                 ".spec.age, which is not a field")
    with pytest.raises(ResourceDefinitionError) as caught:
        crd(StrictField)
    assert str(caught.value) == ("strictfields.example.com v1: selectable field .spec.name "
                                 "is not a field")


def test_metadata_must_not_be_declared():
    with pytest.raises(ResourceDefinitionError) as caught:
        crd(WithMetadata)
    assert str(caught.value) == ("WithMetadata.metadata: apiVersion, kind and metadata are "
                                 "added by the generator and must not be declared")


def test_custom_resource_decorates_typeddicts_and_dataclasses_only():
    with pytest.raises(ResourceDefinitionError) as caught:
        custom_resource(group="example.com", version="v1")(type("Plain", (), {}))
    assert str(caught.value) == ("'Plain': custom_resource() decorates a TypedDict or a "
                                 "dataclass")


def test_crds_groups_classes_by_kind_and_skips_unmarked_ones():
    made = crds([BoxV1, Closed, Policy, BoxV1alpha1])
    assert [(c["metadata"]["name"], [v["name"] for v in c["spec"]["versions"]])
            for c in made] == [("boxes.example.com", ["v1", "v1alpha1"]),
                               ("policies.example.com", ["v1"])]

"""Generated CRDs and ValidatingAdmissionPolicies on the API servers: every CRD
:mod:`informers.crdgen` writes is accepted by kube-apiserver v1.36.3 and by the embedded server
(``any_api_server``), objects round-trip through its schema (defaults applied, unknown fields
pruned, an enum violation and a CEL rule refused with their messages), and the generated
policy rejects on the real server.

CRDs and policies are cluster-wide and the real server is shared by the session: every test
uses its own API group, binds its policy to its own namespace, and deletes what it made.
"""

from __future__ import annotations

import copy
import datetime
import enum
import json
import secrets
import time
from typing import Annotated, Any, Literal, NotRequired, TypedDict

import pytest
from test_testing_crds import CRDS, call, install, ok, uninstall

from informers.crdgen import PrinterColumn, Scale, crd, custom_resource, schema
from informers.crdgen import markers as m
from informers.crdgen.command import dump_yaml
from informers.crdgen.markers import (
    Default,
    Enum,
    Maximum,
    MaxLength,
    Minimum,
    Pattern,
    XValidation,
)
from informers.crdgen.policy import validating_admission_policy

WAIT = 20.0


class Tier(enum.Enum):
    BASIC = "basic"
    PREMIUM = "premium"


@schema(XValidation("self.minReplicas <= self.replicas",
                    message="minReplicas must not exceed replicas"))
class GadgetSpec(TypedDict):
    """What a Gadget wants."""

    replicas: Annotated[int, Minimum(0), Maximum(10)]
    """How many copies."""
    minReplicas: NotRequired[Annotated[int, Default(0)]]
    tier: NotRequired[Annotated[Tier, Default("basic")]]
    mode: NotRequired[Literal["fast", "safe"]]
    name: NotRequired[Annotated[str, MaxLength(8), Pattern("^[a-z]+$")]]
    port: NotRequired[int | str]
    size: NotRequired[Annotated[str, Enum("S", "M", "L")]]


class GadgetStatus(TypedDict, total=False):
    replicas: int
    phase: str


@custom_resource(group="crdgen.example.com", version="v1", short_names=("gd",),
                 categories=("crdgen-test",), status=True,
                 scale=Scale(), printer_columns=(
                     PrinterColumn("Replicas", ".spec.replicas", "integer"),
                     PrinterColumn("Phase", ".status.phase")),
                 selectable_fields=(".spec.mode",))
class Gadget(TypedDict):
    """A Gadget of the crdgen tests."""

    spec: GadgetSpec
    status: NotRequired[GadgetStatus]


class Port(TypedDict):
    name: str
    port: Annotated[int, Minimum(1), Maximum(65535)]


class EveryMarker(TypedDict, total=False):
    """One field per marker and type: kube-apiserver must accept them all."""

    text: Annotated[str, m.Description("text"), m.MinLength(1), m.MaxLength(9),
                    m.Pattern("^[a-z]+$"), m.Default("abc")]
    number: Annotated[float, m.Minimum(0), m.ExclusiveMinimum(), m.Maximum(1),
                      m.ExclusiveMaximum()]
    count: Annotated[int, m.Enum(1, 2, 3)]
    when: datetime.datetime
    day: datetime.date
    blob: bytes
    uri: Annotated[str, m.Format("uri")]
    flag: bool
    mode: Literal["a", "b"]
    tier: Tier
    nothing: Annotated[str, m.Nullable()]
    port: int | str
    other: Annotated[str, m.IntOrString()]
    free: dict[str, Any]
    anything: Any
    kept: Annotated[Port, m.PreserveUnknownFields()]
    embedded: Annotated[dict[str, Any], m.EmbeddedResource()]
    tags: Annotated[list[str], m.UniqueItems(), m.MinItems(1), m.MaxItems(5)]
    atomic: Annotated[list[int], m.ListType("atomic")]
    ports: Annotated[list[Port], m.ListType("map"), m.ListMapKeys("name")]
    labels: Annotated[dict[str, str], m.MapType("atomic"), m.MinProperties(1),
                      m.MaxProperties(3)]
    grows: Annotated[int, m.XValidation("self >= oldSelf", message="may only grow",
                                        reason="FieldValueForbidden")]
    # (kube-apiserver estimates 'got ' + string(self) over its cost budget)
    positive: Annotated[int, m.XValidation("self > 0", message_expression="'must be > 0'")]


@custom_resource(group="crdgen.example.com", version="v1", scope="Cluster")
class Everything(TypedDict):
    spec: EveryMarker


def test_a_crd_with_every_marker_is_accepted(any_api_server):
    s = any_api_server
    group = f"t{secrets.token_hex(4)}.crdgen.example.com"
    made = crd(Everything)
    made["spec"]["group"] = group
    made["metadata"]["name"] = f"everythings.{group}"
    install(s, made)
    try:
        stored = ok(s, "GET", f"{CRDS}/everythings.{group}")
        assert stored["spec"]["versions"][0]["schema"] == made["spec"]["versions"][0]["schema"]
        created = ok(s, "POST", f"/apis/{group}/v1/everythings", {
            "apiVersion": f"{group}/v1", "kind": "Everything", "metadata": {"name": "e"},
            "spec": {"port": "http", "other": 8, "kept": {"name": "a", "port": 1, "x": 1},
                     "embedded": {"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c"}}}})
        assert created["spec"] == {
            "text": "abc", "port": "http", "other": 8, "kept": {"name": "a", "port": 1, "x": 1},
            "embedded": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}}
    finally:
        uninstall(s, made["metadata"]["name"])


def gadget_crd() -> tuple[dict[str, Any], str]:
    """The generated Gadget CRD in a group of its own; (crd, group)."""
    group = f"t{secrets.token_hex(4)}.crdgen.example.com"
    made = crd(Gadget)
    made["spec"]["group"] = group
    made["metadata"]["name"] = f"gadgets.{group}"
    return made, group


def gadget(group: str, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": f"{group}/v1", "kind": "Gadget", "metadata": {"name": name},
            "spec": spec}


def causes(answer: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["reason"], c["field"], c["message"]) for c in answer["details"]["causes"]]


def test_a_generated_crd_is_served_with_its_schema(any_api_server):
    s = any_api_server
    made, group = gadget_crd()
    install(s, made)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/gadgets"
        created = ok(s, "POST", path, gadget(group, "a", {"replicas": 2, "unknown": 1}))
        assert created["spec"] == {"replicas": 2, "minReplicas": 0, "tier": "basic"}

        code, answer = call(s, "POST", path, gadget(group, "c", {"replicas": 2,
                                                                  "minReplicas": 3}))
        assert code == 422
        assert causes(answer) == [("FieldValueInvalid", "spec",
                                   "Invalid value: minReplicas must not exceed replicas")]

        code, answer = call(s, "POST", path, gadget(group, "d", {"replicas": 11}))
        assert code == 422
        assert causes(answer) == [("FieldValueInvalid", "spec.replicas",
                                   "Invalid value: 11: spec.replicas in body should be "
                                   "less than or equal to 10")]

        stored = ok(s, "GET", f"{CRDS}/gadgets.{group}")
        served = stored["spec"]["versions"][0]
        generated = made["spec"]["versions"][0]
        assert served["schema"] == generated["schema"]
        assert served["additionalPrinterColumns"] == generated["additionalPrinterColumns"]
        assert served["subresources"] == {"status": {}, "scale": {
            "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}
        assert served["selectableFields"] == [{"jsonPath": ".spec.mode"}]
    finally:
        uninstall(s, made["metadata"]["name"])


def test_an_enum_violation_is_a_422(any_api_server):
    s = any_api_server
    made, group = gadget_crd()
    install(s, made)
    try:
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/gadgets"
        code, answer = call(s, "POST", path, gadget(group, "b", {"replicas": 2,
                                                                  "tier": "gold"}))
        assert code == 422
        assert causes(answer) == [
            ("FieldValueNotSupported", "spec.tier",
             'Unsupported value: "gold": supported values: "basic", "premium"'),
            ("FieldValueInvalid", "<nil>",
             "Invalid value: null: some validation rules were not checked because the object "
             "was invalid; correct the existing errors to complete validation")]
    finally:
        uninstall(s, made["metadata"]["name"])


def test_the_generated_schema_is_published_in_openapi_v3(any_api_server):
    s = any_api_server
    made, group = gadget_crd()
    try:
        install(s, made)
        deadline = time.monotonic() + WAIT
        while True:
            code, doc = call(s, "GET", f"/openapi/v3/apis/{group}/v1")
            if code == 200:
                break
            assert time.monotonic() < deadline, (code, doc)
            time.sleep(0.1)
        name = ".".join(reversed(group.split("."))) + ".v1.Gadget"
        published = doc["components"]["schemas"][name]
        assert published["properties"]["spec"] == (
            made["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"])
        assert published["x-kubernetes-group-version-kind"] == [
            {"group": group, "kind": "Gadget", "version": "v1"}]
    finally:
        uninstall(s, made["metadata"]["name"])


def test_the_embedded_server_installs_a_generated_crd_file(tmp_path):
    from informers.testing import ApiServer

    made, group = gadget_crd()
    (tmp_path / "gadgets.yaml").write_text(dump_yaml([made]))
    with ApiServer(crds=[tmp_path]) as server:
        created = server.create(gadget(group, "a", {"replicas": 1}), namespace="default")
        assert created["spec"] == {"replicas": 1, "minReplicas": 0, "tier": "basic"}


@pytest.mark.real_apiserver
def test_the_generated_policy_rejects_on_the_real_apiserver(real_api_server):
    """The CRD is installed without its rules so that only the policy can refuse."""
    from servers import RealServer

    s = RealServer(real_api_server)
    made, group = gadget_crd()
    policy, binding = validating_admission_policy(
        made, name=f"gadgets.{group}",
        namespace_selector={"matchLabels": {"kubernetes.io/metadata.name": s.namespace}})
    bare = copy.deepcopy(made)
    del bare["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "x-kubernetes-validations"]
    vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
    vapb = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings"
    try:
        install(s, bare)
        ok(s, "POST", vap, policy)
        ok(s, "POST", vapb, binding)
        path = f"/apis/{group}/v1/namespaces/{s.namespace}/gadgets"
        deadline = time.monotonic() + WAIT
        n = 0
        while True:  # the policy takes effect asynchronously
            n += 1
            code, answer = call(s, "POST", path, gadget(group, f"bad{n}",
                                                         {"replicas": 1, "minReplicas": 2}))
            if code != 201:
                break
            assert time.monotonic() < deadline, "the policy never took effect"
            time.sleep(0.2)
        assert (code, answer["reason"], answer["message"]) == (
            422, "Invalid",
            f"gadgets.{group} \"bad{n}\" is forbidden: ValidatingAdmissionPolicy "
            f"'gadgets.{group}' with binding 'gadgets.{group}' denied request: "
            "minReplicas must not exceed replicas"), json.dumps(answer)
        assert call(s, "POST", path, gadget(group, "good", {"replicas": 2}))[0] == 201
    finally:
        call(s, "DELETE", f"{vapb}/gadgets.{group}")
        call(s, "DELETE", f"{vap}/gadgets.{group}")
        uninstall(s, made["metadata"]["name"])
        s.close()


def test_the_two_version_cluster_scoped_crd_of_the_unit_tests_is_accepted(any_api_server):
    """tests/test_crdgen_crd.py's Box: two versions, cluster scope, a rule at the root."""
    from test_crdgen_crd import BoxV1, BoxV1alpha1

    s = any_api_server
    group = f"t{secrets.token_hex(4)}.crdgen.example.com"
    made = crd(BoxV1alpha1, BoxV1)
    made["spec"]["group"] = group
    made["metadata"]["name"] = f"boxes.{group}"
    install(s, made)
    try:
        path = f"/apis/{group}/v1/boxes"
        box = {"apiVersion": f"{group}/v1", "kind": "Box", "metadata": {"name": "b"},
               "spec": {"size": 1}}
        assert ok(s, "POST", path, box)["spec"] == {"size": 1}
        code, answer = call(s, "POST", path, {**box, "metadata": {"name": "b" * 25}})
        assert (code, causes(answer)) == (422, [("FieldValueInvalid", "<nil>",
                                                 "Invalid value: name too long")])
    finally:
        uninstall(s, made["metadata"]["name"])

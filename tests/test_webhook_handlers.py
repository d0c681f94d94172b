"""JSON patch computation, the defaulting and validating handlers, hub-and-spoke conversion,
configuration rendering and the certificate watcher, as pure functions (no network)."""

from __future__ import annotations

import base64
import json
import threading
import time

import pytest

from informers.certificates import CertificateAuthority, ca_bundle
from informers.clock import FakeClock
from informers.testing.patch import apply_json_patch
from informers.webhook import (
    AdmissionWebhook,
    ClientConfig,
    HubAndSpoke,
    Rule,
    ServiceReference,
    WebhookServer,
    conversion_stanza,
    mutating_configuration,
    validating_configuration,
)
from informers.webhook.admission import Mutating, decode_review
from informers.webhook.certificate_watcher import CertificateWatcher
from informers.webhook.conversion import convert_review
from informers.webhook.json_patch import create_patch

# -- JSON patch --------------------------------------------------------------------------------

CASES = [
    ({"a": 1}, {"a": 1}, []),
    ({"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
    ({}, {"a/b": 1, "m~n": 2}, [{"op": "add", "path": "/a~1b", "value": 1},
                                {"op": "add", "path": "/m~0n", "value": 2}]),
    ({"~/": {"x": 1}}, {"~/": {}}, [{"op": "remove", "path": "/~0~1/x"}]),
    ({"l": [1, 2, 3]}, {"l": [1, 2]}, [{"op": "remove", "path": "/l/2"}]),
    ({"l": [1, 2, 3, 4]}, {"l": [9]}, [{"op": "replace", "path": "/l/0", "value": 9},
                                       {"op": "remove", "path": "/l/3"},
                                       {"op": "remove", "path": "/l/2"},
                                       {"op": "remove", "path": "/l/1"}]),
    ({"l": []}, {"l": [{"a": 1}, 2]}, [{"op": "add", "path": "/l/0", "value": {"a": 1}},
                                      {"op": "add", "path": "/l/1", "value": 2}]),
    ({"l": [{"a": 1}]}, {"l": [{"a": 1, "b": 2}]},
     [{"op": "add", "path": "/l/0/b", "value": 2}]),
    ({"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
    ({"a": 1}, {"a": 1.0}, []),
    ({"a": {"b": 1}}, {"a": [1]}, [{"op": "replace", "path": "/a", "value": [1]}]),
    ({"a": None}, {}, [{"op": "remove", "path": "/a"}]),
]


@pytest.mark.parametrize(("old", "new", "patch"), CASES)
def test_create_patch(old, new, patch):
    assert create_patch(old, new) == patch
    assert apply_json_patch(json.loads(json.dumps(old)), patch) == new


def test_patch_values_are_copies():
    new = {"a": {"b": [1]}}
    patch = create_patch({}, new)
    new["a"]["b"].append(2)
    assert patch == [{"op": "add", "path": "/a", "value": {"b": [1]}}]


# -- admission handlers ------------------------------------------------------------------------


def _request(operation: str, obj=None, old=None):
    return decode_review(json.dumps({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {"uid": "u", "kind": {"group": "", "version": "v1", "kind": "Pod"},
                    "resource": {"group": "", "version": "v1", "resource": "pods"},
                    "operation": operation, "object": obj, "oldObject": old}}).encode())


def test_defaulter_patch_is_base64_json_patch():
    def default(obj, request):
        obj["spec"]["containers"][0]["image"] = "nginx:1.27"
        obj["metadata"].setdefault("annotations", {})["example.com/defaulted"] = "1"

    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}
    review = Mutating(default).handle(_request("CREATE", pod)).review("u")
    assert review["response"]["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(review["response"]["patch"])) == [
        {"op": "add", "path": "/metadata/annotations",
         "value": {"example.com/defaulted": "1"}},
        {"op": "add", "path": "/spec/containers/0/image", "value": "nginx:1.27"}]
    assert pod == {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}


def test_defaulter_without_changes_answers_no_patch_and_delete_is_not_defaulted():
    # controller-runtime defaulter_custom_test.go: "should return ok if received delete
    # verb in defaulter handler" and an unchanged object gets no patchType.
    calls = []
    handler = Mutating(lambda obj, request: calls.append(obj))
    assert handler.handle(_request("CREATE", {"a": 1})).review("u")["response"] == {
        "uid": "u", "allowed": True, "status": {"code": 200, "metadata": {}}}
    assert handler.handle(_request("DELETE", old={"a": 1})).review("u")["response"] == {
        "uid": "u", "allowed": True, "status": {"code": 200, "metadata": {}}}
    assert len(calls) == 1


def test_a_defaulter_may_return_a_new_object():
    handler = Mutating(lambda obj, request: {"b": 2})
    assert handler.handle(_request("UPDATE", {"a": 1}, {"a": 0})).patch == [
        {"op": "remove", "path": "/a"}, {"op": "add", "path": "/b", "value": 2}]


# -- conversion --------------------------------------------------------------------------------


def _hub() -> HubAndSpoke:
    def alpha_to(obj):
        obj["spec"] = {"replicas": int(obj["spec"].pop("count"))}
        return obj

    def alpha_from(obj):
        obj["spec"] = {"count": str(obj["spec"].pop("replicas"))}
        return obj

    def beta_to(obj):
        obj["spec"] = {"replicas": obj["spec"].pop("size")}
        return obj

    def beta_from(obj):
        if obj["spec"]["replicas"] < 0:
            raise ValueError("negative replicas")
        obj["spec"] = {"size": obj["spec"].pop("replicas")}
        return obj

    return (HubAndSpoke("example.com", "Widget", "v1")
            .spoke("v1alpha1", alpha_to, alpha_from).spoke("v1beta1", beta_to, beta_from))


def _widget(version: str, spec) -> dict:
    return {"apiVersion": f"example.com/{version}", "kind": "Widget",
            "metadata": {"name": "w"}, "spec": spec}


def test_spoke_to_spoke_goes_through_the_hub_in_order():
    request = {"uid": "c1", "desiredAPIVersion": "example.com/v1beta1",
               "objects": [_widget("v1alpha1", {"count": "3"}), _widget("v1", {"replicas": 4}),
                           _widget("v1beta1", {"size": 5})]}
    assert convert_review(request, {("example.com", "Widget"): _hub()}) == {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
        "response": {"uid": "c1", "result": {"metadata": {}, "status": "Success"},
                     "convertedObjects": [_widget("v1beta1", {"size": 3}),
                                          _widget("v1beta1", {"size": 4}),
                                          _widget("v1beta1", {"size": 5})]}}


def test_a_failed_conversion_is_a_failure_result():
    kinds = {("example.com", "Widget"): _hub()}
    request = {"uid": "c2", "desiredAPIVersion": "example.com/v1beta1",
               "objects": [_widget("v1", {"replicas": -1})]}
    assert convert_review(request, kinds)["response"] == {
        "uid": "c2", "convertedObjects": [],
        "result": {"metadata": {}, "status": "Failure", "message":
                   "converting example.com/v1 Widget 'w' from the hub to v1beta1 failed: "
                   "ValueError: negative replicas"}}
    request = {"uid": "c3", "desiredAPIVersion": "example.com/v2", "objects": [
        _widget("v1", {"replicas": 1})]}
    assert convert_review(request, kinds)["response"]["result"]["message"] == (
        'version "v2" of example.com/Widget has no conversion registered (registered: v1, '
        "v1alpha1, v1beta1)")
    request = {"uid": "c4", "desiredAPIVersion": "example.com/v1", "objects": [
        {**_widget("v1alpha1", {}), "kind": "Gadget"}]}
    assert convert_review(request, kinds)["response"]["result"]["message"] == (
        "no conversion registered for kind Gadget in group example.com")


# -- configuration -----------------------------------------------------------------------------


def test_rendered_configurations(tmp_path):
    ca = CertificateAuthority()
    server = WebhookServer(cert_dir=str(tmp_path))
    rules = [Rule(["apps"], ["v1"], ["deployments"], ["CREATE"])]
    server.mutating("/m", lambda obj, request: None, AdmissionWebhook(
        "m.example.com", rules, object_selector={"matchLabels": {"a": "b"}}))
    server.validating("/v", object(), AdmissionWebhook(  # type: ignore[arg-type]
        "v.example.com", rules, failure_policy="Ignore", timeout_seconds=5,
        side_effects="NoneOnDryRun"))
    server.conversion(HubAndSpoke("example.com", "Widget", "v1"), crd="widgets.example.com")
    service = ClientConfig(ca.cert_pem, service=ServiceReference("ops", "hooks"))
    bundle = ca_bundle(ca.cert_pem)
    assert mutating_configuration("hooks", server.registrations, service) == {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": "hooks"},
        "webhooks": [{
            "name": "m.example.com", "admissionReviewVersions": ["v1"],
            "clientConfig": {"caBundle": bundle, "service": {
                "namespace": "ops", "name": "hooks", "path": "/m", "port": 443}},
            "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "rules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["deployments"], "scope": "*"}],
            "sideEffects": "None", "timeoutSeconds": 10, "namespaceSelector": {},
            "objectSelector": {"matchLabels": {"a": "b"}}, "reinvocationPolicy": "Never"}]}
    url = ClientConfig(ca.cert_pem, url="https://127.0.0.1:9443")
    validating = validating_configuration("hooks", server.registrations, url)
    assert [(w["name"], w["clientConfig"]["url"], w["failurePolicy"], w["timeoutSeconds"],
             w["sideEffects"], "reinvocationPolicy" in w) for w in validating["webhooks"]] == [
        ("v.example.com", "https://127.0.0.1:9443/v", "Ignore", 5, "NoneOnDryRun", False)]
    assert conversion_stanza("/convert", url) == {
        "strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "caBundle": bundle, "url": "https://127.0.0.1:9443/convert"}}}


def test_an_empty_ca_renders_no_ca_bundle():
    """What informers-gen writes into committed manifests: the bundle comes at install time."""
    service = ClientConfig(b"", service=ServiceReference("ops", "hooks", 8443))
    assert conversion_stanza("/convert", service) == {
        "strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"], "clientConfig": {
            "service": {"namespace": "ops", "name": "hooks", "path": "/convert",
                        "port": 8443}}}}


# -- certificate watcher -----------------------------------------------------------------------


def test_watcher_reloads_on_change_and_keeps_the_old_pair_when_the_new_does_not_load(tmp_path):
    ca = CertificateAuthority()
    first = ca.issue(["127.0.0.1"])
    first.write(str(tmp_path))
    clock = FakeClock()
    changes = []
    watcher = CertificateWatcher(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"),
                                 interval=10, clock=clock, on_change=changes.append)
    stop = threading.Event()
    runner = threading.Thread(target=watcher.run, args=(stop,))
    runner.start()
    try:
        second = ca.issue(["127.0.0.1"])
        (tmp_path / "tls.crt").write_bytes(second.cert_pem)  # the key not yet replaced
        assert watcher.check() is False
        assert (watcher.cert_pem, watcher.reloads) == (first.cert_pem, 0)
        (tmp_path / "tls.key").write_bytes(second.key_pem)
        assert clock.wait_for_waiters(1)
        clock.step(10)  # the poll loop takes the pair
        deadline = time.monotonic() + 5
        while watcher.reloads == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert (watcher.cert_pem, watcher.reloads, changes) == (
            second.cert_pem, 1, [second.cert_pem])
        assert watcher.check() is False
    finally:
        stop.set()
        runner.join()


def test_a_defaulter_that_raises_is_an_internal_error_and_one_that_denies_is_a_denial():
    from informers.webhook import AdmissionDenied

    def broken(obj, request):
        raise KeyError("spec")

    def strict(obj, request):
        raise AdmissionDenied("spec.size is immutable", reason="Invalid", code=422)

    assert Mutating(broken).handle(_request("CREATE", {"a": 1})).review("u")["response"] == {
        "uid": "u", "allowed": False,
        "status": {"code": 500, "reason": "InternalError",
                   "message": "Internal error occurred: KeyError: 'spec'",
                   "details": {"causes": [{"message": "KeyError: 'spec'"}]}, "metadata": {}}}
    assert Mutating(strict).handle(_request("UPDATE", {"a": 1}, {"a": 0})).status == {
        "code": 422, "reason": "Invalid", "message": "spec.size is immutable"}

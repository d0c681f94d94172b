"""Admission webhooks on both servers: the embedded ``ApiServer`` (informers.testing.admission)
and the real kube-apiserver v1.36.3, whose webhook configurations point at this test's HTTPS
webhook (tests/webhook_server.py) on 127.0.0.1 with a throwaway CA.

Every configuration is scoped to the test's own namespace (``namespaceSelector`` on
``kubernetes.io/metadata.name``) and deleted in ``finally``: the real control plane is shared
by the whole session. Expected values are kube-apiserver's (``k8s.io/apiserver/pkg/admission/
plugin/webhook``: ``errors/statuserror.go`` ``ToStatusErr``, ``mutating/dispatcher.go``,
``validating/dispatcher.go``, ``request/admissionreview.go``).
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import secrets
import ssl
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from webhook_server import HANG, Raw, WebhookServer

NAME_LABEL = "kubernetes.io/metadata.name"
GROUP = "admissionregistration.k8s.io"
VALIDATING = f"/apis/{GROUP}/v1/validatingwebhookconfigurations"
MUTATING = f"/apis/{GROUP}/v1/mutatingwebhookconfigurations"


def token(server) -> str:
    return server.embedded.token if server.embedded is not None else server.plane.token


def call(server, method: str, path: str, body: Any = None,
         content_type: str = "application/json") -> tuple[int, Any, list[str]]:
    """One request over TLS; (status, decoded body, Warning headers)."""
    url = urlsplit(server.https_url)
    context = ssl.create_default_context(cafile=server.ca_file)
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context,
                                             timeout=30)
    try:
        data = None if body is None else json.dumps(body).encode()
        connection.request(method, path, data, {
            "Authorization": f"Bearer {token(server)}", "Content-Type": content_type,
            "Accept": "application/json", "User-Agent": "admission-test/1.0"})
        response = connection.getresponse()
        raw = response.read()
        warnings = [v for k, v in response.getheaders() if k.lower() == "warning"]
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = raw.decode(errors="replace")
        return response.status, body, warnings
    finally:
        connection.close()


def configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def webhook(hook_server: WebhookServer, namespace: str, name: str, path: str = "/",
            **extra: Any) -> dict[str, Any]:
    return {
        "name": name, "admissionReviewVersions": ["v1"], "sideEffects": "None",
        "clientConfig": {"url": hook_server.url + path, "caBundle": hook_server.ca.ca_bundle},
        "rules": [{"operations": ["*"], "apiGroups": [""], "apiVersions": ["v1"],
                   "resources": ["configmaps"]}],
        "namespaceSelector": {"matchLabels": {NAME_LABEL: namespace}},
        **extra}


@contextlib.contextmanager
def configuration(server, collection: str, *hooks: dict[str, Any]) -> Iterator[str]:
    """Create a configuration, wait until it is honoured (the real server's configuration
    informer lags a little), delete it at the end."""
    name = f"test-{secrets.token_hex(4)}"
    kind = ("ValidatingWebhookConfiguration" if collection == VALIDATING
            else "MutatingWebhookConfiguration")
    code, body, _ = call(server, "POST", collection, {
        "apiVersion": f"{GROUP}/v1", "kind": kind, "metadata": {"name": name},
        "webhooks": list(hooks)})
    assert code == 201, body
    try:
        if server.embedded is None:
            time.sleep(1.5)  # the dynamic webhook source's informer
        yield name
    finally:
        call(server, "DELETE", f"{collection}/{name}")


def normalized_object(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The object with the server-made values that differ between servers masked."""
    if obj is None:
        return None
    obj = json.loads(json.dumps(obj))
    meta = obj["metadata"]
    for key in ("uid", "creationTimestamp", "resourceVersion"):
        if key in meta:
            meta[key] = key
    for entry in meta.get("managedFields") or []:
        entry["time"] = "time"
    return obj


def cm_path(server, name: str = "") -> str:
    base = f"/api/v1/namespaces/{server.namespace}/configmaps"
    return f"{base}/{name}" if name else base


# -- the request a webhook receives ----------------------------------------------------------


def test_a_validating_webhook_gets_the_admission_review_kube_apiserver_sends(any_api_server):
    s = any_api_server
    with WebhookServer() as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "check.example.com", "/validate")):
        code, created, _ = call(s, "POST", cm_path(s) + "?fieldManager=tester",
                                configmap("one", a="1"))
        assert code == 201, created
        code, _, _ = call(s, "PUT", cm_path(s, "one"), {**created, "data": {"a": "2"}})
        assert code == 200
        code, _, _ = call(s, "DELETE", cm_path(s, "one") + "?dryRun=All")
        assert code == 200
        paths = [path for path, _ in hook.requests]
        reviews = [review for _, review in hook.requests]
    assert paths == ["/validate?timeout=10s"] * 3
    assert [r["kind"] for r in reviews] == ["AdmissionReview"] * 3
    assert [r["apiVersion"] for r in reviews] == ["admission.k8s.io/v1"] * 3
    requests = [r["request"] for r in reviews]
    for request in requests:
        assert len(request.pop("uid")) == 36
        request["object"] = normalized_object(request["object"])
        request["oldObject"] = normalized_object(request["oldObject"])
    gvk = {"group": "", "version": "v1", "kind": "ConfigMap"}
    gvr = {"group": "", "version": "v1", "resource": "configmaps"}
    user = {"username": "kube-informers-admin", "uid": "kube-informers-admin",
            "groups": ["system:masters", "system:authenticated"]}
    stored = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "one", "namespace": s.namespace, "uid": "uid",
        "creationTimestamp": "creationTimestamp",
        "managedFields": [{"manager": "tester", "operation": "Update", "apiVersion": "v1",
                           "time": "time", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}]},
        "data": {"a": "1"}}
    common = {"kind": gvk, "resource": gvr, "requestKind": gvk, "requestResource": gvr,
              "name": "one", "namespace": s.namespace, "userInfo": user}
    assert requests[0] == {
        **common, "operation": "CREATE", "object": stored, "oldObject": None, "dryRun": False,
        "options": {"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1",
                    "fieldManager": "tester"}}
    assert requests[1]["operation"] == "UPDATE"
    stored["metadata"]["resourceVersion"] = "resourceVersion"  # not set before the create
    assert requests[1]["oldObject"] == stored
    updated = json.loads(json.dumps(stored))
    updated["data"] = {"a": "2"}
    updated["metadata"]["managedFields"] = [  # the User-Agent's product took data.a
        {"manager": "admission-test", "operation": "Update", "apiVersion": "v1",
         "time": "time", "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {"f:a": {}}}},
        {**stored["metadata"]["managedFields"][0], "fieldsV1": {"f:data": {}}}]
    assert requests[1]["object"] == updated
    assert requests[1]["options"] == {"kind": "UpdateOptions", "apiVersion": "meta.k8s.io/v1"}
    assert requests[2] == {
        **common, "operation": "DELETE", "object": None, "oldObject": requests[1]["object"],
        "dryRun": True, "options": {"kind": "DeleteOptions", "apiVersion": "meta.k8s.io/v1",
                                    "dryRun": ["All"]}}


# -- denials and warnings ---------------------------------------------------------------------


def test_a_denial_reaches_the_client_with_the_webhooks_code_and_warnings(any_api_server):
    s = any_api_server

    def deny(path, review):
        return {"allowed": False, "warnings": ["first warning", "second warning"],
                "status": {"code": 403, "reason": "Forbidden", "message": "no configmaps today"}}

    with WebhookServer(deny) as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "deny.example.com")):
        code, body, warnings = call(s, "POST", cm_path(s), configmap("two"))
        assert code == 403
        assert body == {"kind": "Status", "apiVersion": "v1", "metadata": {},
                        "status": "Failure",
                        "message": 'admission webhook "deny.example.com" denied the request: '
                                   "no configmaps today",
                        "reason": "Forbidden", "code": 403}
        assert warnings == ['299 - "first warning"', '299 - "second warning"']
        assert call(s, "GET", cm_path(s, "two"))[0] == 404


def test_a_denial_without_a_result_is_a_400_without_explanation(any_api_server):
    s = any_api_server
    with WebhookServer(lambda path, review: {"allowed": False}) as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "quiet.example.com")):
        code, body, _ = call(s, "POST", cm_path(s), configmap("three"))
    assert (code, body) == (400, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": 'admission webhook "quiet.example.com" denied the request without '
                   "explanation", "code": 400})


# -- mutation -----------------------------------------------------------------------------------


def patch_answer(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"allowed": True, "patchType": "JSONPatch",
            "patch": base64.b64encode(json.dumps(list(operations)).encode()).decode()}


def test_mutating_webhooks_patch_in_name_order_and_reinvoke_if_needed(any_api_server):
    s = any_api_server

    def mutate(path, review):
        data = review["request"]["object"].get("data") or {}
        if path.startswith("/first"):  # IfNeeded: sees the second's change on its reinvocation
            return patch_answer({"op": "add", "path": "/data/first",
                                 "value": ",".join(sorted(data))})
        return patch_answer({"op": "add", "path": "/data/second", "value": "yes"})

    with WebhookServer(mutate) as hook, configuration(
            s, MUTATING,
            webhook(hook, s.namespace, "first.example.com", "/first",
                    reinvocationPolicy="IfNeeded"),
            webhook(hook, s.namespace, "second.example.com", "/second")):
        code, created, _ = call(s, "POST", cm_path(s) + "?fieldManager=tester",
                                configmap("four", a="1"))
        paths = [path.split("?")[0] for path, _ in hook.requests]
        first = normalized_object(hook.requests[0][1]["request"]["object"])
    assert code == 201, created
    assert paths == ["/first", "/second", "/first"]
    assert created["data"] == {"a": "1", "first": "a,first,second", "second": "yes"}
    # the field manager ran before admission: the webhooks' fields are nobody's
    entry = {"manager": "tester", "operation": "Update", "apiVersion": "v1", "time": "time",
             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {".": {}, "f:a": {}}}}
    assert first == {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
        "name": "four", "namespace": s.namespace, "managedFields": [entry]},
        "data": {"a": "1"}}
    assert normalized_object(created)["metadata"]["managedFields"] == [entry]


# -- failures -----------------------------------------------------------------------------------


def test_a_timeout_fails_the_request_under_fail_and_is_skipped_under_ignore(any_api_server):
    s = any_api_server
    with WebhookServer(lambda path, review: HANG) as hook:
        with configuration(s, VALIDATING, webhook(hook, s.namespace, "slow.example.com",
                                                  "/slow", timeoutSeconds=1)):
            started = time.monotonic()
            code, body, _ = call(s, "POST", cm_path(s), configmap("five"))
            assert time.monotonic() - started < 5
        reason = (f'failed calling webhook "slow.example.com": failed to call webhook: Post '
                  f'"{hook.url}/slow?timeout=1s": context deadline exceeded')
        assert (code, body) == (500, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f"Internal error occurred: {reason}", "reason": "InternalError",
            "details": {"causes": [{"message": reason}]}, "code": 500})
        with configuration(s, VALIDATING, webhook(hook, s.namespace, "slow.example.com",
                                                  "/slow", timeoutSeconds=1,
                                                  failurePolicy="Ignore")):
            code, _, _ = call(s, "POST", cm_path(s), configmap("five"))
            assert code == 201
    assert call(s, "GET", cm_path(s, "five"))[0] == 200  # and the server keeps serving


@pytest.mark.parametrize("answer, detail", [
    (Raw(200, "application/json", b"garbage"),
     "failed to call webhook: couldn't get version/kind; json parse error: json: cannot "
     "unmarshal string into Go value of type struct { APIVersion string "
     '"json:\\"apiVersion,omitempty\\""; Kind string "json:\\"kind,omitempty\\"" }'),
    (Raw(500, "text/plain", b"boom"),
     'failed to call webhook: an error on the server ("boom") has prevented the request from '
     "succeeding"),
    (Raw(403, "application/json", json.dumps({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "go away", "reason": "Forbidden", "code": 403}).encode()),
     "failed to call webhook: go away"),
    ({"allowed": True, "uid": "not-the-request"}, None),
])
def test_a_webhook_that_answers_badly_fails_the_request(any_api_server, answer, detail):
    s = any_api_server
    with WebhookServer(lambda path, review: answer) as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "bad.example.com")):
        code, body, _ = call(s, "POST", cm_path(s), configmap("six"))
        uid = hook.requests[0][1]["request"]["uid"]
    if detail is None:
        detail = (f'received invalid webhook response: expected response.uid="{uid}", got '
                  '"not-the-request"')
    reason = f'failed calling webhook "bad.example.com": {detail}'
    assert (code, body["reason"], body["message"]) == (
        500, "InternalError", f"Internal error occurred: {reason}")
    assert call(s, "GET", "/api/v1/namespaces")[0] == 200


def test_selectors_and_match_conditions_choose_the_webhooks_called(any_api_server):
    s = any_api_server

    def deny(path, review):
        return {"allowed": False, "status": {"message": path.split("?")[0]}}

    with WebhookServer(deny) as hook, configuration(
            s, VALIDATING,
            webhook(hook, s.namespace, "labelled.example.com", "/labelled",
                    objectSelector={"matchLabels": {"pick": "me"}}),
            webhook(hook, s.namespace, "named.example.com", "/named",
                    matchConditions=[{"name": "only-b",
                                      "expression": "object.metadata.name == 'b'"}]),
            webhook(hook, s.namespace, "updates.example.com", "/updates",
                    rules=[{"operations": ["UPDATE"], "apiGroups": [""],
                            "apiVersions": ["v1"], "resources": ["configmaps"]}])):
        assert call(s, "POST", cm_path(s), configmap("plain"))[0] == 201
        assert hook.requests == []
        code, body, _ = call(s, "POST", cm_path(s), configmap("b"))
        assert (code, body["message"]) == (
            400, 'admission webhook "named.example.com" denied the request: /named')
        labelled = configmap("c")
        labelled["metadata"]["labels"] = {"pick": "me"}
        code, body, _ = call(s, "POST", cm_path(s), labelled)
        assert (code, body["message"]) == (
            400, 'admission webhook "labelled.example.com" denied the request: /labelled')
        code, body, _ = call(s, "PATCH", cm_path(s, "plain"), {"data": {"x": "1"}},
                             "application/merge-patch+json")
        assert (code, body["message"]) == (
            400, 'admission webhook "updates.example.com" denied the request: /updates')
        other = s.new_namespace()
        assert call(s, "POST", f"/api/v1/namespaces/{other}/configmaps", configmap("b"))[0] == 201
        assert sorted(path.split("?")[0] for path, _ in hook.requests) == [
            "/labelled", "/named", "/updates"]


def test_a_dry_run_calls_webhooks_whose_side_effects_allow_it(any_api_server):
    s = any_api_server
    with WebhookServer() as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "dry.example.com",
                                   sideEffects="NoneOnDryRun")):
        code, _, _ = call(s, "POST", cm_path(s) + "?dryRun=All", configmap("dry"))
        assert code == 201
        assert [review["request"]["dryRun"] for _, review in hook.requests] == [True]
        assert hook.requests[0][1]["request"]["options"] == {
            "kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1", "dryRun": ["All"]}
    assert call(s, "GET", cm_path(s, "dry"))[0] == 404


def test_a_mutating_webhook_may_not_patch_a_delete(any_api_server):
    s = any_api_server
    assert call(s, "POST", cm_path(s), configmap("keep"))[0] == 201
    answer = patch_answer({"op": "add", "path": "/data", "value": {"x": "1"}})
    with WebhookServer(lambda path, review: answer) as hook, configuration(
            s, MUTATING, webhook(hook, s.namespace, "patcher.example.com",
                                 rules=[{"operations": ["DELETE"], "apiGroups": [""],
                                         "apiVersions": ["v1"],
                                         "resources": ["configmaps"]}])):
        code, body, _ = call(s, "DELETE", cm_path(s, "keep"))
    message = ('admission webhook "patcher.example.com" attempted to modify the object, which '
               "is not supported for this operation")
    assert (code, body["reason"], body["message"]) == (
        500, "InternalError", f"Internal error occurred: {message}")
    assert call(s, "GET", cm_path(s, "keep"))[0] == 200


def test_a_service_reference_without_a_mapping_fails_to_resolve(any_api_server):
    s = any_api_server
    hook = {"name": "svc.example.com", "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "clientConfig": {"service": {"namespace": s.namespace, "name": "hooks",
                                         "path": "/check"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {NAME_LABEL: s.namespace}}}
    with configuration(s, VALIDATING, hook):
        code, body, _ = call(s, "POST", cm_path(s), configmap("svc"))
    reason = (f'failed calling webhook "svc.example.com": failed to call webhook: Post '
              f'"https://hooks.{s.namespace}.svc:443/check?timeout=10s": service "hooks" not '
              "found")
    assert (code, body["message"]) == (500, f"Internal error occurred: {reason}")


def test_a_mapped_service_reference_reaches_the_test_webhook():
    from informers.testing import ApiServer

    with WebhookServer() as hook, ApiServer(
            webhook_services={"default/hooks:443": hook.url}) as server:
        server.create({"apiVersion": f"{GROUP}/v1", "kind": "ValidatingWebhookConfiguration",
                       "metadata": {"name": "mapped"}, "webhooks": [{
                           "name": "svc.example.com", "admissionReviewVersions": ["v1"],
                           "sideEffects": "None",
                           "clientConfig": {"caBundle": hook.ca.ca_bundle, "service": {
                               "namespace": "default", "name": "hooks", "path": "/check"}},
                           "rules": [{"operations": ["CREATE"], "apiGroups": [""],
                                      "apiVersions": ["v1"], "resources": ["configmaps"]}]}]})
        api = server.api_client()
        try:
            from kubernetes import client

            client.CoreV1Api(api).create_namespaced_config_map("default", configmap("m"))
        finally:
            api.close()
        assert [path for path, _ in hook.requests] == ["/check?timeout=10s"]


# -- the configuration objects -------------------------------------------------------------------


def test_a_configuration_is_defaulted(any_api_server):
    s = any_api_server
    hook = {"name": "d.example.com", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "clientConfig": {"url": "https://127.0.0.1:1/x"},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
                       "resources": ["configmaps"]}],
            "objectSelector": {"matchLabels": {"never": secrets.token_hex(4)}}}
    name = f"test-{secrets.token_hex(4)}"
    code, body, _ = call(s, "POST", MUTATING, {
        "apiVersion": f"{GROUP}/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name}, "webhooks": [hook]})
    try:
        assert code == 201, body
        assert body["metadata"]["generation"] == 1
        assert body["webhooks"] == [{
            **hook, "rules": [{**hook["rules"][0], "scope": "*"}], "failurePolicy": "Fail",
            "matchPolicy": "Equivalent", "namespaceSelector": {}, "timeoutSeconds": 10,
            "reinvocationPolicy": "Never"}]
    finally:
        call(s, "DELETE", f"{MUTATING}/{name}")


def test_an_invalid_configuration_is_refused_with_kube_apiservers_causes(any_api_server):
    s = any_api_server
    code, body, _ = call(s, "POST", VALIDATING, {
        "apiVersion": f"{GROUP}/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "bad-config"},
        "webhooks": [{"name": "short", "sideEffects": "Some", "timeoutSeconds": 31,
                      "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": "http://127.0.0.1/x"}}]})
    assert code == 422
    assert body["reason"] == "Invalid"
    assert [(c["field"], c["reason"]) for c in body["details"]["causes"]] == [
        ("webhooks[0].name", "FieldValueInvalid"),
        ("webhooks[0].sideEffects", "FieldValueNotSupported"),
        ("webhooks[0].timeoutSeconds", "FieldValueInvalid"),
        ("webhooks[0].clientConfig.url", "FieldValueInvalid")]
    assert [c["message"] for c in body["details"]["causes"]] == [
        'Invalid value: "short": should be a domain with at least three segments separated '
        "by dots",
        'Unsupported value: "Some": supported values: "None", "NoneOnDryRun"',
        "Invalid value: 31: the timeout value must be between 1 and 30 seconds",
        "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
        "https://host[/path]"]


# -- ValidatingAdmissionPolicy ----------------------------------------------------------------

POLICIES = f"/apis/{GROUP}/v1/validatingadmissionpolicies"
BINDINGS = f"/apis/{GROUP}/v1/validatingadmissionpolicybindings"


@contextlib.contextmanager
def policy(server, validations: list[dict[str, Any]], actions: list[str]) -> Iterator[
        tuple[str, str]]:
    """A policy on configmaps of the test's namespace and its binding; deleted at the end."""
    name = f"test-{secrets.token_hex(4)}"
    code, body, _ = call(server, "POST", POLICIES, {
        "apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name},
        "spec": {"matchConstraints": {
            "resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""],
                               "apiVersions": ["v1"], "resources": ["configmaps"]}],
            "namespaceSelector": {"matchLabels": {NAME_LABEL: server.namespace}}},
            "validations": validations}})
    assert code == 201, body
    try:
        code, body, _ = call(server, "POST", BINDINGS, {
            "apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name + "-binding"},
            "spec": {"policyName": name, "validationActions": actions}})
        assert code == 201, body
        try:
            yield name, name + "-binding"
        finally:
            call(server, "DELETE", f"{BINDINGS}/{name}-binding")
    finally:
        call(server, "DELETE", f"{POLICIES}/{name}")


def until_effective(server, probe: dict[str, Any]) -> tuple[int, Any, list[str]]:
    """Dry-run creates of ``probe`` until the policy answers (kube-apiserver compiles
    policies in the background); the last answer."""
    deadline = time.monotonic() + 15
    while True:
        answer = call(server, "POST", cm_path(server) + "?dryRun=All", probe)
        if answer[0] != 201 or answer[2] or time.monotonic() > deadline:
            return answer
        time.sleep(0.2)


def test_a_policy_denies_with_its_message_expression(any_api_server):
    s = any_api_server
    validations = [
        {"expression": "object.data.size() < 2",
         "messageExpression": "'too many keys: ' + string(object.data.size())"},
        {"expression": "'ok' in object.data", "message": "needs an ok key",
         "reason": "Forbidden"}]
    with policy(s, validations, ["Deny"]) as (name, binding):
        code, body, _ = until_effective(s, configmap("big", a="1", b="2"))
        text = (f"ValidatingAdmissionPolicy '{name}' with binding '{binding}' denied request: "
                "too many keys: 2")
        assert (code, body) == (422, {
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'configmaps "big" is forbidden: {text}', "reason": "Invalid",
            "details": {"name": "big", "kind": "configmaps", "causes": [{"message": text}]},
            "code": 422})
        code, body, _ = call(s, "POST", cm_path(s), configmap("small", a="1"))
        assert (code, body["reason"], body["message"]) == (
            403, "Forbidden", f"configmaps \"small\" is forbidden: ValidatingAdmissionPolicy "
                              f"'{name}' with binding '{binding}' denied request: needs an ok key")
        assert call(s, "POST", cm_path(s), configmap("fine", ok="1"))[0] == 201


def test_a_warn_binding_lets_the_write_through_with_a_warning(any_api_server):
    s = any_api_server
    with policy(s, [{"expression": "'ok' in object.data"}], ["Warn"]) as (name, binding):
        code, _, warnings = until_effective(s, configmap("w", a="1"))
        assert code == 201
        assert warnings == [
            f"299 - \"Validation failed for ValidatingAdmissionPolicy '{name}' with binding "
            f"'{binding}': failed expression: 'ok' in object.data\""]


def test_an_invalid_policy_and_binding_are_refused(any_api_server):
    s = any_api_server
    code, body, _ = call(s, "POST", POLICIES, {
        "apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "bad-policy"},
        "spec": {"matchConstraints": {"resourceRules": [{
            "operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
            "resources": ["configmaps"]}]}}})
    assert code == 422
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.validations", "Required value: validations or auditAnnotations must contain "
                             "at least one item"),
        ("spec.auditAnnotations", "Required value: validations or auditAnnotations must "
                                  "contain at least one item")]
    code, body, _ = call(s, "POST", BINDINGS, {
        "apiVersion": f"{GROUP}/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "bad-binding"}, "spec": {"policyName": "nothing"}})
    assert code == 422
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.validationActions", "Required value: at least one validation action is required")]


# -- CRD conversion webhooks ----------------------------------------------------------------------


def convert_widget(obj: dict[str, Any], desired: str) -> dict[str, Any]:
    """v1 ``spec.size`` <-> v2 ``spec.dimensions.size``."""
    _, _, version = desired.partition("/")
    spec = dict(obj.get("spec") or {})
    if version == "v2" and "size" in spec:
        spec["dimensions"] = {"size": spec.pop("size")}
    elif version == "v1" and "dimensions" in spec:
        spec["size"] = spec.pop("dimensions").get("size")
    return {**obj, "apiVersion": desired, "spec": spec}


def converter(fail: list[str]) -> Any:
    def handle(path: str, review: dict[str, Any]) -> Raw:
        request = review["request"]
        if fail:
            result = {"status": "Failure", "message": fail[0]}
            converted: list[Any] = []
        else:
            result = {"status": "Success"}
            converted = [convert_widget(o, request["desiredAPIVersion"])
                         for o in request["objects"]]
        return Raw(200, "application/json", json.dumps({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": request["uid"], "convertedObjects": converted,
                         "result": result}}).encode())
    return handle


def widget_crd(group: str, hook: WebhookServer) -> dict[str, Any]:
    def version(name: str, spec: dict[str, Any], storage: bool) -> dict[str, Any]:
        return {"name": name, "served": True, "storage": storage, "schema": {"openAPIV3Schema": {
            "type": "object", "properties": {"spec": {"type": "object", "properties": spec}}}}}

    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{group}"},
        "spec": {"group": group, "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                           "listKind": "WidgetList"},
                 "versions": [
                     version("v1", {"size": {"type": "integer"}}, True),
                     version("v2", {"dimensions": {"type": "object", "properties": {
                         "size": {"type": "integer"}}}}, False)],
                 "conversion": {"strategy": "Webhook", "webhook": {
                     "conversionReviewVersions": ["v1"],
                     "clientConfig": {"url": hook.url + "/convert",
                                      "caBundle": hook.ca.ca_bundle}}}}}


@contextlib.contextmanager
def served_crd(server, crd: dict[str, Any]) -> Iterator[None]:
    code, body, _ = call(server, "POST",
                         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert code == 201, body
    try:
        group = crd["spec"]["group"]
        deadline = time.monotonic() + 15
        for version in ("v1", "v2"):  # kube-apiserver serves a new CRD a moment later
            while call(server, "GET", f"/apis/{group}/{version}/namespaces/{server.namespace}"
                       "/widgets")[0] != 200 and time.monotonic() < deadline:
                time.sleep(0.2)
        yield
    finally:
        call(server, "DELETE",
             f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")


def watch_events(server, path: str) -> list[dict[str, Any]]:
    """The events of a watch from ``resourceVersion=0`` that ends after a second."""
    url = urlsplit(server.https_url)
    context = ssl.create_default_context(cafile=server.ca_file)
    connection = http.client.HTTPSConnection(url.hostname, url.port, context=context,
                                             timeout=10)
    try:
        connection.request("GET", path + "?watch=1&resourceVersion=0&timeoutSeconds=1",
                           headers={"Authorization": f"Bearer {token(server)}"})
        data = connection.getresponse().read()
    finally:
        connection.close()
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def test_a_crd_with_webhook_conversion_is_converted_on_every_read_and_write(any_api_server):
    s = any_api_server
    group = f"conv-{secrets.token_hex(4)}.example.com"
    fail: list[str] = []
    with WebhookServer(converter(fail)) as hook, served_crd(s, widget_crd(group, hook)):
        v1 = f"/apis/{group}/v1/namespaces/{s.namespace}/widgets"
        v2 = f"/apis/{group}/v2/namespaces/{s.namespace}/widgets"
        code, created, _ = call(s, "POST", v2, {
            "apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"dimensions": {"size": 3}}})
        assert code == 201, created
        assert (created["apiVersion"], created["spec"]) == (f"{group}/v2",
                                                            {"dimensions": {"size": 3}})
        code, read, _ = call(s, "GET", f"{v1}/w")
        assert (code, read["apiVersion"], read["spec"]) == (200, f"{group}/v1", {"size": 3})
        code, patched, _ = call(s, "PATCH", f"{v2}/w", {"spec": {"dimensions": {"size": 4}}},
                                "application/merge-patch+json")
        assert (code, patched["spec"]) == (200, {"dimensions": {"size": 4}})
        code, listed, _ = call(s, "GET", v2)
        assert [(i["apiVersion"], i["spec"]) for i in listed["items"]] == [
            (f"{group}/v2", {"dimensions": {"size": 4}})]
        assert call(s, "GET", f"{v1}/w")[1]["spec"] == {"size": 4}
        events = watch_events(s, v2)
        assert [(e["type"], e["object"]["apiVersion"], e["object"]["spec"])
                for e in events] == [("ADDED", f"{group}/v2", {"dimensions": {"size": 4}})]
        reviews = [review for path, review in hook.requests]
        assert {path.split("?")[0] for path, _ in hook.requests} == {"/convert"}
        assert {r["request"]["desiredAPIVersion"] for r in reviews} == {f"{group}/v1",
                                                                        f"{group}/v2"}
        assert all(r["apiVersion"] == "apiextensions.k8s.io/v1" and
                   r["kind"] == "ConversionReview" for r in reviews)
        fail.append("no conversion today")
        code, body, _ = call(s, "GET", f"{v2}/w")
        message = f"conversion webhook for {group}/v1, Kind=Widget failed: no conversion today"
        assert (code, body) == (500, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                      "status": "Failure", "message": message, "code": 500})
        code, body, _ = call(s, "POST", v2, {
            "apiVersion": f"{group}/v2", "kind": "Widget", "metadata": {"name": "x"}})
        message = f"conversion webhook for {group}/v2, Kind=Widget failed: no conversion today"
        assert (code, body) == (500, {"kind": "Status", "apiVersion": "v1", "metadata": {},
                                      "status": "Failure", "message": message, "code": 500})
        assert call(s, "GET", f"{v1}/w")[0] == 200  # the storage version needs no webhook


def test_webhook_conversion_needs_a_client_config_and_review_versions(any_api_server):
    s = any_api_server
    group = f"conv-{secrets.token_hex(4)}.example.com"
    with WebhookServer() as hook:
        crd = widget_crd(group, hook)
    crd["spec"]["conversion"] = {"strategy": "Webhook"}
    code, body, _ = call(s, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                         crd)
    if code == 201:  # do not leave it behind on the shared control plane
        call(s, "DELETE", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                          f"widgets.{group}")
    assert code == 422
    assert [(c["field"], c["message"]) for c in body["details"]["causes"]] == [
        ("spec.conversion.webhookClientConfig",
         "Required value: required when strategy is set to Webhook"),
        ("spec.conversion.conversionReviewVersions", "Required value")]


# -- ported unit cases ----------------------------------------------------------------------------


@pytest.mark.parametrize("result, message, code, state", [
    # k8s.io/apiserver/pkg/admission/plugin/webhook/errors/statuserror_test.go TestToStatusErr
    (None, " without explanation", 400, "Failure"),
    ({"message": "you shall not pass"}, ": you shall not pass", 400, "Failure"),
    ({"reason": "Forbidden"}, ": Forbidden", 400, "Failure"),
    ({"message": "you shall not pass", "reason": "Forbidden"}, ": you shall not pass", 400,
     "Failure"),
    ({}, " without explanation", 400, "Failure"),
    ({"code": 401}, " without explanation", 401, "Failure"),
    ({"code": 500}, " without explanation", 500, "Failure"),
    ({"code": 200}, " without explanation", 400, "Failure"),
    ({"code": 300}, " without explanation", 400, "Failure"),
    ({"code": 399}, " without explanation", 400, "Failure"),
    ({"status": "Success"}, " without explanation", 400, "Failure"),
    ({"status": "Failure"}, " without explanation", 400, "Failure"),
    ({"status": "custom"}, " without explanation", 400, "custom"),
])
def test_ToStatusErr(result, message, code, state):
    from informers.testing.admission import to_status_error

    err = to_status_error("foo", result)
    assert (err.status["message"], err.status["code"], err.status["status"]) == (
        'admission webhook "foo" denied the request' + message, code, state)


def _attrs(group: str, version: str, resource: str, subresource: str, namespace: str):
    from informers.testing.admission import Attributes
    from informers.testing.resources import ResourceType

    rt = ResourceType(group, version, resource, "k" + resource)
    return Attributes(rt, "CREATE", namespace, "name", subresource, None, None, False)


def _rule(resources: list[str], scope: str | None = None) -> dict[str, Any]:
    rule: dict[str, Any] = {"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"],
                            "resources": resources}
    if scope is not None:
        rule["scope"] = scope
    return rule


# k8s.io/apiserver/pkg/admission/plugin/webhook/predicates/rules/rules_test.go TestResource
_RESOURCE_CASES = {
    "no subresources": (["*"], [("g", "v", "r", ""), ("2", "v", "r2", "")],
                        [("g", "v", "r", "exec"), ("2", "v", "r2", "proxy")]),
    "r & subresources": (["r/*"], [("g", "v", "r", ""), ("g", "v", "r", "exec")],
                         [("2", "v", "r2", ""), ("2", "v", "r2", "proxy")]),
    "r & subresources or r2": (["r/*", "r2"], [("g", "v", "r", ""), ("g", "v", "r", "exec"),
                                               ("2", "v", "r2", "")],
                               [("2", "v", "r2", "proxy")]),
    "proxy or exec": (["*/proxy", "*/exec"],
                      [("g", "v", "r", "exec"), ("2", "v", "r2", "proxy"),
                       ("2", "v", "r3", "proxy")],
                      [("g", "v", "r", ""), ("2", "v", "r2", ""), ("2", "v", "r4", "scale")]),
}


@pytest.mark.parametrize("case", sorted(_RESOURCE_CASES))
def test_TestResource(case):
    from informers.testing.admission import _rule_matches

    resources, match, no_match = _RESOURCE_CASES[case]
    for attrs, want in [(m, True) for m in match] + [(m, False) for m in no_match]:
        assert _rule_matches(_rule(resources), _attrs(*attrs, "ns")) is want, attrs


_NAMESPACES = [("", "v1", "namespaces", "", ""), ("", "v1", "namespaces", "finalize", ""),
               ("", "v1", "namespaces", "", "ns"), ("", "v1", "namespaces", "finalize", "ns")]
# rules_test.go TestScope: (group, version, resource, subresource, namespace)
_SCOPE_CASES = {
    "cluster scope": ("Cluster", [("g", "v", "r", "", ""), ("g", "v", "r", "exec", ""),
                                  *_NAMESPACES],
                      [("g", "v", "r", "", "ns"), ("g", "v", "r", "exec", "ns")]),
    "namespace scope": ("Namespaced", [("g", "v", "r", "", "ns"), ("g", "v", "r", "exec", "ns")],
                        [*_NAMESPACES, ("g", "v", "r", "", ""), ("g", "v", "r", "exec", "")]),
    "all scopes": ("*", [("g", "v", "r", "", "ns"), ("g", "v", "r", "exec", "ns"),
                         ("g", "v", "r", "", ""), ("g", "v", "r", "exec", ""), *_NAMESPACES],
                   []),
}


@pytest.mark.parametrize("case", sorted(_SCOPE_CASES))
def test_TestScope(case):
    from informers.testing.admission import _rule_matches

    scope, match, no_match = _SCOPE_CASES[case]
    for attrs, want in [(m, True) for m in match] + [(m, False) for m in no_match]:
        assert _rule_matches(_rule(["*/*"], scope), _attrs(*attrs)) is want, attrs


def test_a_match_condition_that_fails_to_evaluate_forbids_the_request(any_api_server):
    s = any_api_server
    with WebhookServer() as hook, configuration(
            s, VALIDATING, webhook(hook, s.namespace, "cond.example.com",
                                   matchConditions=[{"name": "has-x",
                                                     "expression": "object.data.x == 'y'"}])):
        code, body, _ = call(s, "POST", cm_path(s), configmap("p", a="1"))
        assert hook.requests == []
    assert (code, body) == (403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "configmaps \"p\" is forbidden: expression 'object.data.x == 'y'' resulted "
                   "in error: no such key: x",
        "reason": "Forbidden", "details": {"name": "p", "kind": "configmaps"}, "code": 403})


def test_a_policy_expression_that_fails_to_evaluate_denies_under_fail(any_api_server):
    s = any_api_server
    with policy(s, [{"expression": "object.data.x == 'y'"}], ["Deny"]) as (name, binding):
        code, body, _ = until_effective(s, configmap("e", a="1"))
    assert (code, body["reason"], body["message"]) == (
        422, "Invalid", f"configmaps \"e\" is forbidden: ValidatingAdmissionPolicy '{name}' "
                        f"with binding '{binding}' denied request: expression "
                        "'object.data.x == 'y'' resulted in error: no such key: x")

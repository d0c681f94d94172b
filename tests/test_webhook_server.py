"""The webhook server over direct HTTPS: bad input gets exact answers, the server keeps
serving, and shutdown finishes what is in flight."""

from __future__ import annotations

import datetime
import json
import socket
import ssl
import threading
import time

import pytest
from prometheus_client import CollectorRegistry
from webhook_helpers import admission_review, client_context, post

from informers.certificates import CertificateAuthority
from informers.webhook import AdmissionDenied, WebhookServer


class _Validator:
    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def validate_create(self, obj, request):
        if obj["data"].get("boom"):
            raise RuntimeError("boom")
        if obj["data"].get("slow"):
            self.entered.set()
            self.release.wait(10)
        if obj["data"].get("deny"):
            raise AdmissionDenied("no", warnings=["w1"])
        return None

    def validate_update(self, old, obj, request):
        return [f"{old['data']} -> {obj['data']}"]

    def validate_delete(self, old, request):
        raise AdmissionDenied(f"cannot delete {old['metadata']['name']}", reason="Conflict",
                              code=409)


@pytest.fixture
def ca(tmp_path):
    authority = CertificateAuthority()
    authority.issue(["127.0.0.1"]).write(str(tmp_path))
    return authority


@pytest.fixture
def served(ca, tmp_path):
    validator = _Validator()
    registry = CollectorRegistry()
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path),
                           max_request_bytes=4096, request_timeout=0.5,
                           metrics_registry=registry)
    server.validating("/validate", validator)
    with server:
        yield server, validator, registry
    validator.release.set()


def _cm(**data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}, "data": data}


def _error_review(code: int, message: str) -> dict:
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": "", "allowed": False,
                         "status": {"code": code, "message": message, "metadata": {}}}}


def test_allowed_answers_the_request_uid(served, ca):
    server, _, _ = served
    status, headers, body = post(server.port, ca, "/validate", admission_review(obj=_cm()))
    assert (status, headers["Content-Type"]) == (200, "application/json")
    assert json.loads(body) == {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "response": {"uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": True,
                     "status": {"code": 200, "metadata": {}}}}


def test_update_gets_old_and_new_and_delete_gets_old(served, ca):
    server, _, _ = served
    _, _, body = post(server.port, ca, "/validate",
                      admission_review("UPDATE", obj=_cm(a="2"), old=_cm(a="1")))
    assert json.loads(body)["response"]["warnings"] == ["{'a': '1'} -> {'a': '2'}"]
    _, _, body = post(server.port, ca, "/validate", admission_review("DELETE", old=_cm()))
    assert json.loads(body)["response"] == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": False,
        "status": {"code": 409, "reason": "Conflict", "message": "cannot delete cm",
                   "metadata": {}}}


def test_malformed_json_is_400(served, ca):
    server, _, _ = served
    status, _, body = post(server.port, ca, "/validate", b"{not json")
    assert status == 400
    assert json.loads(body) == _error_review(
        400, "the request body is not JSON: Expecting property name enclosed in double "
             "quotes: line 1 column 2 (char 1)")


def test_wrong_api_version_is_400(served, ca):
    server, _, _ = served
    review = admission_review(obj=_cm())
    review["apiVersion"] = "admission.k8s.io/v1beta1"
    status, _, body = post(server.port, ca, "/validate", review)
    assert status == 400
    assert json.loads(body) == _error_review(
        400, 'expected apiVersion "admission.k8s.io/v1" and kind "AdmissionReview", got '
             'apiVersion "admission.k8s.io/v1beta1" and kind "AdmissionReview"')


def test_empty_body_and_wrong_content_type_are_400(served, ca):
    # controller-runtime http_test.go: "should return bad-request when given an empty body"
    # and "should return bad-request when given the wrong content-type".
    server, _, _ = served
    status, _, body = post(server.port, ca, "/validate", b"")
    assert (status, json.loads(body)) == (400, _error_review(400, "request body is empty"))
    status, _, body = post(server.port, ca, "/validate", b"{}", content_type="application/foo")
    assert (status, json.loads(body)) == (400, _error_review(
        400, "contentType=application/foo, expected application/json"))


def test_oversized_body_is_413_and_the_server_keeps_serving(served, ca):
    server, _, _ = served
    status, headers, body = post(server.port, ca, "/validate",
                                 admission_review(obj=_cm(big="x" * 5000)))
    assert (status, headers["Connection"]) == (413, "close")
    assert json.loads(body) == _error_review(
        413, "request entity is too large; limit is 4096 bytes")
    assert post(server.port, ca, "/validate", admission_review(obj=_cm()))[0] == 200


def test_handler_that_raises_is_an_internal_error_denial(served, ca):
    server, _, _ = served
    status, _, body = post(server.port, ca, "/validate", admission_review(obj=_cm(boom="1")))
    assert status == 200
    assert json.loads(body)["response"] == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": False,
        "status": {"code": 500, "reason": "InternalError",
                   "message": "Internal error occurred: RuntimeError: boom",
                   "details": {"causes": [{"message": "RuntimeError: boom"}]},
                   "metadata": {}}}
    assert post(server.port, ca, "/validate", admission_review(obj=_cm()))[0] == 200


def test_denial_carries_reason_message_and_warnings(served, ca):
    server, _, _ = served
    _, _, body = post(server.port, ca, "/validate", admission_review(obj=_cm(deny="1")))
    assert json.loads(body)["response"] == {
        "uid": "705ab4f5-6393-11e8-b7cc-42010a800002", "allowed": False,
        "status": {"code": 403, "reason": "Forbidden", "message": "no", "metadata": {}},
        "warnings": ["w1"]}


def test_unknown_path_is_404(served, ca):
    server, _, _ = served
    status, _, body = post(server.port, ca, "/nowhere", admission_review(obj=_cm()))
    assert (status, body) == (404, b"404 page not found\n")


def test_a_request_slower_than_the_time_bound_is_408(served, ca):
    server, _, _ = served
    raw = socket.create_connection(("127.0.0.1", server.port))
    with client_context(ca).wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        tls.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                    b"Content-Length: 100\r\n\r\n{\"apiVersion\"")
        started = time.monotonic()
        answer = b""
        while chunk := tls.recv(65536):
            answer += chunk
        elapsed = time.monotonic() - started
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 408 ")
    assert json.loads(body) == _error_review(408, "the request did not arrive within 0.5s")
    assert elapsed < 2.0
    assert post(server.port, ca, "/validate", admission_review(obj=_cm()))[0] == 200


def test_an_expired_certificate_is_refused_by_the_client_and_the_server_keeps_serving(
        ca, tmp_path):
    expired_dir = tmp_path / "expired"
    past = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(days=800)
    ca.issue(["127.0.0.1"], now=past).write(str(expired_dir))
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(expired_dir))
    server.validating("/validate", _Validator())
    with server:
        with pytest.raises(ssl.SSLCertVerificationError, match="certificate has expired"):
            post(server.port, ca, "/validate", admission_review(obj=_cm()))
        ca.issue(["127.0.0.1"]).write(str(expired_dir))
        assert server.watcher is not None and server.watcher.check() is True
        assert post(server.port, ca, "/validate", admission_review(obj=_cm()))[0] == 200


def test_health_and_metrics(served, ca):
    server, _, registry = served
    post(server.port, ca, "/validate", admission_review(obj=_cm()))
    post(server.port, ca, "/validate", b"")
    import http.client

    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=client_context(ca))
    for path in ("/healthz", "/readyz"):
        conn.request("GET", path)
        response = conn.getresponse()
        assert (response.status, response.read()) == (200, b"ok")
    conn.close()
    assert registry.get_sample_value("controller_runtime_webhook_requests_total",
                                     {"webhook": "/validate", "code": "200"}) == 1.0
    assert registry.get_sample_value("controller_runtime_webhook_requests_total",
                                     {"webhook": "/validate", "code": "400"}) == 1.0
    assert registry.get_sample_value("controller_runtime_webhook_requests_in_flight",
                                     {"webhook": "/validate"}) == 0.0


def test_stop_finishes_the_request_in_flight_and_joins_its_threads(ca, tmp_path):
    validator = _Validator()
    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path),
                           shutdown_timeout=5)
    server.validating("/validate", validator)
    server.start()
    answers: list[int] = []
    idle = socket.create_connection(("127.0.0.1", server.port))  # an idle connection
    idle_tls = client_context(ca).wrap_socket(idle, server_hostname="127.0.0.1")
    slow = threading.Thread(target=lambda: answers.append(post(
        server.port, ca, "/validate", admission_review(obj=_cm(slow="1")))[0]))
    slow.start()
    assert validator.entered.wait(5)
    stopper = threading.Thread(target=server.stop)
    stopper.start()
    time.sleep(0.2)
    assert stopper.is_alive()  # waits for the request in flight
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()
    validator.release.set()
    stopper.join(5)
    slow.join(5)
    assert not stopper.is_alive() and answers == [200]
    assert idle_tls.recv(1) == b""  # the idle connection was closed
    idle_tls.close()
    assert [t.name for t in threading.enumerate() if t.name.startswith("webhook-")] == []


def test_kept_alive_requests_do_not_wait_for_delayed_acks(served, ca):
    """Headers and body leave in two writes; without TCP_NODELAY each answer waits about
    40 ms for the client's delayed ACK (25 requests would take over a second)."""
    import http.client

    server, _, _ = served
    conn = http.client.HTTPSConnection("127.0.0.1", server.port, context=client_context(ca))
    body = json.dumps(admission_review(obj=_cm()))
    conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
    conn.getresponse().read()
    started = time.monotonic()
    for _ in range(25):
        conn.request("POST", "/validate", body, {"Content-Type": "application/json"})
        assert conn.getresponse().read()
    elapsed = time.monotonic() - started
    conn.close()
    assert elapsed < 0.9


def test_a_raw_handler_that_raises_is_answered_and_the_server_keeps_serving(ca, tmp_path):
    class Broken:
        def handle(self, request):
            raise ZeroDivisionError("division by zero")

    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path))
    server.register("/raw", Broken())
    server.validating("/validate", _Validator())
    with server:
        status, _, body = post(server.port, ca, "/raw", admission_review(obj=_cm()))
        assert (status, json.loads(body)["response"]["status"]["message"]) == (
            200, "Internal error occurred: ZeroDivisionError: division by zero")
        assert post(server.port, ca, "/validate", admission_review(obj=_cm()))[0] == 200


def _conversion_failure(message: str, uid: str = "") -> dict:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": uid, **({"convertedObjects": []} if uid else {}),
                         "result": {"metadata": {}, "status": "Failure", "message": message}}}


def test_bad_conversion_reviews_get_a_failure_and_the_server_keeps_serving(ca, tmp_path):
    """The conversion path's bad input: not JSON, another apiVersion, too large (HTTP 400 and
    413 with a ConversionReview whose result is a Failure), and a converter that raises (a
    Failure naming the object and the step, HTTP 200, as kube-apiserver expects)."""
    from informers.webhook import HubAndSpoke

    def broken(obj):
        raise KeyError("colour")

    server = WebhookServer(host="127.0.0.1", port=0, cert_dir=str(tmp_path),
                           max_request_bytes=4096)
    server.conversion(HubAndSpoke("example.com", "Widget", "v1").spoke(
        "v1alpha1", broken, lambda obj: obj))
    review = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
              "request": {"uid": "c1", "desiredAPIVersion": "example.com/v1", "objects": [
                  {"apiVersion": "example.com/v1alpha1", "kind": "Widget",
                   "metadata": {"name": "w"}}]}}
    with server:
        status, _, body = post(server.port, ca, "/convert", b"[")
        assert (status, json.loads(body)) == (400, _conversion_failure(
            "the request body is not JSON: Expecting value: line 1 column 2 (char 1)"))
        status, _, body = post(server.port, ca, "/convert",
                               {**review, "apiVersion": "apiextensions.k8s.io/v1beta1"})
        assert (status, json.loads(body)) == (400, _conversion_failure(
            'expected apiVersion "apiextensions.k8s.io/v1" and kind "ConversionReview", got '
            'apiVersion "apiextensions.k8s.io/v1beta1" and kind "ConversionReview"'))
        big = json.loads(json.dumps(review))
        big["request"]["objects"][0]["spec"] = {"x": "y" * 5000}
        status, _, body = post(server.port, ca, "/convert", big)
        assert (status, json.loads(body)) == (413, _conversion_failure(
            "request entity is too large; limit is 4096 bytes"))
        status, _, body = post(server.port, ca, "/convert", review)
        assert (status, json.loads(body)) == (200, _conversion_failure(
            "converting example.com/v1alpha1 Widget 'w' to the hub version v1 failed: "
            "KeyError: 'colour'", uid="c1"))
        review["request"]["desiredAPIVersion"] = "example.com/v1alpha1"
        review["request"]["objects"][0]["apiVersion"] = "example.com/v1"
        status, _, body = post(server.port, ca, "/convert", review)
        assert status == 200
        assert json.loads(body)["response"]["result"] == {"metadata": {}, "status": "Success"}

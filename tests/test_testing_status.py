"""metav1.Status builders of the embedded API server (informers/testing/status.py), compared
with the texts of ``k8s.io/apimachinery/pkg/api/errors``."""

from __future__ import annotations

import pytest

from informers.errors import is_expired, is_too_large_resource_version, is_too_many_requests
from informers.testing import status


def test_messages_and_details_follow_apimachinery():
    assert status.not_found("pods", "", "x").status["message"] == 'pods "x" not found'
    assert status.already_exists("deployments", "apps", "d").status["message"] == (
        'deployments.apps "d" already exists')
    conflict = status.conflict("leases", "coordination.k8s.io", "l", "why")
    assert conflict.status["message"] == (
        'Operation cannot be fulfilled on leases.coordination.k8s.io "l": why')
    assert conflict.status["details"] == {"name": "l", "group": "coordination.k8s.io",
                                          "kind": "leases"}
    two = status.invalid("Lease", "coordination.k8s.io", "l", [
        ("FieldValueRequired", "spec.a", "Required value"),
        ("FieldValueInvalid", "spec.b", 'Invalid value: "x": no')])
    assert two.status["message"] == (
        'Lease.coordination.k8s.io "l" is invalid: [spec.a: Required value, spec.b: Invalid '
        'value: "x": no]')
    assert two.code == 422


def test_errors_are_recognised_by_the_client_side_predicates():
    assert is_expired(status.expired("too old resource version: 1 (2)"))
    assert is_too_large_resource_version(status.too_large_resource_version(9, 5))
    limited = status.too_many_requests(4)
    assert is_too_many_requests(limited) and limited.retry_after == 4.0


@pytest.mark.parametrize(("code", "reason"), [
    (400, "BadRequest"), (401, "Unauthorized"), (403, "Forbidden"), (404, "NotFound"),
    (409, "Conflict"), (410, "Expired"), (422, "Invalid"), (429, "TooManyRequests"),
    (500, "InternalError"), (503, "ServiceUnavailable"), (504, "Timeout"), (418, "")])
def test_from_code_uses_the_real_reason(code, reason):
    err = status.from_code(code)
    assert (err.code, err.reason, err.status["status"]) == (code, reason, "Failure")
    assert ("retryAfterSeconds" in err.status.get("details", {})) == (code == 429)

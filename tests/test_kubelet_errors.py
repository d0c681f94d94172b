"""Tests for controllers.kubelet.errors."""

from __future__ import annotations

from controllers.kubelet.errors import ManifestError, ManifestFetchError, PodSourceError
from informers.errors import InformersError


def test_manifest_error_names_its_source():
    err = ManifestError("invalid pod: name is needed for the pod", "/m/web.yaml")
    assert str(err) == "/m/web.yaml: invalid pod: name is needed for the pod"
    assert (err.source, err.reason) == ("/m/web.yaml", "invalid pod: name is needed for the pod")
    assert str(ManifestError("bad")) == "bad"
    assert isinstance(err, ValueError) and isinstance(err, PodSourceError)
    assert isinstance(err, InformersError)


def test_fetch_error_is_a_connection_error():
    err = ManifestFetchError("http://x: 500 Internal Server Error", "http://x", 500)
    assert isinstance(err, ConnectionError) and isinstance(err, PodSourceError)
    assert (err.url, err.status_code) == ("http://x", 500)

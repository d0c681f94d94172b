"""The ``api_server``/``api_client`` pytest fixtures (informers/testing/pytest_plugin.py),
exercised in an inner pytest run that gets them from the package's ``pytest11`` entry point."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

pytest_plugins = ("pytester",)

CRD = Path(__file__).resolve().parent.parent / "examples" / "07-website-operator" / "crd.yaml"


def test_fixtures_and_marker_options(pytester):
    pytester.makepyfile(test_inner="""
        import pytest
        from kubernetes import client

        def test_default(api_server, api_client):
            names = [n.metadata.name for n in client.CoreV1Api(api_client).list_namespace().items]
            assert "default" in names
            assert api_server.endpoints.settings.bookmark_interval == 60.0

        @pytest.mark.api_server(bookmark_interval=0.5, namespaces=("only",))
        def test_marker(api_server):
            assert api_server.endpoints.settings.bookmark_interval == 0.5
            assert [n["metadata"]["name"] for n in api_server.list("namespaces")] == ["only"]
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_plugin_import_is_light():
    import subprocess

    code = ("import sys, informers.testing.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m.startswith('informers.testing')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    # Loading the plugin imports no part of the server until a test asks for it.
    assert out.strip() == "['informers.testing', 'informers.testing.pytest_plugin']"


# -- the real control plane for users: control_plane, control_plane_options, any_api_client ----
# In a subprocess (an in-process run re-imports yaml under the loaded loader), with this
# checkout's informers first on the path.

ROOT = str(Path(__file__).resolve().parent.parent)

_INNER_CONFTEST = """
    import pytest
    from informers.testing.pytest_plugin import ControlPlaneOptions

    @pytest.fixture(scope="session")
    def control_plane_options():
        return ControlPlaneOptions(crds=[{crd!r}],
                                   feature_gates={{"ShardedListAndWatch": True}})
"""

_INNER_TEST = """
    import json
    import secrets

    def call(api, method, path, body=None):
        method, url, headers, body, _ = api.param_serialize(
            method, path, header_params={"Content-Type": "application/json"}, body=body,
            auth_settings=["BearerToken"])
        response = api.call_api(method, url, headers, body)
        return response.status, json.loads(response.read())

    def test_the_crd_and_the_gate(any_api_client, request):
        api = any_api_client
        ns = "t-" + secrets.token_hex(4)
        assert call(api, "POST", "/api/v1/namespaces", {"metadata": {"name": ns}})[0] == 201
        site = {"apiVersion": "example.com/v1", "kind": "Website",
                "metadata": {"name": "home"}, "spec": {"url": "https://example.com"}}
        code, made = call(api, "POST", f"/apis/example.com/v1/namespaces/{ns}/websites", site)
        assert (code, made["spec"]) == (201, site["spec"])
        selector = ("shardRange(object.metadata.uid, '0x0000000000000000', "
                    "'0x10000000000000000')")
        code, listed = call(api, "GET", f"/api/v1/namespaces/{ns}/configmaps"
                            f"?shardSelector={selector}")
        assert listed["metadata"]["shardInfo"] == {"selector": selector}  # the gate is on
        code, listed = call(api, "GET", f"/apis/example.com/v1/namespaces/{ns}/websites"
                            f"?shardSelector={selector}")
        assert [i["metadata"]["name"] for i in listed["items"]] == ["home"]
        # Custom resources are filtered, but their (unstructured) lists carry no shardInfo.
        assert "shardInfo" not in listed["metadata"]
        code, listed = call(api, "GET", f"/apis/example.com/v1/namespaces/{ns}/websites"
                            f"?shardSelector=foo(1)")
        assert code == 500
        print("ran on", request.node.callspec.params["any_api_client"])
"""


@pytest.mark.slow
@pytest.mark.real_apiserver
def test_control_plane_fixture_with_crds_and_feature_gates(pytester, monkeypatch,
                                                           real_api_server):
    # The binaries of the suite's own control plane, as a user gives them.
    bin_dir = os.path.dirname(real_api_server.binaries.kube_apiserver)
    monkeypatch.setenv("KUBE_INFORMERS_CONTROL_PLANE_BIN", bin_dir)
    monkeypatch.setenv("PYTHONPATH", ROOT)
    pytester.makeconftest(_INNER_CONFTEST.format(crd=str(CRD)))
    pytester.makepyfile(test_inner=_INNER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*ran on embedded*", "*ran on real*"])


@pytest.mark.slow
def test_control_plane_tests_skip_without_binaries(pytester, monkeypatch):
    monkeypatch.delenv("KUBE_INFORMERS_CONTROL_PLANE_BIN", raising=False)
    monkeypatch.setenv("PYTHONPATH", ROOT)
    pytester.makeconftest(_INNER_CONFTEST.format(crd=str(CRD)))
    pytester.makepyfile(test_inner=_INNER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*no real control plane: set $KUBE_INFORMERS_CONTROL_PLANE_BIN*"])
    # -m "not control_plane" leaves the real variant out.
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-m", "not control_plane")
    result.assert_outcomes(passed=1, deselected=1)

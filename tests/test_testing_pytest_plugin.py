"""The ``api_server``/``api_client`` pytest fixtures (informers/testing/pytest_plugin.py),
exercised in an inner pytest run that gets them from the package's ``pytest11`` entry point."""

from __future__ import annotations

import sys

pytest_plugins = ("pytester",)


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

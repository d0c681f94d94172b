"""Shared fixtures for the test suite."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# --- the real control plane: the real_api_server fixture (see tools/control-plane/build.sh) ---

_BUILD_SCRIPT = Path(__file__).resolve().parent.parent / "tools" / "control-plane" / "build.sh"
_real: dict = {}  # "binaries", or "skip" (Go missing) / "error" (build failed): a message


def _real_binaries(config):
    """Find or build (once per session, progress on the terminal) the control plane."""
    from informers.testing.control_plane import ControlPlaneError, GoMissingError, find_binaries

    if not _real:
        capture = config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            try:
                _real["binaries"] = find_binaries(_BUILD_SCRIPT, log=sys.stderr)
            except GoMissingError as exc:
                _real["skip"] = str(exc)
            except ControlPlaneError as exc:
                _real["error"] = str(exc)
    return _real


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items):
    # Build before the first test: the per-test timeout would cut a first build short.
    marked = [item for item in items if item.get_closest_marker("real_apiserver")]
    if marked and not config.option.collectonly and "skip" in _real_binaries(config):
        for item in marked:
            item.add_marker(pytest.mark.skip(reason=_real["skip"]))


def pytest_terminal_summary(terminalreporter):
    if "binaries" in _real:
        b = _real["binaries"]
        terminalreporter.write_line(
            f"real control plane: Kubernetes {b.kubernetes_version}, etcd {b.etcd_version} "
            f"({Path(b.kube_apiserver).parent})")
    elif _real:
        terminalreporter.write_line(
            f"real control plane tests NOT RUN: {_real.get('skip') or _real['error']}",
            yellow=True, bold=True)


@pytest.fixture(scope="session")
def real_api_server(request, tmp_path_factory):
    """A started informers.testing.control_plane.ControlPlane shared by the session; its logs
    stay in pytest's basetemp (control-plane*/)."""
    from informers.testing.control_plane import ControlPlane

    state = _real_binaries(request.config)
    if "skip" in state:
        pytest.skip(state["skip"])
    if "error" in state:
        pytest.fail(state["error"], pytrace=False)
    # ShardedListAndWatch (alpha in v1.36) for the shard selector parity tests: it changes
    # nothing for a request without shardSelector.
    with ControlPlane(state["binaries"], work_dir=tmp_path_factory.mktemp("control-plane"),
                      feature_gates={"ShardedListAndWatch": True}) as cp:
        _real["plane"] = cp
        yield cp
        _real.pop("plane")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    # A failed test that used the real control plane shows the tails of its logs.
    report = yield
    plane = _real.get("plane")
    if report.failed and plane is not None and (
            "real_api_server" in item.fixturenames or item.get_closest_marker("real_apiserver")):
        for name, text in plane.logs().items():
            if text:
                report.sections.append((f"{name} log, last lines ({plane.work_dir})", text))
    return report


# --- server: one embedded API server per test module ------------------------------------------


@pytest.fixture(scope="module")
def server():
    """A started informers.testing.ApiServer shared by the tests of one module, stopped after
    the last; its tests keep apart by the names they use. A module may define its own."""
    from informers.testing import ApiServer

    with ApiServer() as srv:
        yield srv


# --- any_api_server: the same test against the embedded server and the real one ---------------


@pytest.fixture(params=["embedded", pytest.param("real", marks=pytest.mark.real_apiserver)])
def any_api_server(request):
    """A tests.servers.TestServer: a fresh embedded ApiServer, or the session's real control
    plane; either way with a fresh namespace of the test's own (``.namespace``)."""
    from servers import EmbeddedServer, RealServer

    if request.param == "real":
        server = RealServer(request.getfixturevalue("real_api_server"))
    else:
        from informers.testing import ApiServer

        server = EmbeddedServer(ApiServer().start())
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler (KeyboardInterrupt) for one test, on the main thread.

    pytest installs its own SIGINT handler; tests of what Ctrl-C does to ``run()`` need the
    interpreter's default one, and restore pytest's afterwards.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals are delivered to the main thread only")
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)

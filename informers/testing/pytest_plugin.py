"""pytest fixtures for the test API servers: ``api_server``, ``api_client``, ``manager``, the
async ``async_factory``, ``async_manager`` and ``async_transport``, and the real control
plane's ``control_plane`` and ``any_api_client``.

Registered through the ``pytest11`` entry point of kube-informers, so any project that installs
the package gets them. This module imports nothing heavy at collection time; the server is
imported when a test first asks for the fixture.

Options for one test (or module, via ``pytestmark``) go through a marker::

    @pytest.mark.api_server(bookmark_interval=0.1, history_limit=50)
    def test_bookmarks(api_server): ...

``manager`` is a :class:`~informers.manager.Manager` on ``api_client``; run it with
:func:`informers.testing.runner.run_manager`. To run the same tests on a real cluster, override
``api_client`` in a ``conftest.py`` with a client of that cluster (the project's own suite
does so with its real kube-apiserver).

Async tests (``@pytest.mark.anyio``, on the ``anyio_backend`` the test chooses: asyncio, trio)
use the same ``api_server``, whose threads serve any event loop, and ask for
``async_factory`` (an entered :class:`~informers.aio.AsyncSharedInformerFactory` on
``api_client``), ``async_manager`` (an :class:`~informers.aio.manager.AsyncManager`, not run:
``async with run_async_manager(async_manager)`` from :mod:`informers.testing.aio_runner`) or
``async_transport`` (an entered :class:`~informers.aio.AsyncTransport` for requests of the
test's own)::

    @pytest.mark.anyio
    async def test_sync(api_server, async_factory):
        api_server.create(pod, "pods", "default")
        async_factory.informer_for("pods")
        await async_factory.wait_for_cache_sync(timeout=10)

The real control plane (what controller-runtime's envtest gives Go authors): ``control_plane``
is a session-wide :class:`~informers.testing.control_plane.ControlPlane` (etcd and
kube-apiserver on loopback) started from the binaries in ``$KUBE_INFORMERS_CONTROL_PLANE_BIN``
(envtest's ``KUBEBUILDER_ASSETS``; the tests that ask for it are skipped when it is unset),
with the CRDs, feature gates and flags of ``control_plane_options``, a session fixture a
``conftest.py`` overrides::

    @pytest.fixture(scope="session")
    def control_plane_options():
        return ControlPlaneOptions(crds=["config/crd"],
                                   feature_gates={"ShardedListAndWatch": True})

``any_api_client`` runs a test twice: on a fresh embedded server with the same CRDs (and the
feature gates it knows), and on the session's control plane (marked ``control_plane``, so
``-m "not control_plane"`` leaves it out). The control plane is shared by the session: a test
keeps to its own namespace and names.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

    from informers.aio import AsyncSharedInformerFactory, AsyncTransport
    from informers.aio.manager import AsyncManager
    from informers.testing.control_plane import ControlPlane
    from informers.testing.server import ApiServer

__all__ = ["ControlPlaneOptions", "any_api_client", "api_client", "api_server",
           "async_factory", "async_manager", "async_transport", "control_plane",
           "control_plane_options", "manager"]

_BINARIES_ENV = "KUBE_INFORMERS_CONTROL_PLANE_BIN"  # informers.testing.binaries.BINARIES_ENV


@dataclass(frozen=True)
class ControlPlaneOptions:
    """What the ``control_plane`` fixture starts (envtest's ``Environment`` options).

    Attributes:
        crds: CRD files or folders installed after start, waited for until Established and
            served (envtest's ``CRDDirectoryPaths``; :func:`informers.testing.crd_installer.
            install_crds`); ``any_api_client`` gives them to the embedded server too.
        feature_gates: kube-apiserver feature gates (``--feature-gates``); the embedded
            server of ``any_api_client`` gets those it knows
            (:data:`informers.testing.server.FEATURE_GATES`).
        apiserver_args: extra kube-apiserver flags (envtest's ``ControlPlane.APIServer``
            ``Configure()``), after the fixture's own.
        binaries_dir: where kube-apiserver and etcd are (default:
            ``$KUBE_INFORMERS_CONTROL_PLANE_BIN``).
        crd_max_wait: seconds to wait for the CRDs (envtest's ``CRDInstallOptions.MaxTime``,
            10 s).
        startup_timeout: seconds to wait for each component's health.
    """

    crds: Sequence[str | os.PathLike[str]] = ()
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    apiserver_args: Sequence[str] = ()
    binaries_dir: str | None = None
    crd_max_wait: float = 10.0
    startup_timeout: float = 180.0


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "api_server(**kwargs): keyword arguments for the embedded ApiServer of the "
        "api_server fixture",
    )
    config.addinivalue_line(
        "markers",
        "control_plane: runs on the real kube-apiserver of the control_plane fixture",
    )


@pytest.fixture
def api_server(request: pytest.FixtureRequest) -> Iterator[ApiServer]:
    """A started :class:`informers.testing.ApiServer`, stopped after the test.

    Keyword arguments come from the closest ``@pytest.mark.api_server(...)`` marker.
    """
    from informers.testing.server import ApiServer

    marker = request.node.get_closest_marker("api_server")
    kwargs: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    server = ApiServer(**kwargs)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def api_client(api_server: ApiServer) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient`` for ``api_server``, closed after the test."""
    client = api_server.api_client()
    try:
        yield client
    finally:
        client.close()


@pytest.fixture
def manager(api_client: Any) -> Any:
    """A :class:`informers.manager.Manager` on ``api_client`` (not started: add controllers,
    then ``with run_manager(manager): ...``)."""
    from informers.manager import Manager

    return Manager(api_client, shutdown_timeout=5.0)


@pytest.fixture
async def async_factory(api_client: Any) -> AsyncIterator[AsyncSharedInformerFactory]:
    """An :class:`~informers.aio.AsyncSharedInformerFactory` on ``api_client``, entered for the
    test (informers asked for start at once) and left after it: watches stopped, handlers
    drained, connections closed. Needs an anyio test (``@pytest.mark.anyio``)."""
    from informers.aio import AsyncSharedInformerFactory

    async with AsyncSharedInformerFactory(api_client) as factory:
        yield factory


@pytest.fixture
def async_manager(api_client: Any) -> AsyncManager:
    """An :class:`~informers.aio.manager.AsyncManager` on a new factory of ``api_client`` (not
    run: add controllers watching ``async_manager.factory.informer_for(...)``, then
    ``async with run_async_manager(async_manager): ...``)."""
    from informers.aio import AsyncSharedInformerFactory
    from informers.aio.manager import AsyncManager

    return AsyncManager(AsyncSharedInformerFactory(api_client))


@pytest.fixture
async def async_transport(api_client: Any) -> AsyncIterator[AsyncTransport]:
    """An :class:`~informers.aio.AsyncTransport` (httpx) for ``api_client``'s server, with its
    configuration, authentication and TLS; closed after the test. Needs an anyio test."""
    from informers.aio import AsyncTransport

    async with AsyncTransport(api_client) as transport:
        yield transport


@pytest.fixture(scope="session")
def control_plane_options() -> ControlPlaneOptions:
    """The options of ``control_plane`` (none by default); override it in a ``conftest.py``."""
    return ControlPlaneOptions()


@pytest.fixture(scope="session")
def control_plane(control_plane_options: ControlPlaneOptions,
                  tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A started :class:`~informers.testing.control_plane.ControlPlane` with the CRDs of
    ``control_plane_options`` installed and served, shared by the session and stopped at its
    end (its logs stay in pytest's basetemp, ``control-plane*/``). Skips the test when no
    binaries directory is given."""
    from informers.testing.binaries import ControlPlaneBinaries
    from informers.testing.control_plane import ControlPlane
    from informers.testing.crd_installer import install_crds

    options = control_plane_options
    bin_dir = options.binaries_dir or os.environ.get(_BINARIES_ENV)
    if not bin_dir:
        pytest.skip(f"no real control plane: set ${_BINARIES_ENV} to a directory holding "
                    "kube-apiserver and etcd")
    plane = ControlPlane(
        ControlPlaneBinaries.from_dir(bin_dir),
        work_dir=tmp_path_factory.mktemp("control-plane"),
        feature_gates=options.feature_gates, apiserver_args=options.apiserver_args,
        startup_timeout=options.startup_timeout)
    plane.start()
    try:
        if options.crds:
            api = plane.api_client()
            try:
                install_crds(api, options.crds, max_wait=options.crd_max_wait)
            finally:
                api.close()
        yield plane
    finally:
        plane.stop()


@pytest.fixture(params=["embedded", pytest.param("real", marks=pytest.mark.control_plane)])
def any_api_client(request: pytest.FixtureRequest,
                   control_plane_options: ControlPlaneOptions) -> Iterator[Any]:
    """A ``kubernetes.client.ApiClient``, once on a fresh embedded
    :class:`~informers.testing.ApiServer` with ``control_plane_options.crds``, once on the
    session's ``control_plane``; closed (and the embedded server stopped) after the test.
    ``request.param`` (``"embedded"`` or ``"real"``) tells which."""
    if request.param == "real":
        plane = request.getfixturevalue("control_plane")
        client = plane.api_client()
        try:
            yield client
        finally:
            client.close()
        return
    from informers.testing.server import FEATURE_GATES, ApiServer

    gates = {k: v for k, v in control_plane_options.feature_gates.items()
             if k in FEATURE_GATES}
    server = ApiServer(crds=control_plane_options.crds, feature_gates=gates)
    server.start()
    try:
        client = server.api_client()
        try:
            yield client
        finally:
            client.close()
    finally:
        server.stop()

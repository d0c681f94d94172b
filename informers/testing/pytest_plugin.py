"""pytest fixtures for the embedded API server: ``api_server``, ``api_client`` and ``manager``.

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
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from informers.testing.server import ApiServer

__all__ = ["api_client", "api_server", "manager"]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "api_server(**kwargs): keyword arguments for the embedded ApiServer of the "
        "api_server fixture",
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

"""Tests of the team-info controller (main.py) against the embedded API server: copy and adapt.

``api_server`` (a started :class:`informers.testing.ApiServer`, stopped after the test) and
``api_client`` (a ``kubernetes`` client for it) are pytest fixtures that come with
kube-informers; nothing to configure. The server is a real HTTP server, so the controller runs
exactly as it would against a cluster: informers list and watch, writes go through
``informers.client.Client``. The test arranges the world through the server's seeding helpers
(``create``, ``patch``, ``delete``, ``get``), which need no HTTP and are seen by watchers.

Two kinds of test, the least powerful that shows the behaviour first:

* the reconcile function called directly, on caches that have synced: deterministic, and the
  way to show what a reconcile does *not* do;
* the controller running, as in production: shows the wiring (which events enqueue which keys)
  and the retries. It converges asynchronously, so those tests poll for the expected state.

    pytest examples/06-testing-your-controller -q
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from main import CONFIG_MAP, TEAM_LABEL, TeamInfoReconciler, new_controller

from informers import Manager, SharedInformerFactory
from informers.testing import ApiServer


def namespace(name: str, team: str | None = None) -> dict[str, Any]:
    labels = {TEAM_LABEL: team} if team else {}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}


def eventually(condition: Callable[[], Any], timeout: float = 5.0) -> Any:
    """Poll until ``condition()`` is truthy and return it; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (result := condition()):
        if time.monotonic() > deadline:
            pytest.fail(f"not reached within {timeout}s: {condition.__doc__ or condition}")
        time.sleep(0.01)
    return result


def team_info(api_server: Any, ns: str) -> dict[str, str] | None:
    cm = api_server.get("configmaps", ns, CONFIG_MAP)
    return None if cm is None else cm["data"]


# -- the reconcile function, on synced caches ----------------------------------------------------


@pytest.fixture
def reconciler(api_client: Any) -> Iterator[TeamInfoReconciler]:
    """A reconciler whose listers read informers that run (and have synced) for the test."""
    factory = SharedInformerFactory(api_client)
    namespaces = factory.core().v1().namespaces()
    config_maps = factory.core().v1().config_maps()
    result = TeamInfoReconciler(api_client, namespaces.lister(), config_maps.lister())
    factory.start()
    assert factory.wait_for_cache_sync(timeout=10) == {"configmaps": True, "namespaces": True}
    yield result
    factory.shutdown()


def sync(api_server: Any, reconciler: TeamInfoReconciler, ns: str) -> None:
    """Wait until the reconciler's cache holds namespace ``ns`` as the server does."""
    want = api_server.get("namespaces", None, ns)["metadata"]["resourceVersion"]
    cache = reconciler.namespaces.indexer
    eventually(lambda: (cache.get_by_key(ns) or {}).get("metadata", {}).get("resourceVersion")
               == want)


def test_reconcile_creates_the_config_map_of_a_team_namespace(
        api_server: ApiServer, reconciler: TeamInfoReconciler) -> None:
    api_server.create(namespace("checkout", team="payments"))
    sync(api_server, reconciler, "checkout")

    assert reconciler.reconcile("checkout") is None

    assert team_info(api_server, "checkout") == {"team": "payments", "namespace": "checkout"}


def test_reconcile_leaves_namespaces_without_a_team_alone(
        api_server: ApiServer, reconciler: TeamInfoReconciler) -> None:
    api_server.create(namespace("scratch"))
    sync(api_server, reconciler, "scratch")
    api_server.clear_request_log()

    assert reconciler.reconcile("scratch") is None
    assert reconciler.reconcile("no-such-namespace") is None  # deleted meanwhile: nothing to do

    assert team_info(api_server, "scratch") is None
    assert api_server.requests == []  # it read only its caches, and wrote nothing


# -- the controller, running -----------------------------------------------------------------------


@pytest.fixture
def controller(api_client: Any) -> Iterator[None]:
    """The controller running under a Manager, as main.py runs it, until the test ends."""
    manager = Manager(api_client)
    assert manager.factory is not None
    manager.add(new_controller(manager.factory, api_client))
    stop = threading.Event()
    thread = threading.Thread(target=manager.start, args=(stop,))
    thread.start()
    eventually(manager.elected.is_set)  # caches synced, controller started
    yield
    stop.set()
    thread.join(timeout=30)
    assert not thread.is_alive()


@pytest.mark.usefixtures("controller")
def test_the_config_map_follows_the_team_label(api_server: ApiServer) -> None:
    api_server.create(namespace("checkout", team="payments"))
    eventually(lambda: team_info(api_server, "checkout") == {"team": "payments",
                                                             "namespace": "checkout"})

    api_server.patch("namespaces", None, "checkout", {"metadata": {"labels": {TEAM_LABEL: "shop"}}})

    eventually(lambda: team_info(api_server, "checkout") == {"team": "shop",
                                                             "namespace": "checkout"})


@pytest.mark.usefixtures("controller")
def test_a_config_map_changed_or_deleted_by_hand_is_put_back(api_server: ApiServer) -> None:
    api_server.create(namespace("checkout", team="payments"))
    eventually(lambda: team_info(api_server, "checkout"))

    api_server.patch("configmaps", "checkout", CONFIG_MAP, {"data": {"team": "someone-else"}})
    eventually(lambda: team_info(api_server, "checkout") == {"team": "payments",
                                                             "namespace": "checkout"})

    api_server.delete("configmaps", "checkout", CONFIG_MAP)
    eventually(lambda: team_info(api_server, "checkout") == {"team": "payments",
                                                             "namespace": "checkout"})


@pytest.mark.usefixtures("controller")
def test_a_failed_write_is_retried(api_server: ApiServer) -> None:
    # The next two creates of a ConfigMap fail as an overloaded API server would fail them.
    api_server.fail_next(2, 500, verb="create", resource="configmaps")

    api_server.create(namespace("checkout", team="payments"))

    eventually(lambda: team_info(api_server, "checkout"))
    creates = [r.status for r in api_server.request_log("create", "configmaps")]
    assert creates == [500, 500, 201]

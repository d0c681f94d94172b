"""Credentials from a kubeconfig ``user.exec`` plugin (loaded by the official ``kubernetes``
package, as ``SharedInformerFactory.from_config`` does) through the threaded
:class:`~informers.client.Client` and the async :class:`~informers.aio.AsyncClient`, on
asyncio and trio, against the embedded API server whose bearer token the test rotates.

The plugin is a small script printing the ``ExecCredential`` the test wrote to a file, and
logging the token of each run. Ported: client-go ``plugin/pkg/client/auth/exec``
``TestRoundTripper`` (a cached token is used until a 401, which makes the plugin run again,
so the next request carries the new token; a token past its ``expirationTimestamp`` is
fetched again before the request, without a 401) and ``transport``
``TestTokenSourceTransportRoundTrip`` (a 401 resets a cached token: the in-cluster token file
is read again). The async transport runs the plugin off the event loop. Where the official
loader decides (an expiry is an expiry 5 minutes early:
``kube_config.EXPIRY_SKEW_PREVENTION_DELAY``, on the wall clock), the test gives a token a
second or so of life beyond that skew and waits it out.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest

from informers.client import Client
from informers.errors import Unauthorized
from informers.testing import ApiServer

PLUGIN = """\
import json, os, sys, time
with open(sys.argv[1]) as f:
    doc = json.load(f)
if os.path.exists(sys.argv[1] + ".sleep"):  # a slow plugin (a cloud provider's, say)
    with open(sys.argv[1] + ".sleep") as f:
        time.sleep(float(f.read()))
with open(sys.argv[2], "a") as log:
    log.write(doc["status"]["token"] + "\\n")
print(json.dumps(doc))
"""

SKEW = 300  # seconds: kubernetes.config.kube_config.EXPIRY_SKEW_PREVENTION_DELAY


class Plugin:
    """The exec plugin's next answer (``set_output``) and the tokens it handed out."""

    def __init__(self, directory: Path) -> None:
        self.output = directory / "output.json"
        self.log = directory / "runs.log"
        self.script = directory / "plugin.py"
        self.script.write_text(PLUGIN)
        self.log.write_text("")

    def set_output(self, token: str, expires_in: float | None = None) -> None:
        status: dict[str, Any] = {"token": token}
        if expires_in is not None:
            at = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(
                seconds=expires_in)
            status["expirationTimestamp"] = at.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
        self.output.write_text(json.dumps({
            "kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1beta1",
            "status": status}))

    def runs(self) -> list[str]:
        return self.log.read_text().split()

    def kubeconfig(self, server: str) -> str:
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": server}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "plugin"}}],
            "users": [{"name": "plugin", "user": {"exec": {
                "apiVersion": "client.authentication.k8s.io/v1beta1",
                "command": sys.executable,
                "args": [str(self.script), str(self.output), str(self.log)],
                "interactiveMode": "Never"}}}]})


@pytest.fixture
def plugin(tmp_path: Path) -> Plugin:
    return Plugin(tmp_path)


def load_api_client(plugin: Plugin, server: ApiServer, tmp_path: Path) -> Any:
    """A ``kubernetes.client.ApiClient`` from a kubeconfig whose user is the plugin (the
    loader runs it once, and installs its refresh hook)."""
    from kubernetes import client, config

    path = tmp_path / "kubeconfig"
    path.write_text(plugin.kubeconfig(server.url))
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(path), client_configuration=configuration)
    return client.ApiClient(configuration)


Get = Callable[[], int]
"""Lists ConfigMaps of ``default`` through the driver; the answer's status code."""


@pytest.fixture(params=["threads", "asyncio", "trio"])
def driver(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def run_with(driver: str, api: Any, steps: Callable[[Get], None]) -> None:
    """Run ``steps(get)`` with ``get`` sending through ``driver``: the threaded Client, or an
    AsyncClient on an event loop of that backend (``steps`` then runs in a worker thread, each
    ``get`` awaited on the loop)."""
    if driver == "threads":
        threaded = Client(api)

        def get() -> int:
            try:
                threaded.list("configmaps", "default")
            except Unauthorized as err:
                return err.code
            return 200

        steps(get)
        return

    from informers.aio import AsyncClient

    async def main() -> None:
        async with AsyncClient(api) as client:
            async def aget() -> int:
                try:
                    await client.list("configmaps", "default")
                except Unauthorized as err:
                    return err.code
                return 200

            def get() -> int:
                return anyio.from_thread.run(aget)

            await anyio.to_thread.run_sync(steps, get)

    anyio.run(main, backend=driver)


@pytest.fixture
def server() -> Iterator[ApiServer]:
    with ApiServer(token="token1") as srv:
        yield srv


def test_round_tripper(driver: str, server: ApiServer, plugin: Plugin, tmp_path: Path) -> None:
    """client-go ``TestRoundTripper``, step by step."""
    plugin.set_output("token1")
    api = load_api_client(plugin, server, tmp_path)
    assert plugin.runs() == ["token1"]

    def steps(get: Get) -> None:
        assert get() == 200
        plugin.set_output("token2")
        assert get() == 200  # the previous token is cached
        server.token = "token2"
        # the cached token hits 401 Unauthorized, which makes the plugin run again
        assert get() == 401
        assert get() == 200  # the next request carries the rotated token
        assert plugin.runs() == ["token1", "token2"]

        plugin.set_output("token3", expires_in=SKEW + 1.5)
        server.token = "token3"
        assert get() == 401  # still cached: 401, and the rotation to a token with an expiry
        assert get() == 200
        assert plugin.runs() == ["token1", "token2", "token3"]

        # token3 expires (the loader counts it expired 5 minutes early): fetched again
        # before the next request, without a 401
        plugin.set_output("token4", expires_in=3600)
        server.token = "token4"
        time.sleep(1.7)
        assert get() == 200
        assert plugin.runs() == ["token1", "token2", "token3", "token4"]
        assert get() == 200
        assert plugin.runs() == ["token1", "token2", "token3", "token4"]

    try:
        run_with(driver, api, steps)
    finally:
        api.close()


def test_token_source_transport_round_trip(driver: str, tmp_path: Path) -> None:
    """client-go ``TestTokenSourceTransportRoundTrip`` ("unauthorized on cached bad token"
    resets it) through the official in-cluster loader: the service account token file is
    cached for a minute, and a 401 makes the next request read it again."""
    from kubernetes import client
    from kubernetes.config.incluster_config import InClusterConfigLoader

    from informers.testing import tls

    with ApiServer(token="old") as server:
        token_file = tmp_path / "token"
        token_file.write_text("old")
        split = urlsplit(server.https_url)
        configuration = client.Configuration()
        InClusterConfigLoader(str(token_file), tls.ca_file(), environ={
            "KUBERNETES_SERVICE_HOST": split.hostname or "",
            "KUBERNETES_SERVICE_PORT": str(split.port)}).load_and_set(configuration)
        api = client.ApiClient(configuration)

        def steps(get: Get) -> None:
            assert get() == 200
            token_file.write_text("new")  # the kubelet rotates the projected token
            assert get() == 200           # the cached one is still good
            server.token = "new"
            assert get() == 401           # the cached token is refused: reset
            assert get() == 200           # the file read again

        try:
            run_with(driver, api, steps)
        finally:
            api.close()


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_slow_plugin_does_not_stall_the_event_loop(backend: str, server: ApiServer,
                                                     plugin: Plugin, tmp_path: Path) -> None:
    """The refresh hook runs the plugin when its credential expired: the async transport asks
    for its headers in a worker thread, so the event loop goes on for the plugin's 0.5 s."""
    from informers.aio import AsyncClient

    plugin.set_output("token1", expires_in=SKEW + 0.5)
    api = load_api_client(plugin, server, tmp_path)
    time.sleep(0.6)  # token1 expired (for the loader): the next request runs the plugin
    plugin.set_output("token2", expires_in=3600)
    Path(str(plugin.output) + ".sleep").write_text("0.5")
    server.token = "token2"
    gaps: list[float] = []

    async def main() -> None:
        async with AsyncClient(api) as client, anyio.create_task_group() as tg:
            async def tick() -> None:
                last = anyio.current_time()
                while True:
                    await anyio.sleep(0.01)
                    now = anyio.current_time()
                    gaps.append(now - last)
                    last = now

            tg.start_soon(tick)
            await client.list("configmaps", "default")
            tg.cancel_scope.cancel()

    try:
        anyio.run(main, backend=backend)
    finally:
        api.close()
    assert plugin.runs() == ["token1", "token2"]
    assert len(gaps) >= 20, gaps  # the loop ticked while the plugin slept
    assert max(gaps) < 0.4, max(gaps)  # the plugin alone sleeps 0.5 s

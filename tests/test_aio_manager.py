"""informers.aio.manager.AsyncManager: controllers and informers run together; /readyz turns
ready once the informers synced; SIGTERM stops a manager run with handle_signals (a subprocess,
on asyncio and trio), draining and closing everything."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import urllib.request
from pathlib import Path
from typing import Any

import anyio
import pytest

from informers.aio import AsyncController, AsyncSharedInformerFactory
from informers.aio.manager import AsyncManager
from informers.backoff import Backoff
from informers.reflector_options import ReflectorOptions
from informers.testing import ApiServer

ROOT = Path(__file__).resolve().parent.parent
WAIT = 10.0


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request):
    return request.param


def _get(url: str) -> tuple[int, str]:
    """A GET from the event loop's thread (it blocks the loop for a moment; the health
    server answers from its own threads): no worker thread outlives the test."""
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


@pytest.mark.anyio
async def test_controllers_run_and_readyz_follows_the_informers(anyio_backend):
    with ApiServer() as api:
        api.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "default"}}, "configmaps", "default")
        api.fail_next(2, 500, verb="list", resource="configmaps")  # not ready at first
        fast = ReflectorOptions(backoff=Backoff(initial=0.05, cap=0.1, rng=random.Random(1)))
        factory = AsyncSharedInformerFactory(api.api_client(), options=fast)
        manager = AsyncManager(factory, health_address="127.0.0.1:0")
        seen: list[str] = []
        reconciled = anyio.Event()

        async def reconcile(request: Any) -> None:
            seen.append(str(request))
            reconciled.set()

        controller = AsyncController("cm", reconcile)
        controller.watch(factory.informer_for("configmaps"))
        manager.add(controller)
        async with anyio.create_task_group() as tg:
            tg.start_soon(manager.run)
            with anyio.fail_after(WAIT):
                while manager.health is None or manager.health.port == 0:
                    await anyio.sleep(0.01)
            url = manager.health.url
            status, body = _get(url + "/readyz?verbose")
            assert (status, body.splitlines()[0]) == (503, "[-]informers-synced failed: "
                                                      "reason withheld")
            with anyio.fail_after(WAIT):
                await reconciled.wait()
            status, _ = _get(url + "/readyz")
            assert status == 200
            assert _get(url + "/healthz")[0] == 200
            manager.stop()
        assert seen == ["default/c"]
        assert factory.transport is not None and factory.transport.is_closed


SCRIPT = textwrap.dedent("""
    import sys, anyio
    from informers.aio import AsyncController, AsyncSharedInformerFactory
    from informers.aio.manager import AsyncManager
    from kubernetes import client

    async def main():
        cfg = client.Configuration(host=sys.argv[1], api_key={"BearerToken": sys.argv[2]},
                                   api_key_prefix={"BearerToken": "Bearer"})
        factory = AsyncSharedInformerFactory(cfg)
        manager = AsyncManager(factory, handle_signals=True)

        async def reconcile(request):
            print("reconciled", request, flush=True)

        controller = AsyncController("cm", reconcile)
        controller.watch(factory.informer_for("configmaps"))
        manager.add(controller)
        await manager.run()
        print("stopped cleanly", flush=True)

    anyio.run(main, backend=sys.argv[3])
""")


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_sigterm_stops_a_manager_that_handles_signals(backend: str, tmp_path: Path) -> None:
    with ApiServer() as api:
        api.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "c", "namespace": "default"}}, "configmaps", "default")
        script = tmp_path / "manager.py"
        script.write_text(SCRIPT)
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.Popen([sys.executable, str(script), api.url, api.token, backend],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=env)
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "reconciled default/c"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=WAIT)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        assert (proc.returncode, out.strip()) == (0, "stopped cleanly"), err
        assert api.wait_for_no_watches(timeout=5.0)


def _private_imports(path: Path) -> list[tuple[str, str]]:
    import ast

    found: list[tuple[str, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("informers"):
            found += [(node.module or "", alias.name) for alias in node.names
                      if alias.name.startswith("_") and not alias.name.startswith("__")]
    return found


def test_the_async_package_imports_no_private_name_of_another_module() -> None:
    """What the async code shares with the threaded code is public and documented there:
    the manager's identity default, the list answer's reading, the request body's encoding."""
    package = ROOT / "informers" / "aio"
    found = {p.name: _private_imports(p) for p in sorted(package.glob("*.py"))}
    assert {name: names for name, names in found.items() if names} == {}

    from informers import manager as threaded_manager
    from informers.aio import manager as async_manager
    from informers.aio import transport as async_transport
    from informers.client import list_watch_client, transport

    assert async_manager.default_identity is threaded_manager.default_identity
    assert async_transport.list_result is list_watch_client.list_result
    assert async_transport.encode_json is transport.encode_json
    host = threaded_manager.default_identity().rsplit("_", 1)
    assert host[0] == __import__("socket").gethostname() and len(host[1]) == 36

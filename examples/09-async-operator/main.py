"""Runs the Widget operator on the async API (``async_widget.py``), on asyncio or trio: every
``Widget`` (example.com/v1) owns a ConfigMap of the same name whose data follow the Widget's
spec, on top of its namespace's defaults. It is the operator of the threaded tutorial
(``examples/04-custom-resource-controller/``) written with ``AsyncClient``,
``AsyncControllerBuilder`` and ``AsyncManager``; ``docs/async.md`` ("Build an async operator")
walks through it.

Without ``--kubeconfig`` it runs on an embedded API server (example 04's ``crd.yaml`` installed
there too) and plays example 04's demo: a Widget created, changed, its ConfigMap edited by
hand, defaults set, the Widget deleted.

    python examples/09-async-operator/main.py                   # asyncio, embedded API server
    python examples/09-async-operator/main.py --backend trio
    kubectl apply -f examples/04-custom-resource-controller/crd.yaml
    python examples/09-async-operator/main.py --kubeconfig ~/.kube/config
"""

from __future__ import annotations

import argparse
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from async_widget import DEFAULTS, WIDGETS, setup

from informers.aio import AsyncClient, AsyncSharedInformerFactory
from informers.aio.manager import AsyncManager
from informers.errors import NotFound
from informers.signals import SignalHandler
from informers.testing import connect
from informers.testing.aio_runner import eventually, run_async_manager
from informers.yaml_loader import load_yaml

CRD_FILE = Path(__file__).resolve().parent.parent / "04-custom-resource-controller" / "crd.yaml"


async def demo(client: AsyncClient) -> None:
    """Create, change and delete a Widget, tamper with its ConfigMap, set defaults; print the
    ConfigMap after each step."""

    async def config_map() -> dict[str, Any] | None:
        try:
            return await client.get("configmaps", "blue", "default")
        except NotFound:
            return None

    async def until(what: str, done: Callable[[dict[str, Any] | None], bool]) -> None:
        async def check() -> bool:
            return done(await config_map())

        await eventually(check, timeout=10, message=what)
        cm = await config_map()
        print(f"{what}: ConfigMap default/blue {'is gone' if cm is None else cm['data']}")

    def data_is(**want: str) -> Callable[[dict[str, Any] | None], bool]:
        return lambda cm: cm is not None and cm.get("data") == want

    await client.create({"apiVersion": WIDGETS.api_version, "kind": WIDGETS.kind,
                         "metadata": {"name": "blue", "namespace": "default"},
                         "spec": {"color": "blue", "size": 3}})
    await until("widget created", data_is(color="blue", size="3"))
    await client.patch(WIDGETS, "blue", {"spec": {"size": 5}}, "default")
    await until("widget spec changed", data_is(color="blue", size="5"))
    await client.patch("configmaps", "blue", {"data": {"color": "red"}}, "default")
    await until("ConfigMap edited by hand", data_is(color="blue", size="5"))
    await client.apply({"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": DEFAULTS, "namespace": "default"},
                        "data": {"shape": "round"}})
    await until("defaults set", data_is(color="blue", shape="round", size="5"))
    await client.delete(WIDGETS, "blue", "default")
    await until("widget deleted", lambda cm: cm is None)


async def operate(args: argparse.Namespace, api_client: Any, embedded: bool,
                  stop: threading.Event) -> None:
    async with AsyncClient(api_client, field_manager="widget-controller") as client:
        if embedded:  # the embedded server serves CRDs as kube-apiserver does
            await client.create(load_yaml(CRD_FILE.read_text()))
        manager = AsyncManager(AsyncSharedInformerFactory(api_client))
        setup(manager, client, args.workers)
        async with run_async_manager(manager):  # started, caches synced; stopped on exit
            if embedded:
                await demo(AsyncClient(transport=client.transport, field_manager="widget-demo"))
            with anyio.move_on_after(args.duration if args.duration is not None
                                     else float("inf")):
                while not stop.is_set():  # set by a signal, or by whoever called main()
                    await anyio.sleep(0.05)


def main(argv: list[str] | None = None, stop: threading.Event | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="A Widget controller that owns ConfigMaps, on asyncio or trio.")
    parser.add_argument("--kubeconfig", help="use this cluster (default: an embedded API server)")
    parser.add_argument("--backend", choices=("asyncio", "trio"), default="asyncio",
                        help="the event loop (default asyncio)")
    parser.add_argument("--workers", type=int, default=2, help="concurrent reconciles (default 2)")
    parser.add_argument("--duration", type=float, default=None,
                        help="seconds to run after the demo (default: until Ctrl-C)")
    args = parser.parse_args(argv)
    signals = SignalHandler(stop)  # Ctrl-C sets the stop event; a second one exits at once
    if threading.current_thread() is threading.main_thread():
        signals.install()
    try:
        # The cluster of the kubeconfig (with crd.yaml applied), or else a new embedded server.
        with connect(args.kubeconfig) as (api_client, server):
            anyio.run(operate, args, api_client, server is not None, signals.stop_event,
                      backend=args.backend)
        return 0
    finally:
        signals.uninstall()


if __name__ == "__main__":
    raise SystemExit(main())

"""The order of handler notifications equals client-go v0.36.3's on the same script, on the real
kube-apiserver: a burst of creates/updates/deletes, a disconnect during which pods are deleted,
changed, created and re-created, a relist, and a second burst.

client-go's side is ``benchmarks/clientgo-order`` (a shared pod informer on client-go v0.36.3,
its default RealFIFO queue; built once into ``~/.cache/kube-informers/clientgo-order/<hash>/`` by
its ``build.sh``); ours is a :class:`~informers.shared_informer.SharedIndexInformer` with its
defaults. Both watch through a ListWatch the test can disconnect and that forces a relist on
reconnect (a 410 on the next watch), so each script step happens at the same point for both.
"""

from __future__ import annotations

import json
import queue
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from informers.client import list_watch_from_client
from informers.errors import StatusError
from informers.list_watch import ListOptions, ListResult, ListWatch, WatchStream
from informers.resources import lookup
from informers.shared_informer import SharedIndexInformer
from informers.wait import wait_for_cache_sync

pytestmark = pytest.mark.real_apiserver

ROOT = Path(__file__).resolve().parent.parent
BUILD = ROOT / "benchmarks" / "clientgo-order" / "build.sh"
WAIT = 30.0
SETTLE = 0.5  # seconds to wait for unexpected extra notifications after the last step

Event = tuple[Any, ...]


@pytest.fixture(scope="session")
def clientgo_order_binary() -> Path:
    if shutil.which("go") is None:
        pytest.skip("no Go toolchain: cannot build benchmarks/clientgo-order (client-go)")
    done = subprocess.run([str(BUILD)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.fail(f"building benchmarks/clientgo-order failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def real_server(real_api_server):
    from servers import RealServer

    server = RealServer(real_api_server)
    try:
        yield server
    finally:
        server.close()


# -- the two subjects ----------------------------------------------------------------------------


class GoSubject:
    """benchmarks/clientgo-order as a subprocess."""

    def __init__(self, binary: Path, kubeconfig: str, namespace: str) -> None:
        self.proc = subprocess.Popen(
            [str(binary), f"-kubeconfig={kubeconfig}", f"-namespace={namespace}"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.events: list[Event] = []
        self.acks: queue.Queue[str] = queue.Queue()
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            msg = json.loads(line)
            if "ack" in msg:
                self.acks.put(msg["ack"])
            elif "error" in msg:
                self.acks.put("error: " + msg["error"])
            else:
                with self.cond:
                    self.events.append(_from_go(msg))
                    self.cond.notify_all()
        self.acks.put("exited")

    def _ack(self, expected: str) -> None:
        got = self.acks.get(timeout=WAIT)
        assert got == expected, got

    def start(self) -> None:
        self._ack("synced")

    def _command(self, command: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def disconnect(self) -> None:
        self._command("disconnect")
        self._ack("disconnected")

    def reconnect(self) -> None:
        self._command("reconnect")
        self._ack("reconnected")

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(WAIT)
        self.reader.join(WAIT)


def _from_go(msg: dict[str, Any]) -> Event:
    if msg["n"] == "add":
        return ("add", msg["name"], msg["gen"], msg["initial"])
    if msg["n"] == "update":
        return ("update", msg["name"], msg["old"], msg["new"])
    return ("delete", msg["name"], msg["gen"], msg["tombstone"])


class GatedListWatch:
    """The Python twin of the Go program's gatedListWatch."""

    def __init__(self, inner: ListWatch) -> None:
        self.inner = inner
        self.lock = threading.Lock()
        self.open = threading.Event()
        self.open.set()
        self.expire_next = False
        self.current: WatchStream | None = None

    def _gate(self, options: ListOptions) -> None:
        while not self.open.wait(0.05):
            if options.cancel is not None and options.cancel.is_cancelled():
                raise StatusError({"code": 503, "reason": "ServiceUnavailable",
                                   "message": "stopping"})

    def list(self, options: ListOptions) -> ListResult:
        self._gate(options)
        with self.lock:
            self.expire_next = False  # this is the relist
        return self.inner.list(options)

    def watch(self, options: ListOptions) -> WatchStream:
        self._gate(options)
        with self.lock:
            if self.expire_next:
                self.expire_next = False
                raise StatusError({"code": 410, "reason": "Expired",
                                   "message": "relist requested by the test"})
            self.current = self.inner.watch(options)
            return self.current

    def disconnect(self) -> None:
        with self.lock:
            self.open.clear()
            if self.current is not None:
                self.current.close()
                self.current = None

    def reconnect(self) -> None:
        with self.lock:
            self.expire_next = True
            self.open.set()


def _gen(obj: Any) -> str:
    return ((obj.get("metadata") or {}).get("labels") or {}).get("gen", "")


class PySubject:
    """Our shared informer with its defaults, on the gated ListWatch."""

    def __init__(self, server: Any, namespace: str) -> None:
        self.api = server.api_client()
        self.gated = GatedListWatch(list_watch_from_client(self.api, "pods", namespace=namespace))
        self.informer = SharedIndexInformer(
            ListWatch(self.gated.list, self.gated.watch, resource=lookup("pods")), name="pods")
        self.events: list[Event] = []
        self.cond = threading.Condition()
        self.informer.add_event_handler(self)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.informer.run, args=(self.stop_event,),
                                       daemon=True)

    def _record(self, event: Event) -> None:
        with self.cond:
            self.events.append(event)
            self.cond.notify_all()

    def on_add(self, obj: Any, is_in_initial_list: bool) -> None:
        self._record(("add", obj["metadata"]["name"], _gen(obj), is_in_initial_list))

    def on_update(self, old: Any, new: Any) -> None:
        self._record(("update", new["metadata"]["name"], _gen(old), _gen(new)))

    def on_delete(self, obj: Any) -> None:
        from informers.keys import DeletedFinalStateUnknown

        tombstone = isinstance(obj, DeletedFinalStateUnknown)
        if tombstone:
            obj = obj.obj
        self._record(("delete", obj["metadata"]["name"], _gen(obj), tombstone))

    def start(self) -> None:
        self.thread.start()
        assert wait_for_cache_sync(self.stop_event, self.informer.has_synced, timeout=WAIT)

    def disconnect(self) -> None:
        self.gated.disconnect()

    def reconnect(self) -> None:
        self.gated.reconnect()

    def stop(self) -> None:
        self.gated.reconnect()
        self.stop_event.set()
        self.thread.join(WAIT)
        self.api.close()


# -- the script ----------------------------------------------------------------------------------


def _pod(name: str, gen: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"gen": gen}},
            "spec": {"containers": [{"name": "c", "image": "registry.example/app:1"}]}}


def _wait_count(subject: Any, count: int) -> None:
    with subject.cond:
        subject.cond.wait_for(lambda: len(subject.events) >= count, WAIT)


def run_script(server: Any, subject: Any) -> list[Event]:
    ns = server.new_namespace("order")

    def create(name: str, gen: str = "0") -> None:
        server.create(_pod(name, gen), "pods", ns)

    def label(name: str, gen: str) -> None:
        server.patch("pods", ns, name, {"metadata": {"labels": {"gen": gen}}})

    def delete(name: str) -> None:
        server.delete("pods", ns, name, grace_period_seconds=0)

    for i in range(10):
        create(f"p-{i:02d}")
    started = subject(ns)
    try:
        started.start()
        expected = 10
        _wait_count(started, expected)
        # 1. a burst on the live watch
        for i in range(10, 15):
            create(f"p-{i:02d}")
        for i in range(5):
            label(f"p-{i:02d}", "1")
        delete("p-05")
        delete("p-06")
        label("p-10", "1")
        delete("p-11")
        expected += 5 + 5 + 2 * 2 + 1 + 2  # a delete is an update, then a delete
        _wait_count(started, expected)
        # 2. deletes, changes and creates while disconnected; a relist on reconnect
        started.disconnect()
        for name in ("p-00", "p-07", "p-12"):
            delete(name)
        label("p-01", "2")
        label("p-08", "2")
        create("p-15")
        create("p-16")
        delete("p-09")
        create("p-09", "5")  # re-created: the relist sees an update
        started.reconnect()
        expected += 3 + 9 + 2  # tombstones, updates of every listed pod, adds
        _wait_count(started, expected)
        # 3. a burst after the relist
        label("p-15", "3")
        delete("p-16")
        create("p-17")
        expected += 4
        _wait_count(started, expected)
        time.sleep(SETTLE)  # let an unexpected extra notification show
        return list(started.events)
    finally:
        started.stop()


def normalized(events: list[Event]) -> list[Event]:
    """Each run of a relist's tombstone deletes sorted by name: client-go reports them in its
    store's map order (controller_test.go sorts them too, sortDeleteEventsByKey)."""
    out: list[Event] = []
    run: list[Event] = []
    for event in [*events, ("end",)]:
        if event[0] == "delete" and event[3]:
            run.append(event)
            continue
        out.extend(sorted(run))
        run = []
        if event[0] != "end":
            out.append(event)
    return out


EXPECTED = [
    *[("add", f"p-{i:02d}", "0", True) for i in range(10)],
    *[("add", f"p-{i:02d}", "0", False) for i in range(10, 15)],
    *[("update", f"p-{i:02d}", "0", "1") for i in range(5)],
    # a delete with grace period 0 first sets deletionTimestamp (an update), then deletes
    ("update", "p-05", "0", "0"), ("delete", "p-05", "0", False),
    ("update", "p-06", "0", "0"), ("delete", "p-06", "0", False),
    ("update", "p-10", "0", "1"), ("update", "p-11", "0", "0"), ("delete", "p-11", "0", False),
    # the relist: tombstones, then updates and adds in list order; unchanged pods too (sync
    # updates: a listener is marked syncing until a resync tick, and there is none)
    ("delete", "p-00", "1", True), ("delete", "p-07", "0", True), ("delete", "p-12", "0", True),
    ("update", "p-01", "1", "2"), ("update", "p-02", "1", "1"), ("update", "p-03", "1", "1"),
    ("update", "p-04", "1", "1"), ("update", "p-08", "0", "2"), ("update", "p-09", "0", "5"),
    ("update", "p-10", "1", "1"), ("update", "p-13", "0", "0"), ("update", "p-14", "0", "0"),
    ("add", "p-15", "0", False), ("add", "p-16", "0", False),
    ("update", "p-15", "0", "3"), ("update", "p-16", "0", "0"), ("delete", "p-16", "0", False),
    ("add", "p-17", "0", False),
]


def test_notification_order_equals_client_go(real_server, clientgo_order_binary, tmp_path):
    kubeconfig = real_server.write_kubeconfig(tmp_path / "kubeconfig")
    go_events = run_script(
        real_server, lambda ns: GoSubject(clientgo_order_binary, kubeconfig, ns))
    py_events = run_script(real_server, lambda ns: PySubject(real_server, ns))
    assert normalized(go_events) == EXPECTED  # the script did what it says, on client-go
    assert normalized(py_events) == normalized(go_events)
